"""One attention layer with a softmax or a Gaussian kernel, some of its matrices frozen: Song et al. 2024's layer.

Song, Han, Zhang, Ding & Hong, "Unraveling the gradient descent dynamics of Transformers" (NeurIPS 2024, arXiv
2411.07538) compare gradient descent on one attention layer whose kernel is the softmax or a Gaussian, training
W^V alone, W^Q alone, or more.  Their theorems' exact layer could not be read here (see
``paper_repro/song_2024.py``); this is the reading icl-sim uses.  For the points x_1..x_{i-1} before position i
and its query z = x_i (all in R^d, d the embedding dimension), the prediction is

    f_i = Σ_{j<i} κ_ij vᵀ x_j,     with q = W^Q z and k_j = W^K x_j (W^Q, W^K ∈ R^{d×d}, v ∈ R^d),

* ``kernel="softmax"``: κ_ij = softmax_j(qᵀk_j / √d), a convex combination of the values vᵀx_j;
* ``kernel="gaussian"``: κ_ij = exp(−‖q − k_j‖² / (2√d)), unnormalised: the RBF attention of Chen et al.'s
  Skyformer (NeurIPS 2021, pkuzengqi/Skyformer ``code/models/attention.py``, ``SoftmaxAttention_RBF``), whose
  Text and Pathfinder tasks Song et al. also use.

W^V W^O is one matrix V ∈ R^{d×k} for k outputs (k = 1: the vector v, as in the reproduction).  ``trained`` names
the matrices gradient descent moves: "value" (V alone: a least-squares problem in V), "query" (W^Q alone) or "all";
the others are buffers, fixed at their start.  W^Q and W^K start with entries N(0, query_scale²/d), V with entries
N(0, value_scale²) (so vᵀx has variance value_scale² for a unit x).  Parameters are float64, as the convergence
counts compare losses near 0.  Every position sees only its prefix, as every icl-sim model; position 0 sees no
point and predicts 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.validation import check_choice, check_float

KERNELS = ("softmax", "gaussian")
TRAINED = ("value", "query", "all")
MATRICES = ("query", "key", "value")


@dataclass(frozen=True)
class KernelAttentionConfig:
    """Hyper-parameters of :class:`KernelAttention`."""

    kernel: str = field(default="softmax", metadata={
        "help": "softmax: softmax_j(qᵀk_j/√d); gaussian: exp(−‖q − k_j‖²/(2√d)), unnormalised"})
    trained: str = field(default="all", metadata={"help": "the matrices GD trains: value (V), query (W^Q) or all"})
    query_scale: float = field(default=1.0, metadata={"help": "W^Q and W^K entries start N(0, query_scale²/d)"})
    value_scale: float = field(default=1.0, metadata={"help": "V's entries start N(0, value_scale²)"})

    def __post_init__(self):
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("trained", self.trained, TRAINED)
        check_float("query_scale", self.query_scale, 0.0)
        check_float("value_scale", self.value_scale, 0.0)

    @property
    def layers(self) -> int:
        """One attention layer (the depth every model reports)."""
        return 1

    def trains(self, matrix: str) -> bool:
        """Whether gradient descent moves ``matrix`` (query, key or value)."""
        return self.trained == "all" or self.trained == matrix


class KernelAttention(InContextModel):
    """f_i = Σ_{j<i} κ(W^Q x_i, W^K x_j) Vᵀx_j with a softmax or Gaussian kernel κ."""

    Config = KernelAttentionConfig

    def __init__(self, dim: int, points: int, config: KernelAttentionConfig = KernelAttentionConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        starts = {"query": config.query_scale / math.sqrt(dim) * torch.randn(dim, dim, dtype=torch.float64),
                  "key": config.query_scale / math.sqrt(dim) * torch.randn(dim, dim, dtype=torch.float64),
                  "value": config.value_scale * torch.randn(dim, target_dim, dtype=torch.float64)}
        for name in MATRICES:
            if config.trains(name):
                setattr(self, name, nn.Parameter(starts[name]))
            else:
                self.register_buffer(name, starts[name])

    def kernel_weights(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """κ (B, P, N) of the queries at ``positions`` (P,) over every point, zero at and after each position."""
        points = xs.to(self.value)
        queries = torch.einsum("kl,bpl->bpk", self.query, points[:, positions])
        keys = torch.einsum("kl,bjl->bjk", self.key, points)
        scale = math.sqrt(self.dim)
        if self.config.kernel == "softmax":
            scores = torch.einsum("bpk,bjk->bpj", queries, keys) / scale
        else:
            scores = -(queries[:, :, None] - keys[:, None]).square().sum(-1) / (2 * scale)
        return prefix_weights(scores, positions, normalise=self.config.kernel == "softmax")

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._outputs(xs, torch.arange(xs.shape[1], device=xs.device))]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The prompt's output f at its last point, the query of the points before it."""
        return self._outputs(xs, torch.tensor([xs.shape[1] - 1], device=xs.device))[:, 0]

    def _outputs(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Σ_j κ_j Vᵀx_j at ``positions``, in the prompts' dtype (the k outputs last, unless k = 1)."""
        values = xs.to(self.value) @ self.value  # (B, N, k)
        outputs = torch.einsum("bpj,bjk->bpk", self.kernel_weights(xs, positions), values).to(xs.dtype)
        return outputs.squeeze(-1) if self.target_dim == 1 else outputs
