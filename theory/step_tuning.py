"""Per-step hyper-parameters of a K-step algorithm, tuned on the in-context risk.

von Oswald et al. (2023, Sec. 4) compare a K-layer trained transformer with K steps of GD and
GD++ whose per-step parameters (η_t, γ_t) are trained on the same task (their code trains the
comparison model's step sizes and input transform, ``train_gd_lr`` and ``train_gd_whitening``):
the K-step algorithm that an optimiser of the task loss would pick, with no reference to the
transformer.  Ahn et
al. (2023) do the same for preconditioned GD with a matrix A_t per step.  ``tune_steps``
finds these parameters by L-BFGS in float64 on the squared error at the final query of a set
of prompts, from several starts (the risk is not convex in the step parameters), and returns every
start's optimum with its risk, best first.

Plain GD's steps commute (Π_t (I − η_t Ĝ) in any order), so its risk fixes only the set of
step sizes and equally good step sizes differ in order; callers that compare steps with
something else (``icl_sim.probing``) break such ties.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import torch

from icl_sim.predictor import check_prompt
from icl_sim.validation import check_choice, check_int

from .algorithms import StepwiseGDPlusPlus, StepwisePreconditionedGD, gd_plus_plus_spectral, preconditioned_descent
from .baselines import StepwiseGD, LinearBaseline, gradient_descent_spectral
from .prefix import as_float64, context_statistics

#: starting step sizes, in units of the inverse mean largest eigenvalue of Ĝ at the final query
STARTS = {"increasing": (0.2, 1.0), "decreasing": (1.0, 0.2), "constant": (0.5, 0.5)}
#: L-BFGS iterations per start: noise-free risks keep falling towards 0 and never meet a tolerance
MAX_ITERATIONS = 200


@dataclass(frozen=True)
class StepFamily:
    """A K-step algorithm whose per-step parameters are tensors with a leading step dimension.

    ``iterate(gram, moment, **parameters)`` gives the weights after the last step,
    differentiably; for a ``spectral`` family it runs in Ĝ's eigenbasis, on (λ, Vᵀb̂), and the
    tuner rotates the queries instead of every iterate.  ``build(**parameters)`` gives the
    baseline, ``start(step_sizes, dim)`` the parameters of a start from plain-GD step sizes (K,).
    """

    iterate: Callable[..., torch.Tensor]
    build: Callable[..., LinearBaseline]
    start: Callable[[torch.Tensor, int], dict[str, torch.Tensor]]
    spectral: bool = False
    #: CPU seconds of one L-BFGS tuning of one step on 1024 prompts, one thread (the development machine, d = 3-10,
    #: 2026-12-05: the highest measured at K = 5 and 20): what ``tuning_seconds`` prices a K-step tuning by
    seconds_per_step: float = 0.1


def _as_floats(values: torch.Tensor) -> list[float]:
    return [float(v) for v in values]


STEP_FAMILIES = {
    "gd": StepFamily(
        iterate=gradient_descent_spectral,
        build=lambda step_sizes: StepwiseGD(_as_floats(step_sizes)),
        start=lambda sizes, dim: {"step_sizes": sizes},
        spectral=True, seconds_per_step=0.09),
    "preconditioned-gd": StepFamily(
        iterate=preconditioned_descent,
        build=StepwisePreconditionedGD,
        start=lambda sizes, dim: {"preconditioners": sizes[:, None, None] * torch.eye(dim, dtype=sizes.dtype,
                                                                                      device=sizes.device)},
        seconds_per_step=0.35),
    "gd-plus-plus": StepFamily(
        iterate=gd_plus_plus_spectral,
        build=lambda step_sizes, corrections: StepwiseGDPlusPlus(_as_floats(step_sizes), _as_floats(corrections)),
        start=lambda sizes, dim: {"step_sizes": sizes, "corrections": torch.zeros_like(sizes)},
        spectral=True, seconds_per_step=0.16),
}


def tuning_seconds(family: str, steps: int, prompts: int) -> float:
    """An estimate of the CPU seconds ``tune_steps(family, ...)`` takes for ``steps`` free steps on ``prompts``
    prompts: the lengths 1..K are tuned in turn, each evaluation of a length-k risk costs k steps, so the cost grows
    as K(K + 1)/2 (quadratic in K, where shared steps are one tuning), and linearly in the prompts."""
    check_choice("family", family, STEP_FAMILIES)
    return STEP_FAMILIES[family].seconds_per_step * steps * (steps + 1) / 2 * prompts / 1024


@dataclass(frozen=True)
class TunedSteps:
    """One start's optimum: per-step parameters (leading dimension K) and its squared error per prompt."""

    family: str
    parameters: dict[str, torch.Tensor]
    losses: torch.Tensor
    start: str

    @property
    def risk(self) -> float:
        return float(self.losses.mean())

    def indistinguishable_from(self, best: TunedSteps, z: float = 2.0) -> bool:
        """Whether these steps' risk exceeds ``best``'s by at most ``z`` paired standard errors.

        Exact ties (GD's reordered steps) have a zero standard error; the 1e-9 relative slack
        absorbs the optimiser's rounding.
        """
        excess = self.losses - best.losses
        error = excess.std() / excess.numel() ** 0.5 if excess.numel() > 1 else 0.0
        return float(excess.mean()) <= z * float(error) + 1e-9 * best.risk

    def run(self) -> list[LinearBaseline]:
        """The algorithm cut after steps 1, 2, …, K: step k's predictor uses the first k steps' parameters."""
        steps = next(iter(self.parameters.values())).shape[0]
        return [STEP_FAMILIES[self.family].build(**{name: value[:k] for name, value in self.parameters.items()})
                for k in range(1, steps + 1)]


def tune_steps(family: str, xs: torch.Tensor, ys: torch.Tensor, steps: int, *,
               shared: bool = False) -> list[TunedSteps]:
    """Every start's risk-minimising K-step parameters for predicting ys[:, -1] from the rest, best first.

    The risk is the mean of (x_queryᵀ w_K − y_query)² over the prompts, w_K from the context
    points j < N − 1 alone.  Besides the ``STARTS``, a K-step tuning also starts from the best
    (K − 1)-step parameters followed by a null step (η = 0, A = 0), so the best risk never rises
    with K.  With ``shared`` every step has the same parameters (the algorithm a recurrent model,
    one layer applied K times, can implement); they are still returned once per step.
    """
    check_choice("family", family, STEP_FAMILIES)
    check_int("steps", steps, 1)
    if not isinstance(shared, bool):
        raise ValueError(f"shared must be true or false, got {shared!r}")
    check_prompt(xs, ys)
    xs, ys = as_float64(xs, ys)
    gram, moment = context_statistics(xs[:, :-1], ys[:, :-1])
    eigenvalues, vectors = torch.linalg.eigh(gram)
    unit = 1.0 / eigenvalues[:, -1].mean().clamp(min=1e-12)
    query = xs[:, -1]
    if STEP_FAMILIES[family].spectral:
        gram, moment, query = (eigenvalues, *((vectors.mT @ v[..., None]).squeeze(-1) for v in (moment, query)))
    problem = _Problem(STEP_FAMILIES[family], gram, moment, query, ys[:, -1], unit, steps if shared else 1)
    if shared:
        tuned = (TunedSteps(family, *problem.minimise(problem.start(first, first, 1)), name)
                 for name, (first, _) in STARTS.items())
        return sorted((dataclasses.replace(t, parameters=problem.repeated(t.parameters)) for t in tuned),
                      key=lambda tuned: tuned.risk)
    tuned: list[TunedSteps] = []
    for length in range(1, steps + 1):
        starts = {name: problem.start(first, last, length) for name, (first, last) in STARTS.items()}
        if tuned:
            starts["extended"] = {name: torch.cat([value, torch.zeros_like(value[:1])])
                                  for name, value in tuned[0].parameters.items()}
        tuned = sorted((TunedSteps(family, *problem.minimise(start), name) for name, start in starts.items()),
                       key=lambda tuned: tuned.risk)
    return tuned


@dataclass(frozen=True)
class _Problem:
    """One tuning problem: the family, Ĝ (or its eigenvalues), b̂, the queries (rotated alike) and their labels."""

    family: StepFamily
    gram: torch.Tensor
    moment: torch.Tensor
    query: torch.Tensor
    target: torch.Tensor
    unit: torch.Tensor
    repeats: int = 1  # every step's parameters applied this many times (shared steps)

    def start(self, first: float, last: float, steps: int) -> dict[str, torch.Tensor]:
        sizes = self.unit * torch.linspace(first, last, steps, dtype=torch.float64, device=self.moment.device)
        return self.family.start(sizes, self.moment.shape[-1])

    def repeated(self, parameters: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The parameters of every step, each step's repeated ``repeats`` times in a row (as given if once)."""
        if self.repeats == 1:  # free steps: no copy on every evaluation of the risk
            return parameters
        return {name: value.repeat_interleave(self.repeats, dim=0) for name, value in parameters.items()}

    def losses(self, parameters: dict[str, torch.Tensor]) -> torch.Tensor:
        weights = self.family.iterate(self.gram, self.moment, **self.repeated(parameters))
        return ((self.query * weights).sum(-1) - self.target).square()

    def minimise(self, start: dict[str, torch.Tensor]) -> tuple[dict, torch.Tensor]:
        """L-BFGS from ``start``; the best finite point seen and its per-prompt squared errors.

        Long GD++ runs can overflow (t ← t − γλt³ diverges once γλt² > 2) where a line search
        probes too far, and L-BFGS does not recover from a non-finite loss, so the best finite
        point is kept.
        """
        parameters = {name: value.clone().requires_grad_(True) for name, value in start.items()}
        optimiser = torch.optim.LBFGS(list(parameters.values()), max_iter=MAX_ITERATIONS, tolerance_grad=1e-12,
                                      tolerance_change=1e-15, history_size=50, line_search_fn="strong_wolfe")
        best = {"risk": float("inf"), "parameters": {name: value.clone() for name, value in start.items()}}

        def risk() -> torch.Tensor:
            optimiser.zero_grad()
            value = self.losses(parameters).mean()
            if torch.isfinite(value) and value.item() < best["risk"]:
                best.update(risk=value.item(), parameters={name: p.detach().clone() for name, p in parameters.items()})
            value.backward()
            return value

        with torch.enable_grad():
            optimiser.step(risk)
        with torch.no_grad():
            return best["parameters"], self.losses(best["parameters"])
