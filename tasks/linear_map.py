"""A fixed linear input–output map y = M x on whitened inputs: the setting of Saxe et al. (2013).

Saxe, McClelland & Ganguli, "Exact solutions to the nonlinear dynamics of learning in deep
linear neural networks" (ICLR 2014, arXiv 1312.6120), Sec. 2: a network is trained on pairs
(x, y) with input correlation Σ11 = E[x xᵀ] = I (whitened) and input–output correlation
Σ31 = E[y xᵀ] = M, whose singular value decomposition M = U S Vᵀ gives the modes that a deep
linear network learns one by one.  Here M = Q diag(s) Qᵀ is symmetric (U = V = Q), so a
network started from W2·W1 ∝ I is already aligned with every mode (the decoupled initial
conditions of their exact solution).  The map is the same for every prompt: nothing is
learned in context; the points of a prompt are independent examples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.base import TaskFamily, parameter, sample_shape
from icl_sim.tasks.linear_regression import _haar_rotation
from icl_sim.theory.baselines import Zero
from icl_sim.theory.sequence_baselines import VectorOLS
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class LinearMap(TaskFamily):
    """Prompts of N pairs (x_i, M x_i + σ ε_i), x_i ~ N(0, I_d), with one fixed d × d map M.

    M = Q diag(s_1, ..., s_r, 0, ..., 0) Qᵀ: ``singular_values`` s (r ≤ d of them, the rest 0)
    and Q Haar on O(d), a pure function of ``teacher_seed`` (``teacher_seed`` = 0 keeps Q = I).
    ``ys`` (B, N, d) are vector labels (target_dim = d); every position is scored.  The latent
    ``M`` (B, d, d) is the same matrix for every prompt.  With ``active_dims`` = a < d, x is zero
    beyond its first a coordinates (y = M x still).
    """

    name: ClassVar[str] = "linear-map"

    dim: int = parameter("input and output dimension d", 3)
    points: int = parameter("independent pairs per prompt N", 8)
    singular_values: tuple[float, ...] = parameter("the non-zero singular values s of M (at most d)", (3.0, 1.5))
    teacher_seed: int = parameter("seed of M's fixed rotation Q (0: Q = I)", 0)
    noise: float = parameter("label-noise standard deviation σ", 0.0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        try:
            values = tuple(float(v) for v in self.singular_values)
        except (TypeError, ValueError):
            raise ValueError(f"singular_values must be a sequence of numbers, got {self.singular_values!r}") from None
        if not values or len(values) > self.dim or not all(math.isfinite(v) and v >= 0 for v in values):
            raise ValueError(f"singular_values must hold 1 to dim={self.dim} non-negative finite numbers, got {values}")
        object.__setattr__(self, "singular_values", values)
        check_int("teacher_seed", self.teacher_seed, 0)
        check_float("noise", self.noise, 0.0)

    @property
    def target_dim(self) -> int:
        return self.dim

    def modes(self) -> torch.Tensor:
        """Q (d, d) float64: column i is the input and output direction of singular value i."""
        if self.teacher_seed == 0:
            return torch.eye(self.dim, dtype=torch.float64)
        return _haar_rotation(1, self.dim, make_generator(self.teacher_seed, "covariance"), torch.float64)[0]

    def teacher(self) -> torch.Tensor:
        """M = Q diag(s) Qᵀ (d, d) float64."""
        spectrum = torch.zeros(self.dim, dtype=torch.float64)
        spectrum[:len(self.singular_values)] = torch.tensor(self.singular_values, dtype=torch.float64)
        q = self.modes()
        return q @ torch.diag(spectrum) @ q.T

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; ``latent`` holds ``M`` (B, d, d)."""
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device = generator.device
        xs = torch.randn(batch_size, n, active, generator=generator, device=device, dtype=dtype)
        xs = torch.nn.functional.pad(xs, (0, self.dim - active))
        teacher = self.teacher().to(device=device, dtype=dtype)
        ys = xs @ teacher.T
        if self.noise:
            ys = ys + self.noise * torch.randn(ys.shape, generator=generator, device=device, dtype=dtype)
        return Prompt(xs, ys, {"M": teacher.expand(batch_size, -1, -1)})

    def baselines(self):
        """Least squares on the prompt's own pairs (exact after d noiseless points) and Zero."""
        return {"OLS": VectorOLS(), "Zero": Zero()}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float:
        """E‖y‖²/d, the risk of predicting 0: (Σ s_i² + d σ²)/d, as E[x xᵀ] = I."""
        return (sum(s * s for s in self.singular_values) + self.dim * self.noise ** 2) / self.dim
