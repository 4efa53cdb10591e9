"""Softmax self-attention over (x, y) tokens: von Oswald et al. 2023's softmax ablation of LSA.

Tokens are z_j = (x_j, y_j) ∈ R^{d+k} and the query token of position i is (x_i, 0), as in
:mod:`icl_sim.models.lsa`.  Layer ℓ updates every token t of prompt i (context j < i plus
the query) by

    z_t ← z_t + Σ_h P_h Σ_{j<i} softmax_j(s_h(z_j, z_t)) z_j,

attending to the i context tokens only (the query is not a key), with merged value
matrices P_h = W_PV per head.  The score is either

* ``kernel="dot"``: s_h(z_j, z_t) = z_jᵀ Q_h z_t, Q_h = W_KQ merged (no 1/√D: absorbed in Q_h);
* ``kernel="gaussian"``: s_h(z_j, z_t) = −½ ‖W_h (z_j − z_t)‖², a Gaussian (RBF) kernel
  in the learned metric W_hᵀW_h, so softmax_j is exp(−½‖W_h(z_j − z_t)‖²) normalised over
  j.  It is computed as u_jᵀu_t − ½‖u_j‖² with u = W_h z, which differs from the score
  by −½‖u_t‖², a constant over j that softmax removes.

The prediction is ŷ_i = −(query's label slots) after the last layer (after each layer for
:meth:`layer_predictions`); prompt 0 has no context, so attention adds nothing there.
Semantics are per prefix, exactly: every position i is its own prompt.  One layer needs
only the queries: a (B, H, N, N) score matrix, masked to j < i.  More layers need the
context tokens of every prefix, so their tokens are materialised as (B, N prefixes, N, D)
(the query of prefix i at token i, tokens j > i zero and never keys): O(B H N³ D) per layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_choice, check_float, check_int

KERNELS = ("dot", "gaussian")


@dataclass(frozen=True)
class SoftmaxAttentionConfig:
    """Hyper-parameters of :class:`SoftmaxAttention`."""

    layers: int = field(default=1, metadata={"help": "number of softmax attention layers"})
    heads: int = field(default=1, metadata={"help": "attention heads per layer"})
    kernel: str = field(default="dot", metadata={
        "help": "dot: score z_jᵀ Q z_q; gaussian: score −½‖W (z_j − z_q)‖²"})
    init_scale: float = field(default=0.02, metadata={"help": "standard deviation of the initial weights"})

    def __post_init__(self):
        check_int("layers", self.layers, 1)
        check_int("heads", self.heads, 1)
        check_choice("kernel", self.kernel, KERNELS)
        check_float("init_scale", self.init_scale, 0.0)


class SoftmaxAttention(InContextModel):
    """L layers of softmax self-attention over (x, y) tokens, read out as minus the query's label slots."""

    Config = SoftmaxAttentionConfig
    depth_parameter, default_loss_on = "layers", "last"

    def __init__(self, dim: int, points: int, config: SoftmaxAttentionConfig = SoftmaxAttentionConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        shape = (config.layers, config.heads, dim + target_dim, dim + target_dim)
        self.value = nn.Parameter(config.init_scale * torch.randn(shape))  # P_h = W_PV
        # dot: Q_h = W_KQ, score z_jᵀ Q_h z_q; gaussian: W_h, score −½‖W_h (z_j − z_q)‖²
        self.score = nn.Parameter(config.init_scale * torch.randn(shape))

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: SoftmaxAttentionConfig, target_dim: int = 1) -> int:
        """Per layer, each head's N × N scores (held twice: scores and weights), and past one layer about four
        N × N maps more over the materialised prefixes (measured on the CPU: a lower estimate)."""
        return config.layers * points ** 2 * (2 * config.heads + 4 * (config.layers > 1))

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        if self.config.layers == 1:
            return [self._one_layer(xs, self._labels(ys))]
        return self.per_prefix_predictions(xs, ys)

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position only: its query alone (one layer) or its prefix alone (more)."""
        last = torch.tensor([xs.shape[1] - 1], device=xs.device)
        if self.config.layers == 1:
            return self._one_layer(xs, self._labels(ys), last)[:, 0]
        return self.per_prefix_predictions(xs, ys, last)[-1][:, 0]

    def _one_layer(self, xs: torch.Tensor, labels: torch.Tensor,
                   positions: torch.Tensor | None = None) -> torch.Tensor:
        """One layer for the queries at ``positions`` (all by default) from a (B, H, P, N) score matrix."""
        n = xs.shape[1]
        if positions is None:
            positions = torch.arange(n, device=xs.device)
        context = torch.cat([xs, labels], dim=-1)  # (B, N, D)
        query = torch.cat([xs[:, positions], torch.zeros_like(labels[:, positions])], dim=-1)  # (B, P, D)
        keys = torch.arange(n, device=xs.device)[None, :] < positions[:, None]  # (P, N)
        weights = self._attention(0, context[:, None], query[:, None], keys[None, None, None])[:, 0]  # (B, H, P, N)
        mixed = torch.einsum("bhpj,bjk->bhpk", weights, context)
        query = query + torch.einsum("hik,bhpk->bpi", self.value[0], mixed)
        return self._readout(query)

    def per_prefix_predictions(self, xs: torch.Tensor, ys: torch.Tensor,
                               positions: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The exact per-prefix model on materialised tokens (B, P, N, D), for ``positions`` (all by default)."""
        labels = self._labels(ys)
        n = xs.shape[1]
        if positions is None:
            positions = torch.arange(n, device=xs.device)
        index = torch.arange(n, device=xs.device)
        keys = index[None, :] < positions[:, None]  # (P, N)
        query = (index[None, :] == positions[:, None]).to(xs.dtype)  # (P, N)
        tokens = torch.cat([xs, labels], dim=-1)[:, None]
        tokens = torch.cat([tokens[..., :self.dim] * (keys.to(xs.dtype) + query)[None, :, :, None],
                            tokens[..., self.dim:] * keys.to(xs.dtype)[None, :, :, None]], dim=-1)
        predictions = []
        for layer in range(self.config.layers):
            weights = self._attention(layer, tokens, tokens, keys[None, :, None, None, :])  # (B, P, H, N, N)
            mixed = torch.einsum("bphtj,bpjk->bphtk", weights, tokens)
            tokens = tokens + torch.einsum("hik,bphtk->bpti", self.value[layer], mixed)
            predictions.append(self._readout(torch.einsum("bptk,pt->bpk", tokens, query)))
        return predictions

    def _attention(self, layer: int, keys: torch.Tensor, queries: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Softmax weights (B, P, H, T, J) of queries (B, P, T, D) over keys (B, P, J, D) where ``allowed``.

        ``allowed`` is a boolean mask broadcastable to (B, P, H, T, J).

        A query with no allowed key gets all-zero weights.
        """
        if self.config.kernel == "dot":
            keyed = torch.einsum("hkl,bptl->bphtk", self.score[layer], queries)  # Q_h z_t
            scores = torch.einsum("bpjk,bphtk->bphtj", keys, keyed)
        else:
            mapped_queries = torch.einsum("hkl,bptl->bphtk", self.score[layer], queries)  # W_h z_t
            mapped_keys = torch.einsum("hkl,bpjl->bphjk", self.score[layer], keys)  # W_h z_j
            scores = torch.einsum("bphjk,bphtk->bphtj", mapped_keys, mapped_queries)
            scores = scores - 0.5 * mapped_keys.square().sum(-1)[:, :, :, None, :]
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) * allowed.to(scores.dtype)

    def _readout(self, query: torch.Tensor) -> torch.Tensor:
        prediction = -query[..., self.dim:]
        return prediction.squeeze(-1) if self.target_dim == 1 else prediction

    def _labels(self, ys: torch.Tensor) -> torch.Tensor:
        """Labels as (B, N, k), whether given as (B, N) scalars or (B, N, k) vectors."""
        labels = ys.unsqueeze(-1) if self.target_dim == 1 and ys.ndim == 2 else ys
        if labels.shape[-1] != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")
        return labels
