"""Targets of a random N-layer ReLU network on Gaussian-mixture inputs: Wu, Su, Hu, Song & Liu's data (2025).

Wu et al. ("In-context deep learning via transformer models", arXiv 2411.16549, Sec. 5 and App. F) draw the
inputs x ∈ R^d from the mixture w₁ N(−2·1, I_d) + w₂ N(2·1, I_d), pretrain on N(−2·1, I_d) alone (w₂ = 0) and
test on mixtures, with y = f(x) for an N-layer ReLU network f (N = 3, 4 or 6; d = 20) whose parameters they draw
from N(0, I) (App. F.1).  A bias-free ReLU network is positively homogeneous in each layer's weights, so that law gives
the same functions as any other per-layer scale, times a constant; this task draws a fresh f per prompt from the He
initialisation (``icl_sim.theory.network_gd``:
W_l ~ N(0, 2/fan_in) before a ReLU, N(0, 1/fan_in) for the linear read-out, no biases) and divides it by
sqrt(1 + μ²), so that E[y²] = 1 exactly for every mixture (the He law keeps each layer's mean square equal to the
inputs' coordinate mean square, 1 + μ², in expectation over the weights).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, active_mask, parameter, sample_shape
from icl_sim.theory import OLS, Zero
from icl_sim.theory.network_gd import NetworkGD, he_network, network_forward
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class DeepReluTeacher(TaskFamily):
    """Prompts (x_i, f(x_i) + ε_i), f a random ``depth``-layer ReLU network of hidden ``width`` per prompt, x from
    (1 − w₂) N(−μ·1, I) + w₂ N(μ·1, I) with μ = ``mean`` and w₂ = ``shift_weight``; ``latent`` holds the
    teacher's weights ``W1`` … ``WN`` (B, fan_out, fan_in) and each point's component ``component`` (B, N)."""

    name: ClassVar[str] = "deep-relu-teacher"

    dim: int = parameter("input dimension d (Wu et al.: 20)", 20)
    points: int = parameter("points per prompt (Wu et al.: 50 in pretraining, 75 at test)", 50)
    depth: int = parameter("N, the teacher's number of weight layers (Wu et al.: 3, 4, 6)", 3)
    width: int = parameter("the teacher's hidden width", 20)
    mean: float = parameter("μ: the mixture's components are N(−μ·1, I) and N(μ·1, I) (Wu et al.: 2)", 2.0)
    shift_weight: float = parameter("w₂, the weight of N(μ·1, I) (pretraining: 0)", 0.0)
    noise: float = parameter("label noise σ", 0.0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_int("depth", self.depth, 1)
        check_int("width", self.width, 1)
        check_float("mean", self.mean)
        check_float("shift_weight", self.shift_weight, 0.0, maximum=1.0)
        check_float("noise", self.noise, 0.0)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts, each with its own teacher."""
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device, d = generator.device, self.dim
        options = dict(generator=generator, device=device, dtype=dtype)
        shifted = torch.rand(batch_size, n, generator=generator, device=device) < self.shift_weight
        centres = torch.where(shifted, self.mean, -self.mean).to(dtype)
        xs = centres[..., None] + torch.randn(batch_size, n, d, **options)
        if active < d:
            xs = xs * active_mask(d, active, device, dtype)
        weights = he_network(d, self.depth, self.width, generator, (batch_size,), dtype)
        ys = network_forward(weights, xs)[0] / math.sqrt(1.0 + self.mean ** 2)
        ys = ys + self.noise * torch.randn(batch_size, n, **options)
        latent = {f"W{layer + 1}": weight for layer, weight in enumerate(weights)}
        return Prompt(xs, ys, {**latent, "component": shifted.to(dtype)})

    def baselines(self):
        """The teacher's architecture trained on the prompt by 100 GD steps (Wu et al.'s direct training; the
        reproduction tunes the step), least squares and 0."""
        return {"Network GD": NetworkGD(self.depth, self.width, steps=100, lr=0.01), "Least squares": OLS(),
                "Zero": Zero()}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """(E[y²] + σ²)/d = (1 + σ²)/d: predicting 0 (the teacher is scaled to E[y²] = 1)."""
        return (1.0 + self.noise ** 2) / self.dim
