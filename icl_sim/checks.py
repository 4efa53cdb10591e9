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
value per training seed (``per_seed``); ``measured`` is their mean.  It passes when the 95 %
Student-t interval of that mean lies wholly on the required side (inside the band, for
``close``), or, for an ``every_seed`` claim ("in every run"), when each seed's value does; with
a single seed there is no interval and the one value decides.  A claim that CPU minutes cannot
show is ``deferred`` below full scale: measured and reported, neither held nor failed.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from scipy import stats

from icl_sim.atomic import write_text
from icl_sim.validation import check_choice

RELATIONS = ("close", "at_most", "at_least")
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

    def __post_init__(self):
        check_choice("relation", self.relation, RELATIONS)
        check_choice("kind", self.kind, KINDS)
        if self.kind == "claim" and not (self.claim and self.per_seed):
            raise ValueError(f"claim check {self.quantity!r} must name its claim and hold one value per seed")
        if self.kind == "sanity" and (self.claim is not None or self.per_seed or self.every_seed or self.deferred):
            raise ValueError(f"sanity check {self.quantity!r} takes no claim, per_seed, every_seed or deferred")
        object.__setattr__(self, "per_seed", tuple(float(value) for value in self.per_seed))

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
    def passed(self) -> bool:
        """Whether the measurement meets the criterion (a deferred claim's too: see ``verdict``)."""
        if self.every_seed:
            return all(self.holds_for(value) for value in self.per_seed)
        low, high = self.ci or (self.measured, self.measured)
        return self._meets(low, high)

    @property
    def seeds_held(self) -> int:
        """How many seeds' values meet the criterion by themselves."""
        return sum(self.holds_for(value) for value in self.per_seed)

    @property
    def verdict(self) -> str:
        """``held``, ``failed`` or ``deferred`` for a claim check; ``passed`` or ``failed`` for a sanity check."""
        if self.kind == "sanity":
            return "passed" if self.passed else "failed"
        return "deferred" if self.deferred else "held" if self.passed else "failed"

    def holds_for(self, value: float) -> bool:
        """Whether one value (one seed's) meets the criterion by itself."""
        return self._meets(value, value)

    def _meets(self, low: float, high: float) -> bool:
        """Whether every value in [low, high] meets the relation."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return False
        if self.relation == "close":
            return self.expected - self.tolerance <= low and high <= self.expected + self.tolerance
        if self.relation == "at_most":
            return high + self.tolerance <= self.expected
        return low - self.tolerance >= self.expected

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
        return (f"[{self.verdict.upper()}] claim {self.claim}, {self.quantity}: mean {self.measured:.6g} over "
                f"{count} seed{'s' if count > 1 else ''} ({values}){interval}, held in {self.seeds_held} of "
                f"{count}{rule}; {target}{source}")

    def as_dict(self) -> dict:
        """Every field, the verdict, and for a claim check its mean, interval and seeds held (``checks.json``)."""
        ci = self.ci
        return {**dataclasses.asdict(self), "per_seed": list(self.per_seed), "passed": self.passed,
                "verdict": self.verdict, "mean": self.measured, "ci": list(ci) if ci else None,
                "seeds_held": self.seeds_held}


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
    fields = [field.name for field in dataclasses.fields(Check)]
    return [Check(**{**{name: entry[name] for name in fields}, "per_seed": tuple(entry["per_seed"])})
            for entry in json.loads(Path(path).read_text())]
