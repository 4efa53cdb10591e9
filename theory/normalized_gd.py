"""Normalised gradient descent on the in-context exponential loss (Zhang & Cao, arXiv 2605.06609).

For the context (x_j, y_j), j < i, of position i write u_j = y_j x_j and L_i(w) = Σ_{j<i} exp(−u_jᵀw)
(the exponential loss; its mean differs by the factor 1/i, which cancels below).  Normalised GD
divides the gradient by the loss (Nacson et al. 2019; Ji & Telgarsky 2021):

    w ← w − η ∇L_i(w) / L_i(w) = w + η Σ_{j<i} softmax_j(−u_jᵀw) u_j.

The right-hand side is one softmax attention read-out, query w, keys and values u_j, which is why a
softmax layer can take this step exactly; a gradient divided by its Euclidean norm (``LogisticGD``)
is no softmax read-out.  On separable data the direction w/‖w‖ tends to the max-margin classifier.

What we could read of the paper: its abstract (arxiv.org/abs/2605.06609, PMLR v306 zhang26i) and two
third-party summaries (emergentmind, pith.science) saying that each layer performs one step of
normalised GD "for the exponential loss" and that the output converges in direction to the max-margin
classifier.  The body (its embedding, step size, start) was not readable; the loss-normalised step
above is the one normalisation a softmax read-out computes, our inference from that sentence.

Positions are independent prompts: an empty context (i = 0) leaves w unchanged.
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float, check_int

from .baselines import Baseline
from .prefix import as_float64, context_mask


def ngd_step(w: torch.Tensor, signed: torch.Tensor, lr: float) -> torch.Tensor:
    """One step from the iterates ``w`` (B, M, d) of the last M positions on their contexts in ``signed`` = y_j x_j
    (B, N, d), j < i."""
    allowed = context_mask(signed)[signed.shape[1] - w.shape[1]:]  # (M, N): j < i
    scores = -(w @ signed.mT)  # (B, N_i, N_j): −u_jᵀ w_i
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # an empty context: all-zero weights
    return w + lr * weights @ signed


def ngd_iterates(xs: torch.Tensor, ys: torch.Tensor, steps: int, lr: float,
                 start: torch.Tensor | None = None, *, last_only: bool = False) -> list[torch.Tensor]:
    """w_0 … w_steps (each (B, N, d) float64) of every position, from ``start`` (default 0); ``last_only``: of the
    final position alone, (B, d) each (what a long run keeps)."""
    check_int("steps", steps, 0)
    check_float("lr", lr, 0.0, strict=True)
    xs, ys = as_float64(xs, ys)
    signed = ys[..., None] * xs
    w = torch.zeros_like(xs) if start is None else start.to(xs)
    w = w[:, -1:] if last_only else w  # the final position's iterate needs no other position's
    iterates = [w[:, 0] if last_only else w]
    for _ in range(steps):
        w = ngd_step(w, signed, lr)
        iterates.append(w[:, 0] if last_only else w)
    return iterates


class ExponentialNGD(Baseline):
    """``steps`` normalised GD steps of length ``lr`` on each prefix's exponential loss, from w_0 =
    ``start_scale`` · x_i (the query's own input: 0 by default); predicts the score w_kᵀx_i."""

    def __init__(self, steps: int = 10, lr: float = 1.0, start_scale: float = 0.0):
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        check_float("start_scale", start_scale, 0.0)
        self.steps, self.lr, self.start_scale = steps, lr, start_scale

    def weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The iterate w_k of every position, (B, N, d) float64."""
        xs, ys = as_float64(xs, ys)
        return ngd_iterates(xs, ys, self.steps, self.lr, self.start_scale * xs)[-1]

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return (xs * self.weights(xs, ys)).sum(-1)
