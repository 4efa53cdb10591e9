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
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from icl_sim.atomic import write_text
from icl_sim.validation import check_choice

RELATIONS = ("close", "at_most", "at_least")
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

    def __post_init__(self):
        check_choice("relation", self.relation, RELATIONS)

    @property
    def passed(self) -> bool:
        if not math.isfinite(self.measured):
            return False
        if self.relation == "close":
            return abs(self.measured - self.expected) <= self.tolerance
        if self.relation == "at_most":
            return self.measured + self.tolerance <= self.expected
        return self.measured - self.tolerance >= self.expected

    def describe(self) -> str:
        """One line as a person would say it: ``[PASS] loss gap: measured 0.023, required ≤ 0.05``."""
        measured = f"measured {self.measured:.6g}"
        if self.standard_error:
            measured += f" ± {self.standard_error:.2g} (s.e.)"
        if self.relation == "close":
            target = f"expected {self.expected:.6g} ± {self.tolerance:.2g}"
        else:
            target = f"required {_SYMBOLS[self.relation]} {self.expected:.6g}"
            if self.tolerance:
                target += f" by a margin of {self.tolerance:.2g}"
        source = f"  [{self.source}]" if self.source else ""
        return f"[{'PASS' if self.passed else 'FAIL'}] {self.quantity}: {measured}, {target}{source}"

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "passed": self.passed}


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


def write_checks(checks: Sequence[Check], out_dir) -> Path:
    """Atomically write ``checks.json``: every check with its verdict."""
    path = Path(out_dir) / "checks.json"
    write_text(path, json.dumps([check.as_dict() for check in checks], indent=2) + "\n")
    return path
