"""Linear regression in context: y = wᵀx + ε with configurable x law, covariance, prior and pool."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.base import sample_shape
from icl_sim.theory import KNN, OLS, Averaging, Ridge, Zero
from icl_sim.validation import check_choice, check_float, check_int

X_DISTRIBUTIONS = ("gaussian", "uniform")


def _help(text: str, default):
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class LinearRegression:
    """Prompts (x_i, wᵀx_i + ε_i) with w drawn per prompt (or from a finite pool).

    x = Σ^{1/2} z with z standard gaussian or uniform on (-x_bound, x_bound); Σ is
    the identity unless ``spectrum`` or ``condition_number`` is given, in which case
    Σ = U diag(λ) Uᵀ with a Haar-random rotation U drawn per prompt.  Weights are
    w ~ N(0, prior_scale² I) (only ``sparsity`` random coordinates non-zero if > 0);
    ``pool_size`` M > 0 fixes M weight vectors (drawn from ``pool_seed``) and each
    prompt picks one uniformly, as in Raventós et al. (2023).
    """

    name: ClassVar[str] = "linear-regression"
    metric: ClassVar[str] = "squared_error"
    loss: ClassVar[str] = "squared_error"
    evaluated_positions: ClassVar[str] = "all"
    probe_algorithms: ClassVar[tuple[str, ...]] = ("gd", "preconditioned-gd", "gd-plus-plus", "newton", "ridge")
    target_dim: ClassVar[int] = 1

    dim: int = _help("input dimension d", 20)
    points: int = _help("points per prompt N (the last one is the final query)", 41)
    noise: float = _help("label-noise standard deviation σ", 0.0)
    prior_scale: float = _help("standard deviation of each entry of w", 1.0)
    x_distribution: str = _help("law of z: gaussian or uniform", "gaussian")
    x_bound: float = _help("uniform z lies in (-x_bound, x_bound) (von Oswald et al.: 0.5)", 1.0)
    condition_number: float = _help("κ of Σ: eigenvalues geometric from 1 to 1/κ, mean 1", 1.0)
    spectrum: tuple[float, ...] | None = _help("explicit eigenvalues of Σ (comma-separated, d of them)", None)
    pool_size: int = _help("finite task pool size M (0 = a fresh w per prompt)", 0)
    pool_seed: int = _help("seed of the finite task pool", 0)
    sparsity: int = _help("number of non-zero entries of w (0 = dense)", 0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_float("noise", self.noise, 0.0)
        check_float("prior_scale", self.prior_scale, 0.0, strict=True)
        check_choice("x_distribution", self.x_distribution, X_DISTRIBUTIONS)
        check_float("x_bound", self.x_bound, 0.0, strict=True)
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
        check_int("sparsity", self.sparsity, 0, self.dim)

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
        """Variance of one coordinate of z."""
        return 1.0 if self.x_distribution == "gaussian" else self.x_bound**2 / 3.0

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
        """Draw ``batch_size`` prompts; ``latent`` holds ``w`` (B, d) and ``covariance`` (B, d, d)."""
        n, active = sample_shape(self, batch_size, points, active_dims)
        device, d = generator.device, self.dim
        options = dict(generator=generator, device=device, dtype=dtype)

        if self.x_distribution == "gaussian":
            z = torch.randn(batch_size, n, d, **options)
        else:
            z = (2 * torch.rand(batch_size, n, d, **options) - 1) * self.x_bound
        covariance = self.z_variance * torch.eye(d, device=device, dtype=dtype).expand(batch_size, d, d)
        eigs = self.eigenvalues
        if eigs is not None:
            rotation = _haar_rotation(batch_size, d, generator, dtype)
            eigs = eigs.to(device=device, dtype=dtype)
            xs = (z * eigs.sqrt()) @ rotation.transpose(1, 2)
            covariance = self.z_variance * (rotation * eigs) @ rotation.transpose(1, 2)
        else:
            xs = z
        if active < d:
            keep = (torch.arange(d, device=device) < active).to(dtype)
            xs = xs * keep
            covariance = covariance * keep[:, None] * keep[None, :]

        pool = self.weight_pool()
        if pool is None:
            w = self._draw_weights(batch_size, generator, dtype)
        else:
            index = torch.randint(self.pool_size, (batch_size,), generator=generator, device=device)
            w = pool.to(device=device, dtype=dtype)[index]
        ys = torch.einsum("bnd,bd->bn", xs, w)
        if self.noise:
            ys = ys + self.noise * torch.randn(batch_size, n, **options)
        return Prompt(xs, ys, {"w": w, "covariance": covariance})

    def baselines(self):
        """The reference predictors of Garg et al. (2022), plus Bayes ridge under label noise."""
        predictors = {"OLS": OLS(), "Averaging": Averaging(), "3-NN": KNN(3), "Zero": Zero()}
        if self.noise > 0:
            predictors["Ridge (Bayes)"] = Ridge(self.noise**2 / self.prior_scale**2)
        return predictors

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float:
        """E[y²]/d: the normalised risk of predicting 0, the dashed line of Garg et al."""
        eigs = self.eigenvalues
        trace = self.dim if eigs is None else float(eigs.sum())
        if self.sparsity:
            trace *= self.sparsity / self.dim
        return (self.prior_scale**2 * self.z_variance * trace + self.noise**2) / self.dim


def _haar_rotation(batch_size: int, d: int, generator: torch.Generator, dtype) -> torch.Tensor:
    """Haar-distributed orthogonal matrices (B, d, d): QR of a gaussian with the sign of R's diagonal fixed."""
    gaussian = torch.randn(batch_size, d, d, generator=generator, device=generator.device, dtype=torch.float64)
    q, r = torch.linalg.qr(gaussian)
    return (q * torch.sign(torch.diagonal(r, dim1=1, dim2=2)).unsqueeze(1)).to(dtype)


