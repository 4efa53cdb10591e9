"""A reproduction's verdict, claim by claim: what its checks say about each declared claim.

At the scale that decides it (``Claim.decided_at``) and every larger one, a claim is ``failed`` when
one of its claim checks fails, else ``inconclusive`` when one is inconclusive, else ``held``; below
that scale it is ``deferred``.  Sanity checks (the library's own algorithms, or consequences of
another check) are counted apart: they support a reproduction, they are not its evidence.

The untrained control judges every claim, deferred or not, on the models at initialisation: it
``holds`` a claim when every check holds for them (the claim could not have failed), ``fails`` it
when a check fails by finite values, is ``vacuous`` when it fails only by a non-finite one (NaN, 0/0,
a mean over nothing: no value on the wrong side, so that claim still needs a real control) and is
``inconclusive`` otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from icl_sim.checks import Check

from .spec import Claim, Reproduction

#: the verdicts a claim can have, in the order reports list them
CLAIM_VERDICTS = ("held", "failed", "inconclusive", "deferred")
#: what the untrained control does to a claim, in the order reports list them
CONTROL_OUTCOMES = ("fails", "vacuous", "inconclusive", "holds")
#: training seeds per scale unless the reproduction or ``--seeds`` says otherwise: smoke tests the pipeline,
#: claims need several, and the long scale, which decides them, more
DEFAULT_SEEDS = {"smoke": 1, "quick": 3, "long": 5, "full": 3}


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim with its checks: its verdict and the seeds in which every check held."""

    claim: Claim
    checks: tuple[Check, ...]

    @property
    def verdict(self) -> str:
        if any(check.deferred for check in self.checks):
            return "deferred"
        return _combined([check.outcome for check in self.checks])

    @property
    def seeds(self) -> int:
        return len(self.checks[0].per_seed)

    @property
    def seeds_held(self) -> int:
        """Seeds in which each of the claim's checks holds by that seed's value alone."""
        return sum(all(check.holds_for(check.per_seed[seed]) for check in self.checks)
                   for seed in range(self.seeds))

    @property
    def control(self) -> str:
        """What these checks, measured on untrained models, do to the claim (``CONTROL_OUTCOMES``)."""
        if all(check.passed for check in self.checks):
            return "holds"
        if any(check.outcome == "failed" and not check.vacuous for check in self.checks):
            return "fails"
        return "vacuous" if any(check.vacuous for check in self.checks) else "inconclusive"

    @property
    def models_converged(self) -> tuple[int, int]:
        """(k, K) over the claim's training runs (each claim check reports the same runs)."""
        return self.checks[0].models_converged


def _combined(outcomes: Sequence[str]) -> str:
    """A claim's verdict from its checks' outcomes: one failure fails it, else one inconclusive check leaves it so."""
    return "failed" if "failed" in outcomes else "inconclusive" if "inconclusive" in outcomes else "held"


def check_claim_wiring(reproduction: Reproduction, checks: Sequence[Check]) -> None:
    """Refuse checks that do not match the declared claims: a claim check naming an undeclared claim, a
    declared claim without a claim check, or claim checks of one claim over different numbers of seeds."""
    declared = {claim.id for claim in reproduction.claims}
    named = [check.claim for check in checks if check.kind == "claim"]
    unknown = sorted(set(named) - declared)
    if unknown:
        raise ValueError(f"reproduction {reproduction.name!r}: checks name undeclared claims {unknown}")
    untested = [claim.id for claim in reproduction.claims if claim.id not in named]
    if untested:
        raise ValueError(f"reproduction {reproduction.name!r}: claims {untested} have no claim check")
    seeds = {len(check.per_seed) for check in checks if check.kind == "claim"}
    if len(seeds) > 1:
        raise ValueError(f"reproduction {reproduction.name!r}: claim checks over different numbers of seeds "
                         f"{sorted(seeds)}")


def claim_verdicts(reproduction: Reproduction, checks: Sequence[Check]) -> list[ClaimVerdict]:
    """Each declared claim, in declaration order, with its claim checks."""
    return [ClaimVerdict(claim, tuple(check for check in checks if check.claim == claim.id))
            for claim in reproduction.claims]


def summary_line(reproduction: Reproduction, checks: Sequence[Check]) -> str:
    """``claims: H held, F failed, I inconclusive, D deferred (of C); sanity: S of T``."""
    verdicts = [entry.verdict for entry in claim_verdicts(reproduction, checks)]
    sanity = [check for check in checks if check.kind == "sanity"]
    counts = ", ".join(f"{verdicts.count(verdict)} {verdict}" for verdict in CLAIM_VERDICTS)
    return (f"claims: {counts} (of {len(verdicts)}); "
            f"sanity: {sum(check.passed for check in sanity)} of {len(sanity)}")


def failed(reproduction: Reproduction, checks: Sequence[Check]) -> bool:
    """Whether a claim decided at or below the run's scale failed, or a sanity check failed (a deferred or
    inconclusive claim fails nothing)."""
    return (any(entry.verdict == "failed" for entry in claim_verdicts(reproduction, checks))
            or any(not check.passed for check in checks if check.kind == "sanity"))


def control_outcomes(reproduction: Reproduction, control: Sequence[Check]) -> dict[str, str]:
    """Claim id → what the untrained control's checks do to it (``CONTROL_OUTCOMES``), deferral aside."""
    return {entry.claim.id: entry.control for entry in claim_verdicts(reproduction, control)}


def held_claims(reproduction: Reproduction, checks: Sequence[Check]) -> list[str]:
    """The ids of the claims every check of which holds, deferral aside: what an untrained control must not show."""
    return [claim for claim, outcome in control_outcomes(reproduction, checks).items() if outcome == "holds"]
