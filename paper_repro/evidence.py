"""A reproduction's verdict, claim by claim: what its checks say about each declared claim.

A claim is ``held`` when every one of its claim checks holds, ``failed`` when one fails, and
``deferred`` when it needs the full scale and ran below it.  Sanity checks (the library's own
algorithms) are counted apart: they support a reproduction, they are not its evidence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from icl_sim.checks import Check

from .spec import Claim, Reproduction

#: the verdicts a claim can have, in the order reports list them
CLAIM_VERDICTS = ("held", "failed", "deferred")
#: training seeds per scale unless ``--seeds`` says otherwise: smoke tests the pipeline, claims need several
DEFAULT_SEEDS = {"smoke": 1, "quick": 3, "full": 3}


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim with its checks: its verdict and the seeds in which every check held."""

    claim: Claim
    checks: tuple[Check, ...]

    @property
    def verdict(self) -> str:
        if any(check.deferred for check in self.checks):
            return "deferred"
        return "held" if all(check.passed for check in self.checks) else "failed"

    @property
    def seeds(self) -> int:
        return len(self.checks[0].per_seed)

    @property
    def seeds_held(self) -> int:
        """Seeds in which each of the claim's checks holds by that seed's value alone."""
        return sum(all(check.holds_for(check.per_seed[seed]) for check in self.checks)
                   for seed in range(self.seeds))


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
    """``claims: H held, F failed, D deferred (of C); sanity: S of T``."""
    verdicts = [entry.verdict for entry in claim_verdicts(reproduction, checks)]
    sanity = [check for check in checks if check.kind == "sanity"]
    counts = ", ".join(f"{verdicts.count(verdict)} {verdict}" for verdict in CLAIM_VERDICTS)
    return (f"claims: {counts} (of {len(verdicts)}); "
            f"sanity: {sum(check.passed for check in sanity)} of {len(sanity)}")


def failed(reproduction: Reproduction, checks: Sequence[Check]) -> bool:
    """Whether a claim or a sanity check failed (a deferred claim fails nothing)."""
    return (any(entry.verdict == "failed" for entry in claim_verdicts(reproduction, checks))
            or any(not check.passed for check in checks if check.kind == "sanity"))


def held_claims(reproduction: Reproduction, checks: Sequence[Check]) -> list[str]:
    """The ids of the claims every check of which holds, deferral aside: what an untrained control must not show."""
    return [entry.claim.id for entry in claim_verdicts(reproduction, checks)
            if all(check.passed for check in entry.checks)]
