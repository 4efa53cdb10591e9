"""A query and N keys labelled by a function of their inner products averaged over the keys: the permutation-invariant
targets of Fu, Guo, Bai & Mei, "What can a single attention layer learn? A study through the random features lens"
(NeurIPS 2023, arXiv 2307.11353), whose abstract names targets permutation invariant in the keys and, for a
query-key matrix sampled with a non-zero mean, "natural" targets built from x_0ᵀx_i.

Tokens x_0 (the query), x_1, ..., x_N i.i.d. uniform on the sphere of radius √d in R^d; the label is

    y = (1/N) Σ_i F(z_i) − E[F(z)],   z_i = ⟨x_0, x_i⟩/√d,

for a link F: ``relu`` (F(z) = max(z, 0): the output of one ReLU attention head with query-key matrix I and a
constant value, the target that a query-key prior centred on I is built for), or the normalised Hermite
polynomials ``linear`` He₁(z), ``quadratic`` He₂(z)/√2 and ``cubic`` He₃(z)/√6 (targets of rising degree).  Given
x_0 the z_i are i.i.d. with a law that does not depend on x_0 (rotation invariance), so they are independent and
z = √d t with t the first coordinate of a uniform unit vector: density ∝ (1 − t²)^((d−3)/2), E z² = 1,
E z⁴ = 3d/(d + 2), E z⁶ = 15d²/((d + 2)(d + 4)), E max(z, 0) = √d Γ(d/2)/(2√π Γ((d+1)/2)).  Hence y is centred and
Var y = Var F(z)/N in closed form (:meth:`KeyAverage.target_variance`).

Encoding: ``xs`` (B, N + 1, d), the keys first and the query last; ``ys`` (B, N + 1), 0 at the keys and the label
at the query, the only position evaluated.  Latent: ``inner`` (B, N), the z_i.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_choice, check_int

LINKS = ("relu", "linear", "quadratic", "cubic")


def sphere_moment(dim: int, order: int) -> float:
    """E z^order for z = ⟨x_0, x_i⟩/√d, x's uniform on the sphere of radius √d in R^dim (even orders 0-6)."""
    return {0: 1.0, 2: 1.0, 4: 3 * dim / (dim + 2), 6: 15 * dim ** 2 / ((dim + 2) * (dim + 4))}[order]


def relu_mean(dim: int) -> float:
    """E max(z, 0) = √d Γ(d/2) / (2√π Γ((d+1)/2))."""
    return math.sqrt(dim) * math.exp(math.lgamma(dim / 2) - math.lgamma((dim + 1) / 2)) / (2 * math.sqrt(math.pi))


@dataclass(frozen=True)
class KeyAverage(TaskFamily):
    """y = (1/N) Σ_i F(⟨x_0, x_i⟩/√d) − E F, tokens on the sphere of radius √d; the query last, its label alone."""

    name: ClassVar[str] = "key-average"
    evaluated_positions: ClassVar[str] = "last"

    dim: int = parameter("token dimension d", 8)
    keys: int = parameter("keys N before the query", 8)
    link: str = parameter(f"F, one of {', '.join(LINKS)}", "relu")

    def __post_init__(self):
        check_int("dim", self.dim, 2)
        check_int("keys", self.keys, 1)
        check_choice("link", self.link, LINKS)

    @property
    def points(self) -> int:
        """The N keys and the query."""
        return self.keys + 1

    def link_values(self, inner: torch.Tensor) -> torch.Tensor:
        """F(z) − E F(z), elementwise."""
        if self.link == "relu":
            return inner.relu() - relu_mean(self.dim)
        if self.link == "linear":
            return inner
        if self.link == "quadratic":
            return (inner.square() - 1) / math.sqrt(2)
        return (inner ** 3 - 3 * inner) / math.sqrt(6)

    def target_variance(self) -> float:
        """Var y = Var F(z) / N (the z_i independent; module docstring)."""
        moment = lambda order: sphere_moment(self.dim, order)  # noqa: E731
        variance = {"relu": moment(2) / 2 - relu_mean(self.dim) ** 2, "linear": moment(2),
                    "quadratic": (moment(4) - 1) / 2,
                    "cubic": (moment(6) - 6 * moment(4) + 9 * moment(2)) / 6}[self.link]
        return variance / self.keys

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """``batch_size`` prompts (module docstring); no curriculum."""
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points) or active_dims not in (None, self.dim):
            raise ValueError(f"key-average prompts have {self.points} points and {self.dim} dimensions; a "
                             f"curriculum (points={points}, active_dims={active_dims}) is not supported")
        tokens = torch.randn(batch_size, self.points, self.dim, generator=generator, device=generator.device,
                             dtype=torch.float64)
        tokens = tokens * (math.sqrt(self.dim) / torch.linalg.vector_norm(tokens, dim=-1, keepdim=True))
        inner = (tokens[:, :-1] * tokens[:, -1:]).sum(dim=-1) / math.sqrt(self.dim)
        ys = torch.zeros(batch_size, self.points, device=generator.device, dtype=torch.float64)
        ys[:, -1] = self.link_values(inner).mean(dim=1)
        return Prompt(tokens.to(dtype), ys.to(dtype), {"inner": inner.to(dtype)})

    def baselines(self):
        """None: the models of this setting are fitted across prompts (icl_sim.theory.random_features), not per
        prompt."""
        return {}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """E[y²]/d = Var y / d: predicting 0, the label's mean (squared error normalised by d)."""
        return self.target_variance() / self.dim
