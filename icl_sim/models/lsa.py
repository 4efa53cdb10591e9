"""Linear self-attention (LSA) as in the theory of in-context learning.

Tokens are z_j = (x_j, y_j) ∈ R^{d+1}; the query token is (x_i, 0).  Layer ℓ with
merged matrices P = W_PV and Q = W_KQ per head updates every token t by

    z_t ← z_t + (1/n) Σ_h P_h (Σ_{j<n} z_j z_jᵀ) Q_h z_t,

attending to the n context tokens only and normalising by their number (Ahn et
al. 2023; Zhang, Frei & Bartlett 2023; Mahankali et al. 2023).  The prediction is
read from the query's y slot with a minus sign, ŷ = −[z_query]_{d+1}, so that one
layer with P = −η e_{d+1}e_{d+1}ᵀ, Q = [[I, 0], [0, 0]] is one step of gradient
descent with step η from w = 0 (von Oswald et al. 2023).

Because the update of every token is the same linear map M = I + Σ_h P_h Γ Q_h with
Γ = (1/n) Σ_j z_j z_jᵀ, a whole prompt is summarised by Γ: the next layer sees
Γ' = M Γ Mᵀ and the query becomes M z_query.  Predicting every position i (the
prompt cut to its first i points plus query x_i) therefore needs only the prefix
second-moment matrices Γ_i, computed with one cumulative sum: O(N d³) per layer,
exact, with no loop over prefixes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class LSAConfig:
    """Hyper-parameters of the LSA model."""

    layers: int = field(default=1, metadata={"help": "number of linear self-attention layers"})
    heads: int = field(default=1, metadata={"help": "attention heads per layer"})
    init_scale: float = field(default=0.02, metadata={"help": "standard deviation of the initial weights"})

    def __post_init__(self):
        check_int("layers", self.layers, 1)
        check_int("heads", self.heads, 1)
        check_float("init_scale", self.init_scale, 0.0)


class LinearSelfAttention(InContextModel):
    """L layers of full-parameter linear self-attention over (x, y) tokens.

    Labels may be vectors: with ``target_dim`` k > 1 the tokens are (x, y) ∈ R^{d+k}, ys is
    (B, N, k) and the prediction is minus the query's k label slots.
    """

    Config = LSAConfig

    def __init__(self, dim: int, points: int, config: LSAConfig = LSAConfig(), target_dim: int = 1):
        super().__init__()
        check_int("dim", dim, 1)
        check_int("points", points, 1)
        check_int("target_dim", target_dim, 1)
        self.dim, self.points, self.config, self.target_dim = dim, points, config, target_dim
        shape = (config.layers, config.heads, dim + target_dim, dim + target_dim)
        self.value = nn.Parameter(config.init_scale * torch.randn(shape))  # P = W_PV per layer and head
        self.key_query = nn.Parameter(config.init_scale * torch.randn(shape))  # Q = W_KQ per layer and head

    def prefix_moments(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Γ_i = (1/max(i, 1)) Σ_{j<i} z_j z_jᵀ for every position i: (B, N, d+k, d+k)."""
        outer = _outer(_tokens(xs, self._labels(ys)))
        exclusive = torch.cumsum(outer, dim=1) - outer
        counts = torch.arange(xs.shape[1], device=xs.device).clamp(min=1).to(xs.dtype)
        return exclusive / counts[:, None, None]

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        labels = self._labels(ys)
        return self._propagate(self.prefix_moments(xs, ys), _tokens(xs, torch.zeros_like(labels)))

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position only, from Γ of the first N − 1 points: N times cheaper for training."""
        labels = self._labels(ys)
        context = _outer(_tokens(xs[:, :-1], labels[:, :-1])).sum(dim=1) / max(xs.shape[1] - 1, 1)
        return self._propagate(context, _tokens(xs[:, -1], torch.zeros_like(labels[:, -1])))[-1]

    def _labels(self, ys: torch.Tensor) -> torch.Tensor:
        """Labels as (..., N, k), whether given as (B, N) scalars or (B, N, k) vectors."""
        labels = ys.unsqueeze(-1) if self.target_dim == 1 and ys.ndim == 2 else ys
        if labels.shape[-1] != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")
        return labels

    def _propagate(self, gamma: torch.Tensor, query: torch.Tensor) -> list[torch.Tensor]:
        """Run the layers on context moments Γ (..., D, D) and query tokens (..., D); ŷ after each layer."""
        predictions = []
        for layer in range(self.config.layers):
            value, key_query = self.value[layer], self.key_query[layer]
            keyed = torch.einsum("hkl,...l->...hk", key_query, query)  # Q_h z per head
            attended = torch.einsum("...jk,...hk->...hj", gamma, keyed)  # Γ Q_h z
            update = torch.einsum("hij,...hj->...i", value, attended)  # Σ_h P_h Γ Q_h z
            if layer + 1 < self.config.layers:
                step = torch.einsum("hij,...jk,hkl->...il", value, gamma, key_query)
                step = step + torch.eye(self.dim + self.target_dim, device=query.device, dtype=query.dtype)
                gamma = step @ gamma @ step.transpose(-1, -2)
            query = query + update
            prediction = -query[..., self.dim:]
            predictions.append(prediction.squeeze(-1) if self.target_dim == 1 else prediction)
        return predictions


def _tokens(xs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Tokens z = (x, y): (..., d + k)."""
    return torch.cat([xs, labels], dim=-1)


def _outer(tokens: torch.Tensor) -> torch.Tensor:
    return tokens.unsqueeze(-1) * tokens.unsqueeze(-2)
