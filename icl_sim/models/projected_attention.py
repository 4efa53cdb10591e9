"""One attention head with separate query, key, value and output projections: Boursier & Boyer's model (2025).

Boursier & Boyer ("Softmax as linear attention in the large-prompt regime", arXiv 2512.11784, Sec. 6;
eboursier/softmax_as_linear ``models.py``, ``MultiHeadAttention`` with one head, no bias and one output) train
this head on tokens z_j = (x_j, y_j) ∈ R^D, D = d + k, with the query token z_q = (x_i, 0) of position i:

    q = W_q z_q,  k_j = W_k z_j,  v_j = W_v z_j,  s_j = qᵀk_j / √D,   ŷ_i = W_o Σ_{j<i} a_j v_j,

with a_j = softmax_j(s) (``activation="softmax"``) or a_j = s_j / i, no softmax and the 1/L normalisation of
their linear variant (``activation="linear"``; L = i context tokens).  W_q, W_k, W_v are D × D and W_o is k × D,
all with nn.Linear's default start U(−1/√D, 1/√D); there is no residual.  Both activations build the same
parameters in the same order, so one seed gives both the same start (the paper's paired runs).  Merged, the
score matrix is W_kᵀW_q/√D and the value row W_o W_v (their Lemma 2.1's K, Q, V).  Every position sees only its
prefix; position 0 sees no token and predicts 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.validation import check_choice

ACTIVATIONS = ("softmax", "linear")


@dataclass(frozen=True)
class ProjectedAttentionConfig:
    """Hyper-parameters of :class:`ProjectedAttention`."""

    activation: str = field(default="softmax", metadata={
        "help": "softmax: a_j = softmax_j(qᵀk_j/√D); linear: a_j = qᵀk_j/(√D L), no softmax"})

    def __post_init__(self):
        check_choice("activation", self.activation, ACTIVATIONS)

    @property
    def layers(self) -> int:
        """One attention layer (the depth every model reports)."""
        return 1


class ProjectedAttention(InContextModel):
    """ŷ = W_o Σ_j a_j W_v z_j with a_j from the scores (W_q z_q)ᵀ(W_k z_j)/√D: softmax or linear."""

    Config = ProjectedAttentionConfig

    def __init__(self, dim: int, points: int, config: ProjectedAttentionConfig = ProjectedAttentionConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width = dim + target_dim
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width, bias=False)
        self.o_proj = nn.Linear(width, target_dim, bias=False)

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: ProjectedAttentionConfig, target_dim: int = 1) -> int:
        """Per prompt, the tokens' keys and values and the query's scores and weights (the training loss reads the
        last position alone)."""
        return points * (3 * (dim + target_dim) + 2)

    def merged(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The score matrix W_kᵀW_q/√D and the value rows W_o W_v of the merged head (Lemma 2.1's KᵀQ and V)."""
        width = self.dim + self.target_dim
        return self.k_proj.weight.T @ self.q_proj.weight / math.sqrt(width), self.o_proj.weight @ self.v_proj.weight

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._outputs(xs, ys, torch.arange(xs.shape[1], device=xs.device))]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The output at the last point, the query of the L points before it."""
        return self._outputs(xs, ys, torch.tensor([xs.shape[1] - 1], device=xs.device))[:, 0]

    def _outputs(self, xs: torch.Tensor, ys: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """ŷ at ``positions`` (B, P[, k]), in the prompts' dtype."""
        reference = self.o_proj.weight
        labels = (ys.unsqueeze(-1) if ys.ndim == 2 else ys).to(reference)
        tokens = torch.cat([xs.to(reference), labels], dim=-1)  # z_j (B, N, D)
        queries = torch.cat([xs.to(reference)[:, positions], torch.zeros_like(labels[:, positions])], dim=-1)
        scores = self.q_proj(queries) @ self.k_proj(tokens).transpose(1, 2) / math.sqrt(tokens.shape[-1])
        outputs = self.o_proj(self._weights(scores, positions) @ self.v_proj(tokens)).to(xs.dtype)
        return outputs.squeeze(-1) if self.target_dim == 1 else outputs

    def _weights(self, scores: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """a (B, P, N) over the points before each position: softmax_j(s), or s_j / i (0 at position 0)."""
        if self.config.activation == "softmax":
            return prefix_weights(scores, positions)
        before = torch.arange(scores.shape[-1], device=scores.device)[None, :] < positions[:, None]
        return scores * before / positions.clamp(min=1)[:, None].to(scores)
