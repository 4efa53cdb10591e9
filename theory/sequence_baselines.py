"""Baselines for vector-label prompts: autoregressive sequences and in-context PCA.

Same contract as ``icl_sim.theory.baselines``: ``predict(xs, ys)`` computes in float64
on the device of ``xs`` and position i uses only the context pairs (x_j, y_j), j < i,
and the query x_i; every prefix of every prompt is handled at once.  Here ``ys`` is
(B, N, k) and so are the predictions.

* ``OneStepGD`` and ``VectorOLS`` fit a matrix Ŵ_i with y ≈ Ŵ_i x to each prefix (for the
  autoregressive task x_j = x_j, y_j = x_{j+1}, so Ŵ_i estimates the transition W).
* ``TopEigenvector`` is the exact top principal direction of the prefix second-moment
  matrix (the PCA task's reference; ``icl_sim.theory.algorithms.PowerMethod`` is its
  k-step approximation).
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float

from .baselines import CHUNK_BYTES, Baseline, PointsOnlyBaseline
from .prefix import context_mask, outer_products, prefix_sum


def _vector_labels(ys: torch.Tensor) -> torch.Tensor:
    if ys.ndim != 3:
        raise ValueError(f"ys must have shape (B, N, k) (vector labels), got {tuple(ys.shape)}")
    return ys


class OneStepGD(Baseline):
    """One GD step from Ŵ = 0 on L_i(W) = (1/2i) Σ_{j<i} ‖W x_j − y_j‖², with step ``lr`` = η.

    Ŵ_i = (η/i) Σ_{j<i} y_j x_jᵀ and the prediction is Ŵ_i x_i = (η/i) Σ_{j<i} (x_jᵀ x_i) y_j
    (0 at i = 0).  This is the mesa-optimizer that Zheng et al. (2024, arXiv 2405.16845,
    Thm. 4.1) prove an autoregressively trained one-layer linear attention implements for
    x_{t+1} = W x_t, with a learned scalar step that depends on the initial-token law; η = 1
    here is a reference value, not their learned step.  The per-point normalisation 1/i is
    the convention of ``icl_sim.theory.GD`` (one step there is ``lr/i Σ y_j x_j``).
    Computed as masked attention scores (B, N, N) times the labels: O(B N² (d + k)).
    """

    def __init__(self, lr: float = 1.0):
        check_float("lr", lr, 0.0, strict=True)
        self.lr = lr

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        ys = _vector_labels(ys)
        scores = (xs @ xs.mT) * context_mask(xs)  # scores[b, i, j] = x_jᵀ x_i for j < i
        counts = torch.arange(xs.shape[1], dtype=xs.dtype, device=xs.device).clamp(min=1)
        return self.lr * (scores @ ys) / counts[:, None]


class VectorOLS(Baseline):
    """Ŵ_i = Y_iᵀ pinv(X_i)ᵀ per prefix: min-norm least squares for every output coordinate.

    Row r of Ŵ_i is ``icl_sim.theory.OLS``'s weight vector for labels ys[..., r]; one SVD of
    each masked design X_i (rows j >= i zeroed) serves all k outputs, with OLS's cut-off
    (singular values above eps·max(i, d)·s_max, as ``numpy.linalg.lstsq(rcond=None)``).
    The prediction is Ŵ_i x_i.  With noiseless x_{j+1} = W x_j, Ŵ_i = W on the span of the
    context states, so once they span R^d (generically after d transitions) the prediction
    is exact.  The batch is chunked so the (B, N, N, d) designs stay under ``CHUNK_BYTES``.
    """

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        ys = _vector_labels(ys)
        _, n, d = xs.shape
        chunk = max(1, CHUNK_BYTES // max(1, n * n * max(d, ys.shape[-1]) * xs.element_size()))
        return torch.cat([self._min_norm(x, y) for x, y in zip(xs.split(chunk), ys.split(chunk))])

    @staticmethod
    def _min_norm(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        mask = context_mask(xs).to(xs.dtype)
        designs = mask[None, :, :, None] * xs[:, None]  # (B, N, N, d): row j of X_i
        targets = mask[None, :, :, None] * ys[:, None]  # (B, N, N, k)
        u, s, vh = torch.linalg.svd(designs, full_matrices=False)
        rows, d = designs.shape[-2:]
        size = torch.arange(rows, dtype=s.dtype, device=s.device).clamp(min=d)  # max(i, d)
        kept = s > torch.finfo(s.dtype).eps * size[:, None] * s[..., :1]
        projections = u.mT @ targets  # (B, N, r, k)
        coefficients = torch.where(kept[..., None], projections / torch.where(kept, s, 1)[..., None], 0)
        weights_t = vh.mT @ coefficients  # Ŵ_iᵀ, (B, N, d, k)
        return (xs[:, :, None, :] @ weights_t).squeeze(-2)


def orient(vectors: torch.Tensor) -> torch.Tensor:
    """Flip each vector (..., d) so that its coordinate sum is >= 0 (if the sum is exactly 0,
    its first non-zero coordinate is made positive).

    The sign convention of the PCA task's target direction; it is the sign the power method
    started from the all-ones vector produces (``PowerMethod``: uᵀv_k ≥ 0 with u ∝ 1).
    """
    sign = torch.sign(vectors.sum(dim=-1, keepdim=True))
    first = (vectors != 0).to(torch.int64).argmax(dim=-1, keepdim=True)
    fallback = torch.sign(vectors.gather(-1, first))
    sign = torch.where(sign == 0, fallback, sign)
    return vectors * torch.where(sign == 0, 1.0, sign).to(vectors.dtype)


class TopEigenvector(PointsOnlyBaseline):
    """The top eigenvector of the prefix second-moment matrix G_i = Σ_{j<i} x_j x_jᵀ, per position.

    ``torch.linalg.eigh`` of all (B, N, d, d) prefix matrices at once (uncentred, as the PCA
    task and ``PowerMethod``); the sign follows ``orient`` (coordinate sum >= 0), the PCA
    task's target convention.  At i = 0 (G = 0) it returns the start vector 1/√d of the
    power method.  ``ys`` is ignored (any shape); predictions are (B, N, d) unit vectors.
    The batch is chunked so the prefix matrices stay under ``CHUNK_BYTES``.
    """

    def _predict_points(self, xs: torch.Tensor) -> torch.Tensor:
        _, n, d = xs.shape
        chunk = max(1, CHUNK_BYTES // max(1, n * d * d * xs.element_size()))
        return torch.cat([self._top(x) for x in xs.split(chunk)])

    @staticmethod
    def _top(xs: torch.Tensor) -> torch.Tensor:
        gram = prefix_sum(outer_products(xs))
        _, vectors = torch.linalg.eigh(gram)
        top = orient(vectors[..., :, -1])
        start = torch.full_like(top, xs.shape[-1] ** -0.5)
        empty = (gram.abs().amax(dim=(-2, -1)) == 0)[..., None]
        return torch.where(empty, start, top)
