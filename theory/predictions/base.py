"""What a theoretical prediction is: a symbolic derivation, its numeric form, and a numerical check."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import sympy
import torch


@dataclass(frozen=True)
class Step:
    """One line of a derivation: a label and a sympy expression (or equation)."""

    label: str
    expression: sympy.Basic


@dataclass(frozen=True)
class Comparison:
    """A formula's value against a numerical estimate (Monte Carlo, iteration or training)."""

    quantity: str
    formula: float
    estimate: float
    standard_error: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return math.isfinite(self.estimate) and abs(self.formula - self.estimate) <= self.tolerance

    def as_dict(self) -> dict:
        return {"quantity": self.quantity, "formula": self.formula, "estimate": self.estimate,
                "standard_error": self.standard_error, "tolerance": self.tolerance, "passed": self.passed}


def monte_carlo(quantity: str, formula: float, samples: torch.Tensor, *, sigmas: float = 3.0,
                floor: float = 0.0) -> Comparison:
    """Compare ``formula`` with the mean of i.i.d. ``samples``: tolerance max(sigmas · s.e., floor)."""
    samples = samples.detach().to(torch.float64).flatten()
    standard_error = float(samples.std() / math.sqrt(samples.numel()))
    return Comparison(quantity, float(formula), float(samples.mean()), standard_error,
                      max(sigmas * standard_error, floor))


def exact(quantity: str, formula: float, value: float, *, tolerance: float = 1e-10) -> Comparison:
    """Compare ``formula`` with a deterministic computation (no sampling error)."""
    return Comparison(quantity, float(formula), float(value), 0.0, tolerance)


@dataclass(frozen=True)
class Prediction:
    """A named theoretical prediction: where it comes from, how it is derived, how it is checked.

    ``derive()`` returns the derivation steps, the last being the final formula;
    ``verify(seed)`` returns the comparisons of the formula with numbers.
    """

    name: str
    source: str
    summary: str
    derive: Callable[[], Sequence[Step]]
    verify: Callable[[int], Sequence[Comparison]]
