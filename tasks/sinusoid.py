"""Sinusoids in context, and their convex combinations with a linear function (Yadlowsky et al. 2023).

Yadlowsky, Doshi & Tripuraneni ("Pretraining data mixtures enable narrow model selection capabilities in
transformer models", arXiv 2311.00871) pretrain transformers on mixtures of function families, sinusoids among
them, and test them outside the mixture: on convex combinations of two families and on sinusoids whose frequency
lies outside the pretraining range.  Here a prompt's function is

    f(x) = α wᵀx + (1 − α) a sin(ω uᵀx + φ),

x ~ N(0, I_d), with per prompt w ~ N(0, I_d), u uniform on the unit sphere, ω uniform on
[``frequency_low``, ``frequency_high``] and φ uniform on [0, 2π); ``amplitude`` a and ``linear_weight`` α are
fixed.  α = 0 (the default) is the pure sinusoid family, α = 1 the linear family of ``linear-regression``, and
α in between a convex combination of the two.  The form (one direction, one frequency, a random phase) is ours:
the paper's text beyond its abstract could not be read here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, active_mask, parameter, sample_shape
from icl_sim.theory import KNN, OLS, Averaging, Zero
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class Sinusoid(TaskFamily):
    """Prompts (x_i, α wᵀx_i + (1 − α) a sin(ω uᵀx_i + φ)) with x_i ~ N(0, I_d) and w, u, ω, φ drawn per prompt.

    The latent holds ``w`` (B, d), ``direction`` u (B, d), ``frequency`` ω (B,) and ``phase`` φ (B,).  With
    ``active_dims`` = k < d, x and u are zero beyond their first k coordinates (u re-normalised on them).
    """

    name: ClassVar[str] = "sinusoid"

    dim: int = parameter("input dimension d", 1)
    points: int = parameter("points per prompt N (the last one is the final query)", 21)
    frequency_low: float = parameter("least frequency ω (uniform on [low, high] per prompt)", 1.0)
    frequency_high: float = parameter("largest frequency ω", 2.0)
    amplitude: float = parameter("amplitude a of the sinusoid", 1.0)
    linear_weight: float = parameter("α of the convex combination α wᵀx + (1 − α) a sin(ω uᵀx + φ) (0: a pure "
                                     "sinusoid, 1: a linear function)", 0.0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_float("frequency_low", self.frequency_low, 0.0)
        check_float("frequency_high", self.frequency_high, self.frequency_low)
        check_float("amplitude", self.amplitude, 0.0, strict=True)
        check_float("linear_weight", self.linear_weight, 0.0, maximum=1.0)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        options = dict(generator=generator, device=generator.device, dtype=dtype)
        keep = active_mask(self.dim, active, generator.device, dtype)
        xs = torch.randn(batch_size, n, self.dim, **options) * keep
        w = torch.randn(batch_size, self.dim, **options) * keep
        direction = torch.randn(batch_size, self.dim, **options) * keep
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True)
        span = self.frequency_high - self.frequency_low
        frequency = self.frequency_low + span * torch.rand(batch_size, **options)
        phase = 2 * math.pi * torch.rand(batch_size, **options)
        projection = torch.bmm(xs, direction.unsqueeze(-1)).squeeze(-1)
        wave = self.amplitude * torch.sin(frequency[:, None] * projection + phase[:, None])
        linear = torch.bmm(xs, w.unsqueeze(-1)).squeeze(-1)
        ys = self.linear_weight * linear + (1 - self.linear_weight) * wave
        return Prompt(xs, ys, {"w": w, "direction": direction, "frequency": frequency, "phase": phase})

    def baselines(self):
        """Garg et al.'s reference predictors: least squares (the linear part's learner), averaging, 3-NN, 0."""
        return {"OLS": OLS(), "Averaging": Averaging(), "3-NN": KNN(3), "Zero": Zero()}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float:
        """E[y²]/d, the risk of predicting 0 per dimension: α² E[(wᵀx)²] + (1 − α)² a² E[sin²] = α² d +
        (1 − α)² a²/2 (φ uniform makes E[sin²] = 1/2 whatever ω uᵀx is, and the cross term vanishes, w being
        centred and independent of the rest)."""
        alpha = self.linear_weight
        return (alpha**2 * self.dim + (1 - alpha) ** 2 * self.amplitude**2 / 2) / self.dim
