"""Prefix statistics: what position i of a prompt may know, for every i at once.

Position i is predicted from the context points j < i.  Each helper returns, for
every position, a statistic of that exclusive prefix (sums, means, masked designs),
computed for all positions and batch elements in one vectorised pass.
"""
from __future__ import annotations

import torch

from icl_sim.predictor import check_prompt_shapes


def as_float64(xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Check prompt shapes; return ``xs``, ``ys`` as float64 on the device of ``xs``."""
    check_prompt_shapes(xs, ys)
    return xs.to(torch.float64), ys.to(device=xs.device, dtype=torch.float64)


def prefix_counts(xs: torch.Tensor) -> torch.Tensor:
    """Number of context points before each position, i = 0, 1, ..., N-1, shape (N,)."""
    return torch.arange(xs.shape[1], dtype=xs.dtype, device=xs.device)


def prefix_sum(terms: torch.Tensor) -> torch.Tensor:
    """Σ_{j<i} terms[:, j] for every position i along dim 1 (0 at i = 0)."""
    total = terms.cumsum(dim=1)
    return torch.cat([torch.zeros_like(total[:, :1]), total[:, :-1]], dim=1)


def prefix_mean(terms: torch.Tensor) -> torch.Tensor:
    """(1/i) Σ_{j<i} terms[:, j] for every position i along dim 1 (0 at i = 0)."""
    counts = prefix_counts(terms).clamp(min=1)
    return prefix_sum(terms) / counts.view(-1, *([1] * (terms.ndim - 2)))


def outer_products(xs: torch.Tensor) -> torch.Tensor:
    """x_j x_jᵀ for every point, (B, N, d, d); its prefix sum is the Gram matrix G_i."""
    return xs[..., :, None] * xs[..., None, :]


def label_moments(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """y_j x_j for every point, (B, N, d); its prefix sum is b_i = Xᵀy."""
    return ys[..., None] * xs


def least_squares_statistics(xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Ĝ_i = (1/i) Σ_{j<i} x_j x_jᵀ (B, N, d, d) and b̂_i = (1/i) Σ_{j<i} y_j x_j (B, N, d) for every position.

    The gradient of the in-context loss (1/2i) Σ_{j<i} (wᵀx_j − y_j)² is Ĝ_i w − b̂_i, so every
    algorithm of the gradient-descent family iterates on these two statistics alone.
    """
    return prefix_mean(outer_products(xs)), prefix_mean(label_moments(xs, ys))


def context_statistics(xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Ĝ = (1/n) Σ_j x_j x_jᵀ (B, d, d) and b̂ = (1/n) Σ_j y_j x_j (B, d) over all n points given (0 if n = 0).

    The statistics of one whole context: ``least_squares_statistics`` at a query placed after it.
    """
    count = max(xs.shape[1], 1)
    return xs.mT @ xs / count, (xs.mT @ ys[..., None]).squeeze(-1) / count


def context_mask(xs: torch.Tensor) -> torch.Tensor:
    """mask[i, j] = (j < i): whether point j is context for position i, (N, N) bool."""
    n = xs.shape[1]
    return torch.ones(n, n, dtype=torch.bool, device=xs.device).tril(diagonal=-1)


def masked_designs(xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position designs X_i (B, N, N, d) and targets y_i (B, N, N): row j kept if j < i, else 0."""
    mask = context_mask(xs).to(xs.dtype)
    return mask[None, :, :, None] * xs[:, None], mask * ys[:, None]
