"""Lasso in context: the ℓ1-penalised least-squares fit of every prefix (Tibshirani 1996).

The estimator of sparse linear functions beside least squares: Garg et al. (2022, Sec. 4) compare transformers
trained on sparse linear functions with it, and Yadlowsky et al. (2023) pretrain on mixtures of dense and sparse
linear functions.  At position i, w_i minimises (1/2i) Σ_{j<i} (wᵀx_j − y_j)² + λ‖w‖₁, a function of the prefix's
statistics Ĝ_i = (1/i) Σ x_j x_jᵀ and b̂_i = (1/i) Σ y_j x_j alone, solved for all prefixes at once by FISTA (Beck &
Teboulle 2009): proximal gradient steps of size 1/L, L the largest eigenvalue of Ĝ_i, with Nesterov's momentum.
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float, check_int

from .baselines import StatisticsBaseline


def soft_threshold(values: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
    """sign(v) max(|v| − t, 0): the proximal map of t‖·‖₁."""
    return values.sign() * (values.abs() - threshold).clamp(min=0)


class Lasso(StatisticsBaseline):
    """w_i = argmin_w ½ wᵀĜ_i w − b̂_iᵀw + λ‖w‖₁ at every position, by ``steps`` FISTA iterations from w = 0.

    The objective is (1/2i) Σ_{j<i} (wᵀx_j − y_j)² + λ‖w‖₁ up to a constant; position 0 (no context) predicts 0.
    FISTA's gap to the minimum falls as 2L‖w*‖²/(k + 1)² after k iterations.
    """

    def __init__(self, lam: float, steps: int = 500):
        check_float("lam", lam, 0.0, strict=True)
        check_int("steps", steps, 1)
        self.lam = lam
        self.steps = steps

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        largest = torch.linalg.eigvalsh(gram)[..., -1:]
        step = 1 / largest.clamp(min=torch.finfo(gram.dtype).tiny)
        weights = torch.zeros_like(moment)
        previous, momentum = weights, weights
        pace = 1.0
        for _ in range(self.steps):
            gradient = (gram @ momentum[..., None]).squeeze(-1) - moment
            weights = soft_threshold(momentum - step * gradient, step * self.lam)
            following = (1 + (1 + 4 * pace**2) ** 0.5) / 2
            momentum = weights + (pace - 1) / following * (weights - previous)
            previous, pace = weights, following
        return weights
