"""Linear regression with the Toeplitz ("KCM") covariance Σ_ij = ρ^|i−j|: Boursier & Boyer's data (2025, Sec. 6).

Boursier & Boyer ("Softmax as linear attention in the large-prompt regime", arXiv 2512.11784) draw x ~ N(0, Σ)
with the Kac-Murdock-Szegő matrix Σ_ij = ρ^|i−j| (their "KCM 0.5", eboursier/softmax_as_linear
``data_utils.py``, ``generate_covariance_matrix``).  It is the linear-regression task with one Σ shared by every
prompt, x = z Λ^{1/2} Uᵀ for Σ = U diag(Λ) Uᵀ, so every other option (prior, noise, links) is the parent's.  A
task of its own rather than a field of ``linear-regression``: a new field would enter the saved task parameters of
every linear-regression run (``dataclasses.asdict``) and change their configs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.tasks.base import parameter
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.validation import check_float


def kcm_covariance(dim: int, correlation: float) -> torch.Tensor:
    """The d × d matrix Σ_ij = ρ^|i−j| (float64): positive definite for |ρ| < 1."""
    index = torch.arange(dim, dtype=torch.float64)
    return correlation ** (index[:, None] - index[None, :]).abs()


@dataclass(frozen=True)
class KCMRegression(LinearRegression):
    """Prompts (x_i, wᵀx_i + ε_i) with x = Σ^{1/2} z and Σ_ij = ρ^|i−j| (``correlation`` ρ) for every prompt.

    Σ replaces the parent's spectrum: ``spectrum``, ``condition_number``, ``rotation`` and ``covariance_seed``
    must keep their defaults.
    """

    name: ClassVar[str] = "kcm-regression"

    correlation: float = parameter("ρ of the covariance Σ_ij = ρ^|i−j| (Boursier & Boyer: 0.5)", 0.5)

    def __post_init__(self):
        check_float("correlation", self.correlation, -1.0, strict=True, maximum=1.0)
        if self.correlation == 1.0:
            raise ValueError(f"correlation must be < 1 (Σ positive definite), got {self.correlation}")
        if (self.spectrum, self.condition_number, self.rotation, self.covariance_seed) != (None, 1.0, "per-prompt", 0):
            raise ValueError("kcm-regression fixes Σ_ij = ρ^|i−j|: leave spectrum, condition_number, rotation and "
                             "covariance_seed at their defaults")
        super().__post_init__()

    def _eigendecomposition(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.linalg.eigh(kcm_covariance(self.dim, self.correlation))

    @property
    def eigenvalues(self) -> torch.Tensor:
        """Eigenvalues of Σ (float64)."""
        return self._eigendecomposition()[0]

    def _rotations(self, batch_size: int, generator: torch.Generator, dtype) -> torch.Tensor:
        """Σ's eigenvectors U (B, d, d), the same for every prompt (nothing is drawn)."""
        rotation = self._eigendecomposition()[1].to(device=generator.device, dtype=dtype)
        return rotation.expand(batch_size, self.dim, self.dim)
