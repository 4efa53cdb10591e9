"""A reproduction's verdict: each expected number, the measured value, the tolerance and pass/fail."""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from icl_sim.atomic import write_text

COMPARISONS = ("close", "at_most", "at_least")


@dataclass(frozen=True)
class Check:
    """``measured`` against ``expected``: within ``tolerance`` (close), or not above/below it."""

    name: str
    expected: float
    measured: float
    tolerance: float
    comparison: str = "close"
    source: str = ""

    def __post_init__(self):
        if self.comparison not in COMPARISONS:
            raise ValueError(f"comparison must be one of {COMPARISONS}, got {self.comparison!r}")

    @property
    def passed(self) -> bool:
        if not math.isfinite(self.measured):
            return False
        if self.comparison == "close":
            return abs(self.measured - self.expected) <= self.tolerance
        if self.comparison == "at_most":
            return self.measured <= self.expected + self.tolerance
        return self.measured >= self.expected - self.tolerance

    def summary(self) -> str:
        relation = {"close": "≈", "at_most": "≤", "at_least": "≥"}[self.comparison]
        verdict = "PASS" if self.passed else "FAIL"
        return (f"[{verdict}] {self.name}: measured {self.measured:.4g}, expected {relation} "
                f"{self.expected:.4g} (tolerance {self.tolerance:.3g})")


def write_checks(checks: Sequence[Check], out_dir) -> Path:
    """Atomically write ``checks.json``: a list of the checks with their verdicts."""
    path = Path(out_dir) / "checks.json"
    rows = [{**dataclasses.asdict(check), "passed": check.passed} for check in checks]
    write_text(path, json.dumps(rows, indent=2) + "\n")
    return path
