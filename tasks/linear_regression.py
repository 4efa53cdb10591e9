"""Linear regression in context: y = wᵀx + ε with configurable x law, covariance, prior and pool."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.base import TaskFamily, active_mask, parameter, sample_shape
from icl_sim.theory import KNN, OLS, Averaging, Ridge, Zero
from icl_sim.validation import check_choice, check_float, check_int

#: laws of z: "sphere" is uniform on the unit sphere, "gamma-sphere" that direction scaled by √G, G ~ Gamma(k, θ)
#: (the heavy-tailed covariates of Ahn et al. 2024, Sec. 4.1)
X_DISTRIBUTIONS = ("gaussian", "uniform", "sphere", "gamma-sphere")
ROTATIONS = ("per-prompt", "fixed")
WEIGHT_PRIORS = ("isotropic", "inverse-covariance")
#: response links y = g(wᵀx) + ε (Mahankali et al. 2023, Sec. 5: nonlinear target functions)
LINKS = {"identity": lambda u: u, "relu": torch.relu, "tanh": torch.tanh, "cubic": lambda u: u**3}
NOISE_LAWS = ("fixed", "uniform", "categorical")
#: prompts of the seeded Monte Carlo estimate of E[g(wᵀx)²] for links without a closed form
LINK_MOMENT_PROMPTS = 2**17



@dataclass(frozen=True)
class LinearRegression(TaskFamily):
    """Prompts (x_i, wᵀx_i + ε_i) with w drawn per prompt (or from a finite pool).

    x = Σ^{1/2} z with z standard gaussian, uniform on (-x_bound, x_bound), uniform on the unit sphere
    (``"sphere"``), or a uniform direction scaled by √G with G ~ Gamma(x_gamma_shape, x_gamma_scale), so that
    ‖z‖² ~ Gamma(k, θ) (``"gamma-sphere"``: Ahn et al. 2024, Sec. 4.1, heavy-tailed for small k); Σ is
    the identity unless ``spectrum`` or ``condition_number`` is given, in which case
    Σ = U diag(λ) Uᵀ with a Haar-random rotation U drawn per prompt (``rotation="per-prompt"``,
    the random covariance of Zhang, Frei & Bartlett 2024, §4.3) or once from ``covariance_seed``
    and shared by every prompt (``rotation="fixed"``: the fixed Σ of Ahn et al. 2023 and
    Mahankali et al. 2023).  Weights are w ~ N(0, prior_scale² I) (only ``sparsity`` random
    coordinates non-zero if > 0), or w ~ N(0, prior_scale² Σ⁻¹) with
    ``weight_prior="inverse-covariance"`` (Mahankali et al., Thm 2), where Σ is the covariance
    of x; ``pool_size`` M > 0 fixes M weight vectors (drawn from ``pool_seed``) and each prompt
    picks one uniformly, as in Raventós et al. (2023).  Labels are y = g(wᵀx) + ε with the
    ``link`` g and ε ~ N(0, σ²); σ is ``noise``, or drawn per prompt uniformly from the interval
    (``noise_law="uniform"``) or the set (``"categorical"``) ``noise_levels`` (the mixed noise
    of Vladymyrov et al. 2024).
    """

    name: ClassVar[str] = "linear-regression"
    probe_algorithms: ClassVar[tuple[str, ...]] = ("gd", "preconditioned-gd", "gd-plus-plus", "newton", "ridge")

    dim: int = parameter("input dimension d", 20)
    points: int = parameter("points per prompt N (the last one is the final query)", 41)
    noise: float = parameter("label-noise standard deviation σ", 0.0)
    prior_scale: float = parameter("standard deviation of each entry of w", 1.0)
    x_distribution: str = parameter("law of z: gaussian, uniform, sphere or gamma-sphere", "gaussian")
    x_bound: float = parameter("uniform z lies in (-x_bound, x_bound) (von Oswald et al.: 0.5)", 1.0)
    x_gamma_shape: float = parameter("shape k of gamma-sphere z's ‖z‖² ~ Gamma(k, θ) (Ahn et al. 2024: 0.1)", 0.1)
    x_gamma_scale: float = parameter("scale θ of gamma-sphere z's ‖z‖² ~ Gamma(k, θ) (Ahn et al. 2024: 10)", 10.0)
    condition_number: float = parameter("κ of Σ: eigenvalues geometric from 1 to 1/κ, mean 1", 1.0)
    spectrum: tuple[float, ...] | None = parameter("explicit eigenvalues of Σ (comma-separated, d of them)", None)
    pool_size: int = parameter("finite task pool size M (0 = a fresh w per prompt)", 0)
    pool_seed: int = parameter("seed of the finite task pool", 0)
    sparsity: int = parameter("number of non-zero entries of w (0 = dense)", 0)
    rotation: str = parameter("Σ's rotation: per-prompt (Haar, one per prompt) or fixed (one, from covariance_seed)",
                          "per-prompt")
    covariance_seed: int = parameter("seed of the fixed rotation of Σ", 0)
    weight_prior: str = parameter("law of w: isotropic N(0, s² I) or inverse-covariance N(0, s² Σ⁻¹)", "isotropic")
    link: str = parameter("y = g(wᵀx) + ε with g: identity, relu, tanh or cubic", "identity")
    noise_law: str = parameter("σ: fixed (noise), or per prompt uniform on / categorical over noise_levels", "fixed")
    noise_levels: tuple[float, ...] | None = parameter("the interval (low,high) or the set of per-prompt σ", None)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_float("noise", self.noise, 0.0)
        check_float("prior_scale", self.prior_scale, 0.0, strict=True)
        check_choice("x_distribution", self.x_distribution, X_DISTRIBUTIONS)
        check_float("x_bound", self.x_bound, 0.0, strict=True)
        check_float("x_gamma_shape", self.x_gamma_shape, 0.0, strict=True)
        check_float("x_gamma_scale", self.x_gamma_scale, 0.0, strict=True)
        check_float("condition_number", self.condition_number, 1.0)
        if self.spectrum is not None:
            try:
                values = tuple(float(v) for v in self.spectrum)
            except (TypeError, ValueError):
                raise ValueError(
                    f"spectrum must be a sequence of dim={self.dim} numbers, got {self.spectrum!r}") from None
            object.__setattr__(self, "spectrum", values)
            # isfinite rejects NaN and inf (the old `min(spectrum) <= 0` let NaN through).
            if len(values) != self.dim or not all(math.isfinite(v) and v > 0 for v in values):
                raise ValueError(f"spectrum must hold dim={self.dim} positive finite eigenvalues, got {values}")
            if self.condition_number != 1.0:
                raise ValueError("give either spectrum or condition_number, not both")
        check_int("pool_size", self.pool_size, 0)
        check_int("pool_seed", self.pool_seed, 0)
        check_int("sparsity", self.sparsity, 0, self.dim, maximum_name="dim")
        check_choice("rotation", self.rotation, ROTATIONS)
        check_int("covariance_seed", self.covariance_seed, 0)
        if self.rotation == "fixed" and self.eigenvalues is None:
            raise ValueError("rotation='fixed' needs a spectrum or a condition_number (Σ = I has no rotation)")
        check_choice("weight_prior", self.weight_prior, WEIGHT_PRIORS)
        if self.weight_prior == "inverse-covariance" and (self.pool_size or self.sparsity):
            raise ValueError("weight_prior='inverse-covariance' draws w per prompt: pool_size and sparsity must be 0")
        check_choice("link", self.link, tuple(LINKS))
        self._check_noise_law()

    def _check_noise_law(self):
        check_choice("noise_law", self.noise_law, NOISE_LAWS)
        if self.noise_law == "fixed":
            if self.noise_levels is not None:
                raise ValueError("noise_levels needs noise_law 'uniform' or 'categorical'")
            return
        levels = tuple(float(v) for v in self.noise_levels or ())
        object.__setattr__(self, "noise_levels", levels)
        if self.noise:
            raise ValueError(f"noise_law={self.noise_law!r} draws σ from noise_levels: noise must be 0")
        if not levels or not all(math.isfinite(v) and v >= 0 for v in levels):
            raise ValueError(f"noise_levels must be non-negative finite numbers, got {levels}")
        if self.noise_law == "uniform" and (len(levels) != 2 or levels[0] > levels[1]):
            raise ValueError(f"noise_levels of a uniform noise_law must be (low, high) with low <= high, got {levels}")

    # -- the pieces of a prompt -------------------------------------------------------
    @property
    def eigenvalues(self) -> torch.Tensor | None:
        """Eigenvalues of Σ (float64), or None for the identity."""
        if self.spectrum is not None:
            return torch.tensor(self.spectrum, dtype=torch.float64)
        if self.condition_number != 1.0:
            decay = torch.linspace(0.0, 1.0, self.dim, dtype=torch.float64)
            eigs = self.condition_number ** (-decay)
            return eigs * self.dim / eigs.sum()
        return None

    @property
    def z_variance(self) -> float:
        """Variance of one coordinate of z: E‖z‖²/d for the laws on spheres (z's direction is uniform)."""
        return {"gaussian": 1.0, "uniform": self.x_bound**2 / 3.0, "sphere": 1.0 / self.dim,
                "gamma-sphere": self.x_gamma_shape * self.x_gamma_scale / self.dim}[self.x_distribution]

    def weight_pool(self) -> torch.Tensor | None:
        """The M pool weight vectors (M, d) in float64, a pure function of ``pool_seed``."""
        if self.pool_size == 0:
            return None
        generator = make_generator(self.pool_seed, "pool")
        return self._draw_weights(self.pool_size, generator, torch.float64)

    def _draw_weights(self, count: int, generator: torch.Generator, dtype) -> torch.Tensor:
        device = generator.device
        w = self.prior_scale * torch.randn(count, self.dim, generator=generator, device=device, dtype=dtype)
        if self.sparsity:
            ranks = torch.rand(count, self.dim, generator=generator, device=device).argsort(dim=1).argsort(dim=1)
            w = w * (ranks < self.sparsity)
        return w

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; ``latent`` holds ``w`` (B, d) and ``covariance`` (B, d, d) (for Σ = I one
        matrix broadcast over the batch: read it, do not write to it)."""
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device, d = generator.device, self.dim
        options = dict(generator=generator, device=device, dtype=dtype)

        z = self._draw_z(batch_size, n, generator, dtype)
        eigs = self.eigenvalues
        if eigs is None:  # Σ = I: x = z, with no rotation to draw or multiply by
            eigs, rotation, xs = torch.ones(d, device=device, dtype=dtype), None, z
            covariance = (self.z_variance * torch.eye(d, device=device, dtype=dtype)).expand(batch_size, d, d)
        else:
            eigs = eigs.to(device=device, dtype=dtype)
            rotation = self._rotations(batch_size, generator, dtype)
            xs = (z * eigs.sqrt()) @ rotation.transpose(1, 2)
            covariance = self.z_variance * (rotation * eigs) @ rotation.transpose(1, 2)
        if active < d:
            keep = active_mask(d, active, device, dtype)
            xs = xs * keep
            covariance = covariance * keep[:, None] * keep[None, :]

        pool = self.weight_pool()
        if pool is not None:
            index = torch.randint(self.pool_size, (batch_size,), generator=generator, device=device)
            w = pool.to(device=device, dtype=dtype)[index]
        elif self.weight_prior == "inverse-covariance":  # w = s Σ^{-1/2} g, Σ = z_var U diag(λ) Uᵀ
            g = self.prior_scale * torch.randn(batch_size, d, **options) / (self.z_variance * eigs).sqrt()
            w = g if rotation is None else torch.einsum("bij,bj->bi", rotation, g)
        else:
            w = self._draw_weights(batch_size, generator, dtype)
        # bmm rather than einsum: the same kernel and numbers, without einsum's planning (half the time here)
        ys = LINKS[self.link](torch.bmm(xs, w.unsqueeze(-1)).squeeze(-1))
        sigma = self._noise_levels(batch_size, generator, dtype)
        ys = ys + sigma[:, None] * torch.randn(batch_size, n, **options)
        return Prompt(xs, ys, {"w": w, "covariance": covariance, "noise": sigma})

    def _draw_z(self, batch_size: int, n: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """z (B, n, d) of the ``x_distribution`` law, before Σ^{1/2}."""
        options = dict(generator=generator, device=generator.device, dtype=dtype)
        if self.x_distribution == "uniform":
            return (2 * torch.rand(batch_size, n, self.dim, **options) - 1) * self.x_bound
        z = torch.randn(batch_size, n, self.dim, **options)
        if self.x_distribution == "gaussian":
            return z
        z = z / torch.linalg.vector_norm(z, dim=-1, keepdim=True)  # a gaussian's direction is uniform on the sphere
        if self.x_distribution == "sphere":
            return z
        # torch's Gamma sampler with the explicit generator (torch.distributions.Gamma reads the global one)
        shape = torch.full((batch_size, n, 1), self.x_gamma_shape, device=generator.device, dtype=dtype)
        return z * (self.x_gamma_scale * torch._standard_gamma(shape, generator=generator)).sqrt()

    def _rotations(self, batch_size: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """The rotations U of Σ = U diag(λ) Uᵀ, (B, d, d): one per prompt, or the run's fixed one for all."""
        if self.rotation == "per-prompt":
            return _haar_rotation(batch_size, self.dim, generator, dtype)
        fixed = _haar_rotation(1, self.dim, make_generator(self.covariance_seed, "covariance"), dtype)
        return fixed.to(generator.device).expand(batch_size, self.dim, self.dim)

    def _noise_levels(self, batch_size: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """σ of every prompt, (B,): ``noise``, or drawn from ``noise_levels``."""
        options = dict(device=generator.device, dtype=dtype)
        if self.noise_law == "fixed":
            return torch.full((batch_size,), float(self.noise), **options)
        levels = torch.tensor(self.noise_levels, **options)
        if self.noise_law == "uniform":
            return levels[0] + (levels[1] - levels[0]) * torch.rand(batch_size, generator=generator, **options)
        return levels[torch.randint(len(levels), (batch_size,), generator=generator, device=generator.device)]

    def baselines(self):
        """The reference predictors of Garg et al. (2022), plus Bayes ridge under label noise.

        Ridge(σ²/s²) is the posterior mean only for a linear link, an isotropic prior and one σ.
        """
        predictors = {"OLS": OLS(), "Averaging": Averaging(), "3-NN": KNN(3), "Zero": Zero()}
        if self.noise > 0 and self.link == "identity" and self.weight_prior == "isotropic":
            predictors["Ridge (Bayes)"] = Ridge(self.noise**2 / self.prior_scale**2)
        return predictors

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float:
        """E[y²]/d: the normalised risk of predicting 0, the dashed line of Garg et al.

        With u = wᵀx: E[u²] = s² tr Σ (isotropic prior; × sparsity/d for sparse w) or s² d
        (w ~ N(0, s² Σ⁻¹)); a ReLU keeps half of it (u is symmetric); for gaussian x and dense w
        a cubic gives E[u⁶] = 15 E[(wᵀΣw)³] (Isserlis), = 15 s⁶ d(d + 2)(d + 4) under the inverse-
        covariance prior and 15 s⁶ [(tr Σ)³ + 6 tr Σ tr Σ² + 8 tr Σ³] under the isotropic one.
        Other links and laws use a seeded Monte Carlo estimate over ``LINK_MOMENT_PROMPTS``
        prompts.  Plus E[σ²].
        """
        return (self._signal_moment() + self._noise_moment()) / self.dim

    def _signal_moment(self) -> float:
        """E[g(wᵀx)²]."""
        eigs = self.eigenvalues
        spectrum = self.z_variance * (torch.ones(self.dim, dtype=torch.float64) if eigs is None else eigs)
        s2 = self.prior_scale**2
        exact_cubic = self.link == "cubic" and self.x_distribution == "gaussian" and not self.sparsity
        if exact_cubic and self.weight_prior == "inverse-covariance":
            return 15 * s2**3 * self.dim * (self.dim + 2) * (self.dim + 4)
        if exact_cubic:
            t1, t2, t3 = (float((spectrum**k).sum()) for k in (1, 2, 3))
            return 15 * s2**3 * (t1**3 + 6 * t1 * t2 + 8 * t3)
        if self.link not in ("identity", "relu"):
            noiseless = dataclasses.replace(self, noise=0.0, noise_law="fixed", noise_levels=None)
            prompt = noiseless.sample(LINK_MOMENT_PROMPTS, make_generator(0, "moments"), points=1,
                                      dtype=torch.float64)
            return float(prompt.ys.square().mean())
        if self.weight_prior == "inverse-covariance":
            linear = s2 * self.dim
        else:
            linear = s2 * float(spectrum.sum()) * (self.sparsity / self.dim if self.sparsity else 1.0)
        return linear / 2 if self.link == "relu" else linear

    def _noise_moment(self) -> float:
        """E[σ²] over the noise law."""
        if self.noise_law == "fixed":
            return self.noise**2
        if self.noise_law == "uniform":
            low, high = self.noise_levels
            return (low**2 + low * high + high**2) / 3
        return sum(level**2 for level in self.noise_levels) / len(self.noise_levels)


def _haar_rotation(batch_size: int, d: int, generator: torch.Generator, dtype) -> torch.Tensor:
    """Haar-distributed orthogonal matrices (B, d, d): QR of a gaussian with the sign of R's diagonal fixed."""
    gaussian = torch.randn(batch_size, d, d, generator=generator, device=generator.device, dtype=torch.float64)
    q, r = torch.linalg.qr(gaussian)
    return (q * torch.sign(torch.diagonal(r, dim1=1, dim2=2)).unsqueeze(1)).to(dtype)


