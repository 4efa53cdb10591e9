"""In-context learning of a linear dynamical system: x_{t+1} = W x_t + σ ε_t (Zheng et al. 2024).

Zheng, Huang, Wang, Wu, Zhu & Li, "On Mesa-Optimization in Autoregressively Trained
Transformers: Emergence and Capability", NeurIPS 2024 (arXiv 2405.16845): sequences of an
AR(1) process x_{t+1} = W x_t with W = diag(λ_1, ..., λ_d), |λ_k| = 1 ("diagonal unitary"),
and an initial token x_1 drawn from a chosen law (Gaussian, sparse, all-ones); a one-layer
linear attention trained on next-token prediction learns one GD step on the in-context OLS
problem min_W Σ_j ‖x_{j+1} − W x_j‖².
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, parameter, sample_shape
from icl_sim.tasks.linear_regression import _haar_rotation
from icl_sim.theory.baselines import Zero
from icl_sim.theory.sequence_baselines import OneStepGD, VectorOLS
from icl_sim.validation import check_choice, check_float, check_int

TRANSITIONS = ("orthogonal", "diagonal-unitary", "contractive")
INITIALS = ("gaussian", "sparse", "ones", "gaussian-real", "uniform")



@dataclass(frozen=True)
class Autoregressive(TaskFamily):
    """Prompts of one trajectory x_0, x_1, ..., x_N of x_{t+1} = W x_t + σ ε_t in R^d, W per prompt.

    Encoding: ``xs[:, t] = x_t`` and ``ys[:, t] = x_{t+1}`` (vector labels, target_dim = d),
    t = 0..N−1 with N = ``points`` transitions, so ``xs[:, t+1] == ys[:, t]`` and position t
    predicts x_{t+1} from the transitions (x_j, x_{j+1}), j < t, and the query x_t.  Every
    position is scored (squared error / d).

    ``transition`` (W):
      * ``orthogonal``: Haar-distributed on O(d) (QR of a Gaussian, sign-fixed).
      * ``diagonal-unitary``: the real form of Zheng et al.'s diag(e^{iθ_k}): 2×2 rotation
        blocks [[cos θ, −sin θ], [sin θ, cos θ]] with θ ~ U[0, 2π) on coordinates (0,1),
        (2,3), ...; for odd d the last diagonal entry is ±1 (a random sign).
      * ``contractive``: a Gaussian matrix G rescaled to spectral radius ``spectral_radius``
        (ρ < 1), W = ρ G / max|eig(G)|, so x_t → 0 geometrically.
    ``initial`` (x_0, scaled by ``initial_scale`` = s):
      * ``gaussian``: N(0, s² I).
      * ``sparse``: s·ξ·e_k, k uniform in 0..d−1, ξ a random sign (±1).  Zheng et al.'s
        sparse initial token (their Example 4.1, scales varied in their Table 1); we use a
        fixed magnitude s with a random sign because their recovery result needs the
        learned step times ‖x‖² to be constant, which a Gaussian magnitude would break.
        (The text of Example 4.1 was not available to us; this is our reading.)
      * ``ones``: s·1/√d (Zheng et al.'s "full-one" start point, normalised to norm s).
      * ``gaussian-real``: N(0, s²) on the even coordinates and 0 on the odd ones: in the complex
        reading of ``diagonal-unitary`` (coordinates 2k, 2k+1 = Re, Im of x_k) a real Gaussian
        x_k ~ N(0, s²), Zheng et al.'s Gaussian token as their code draws it (``get_x1``).
      * ``uniform``: U[−s, s]^d, each coordinate independent (von Oswald et al. 2023b's s_1, ``range = 1``
        in their ``configs/config.py``): mean 0, variance s²/3.
    ``noise`` σ adds σ ε_t, ε_t ~ N(0, I), to every transition (0 = Zheng et al.'s setting).

    The latent is ``W`` (B, d, d).  With ``active_dims`` = a < d the process runs in the
    first a coordinates (W is a×a there and 0 elsewhere; x is 0 on the rest).  The time
    recursion is a loop over the N positions, by design (each step is one batched
    (B, d, d) matvec); everything else is vectorised.
    """

    name: ClassVar[str] = "autoregressive"

    dim: int = parameter("state dimension d", 5)
    points: int = parameter("transitions per prompt N (positions; the sequence has N+1 states)", 20)
    noise: float = parameter("transition-noise standard deviation σ", 0.0)
    transition: str = parameter("law of W: orthogonal, diagonal-unitary or contractive", "diagonal-unitary")
    spectral_radius: float = parameter("spectral radius of a contractive W, in (0, 1)", 0.9)
    initial: str = parameter("law of x_0: gaussian, sparse (±s·e_k), ones (s·1/√d), gaussian-real (N(0, s²) on "
                             "the even coordinates) or uniform (U[−s, s]^d)", "gaussian")
    initial_scale: float = parameter("scale s of x_0 (standard deviation for gaussian, half-width for uniform, "
                                     "norm otherwise)", 1.0)
    gd_step: float = parameter("step η of the one-step GD baseline: Ŵ = (η/t) Σ_{j<t} x_{j+1} x_jᵀ", 1.0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_float("noise", self.noise, 0.0)
        check_choice("transition", self.transition, TRANSITIONS)
        check_float("spectral_radius", self.spectral_radius, 0.0, strict=True, maximum=1.0)
        if self.spectral_radius >= 1.0:
            raise ValueError(f"spectral_radius must be < 1, got {self.spectral_radius}")
        check_choice("initial", self.initial, INITIALS)
        check_float("initial_scale", self.initial_scale, 0.0, strict=True)
        check_float("gd_step", self.gd_step, 0.0, strict=True)

    @property
    def target_dim(self) -> int:
        return self.dim

    # -- the pieces of a prompt -------------------------------------------------------
    def transition_matrices(self, batch_size: int, d: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """W (B, d, d) drawn from ``transition`` in dimension d."""
        device = generator.device
        if self.transition == "orthogonal":
            return _haar_rotation(batch_size, d, generator, dtype)
        if self.transition == "diagonal-unitary":
            blocks = d // 2
            theta = 2 * math.pi * torch.rand(batch_size, blocks, generator=generator, device=device,
                                             dtype=torch.float64)
            cos, sin = theta.cos(), theta.sin()
            w = torch.zeros(batch_size, d, d, device=device, dtype=torch.float64)
            even = torch.arange(blocks, device=device) * 2
            w[:, even, even], w[:, even + 1, even + 1] = cos, cos
            w[:, even, even + 1], w[:, even + 1, even] = -sin, sin
            if d % 2:
                sign = 2.0 * torch.randint(2, (batch_size,), generator=generator, device=device) - 1.0
                w[:, d - 1, d - 1] = sign
            return w.to(dtype)
        gaussian = torch.randn(batch_size, d, d, generator=generator, device=device, dtype=torch.float64)
        radius = torch.linalg.eigvals(gaussian).abs().amax(dim=-1)
        return (self.spectral_radius * gaussian / radius[:, None, None]).to(dtype)

    def initial_states(self, batch_size: int, d: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """x_0 (B, d) drawn from ``initial`` in dimension d."""
        device, s = generator.device, self.initial_scale
        if self.initial == "gaussian":
            return s * torch.randn(batch_size, d, generator=generator, device=device, dtype=dtype)
        if self.initial == "gaussian-real":
            real_parts = (torch.arange(d, device=device) % 2 == 0).to(dtype)
            return s * real_parts * torch.randn(batch_size, d, generator=generator, device=device, dtype=dtype)
        if self.initial == "uniform":
            return s * (2 * torch.rand(batch_size, d, generator=generator, device=device, dtype=dtype) - 1)
        if self.initial == "sparse":
            index = torch.randint(d, (batch_size,), generator=generator, device=device)
            sign = 2.0 * torch.randint(2, (batch_size,), generator=generator, device=device).to(dtype) - 1.0
            return s * sign[:, None] * torch.nn.functional.one_hot(index, d).to(dtype)
        return torch.full((batch_size, d), s / math.sqrt(d), device=device, dtype=dtype)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` trajectories; ``latent`` holds ``W`` (B, d, d)."""
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device, d = generator.device, self.dim

        w = self.transition_matrices(batch_size, active, generator, dtype)
        x0 = self.initial_states(batch_size, active, generator, dtype)
        noise = (self.noise * torch.randn(batch_size, n, active, generator=generator, device=device, dtype=dtype)
                 if self.noise else None)
        ys = torch.empty(batch_size, n, active, device=device, dtype=dtype)
        state = x0
        for t in range(n):  # the recursion over time is sequential by nature; each step is batched
            state = (w @ state[..., None]).squeeze(-1)
            if noise is not None:
                state = state + noise[:, t]
            ys[:, t] = state
        xs = torch.cat([x0[:, None], ys[:, :-1]], dim=1)
        if active < d:
            pad = d - active
            xs = torch.nn.functional.pad(xs, (0, pad))
            ys = torch.nn.functional.pad(ys, (0, pad))
            w = torch.nn.functional.pad(w, (0, pad, 0, pad))
        return Prompt(xs, ys, {"W": w})

    def baselines(self):
        """One GD step on the in-context transitions (η = ``gd_step``), min-norm OLS, and Zero."""
        return {"one-step GD": OneStepGD(self.gd_step), "OLS": VectorOLS(), "Zero": Zero()}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float | None:
        """E‖x_{t+1}‖²/d, the risk of predicting 0, where it does not depend on t; else None.

        Orthogonal and rotation-block W preserve norms, so without noise ‖x_t‖ = ‖x_0‖ and
        E‖x_0‖²/d is s² (gaussian), s²/3 (uniform) or s²/d (sparse, ones).  With noise or a contractive W the
        level changes with t and no single dashed line exists.
        """
        if self.noise or self.transition == "contractive":
            return None
        s2 = self.initial_scale ** 2
        if self.initial == "gaussian-real":
            return s2 * ((self.dim + 1) // 2) / self.dim
        if self.initial == "uniform":
            return s2 / 3
        return s2 if self.initial == "gaussian" else s2 / self.dim
