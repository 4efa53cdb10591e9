"""A disentangled linear transformer (Ye, Fu, Jia & Sharan 2025, arXiv 2510.19753, Sec. 4).

Tokens are z_j = (x_j, y_j) ∈ R^{d+k}; position i is its own prompt with context j < i and
query x_i (its label is never read).  Disentangled: each layer concatenates its output to the
residual stream instead of adding it, so the stream of layer ℓ has width (d + k)·2^ℓ.  Over the
context tokens H_0 = Z (rows z_j, j < i), layer ℓ computes linear self-attention

    H_ℓ = [H_{ℓ−1},  (H_{ℓ−1} W_ℓ H_{ℓ−1}ᵀ) H_{ℓ−1} / i],

and the query reads the stream out through a bilinear attention read-out (one per label slot c)

    ŷ_i = Σ_{j<i} (x_iᵀ U x_j) (h_jᵀ V_c x_i) / i + b_c = x_iᵀ U (Σ_j x_j h_jᵀ) V_c x_i / i + b_c.

On a graph prompt (``icl_sim.tasks.graph_connectivity``: node token x_v = [adjacency row A_v ;
one-hot v], query [one-hot s ; one-hot t]) the stream after one layer holds A·W·A·A, i.e. A³
for W = I (the paper's "I-channel") and degree products d_s·(1ᵀA²)_t for W = J = 11ᵀ (its
"J-channel", the degree heuristic); U = "one-hot s against one-hot j" reads node s's row and V
picks column t, so ŷ = (A³)_{st} − b: one layer cubes the adjacency matrix, L layers raise it to
the 3^L-th power (the paper's Theorem: capacity diameter 3^L).  Our read-out may also attend to
the neighbours of s (U against A_j), which adds one hop: a hand-set L-layer model decides
reachability within 3^L + 1 hops here (the paper reads node s's row, 3^L).

Semantics are per prefix, exactly; the tokens of every prefix are materialised as (B, P, N, D)
(tokens j ≥ i zero, so they add nothing to any product).  Predictions after layer ℓ read the
first (d + k)·2^ℓ features of the stream with the matching rows of V.

All pairs at once (the paper's output, the whole connectivity matrix): the query of a graph prompt
is q = [one-hot s ; one-hot t] against the same context (the node tokens), so with G = U M V,
M = Σ_j x_j h_jᵀ, every pair's answer is ŷ_st = qᵀ G q / i + b = (G_{s,s} + G_{s,n+t} + G_{n+t,s} +
G_{n+t,n+t}) / i + b: one pass over the context gives the n × n matrix (``pair_predictions``), equal
to the last position's answer of the prompt asking (s, t), for every pair.  With ``all_pairs`` the
model trains on it: its training prediction is the matrix off its diagonal, row-major (the order of
graph-connectivity's ``all_pairs`` targets).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class DisentangledConfig:
    """Hyper-parameters of :class:`DisentangledTransformer`."""

    layers: int = field(default=1, metadata={"help": "number of disentangled linear-attention layers"})
    init_scale: float = field(default=0.1, metadata={"help": "standard deviation of the initial weights"})
    all_pairs: bool = field(default=False, metadata={
        "help": "train on every ordered pair (s, t), s ≠ t, of a graph prompt at once: the connectivity matrix "
                "(graph-connectivity with all_pairs)"})

    def __post_init__(self):
        check_int("layers", self.layers, 1)
        check_float("init_scale", self.init_scale, 0.0)
        if not isinstance(self.all_pairs, bool):
            raise ValueError(f"all_pairs must be true or false, got {self.all_pairs!r}")  # noqa: TRY004


class DisentangledTransformer(InContextModel):
    """L disentangled linear-attention layers over (x, y) tokens with a bilinear attention read-out."""

    Config = DisentangledConfig
    depth_parameter, default_loss_on = "layers", "last"

    def __init__(self, dim: int, points: int, config: DisentangledConfig = DisentangledConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width = dim + target_dim
        scale = config.init_scale
        self.attention = nn.ParameterList(
            [nn.Parameter(scale * torch.randn(width * 2 ** layer, width * 2 ** layer))
             for layer in range(config.layers)])  # W_ℓ
        self.read_query = nn.Parameter(scale * torch.randn(dim, dim))  # U
        self.read_value = nn.Parameter(scale * torch.randn(target_dim, width * 2 ** config.layers, dim))  # V_c
        self.bias = nn.Parameter(torch.zeros(target_dim))

    @classmethod
    def parameter_count(cls, dim: int, points: int, config: DisentangledConfig, target_dim: int = 1) -> int:
        """W_ℓ of width (d + k)·2^ℓ for ℓ < L, then U, V_c and the bias: the width doubles with every layer."""
        width = dim + target_dim
        attention = sum((width * 2 ** layer) ** 2 for layer in range(config.layers))
        return attention + dim ** 2 + target_dim * width * 2 ** config.layers * dim + target_dim

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: DisentangledConfig, target_dim: int = 1) -> int:
        """The materialised prefixes: N tokens per point, layer ℓ's (d + k)·2^ℓ wide, < (d + k)·2^(L+1) in all."""
        return points ** 2 * (dim + target_dim) * 2 ** (config.layers + 1)

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return self._predictions(xs, ys, torch.arange(xs.shape[1], device=xs.device))

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position only, from its prefix alone."""
        return self._predictions(xs, ys, torch.tensor([xs.shape[1] - 1], device=xs.device))[-1][:, 0]

    def training_predictions(self, xs: torch.Tensor, ys: torch.Tensor, step: int,
                             last_only: bool) -> list[torch.Tensor]:
        """With ``all_pairs``: every pair's score, (B, n(n − 1)), the matrix off its diagonal row-major."""
        if not self.config.all_pairs:
            return super().training_predictions(xs, ys, step, last_only)
        if not last_only:
            raise ValueError("all_pairs answers the query position alone: train with loss_on='last'")
        scores = self.pair_predictions(xs, ys)
        return [scores[:, ~torch.eye(scores.shape[-1], dtype=torch.bool, device=scores.device)]]  # row-major

    def pair_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Every pair's answer on graph prompts (d = 2n), (B, n, n): entry (s, t) is the last position's
        prediction had the query been [one-hot s ; one-hot t], from the context (all positions but the last)."""
        n = self.dim // 2
        labels = ys if ys.ndim == 3 else ys[..., None]
        stream = torch.cat([xs, labels.to(xs.dtype)], dim=-1)[:, :-1]  # the context tokens (B, i, D)
        raw, count = stream[..., :self.dim], stream.shape[1]
        for weights in self.attention:
            scores = torch.einsum("bjk,kl,bml->bjm", stream, weights, stream)
            stream = torch.cat([stream, scores @ stream / count], dim=-1)
        g = torch.einsum("de,bje,bjw,wf->bdf", self.read_query, raw, stream, self.read_value[0]) / count
        sources, targets = g[:, :n, :n].diagonal(dim1=1, dim2=2), g[:, n:, n:].diagonal(dim1=1, dim2=2)
        return (sources[:, :, None] + g[:, :n, n:] + g[:, n:, :n].transpose(1, 2) + targets[:, None, :]
                + self.bias[0])

    def _predictions(self, xs: torch.Tensor, ys: torch.Tensor, positions: torch.Tensor) -> list[torch.Tensor]:
        """Predictions (B, P[, k]) at ``positions`` after each layer, on materialised prefixes (B, P, N, D)."""
        labels = ys if ys.ndim == 3 else ys[..., None]
        index = torch.arange(xs.shape[1], device=xs.device)
        context = (index[None, :] < positions[:, None]).to(xs.dtype)  # (P, N)
        count = positions.to(xs.dtype).clamp(min=1)[None, :, None, None]  # i context tokens (prefix 0: none)
        stream = torch.cat([xs, labels.to(xs.dtype)], dim=-1)[:, None] * context[None, :, :, None]
        raw = stream[..., :self.dim]  # x_j of the context, (B, P, N, d)
        queries = xs[:, positions]  # (B, P, d)
        attended = torch.einsum("bpd,de,bpje->bpj", queries, self.read_query, raw)  # x_iᵀ U x_j
        predictions = []
        for weights in self.attention:
            scores = torch.einsum("bpjk,kl,bpml->bpjm", stream, weights, stream)
            stream = torch.cat([stream, torch.einsum("bpjm,bpmk->bpjk", scores, stream) / count], dim=-1)
            values = torch.einsum("bpjw,cwd,bpd->bpjc", stream, self.read_value[:, :stream.shape[-1]], queries)
            prediction = torch.einsum("bpj,bpjc->bpc", attended, values) / count[..., 0] + self.bias
            predictions.append(prediction.squeeze(-1) if self.target_dim == 1 else prediction)
        return predictions
