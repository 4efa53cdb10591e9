"""A looped softmax attention layer whose state is a linear classifier (Zhang & Cao, arXiv 2605.06609).

Zhang & Cao build softmax transformers whose every layer takes one step of normalised GD on the
in-context exponential loss, and obtain them by training one layer on the one-step target and
looping it.  The step (``icl_sim.theory.normalized_gd``) is a softmax read-out, so one layer here is

    context tokens  u_j = y_j x_j, j < i (fixed across loops),
    query token     w (the classifier of prefix i), starting at w_0 = ``start_scale`` · x_i,
    one loop        w ← w + P Σ_{j<i} softmax_j(u_jᵀ Q w) u_j,
    read-out        ŷ_i = w_iᵀ x_i (a score; its sign is the class),

with P (value) and Q (key-query) d × d matrices shared by all loops.  The construction
P = η I, Q = −I (:func:`constructed_ngd_layer`) is exactly normalised GD with step η.  The
paper's embedding could not be read; this one keeps only what the step needs: the context
enters through y_j x_j (the exponential loss sees the data only through it), the iterate
lives in the query token, and both matrices are trained (none is fixed).

Looping a layer trained for one loop (``loops=1``) at evaluation is ``predict(xs, ys,
loops=K)``; :meth:`LoopedSoftmaxNGD.classifiers` returns the iterates w_k themselves, from
any start, for direction comparisons (the max-margin classifier).
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from icl_sim.models.looped import LoopedModel, _check_loops, _field, window_at
from icl_sim.predictor import check_prompt_shapes
from icl_sim.validation import check_choice, check_float

NGD_INITS = ("random", "construction")


@dataclasses.dataclass(frozen=True)
class LoopedSoftmaxNGDConfig:
    """A looped softmax layer over signed inputs y_j x_j with a classifier query (Zhang & Cao 2026)."""

    loops: int = _field(1, "b: loops in training and by default at prediction (1: the one-step layer)")
    loop_window: int = _field(1, "T: the loss averages over the last T loops (0: all loops)")
    loops_start: int = _field(0, "loop curriculum: b at step 0 (0 = 1), growing by 1 every loops_interval steps")
    loops_interval: int = _field(0, "loop curriculum: steps between increments of b (0 = no curriculum)")
    start_scale: float = _field(1.0, "c ≥ 0: the query's classifier starts at w_0 = c·x_i")
    init_scale: float = _field(0.02, "standard deviation of the random initial weights; construction: the step η")
    init: str = _field("random", "random: Gaussian P and Q; construction: P = init_scale·I, Q = −I (exact "
                                 "normalised GD)")

    def __post_init__(self):
        _check_loops(self)
        check_float("start_scale", self.start_scale, 0.0)
        check_float("init_scale", self.init_scale, 0.0)
        check_choice("init", self.init, NGD_INITS)


class LoopedSoftmaxNGD(LoopedModel):
    """One softmax attention layer, looped; its query token is a classifier w, read out as wᵀx_i."""

    Config = LoopedSoftmaxNGDConfig
    depth_parameter, default_loss_on = "loops", "all"

    def __init__(self, dim: int, points: int, config: LoopedSoftmaxNGDConfig = LoopedSoftmaxNGDConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        if target_dim != 1:
            raise ValueError(f"target_dim must be 1 (a classifier's score), got {target_dim}")
        self.value = nn.Parameter(config.init_scale * torch.randn(dim, dim))  # P
        self.key_query = nn.Parameter(config.init_scale * torch.randn(dim, dim))  # Q
        if config.init == "construction":
            with torch.no_grad():
                self.value.copy_(config.init_scale * torch.eye(dim))
                self.key_query.copy_(-torch.eye(dim))

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: LoopedSoftmaxNGDConfig, target_dim: int = 1) -> int:
        """About three N × N maps (scores, weights, their gradient) and a few N × d tensors per loop with
        gradient (the last T)."""
        return window_at(config, config.loops) * points * (3 * points + 4 * dim)

    def _start(self, xs, ys, start_scale: float | None = None):
        check_prompt_shapes(xs, ys)
        if xs.shape[-1] != self.dim:
            raise ValueError(f"xs must have {self.dim} features (dim), got {xs.shape[-1]}")
        if ys.ndim != 2:
            raise ValueError(f"ys must be (B, N) labels, got {tuple(ys.shape)}")
        scale = self.config.start_scale if start_scale is None else start_scale
        signed = ys.to(xs.dtype)[..., None] * xs
        return scale * xs, (xs, signed)

    def _loop(self, w, context):
        _, signed = context
        n = signed.shape[1]  # w holds the last w.shape[1] positions (all of them but in ``classifiers``)
        allowed = torch.ones(n, n, dtype=torch.bool, device=signed.device).tril(diagonal=-1)[n - w.shape[1]:]
        scores = (w @ self.key_query.T) @ signed.mT  # (B, N_i, N_j): u_jᵀ Q w_i
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1) * allowed.to(scores.dtype)  # an empty context adds nothing
        return w + (weights @ signed) @ self.value.T

    def _features(self, w, context):
        return w

    def _read(self, w, context, last_only):
        xs, _ = context
        scores = (w * xs).sum(-1)
        return scores[:, -1] if last_only else scores

    def classifiers(self, xs: torch.Tensor, ys: torch.Tensor, loops: int, start_scale: float | None = None, *,
                    last_only: bool = False) -> list[torch.Tensor]:
        """The classifiers w_1 … w_loops of every position (B, N, d), or of the final one (B, d) if ``last_only``,
        from w_0 = ``start_scale``·x_i (default the config's), without gradient."""
        with torch.no_grad():
            w, context = self._start(xs, ys, start_scale)
            w = w[:, -1:] if last_only else w  # the final position's classifier needs no other position's
            out = []
            for _ in range(loops):
                w = self._loop(w, context)
                out.append(w[:, 0] if last_only else w)
        return out


def constructed_ngd_layer(dim: int, points: int, lr: float, loops: int = 1,
                          start_scale: float = 0.0) -> LoopedSoftmaxNGD:
    """The layer that is normalised GD with step ``lr``: P = lr·I, Q = −I."""
    return LoopedSoftmaxNGD(dim, points, LoopedSoftmaxNGDConfig(loops=loops, start_scale=start_scale,
                                                                init_scale=lr, init="construction"))
