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

Two options give Kajitsuka & Sato's one-layer, one-head block (ICLR 2024, arXiv 2307.14023): ``rank`` r ≥ 1 makes
W_q, W_k and W_v r × D, so the score matrix W_kᵀW_q and the value map have rank at most r (their Theorem's rank-1
weights at r = 1); ``feedforward`` m ≥ 1 adds their residual and token-wise feed-forward network,
ŷ_i = FF(z_q + W_o Σ_{j<i} a_j v_j) with W_o D × r (D × D at full rank) and FF a ReLU network with one hidden layer
of m units, so that the attention output h_i = z_q + W_o Σ a_j v_j is the layer's feature (``layer_features``).
At their defaults (0: full rank, no feed-forward network) the model is Boursier & Boyer's, parameters and start
unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.validation import check_choice, check_int

ACTIVATIONS = ("softmax", "linear")


@dataclass(frozen=True)
class ProjectedAttentionConfig:
    """Hyper-parameters of :class:`ProjectedAttention`."""

    activation: str = field(default="softmax", metadata={
        "help": "softmax: a_j = softmax_j(qᵀk_j/√D); linear: a_j = qᵀk_j/(√D L), no softmax"})
    rank: int = field(default=0, metadata={
        "help": "rows r of W_q, W_k, W_v (rank ≤ r of the score and value maps; 0: D, full rank)"})
    feedforward: int = field(default=0, metadata={
        "help": "hidden width m of a token-wise ReLU network read-out after a residual, ŷ = FF(z_q + W_o Σ a_j v_j) "
                "(Kajitsuka & Sato 2024); 0: ŷ = W_o Σ a_j v_j"})

    def __post_init__(self):
        check_choice("activation", self.activation, ACTIVATIONS)
        check_int("rank", self.rank, 0)
        check_int("feedforward", self.feedforward, 0)

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
        rows = config.rank or width
        self.q_proj = nn.Linear(width, rows, bias=False)
        self.k_proj = nn.Linear(width, rows, bias=False)
        self.v_proj = nn.Linear(width, rows, bias=False)
        self.o_proj = nn.Linear(rows, width if config.feedforward else target_dim, bias=False)
        if config.feedforward:
            self.feedforward = nn.Sequential(nn.Linear(width, config.feedforward), nn.ReLU(),
                                             nn.Linear(config.feedforward, target_dim))

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: ProjectedAttentionConfig, target_dim: int = 1) -> int:
        """Per prompt, the tokens' keys and values and the query's scores and weights (the training loss reads the
        last position alone)."""
        return points * (3 * (config.rank or dim + target_dim) + 2) + 2 * config.feedforward

    def merged(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The score matrix W_kᵀW_q/√D and the value rows W_o W_v of the merged head (Lemma 2.1's KᵀQ and V)."""
        width = self.dim + self.target_dim
        return self.k_proj.weight.T @ self.q_proj.weight / math.sqrt(width), self.o_proj.weight @ self.v_proj.weight

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._outputs(xs, ys, torch.arange(xs.shape[1], device=xs.device))]

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """With a feed-forward read-out, its input h_i = z_q + W_o Σ_{j<i} a_j v_j (B, N, D) at every query."""
        if not self.config.feedforward:
            return super().layer_features(xs, ys)
        return [self._hidden(xs, ys, torch.arange(xs.shape[1], device=xs.device))[0].to(xs.dtype)]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The output at the last point, the query of the L points before it."""
        return self._outputs(xs, ys, torch.tensor([xs.shape[1] - 1], device=xs.device))[:, 0]

    def _outputs(self, xs: torch.Tensor, ys: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """ŷ at ``positions`` (B, P[, k]), in the prompts' dtype."""
        hidden, attended = self._hidden(xs, ys, positions)
        outputs = (self.feedforward(hidden) if self.config.feedforward else attended).to(xs.dtype)
        return outputs.squeeze(-1) if self.target_dim == 1 else outputs

    def _hidden(self, xs: torch.Tensor, ys: torch.Tensor, positions: torch.Tensor):
        """The query tokens z_q (B, P, D) plus W_o Σ_j a_j v_j (with a feed-forward read-out; else None), and
        W_o Σ_j a_j v_j itself, in the parameters' dtype."""
        reference = self.o_proj.weight
        labels = (ys.unsqueeze(-1) if ys.ndim == 2 else ys).to(reference)
        tokens = torch.cat([xs.to(reference), labels], dim=-1)  # z_j (B, N, D)
        queries = torch.cat([xs.to(reference)[:, positions], torch.zeros_like(labels[:, positions])], dim=-1)
        scores = self.q_proj(queries) @ self.k_proj(tokens).transpose(1, 2) / math.sqrt(tokens.shape[-1])
        attended = self.o_proj(self._weights(scores, positions) @ self.v_proj(tokens))
        return (queries + attended if self.config.feedforward else None), attended

    def _weights(self, scores: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """a (B, P, N) over the points before each position: softmax_j(s), or s_j / i (0 at position 0)."""
        if self.config.activation == "softmax":
            return prefix_weights(scores, positions)
        before = torch.arange(scores.shape[-1], device=scores.device)[None, :] < positions[:, None]
        return scores * before / positions.clamp(min=1)[:, None].to(scores)
