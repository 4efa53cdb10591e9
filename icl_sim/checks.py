"""One verdict for every claim icl-sim checks: a measured number against what it should be.

A ``Check`` serves a theory claim (a formula against Monte Carlo or an exact computation) and a
paper reproduction (a trained model against the paper's figure) alike, and ``describe()`` is the
one line both print.  Relations:

* ``close``: |measured − expected| ≤ tolerance;
* ``at_most``: measured + tolerance ≤ expected, the bound;
* ``at_least``: measured − tolerance ≥ expected, the bound.

For a one-sided relation the tolerance is the margin the measurement must clear the bound by:
k standard errors for a Monte Carlo estimate (the inequality then holds at k s.e.), 0 for a
deterministic or trained quantity.

A reproduction's check has a ``kind``.  A ``sanity`` check tests the library's own baseline,
algorithm, construction or closed form: one number.  A ``claim`` check (:func:`claim_check`)
measures trained models against one of the paper's claims (``claim``, its id) and holds one
value per training seed (``per_seed``); ``measured`` is their mean.  Its ``outcome`` is ``held``
when the 95 % Student-t interval of that mean lies wholly on the required side (inside the band,
for ``close``), ``failed`` when it lies wholly on the wrong side, and ``inconclusive`` when it
straddles the bound; an ``every_seed`` claim ("in every run") is held when each seed's value is on
the required side and failed when one is not, and with a single seed the one value decides.  A
non-finite value fails: a trained model whose quantity cannot be computed has not shown the claim.
For an untrained control that failure is ``vacuous`` (no finite value on the wrong side).  Below
the scale that decides its claim (``decided_at``) a check is ``deferred``: measured and reported,
neither held, failed nor inconclusive.  ``convergence`` holds, per training run the claim rests on,
the relative decrease of its smoothed loss over its last fifth (:mod:`icl_sim.convergence`).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import torch
from scipy import stats

from icl_sim.atomic import write_text
from icl_sim.convergence import converged
from icl_sim.validation import check_choice

RELATIONS = ("close", "at_most", "at_least")
#: what a claim check's values show at the scale that decides its claim
OUTCOMES = ("held", "failed", "inconclusive")
KINDS = ("claim", "sanity")
#: the confidence level of a claim check's interval over seeds
CONFIDENCE = 0.95
_SYMBOLS = {"at_most": "≤", "at_least": "≥"}


@dataclass(frozen=True)
class Check:
    """``measured`` against ``expected`` (a formula's or a paper's value, or a bound)."""

    quantity: str
    expected: float
    measured: float
    tolerance: float = 0.0
    relation: str = "close"
    standard_error: float = 0.0
    source: str = ""
    kind: str = "sanity"
    claim: str | None = None
    per_seed: tuple[float, ...] = ()
    every_seed: bool = False
    deferred: bool = False
    decided_at: str | None = None
    convergence: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        check_choice("relation", self.relation, RELATIONS)
        check_choice("kind", self.kind, KINDS)
        if self.kind == "claim" and not (self.claim and self.per_seed):
            raise ValueError(f"claim check {self.quantity!r} must name its claim and hold one value per seed")
        if self.kind == "sanity" and (self.claim is not None or self.per_seed or self.every_seed or self.deferred
                                      or self.decided_at is not None or self.convergence):
            raise ValueError(f"sanity check {self.quantity!r} takes no claim, per_seed, every_seed, deferred, "
                             f"decided_at or convergence")
        object.__setattr__(self, "per_seed", tuple(float(value) for value in self.per_seed))
        object.__setattr__(self, "convergence", {run: float(value) for run, value in self.convergence.items()})

    @property
    def ci(self) -> tuple[float, float] | None:
        """The 95 % Student-t interval of the mean over seeds; None below two seeds (and for a sanity check)."""
        count = len(self.per_seed)
        if count < 2:
            return None
        values = torch.tensor(self.per_seed, dtype=torch.float64)
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, count - 1) * values.std() / math.sqrt(count))
        return self.measured - half, self.measured + half

    @property
    def outcome(self) -> str:
        """``held``, ``failed`` or ``inconclusive`` by the values alone, deferral aside (a sanity check: held or
        failed)."""
        if self.every_seed:
            return "held" if all(self.holds_for(value) for value in self.per_seed) else "failed"
        low, high = self.ci or (self.measured, self.measured)
        return self._side(low, high)

    @property
    def passed(self) -> bool:
        """Whether the measurement meets the criterion (a deferred claim's too: see ``verdict``)."""
        return self.outcome == "held"

    @property
    def vacuous(self) -> bool:
        """Whether a claim check holds a non-finite value (NaN, ±∞: a 0/0, a mean over nothing): a failure by it
        shows nothing on the wrong side of the bound."""
        return not all(math.isfinite(value) for value in (*self.per_seed, self.measured))

    @property
    def seeds_held(self) -> int:
        """How many seeds' values meet the criterion by themselves."""
        return sum(self.holds_for(value) for value in self.per_seed)

    @property
    def models_converged(self) -> tuple[int, int]:
        """(k, K): of the K training runs behind this claim check, the k whose loss stopped falling."""
        return sum(converged(value) for value in self.convergence.values()), len(self.convergence)

    @property
    def verdict(self) -> str:
        """``held``, ``failed``, ``inconclusive`` or ``deferred`` for a claim check; ``passed`` or ``failed`` for a
        sanity check."""
        if self.kind == "sanity":
            return "passed" if self.passed else "failed"
        return "deferred" if self.deferred else self.outcome

    def holds_for(self, value: float) -> bool:
        """Whether one value (one seed's) meets the criterion by itself."""
        return self._side(value, value) == "held"

    def _side(self, low: float, high: float) -> str:
        """Where [low, high] lies against the required region: wholly in it (held), wholly outside (failed, as is a
        non-finite end) or across its edge (inconclusive)."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return "failed"
        if self.relation == "close":
            floor, ceiling = self.expected - self.tolerance, self.expected + self.tolerance
            if floor <= low and high <= ceiling:
                return "held"
            return "failed" if high < floor or low > ceiling else "inconclusive"
        if self.relation == "at_most":
            bound = self.expected - self.tolerance
            return "held" if high <= bound else "failed" if low > bound else "inconclusive"
        bound = self.expected + self.tolerance
        return "held" if low >= bound else "failed" if high < bound else "inconclusive"

    def requirement(self) -> str:
        """What the check requires, as a person would write it: ``≤ 0.05``, ``0.5 ± 0.01``."""
        if self.relation == "close":
            return f"{self.expected:.6g} ± {self.tolerance:.2g}"
        margin = f" by a margin of {self.tolerance:.2g}" if self.tolerance else ""
        return f"{_SYMBOLS[self.relation]} {self.expected:.6g}{margin}"

    def describe(self) -> str:
        """One line as a person would say it: ``[PASS] loss gap: measured 0.023, required ≤ 0.05``; a claim
        check's line names its claim, the seeds' values and their interval."""
        source = f"  [{self.source}]" if self.source else ""
        target = (f"expected {self.requirement()}" if self.relation == "close" else f"required {self.requirement()}")
        if self.kind == "sanity":
            measured = f"measured {self.measured:.6g}"
            if self.standard_error:
                measured += f" ± {self.standard_error:.2g} (s.e.)"
            return f"[{'PASS' if self.passed else 'FAIL'}] {self.quantity}: {measured}, {target}{source}"
        count = len(self.per_seed)
        values = ", ".join(f"{value:.4g}" for value in self.per_seed)
        interval = f", 95 % CI [{self.ci[0]:.4g}, {self.ci[1]:.4g}]" if self.ci else ""
        rule = " (every seed required)" if self.every_seed else ""
        scale = f" (decided at {self.decided_at})" if self.deferred and self.decided_at else ""
        runs = self.models_converged
        convergence = f"; models converged {runs[0]} of {runs[1]}" if runs[1] else ""
        return (f"[{self.verdict.upper()}] claim {self.claim}{scale}, {self.quantity}: mean {self.measured:.6g} over "
                f"{count} seed{'s' if count > 1 else ''} ({values}){interval}, held in {self.seeds_held} of "
                f"{count}{rule}; {target}{convergence}{source}")

    def as_dict(self) -> dict:
        """Every field, the verdict, and for a claim check its mean, interval, seeds held, models converged and
        whether it is vacuous (``checks.json``, ``control.json``)."""
        ci = self.ci
        return {**dataclasses.asdict(self), "per_seed": list(self.per_seed), "passed": self.passed,
                "verdict": self.verdict, "outcome": self.outcome, "mean": self.measured,
                "ci": list(ci) if ci else None, "seeds_held": self.seeds_held,
                "models_converged": list(self.models_converged), "vacuous": self.kind == "claim" and self.vacuous}


def claim_check(claim: str, quantity: str, expected: float, per_seed: Sequence[float], *, relation: str = "close",
                tolerance: float = 0.0, source: str = "", every_seed: bool = False) -> Check:
    """A trained model's measurement against claim ``claim``: one value per training seed, judged by the
    interval of their mean (or, ``every_seed``, seed by seed)."""
    values = tuple(float(value) for value in per_seed)
    if not values:
        raise ValueError(f"per_seed of {quantity!r} must hold at least one seed's value")
    mean = math.fsum(values) / len(values)
    return Check(quantity, float(expected), mean, tolerance, relation, 0.0, source, kind="claim", claim=claim,
                 per_seed=values, every_seed=every_seed)


def mean_and_standard_error(samples: torch.Tensor) -> tuple[float, float]:
    """The mean of i.i.d. ``samples`` and its standard error, in float64."""
    samples = samples.detach().to(torch.float64).flatten()
    return float(samples.mean()), float(samples.std() / math.sqrt(samples.numel()))


def monte_carlo(quantity: str, expected: float, samples: torch.Tensor, *, sigmas: float = 3.0, floor: float = 0.0,
                relation: str = "close", source: str = "") -> Check:
    """``expected`` against the mean of i.i.d. ``samples``, allowing (close) or demanding (one-sided)
    ``sigmas`` standard errors; ``floor`` is a least tolerance for ``close``."""
    mean, standard_error = mean_and_standard_error(samples)
    tolerance = sigmas * standard_error if relation != "close" else max(sigmas * standard_error, floor)
    return Check(quantity, float(expected), mean, tolerance, relation, standard_error, source)


def two_sample(quantity: str, expected_samples: torch.Tensor, samples: torch.Tensor, *, sigmas: float = 3.0,
               source: str = "") -> Check:
    """An expected value that is itself a Monte Carlo mean of independent draws: both errors count."""
    f, x = expected_samples.to(torch.float64).flatten(), samples.to(torch.float64).flatten()
    standard_error = math.sqrt(float(f.var() / f.numel() + x.var() / x.numel()))
    return Check(quantity, float(f.mean()), float(x.mean()), sigmas * standard_error, "close", standard_error, source)


def exact(quantity: str, expected: float, measured: float, *, tolerance: float = 1e-10, source: str = "") -> Check:
    """``expected`` against a deterministic computation (no sampling error)."""
    return Check(quantity, float(expected), float(measured), tolerance, source=source)


def write_checks(checks: Sequence[Check], out_dir, name: str = "checks.json") -> Path:
    """Atomically write ``out_dir/name``: every check with its verdict."""
    path = Path(out_dir) / name
    write_text(path, json.dumps([check.as_dict() for check in checks], indent=2) + "\n")
    return path


def read_checks(path) -> list[Check]:
    """The checks :func:`write_checks` wrote to ``path`` (its derived fields, verdict and interval, recomputed)."""
    return checks_from_dicts(json.loads(Path(path).read_text()))


def checks_from_dicts(rows: Sequence[dict]) -> list[Check]:
    """The checks whose :meth:`Check.as_dict` rows are ``rows`` (a field a row lacks takes its default)."""
    fields = [field.name for field in dataclasses.fields(Check)]
    return [Check(**{**{name: row[name] for name in fields if name in row}, "per_seed": tuple(row["per_seed"])})
            for row in rows]
