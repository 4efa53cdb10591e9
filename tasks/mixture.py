"""A per-prompt mixture of regression families: the pretraining data of Yadlowsky et al. (2023).

Yadlowsky, Doshi & Tripuraneni ("Pretraining data mixtures enable narrow model selection capabilities in
transformer models", arXiv 2311.00871) pretrain a transformer on prompts each drawn from one of several function
families, the family itself drawn per prompt by fixed mixture weights, so that the model must tell the family from
the prompt's points before it can learn the function.  ``mixture`` is that stream: ``families`` names the
components (each ``NAME`` or ``NAME:KEY=VALUE:KEY=VALUE``, a family of :data:`COMPONENTS` with its parameters; the
mixture sets ``dim`` and ``points`` for all), ``weights`` their probabilities (normalised), and every prompt of a
batch draws its family independently.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.params import parse_parameters
from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, parameter, sample_shape
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.tasks.relu_network import ReLUNetwork
from icl_sim.tasks.sinusoid import Sinusoid
from icl_sim.validation import check_float, check_int, checked_floats

#: the families a mixture draws from: scalar regression on x ~ N(0, I_d) (by default), scored by squared error
COMPONENTS = {cls.name: cls for cls in (LinearRegression, Sinusoid, ReLUNetwork)}
#: set by the mixture for every component
SHARED = ("dim", "points")


def parse_component(spec: str, dim: int, points: int) -> TaskFamily:
    """The family ``NAME:KEY=VALUE:...`` of :data:`COMPONENTS` at the mixture's ``dim`` and ``points``."""
    name, *pairs = spec.split(":")
    if name not in COMPONENTS:
        raise ValueError(f"families: {name!r} is not a mixture component; components are {', '.join(COMPONENTS)}")
    params = parse_parameters(COMPONENTS[name], pairs)
    if set(params) & set(SHARED):
        raise ValueError(f"families: {spec!r} sets {sorted(set(params) & set(SHARED))}, which the mixture sets")
    return COMPONENTS[name](dim=dim, points=points, **params)


@dataclass(frozen=True)
class Mixture(TaskFamily):
    """Prompts each drawn from one of ``families``, chosen per prompt with probabilities ∝ ``weights``.

    The latent holds ``family`` (B,), the index of each prompt's family in ``families``; the slices name each
    family's prompts (``family=SPEC``).  The baselines are the components' (the first of a name), the trivial
    error their weighted mean.
    """

    name: ClassVar[str] = "mixture"

    dim: int = parameter("input dimension d, shared by the families", 5)
    points: int = parameter("points per prompt N, shared by the families", 21)
    families: tuple[str, ...] = parameter("the components, each NAME or NAME:KEY=VALUE:... (names: "
                                          + ", ".join(COMPONENTS) + ")", ("linear-regression", "sinusoid"))
    weights: tuple[float, ...] = parameter("the families' mixture weights (normalised)", (0.5, 0.5))

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        if isinstance(self.families, (str, bytes)) or not hasattr(self.families, "__iter__"):
            raise ValueError(f"families must be a sequence of NAME:KEY=VALUE specs, got {self.families!r}")
        families = tuple(self.families)
        if not families or not all(isinstance(spec, str) for spec in families) or len(set(families)) < len(families):
            raise ValueError(f"families must be distinct NAME:KEY=VALUE specs, at least one, got {families!r}")
        object.__setattr__(self, "families", families)
        weights = checked_floats("weights", self.weights)
        if len(weights) != len(families):
            raise ValueError(f"weights must give one weight per family ({len(families)}), got {weights}")
        for index, weight in enumerate(weights):
            check_float(f"weights[{index}]", weight, 0.0)
        if sum(weights) <= 0:
            raise ValueError(f"weights must not all be 0, got {weights}")
        object.__setattr__(self, "weights", weights)
        self.components()  # each spec checked now

    def components(self) -> list[TaskFamily]:
        """The component tasks, in the order of ``families``."""
        return [parse_component(spec, self.dim, self.points) for spec in self.families]

    @property
    def probabilities(self) -> torch.Tensor:
        """The normalised mixture weights (float64)."""
        weights = torch.tensor(self.weights, dtype=torch.float64)
        return weights / weights.sum()

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device = generator.device
        family = torch.multinomial(self.probabilities.to(device), batch_size, replacement=True, generator=generator)
        xs = torch.empty(batch_size, n, self.dim, device=device, dtype=dtype)
        ys = torch.empty(batch_size, n, device=device, dtype=dtype)
        for index, component in enumerate(self.components()):
            chosen = family == index
            count = int(chosen.sum())
            if count:
                drawn = component.sample(count, generator, points=n, active_dims=active, dtype=dtype)
                xs[chosen], ys[chosen] = drawn.xs, drawn.ys
        return Prompt(xs, ys, {"family": family})

    def baselines(self):
        """Every component's baselines, the first of each name."""
        found = {}
        for component in self.components():
            for name, predictor in component.baselines().items():
                found.setdefault(name, predictor)
        return found

    def slices(self, prompt: Prompt) -> dict:
        """Each family's prompts, ``family=SPEC``."""
        return {f"family={spec}": prompt.latent["family"] == index for index, spec in enumerate(self.families)}

    def trivial_error(self) -> float:
        """E[y²]/d of the mixture: the components' trivial errors weighted by their probabilities."""
        return float(sum(float(p) * component.trivial_error()
                         for p, component in zip(self.probabilities, self.components())))
