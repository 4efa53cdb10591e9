"""What a claim is: a theorem's formula, its sympy derivation, and its numerical check."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from icl_sim.checks import Check
from icl_sim.theory.symbolic import Step


@dataclass(frozen=True)
class Claim:
    """A named theoretical claim: where it comes from, how it is derived, how it is checked.

    ``derive()`` returns the derivation steps, the last being the final formula;
    ``verify(seed)`` returns the checks of the formula against numbers (Monte Carlo, an
    exact computation, or training).
    """

    name: str
    source: str
    summary: str
    derive: Callable[[], Sequence[Step]]
    verify: Callable[[int], Sequence[Check]]
