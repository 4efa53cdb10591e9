"""What a reproduction declares: the paper, its claims, its runs, measures, checks and figure.

A reproduction module reads like the paper's experimental section and holds no machinery: it
builds one ``Reproduction`` whose functions the shared runner (``paper_repro.runner``) calls.

* ``claims``: the paper's central claims (``Claim``: an id, the statement, the figure, table or
  section it comes from), each tested by at least one claim check, and the smallest scale that
  decides it (``decided_at``: ``quick``, ``long`` or ``full``, the last two with a reason holding
  the measured number that rules the smaller scales out); there and above it the claim is held,
  failed or inconclusive, below it deferred;
* ``scales``: a settings object per scale, ``smoke`` (seconds; the test suite runs it and checks
  only the pipeline), ``quick`` (at most 10 CPU minutes, over seeds), ``long`` (at most an hour of
  CPU: the paper's settings shrunk only as far as the hour requires, its schedule, learning rate
  and data law kept; needed only where a claim is decided there) and ``full`` (the paper's own
  settings);
* ``runs(settings)``: the training runs as a map name → ``TrainConfig`` (seed 0; the runner
  repeats them over a block of seeds), so a sweep is a comprehension;
* ``measure(measurement)``: the numbers, from the models (``measurement.models``, one per seed:
  trained, or at their initialisation for the untrained control, whose histories are empty) and
  the named held-out prompt streams (``measurement.prompts``), as a dict whose ``"rows"`` is the
  tidy results table;
* ``checks(results, settings)``: claim checks (``icl_sim.checks.claim_check``: one value per
  seed against a threshold from the paper, a closed form or a contrast fixed before running)
  and sanity checks (``Check``: the library's own algorithms and closed forms), each citing its
  figure, table or equation;
* ``figure(results, settings)``: the panels of the paper's figure (``icl_sim.plots.Panel``);
* ``monitor(settings, device)`` (optional): a function of the model logged with the training
  metrics, for figures over training steps.

A constructed (hand-weighted, untrained) model has no training run: its reproduction's ``runs`` returns ``{}``
and ``measure`` builds the models from ``measurement.seeds`` (the seed block; seed k indexes the k-th random
instance the construction runs on) and ``measurement.control``: None, the hand-written weights; ``"untrained"``,
the same architecture at a random initialisation seeded by the seed (``icl_sim.models.constructed``).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.plots import Panel
from icl_sim.validation import check_choice, check_int

#: the scales, smallest first
SCALES = ("smoke", "quick", "long", "full")
#: the scales that can decide a claim (smoke tests the pipeline only)
DECIDING_SCALES = ("quick", "long", "full")
#: the scales every reproduction declares; ``long`` only where a claim is decided there
REQUIRED_SCALES = ("smoke", "quick", "full")


@dataclass(frozen=True)
class Paper:
    """A citation: who, what, where, and the arXiv identifier."""

    authors: str
    title: str
    venue: str
    arxiv: str

    def citation(self) -> str:
        return f"{self.authors}, “{self.title}”, {self.venue}, arXiv:{self.arxiv}"


@dataclass(frozen=True)
class Claim:
    """One central claim of a paper: ``id`` (short, unique in its reproduction), ``statement``, its ``source``
    (figure, table or section), and ``decided_at``, the smallest scale that can decide it.  Above ``quick`` the
    ``reason`` says why the smaller scales cannot, with a measured number (the quick learning curve still falling,
    the rehearsal's CPU hours at the smallest faithful size).  ``runs``: the training runs the claim rests on, as
    ``fnmatch`` patterns of the reproduction's run names (default: all), whose convergence its checks report.
    ``analysis``: the module's reading of the claim's verdict where it is not held (a failure's numbers and cause),
    shown beside it in the gallery."""

    id: str
    statement: str
    source: str
    decided_at: str = "quick"
    reason: str = ""
    runs: tuple[str, ...] = ()
    analysis: str = ""

    def __post_init__(self):
        check_choice("decided_at", self.decided_at, DECIDING_SCALES)
        if self.decided_at != "quick" and not any(character.isdigit() for character in self.reason):
            raise ValueError(f"claim {self.id!r} is decided at {self.decided_at!r}: its reason must say why a smaller "
                             f"scale cannot decide it, with the measured number")
        object.__setattr__(self, "runs", tuple(self.runs))

    def deferred_at(self, scale: str) -> bool:
        """Whether this claim's checks are deferred at ``scale``: it runs below the scale that decides the claim."""
        check_choice("scale", scale, SCALES)
        return SCALES.index(scale) < SCALES.index(self.decided_at)

    def rests_on(self, run: str) -> bool:
        """Whether training run ``run`` (a name of ``runs(settings)``) is one this claim's evidence rests on."""
        return not self.runs or any(fnmatch.fnmatchcase(run, pattern) for pattern in self.runs)


@dataclass(frozen=True)
class Reproduction:
    """One paper's result, declared; ``paper_repro.runner.run_reproduction`` executes it."""

    name: str
    paper: Paper
    summary: str
    claims: Sequence[Claim]
    caption: str
    scales: Mapping[str, Any]
    runs: Callable[[Any], Mapping[str, TrainConfig]]
    measure: Callable[[Any], dict]
    checks: Callable[[dict, Any], Sequence[Check]]
    figure: Callable[[dict, Any], Sequence[Panel]]
    quick_minutes: float
    monitor: Callable[[Any, Any], Callable] | None = None
    long_minutes: float | None = None
    seeds: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        needed = REQUIRED_SCALES + (("long",) if any(claim.decided_at == "long" for claim in self.claims) else ())
        missing = [scale for scale in needed if scale not in self.scales]
        if missing:
            raise ValueError(f"reproduction {self.name!r} must declare the scales {missing}")
        unknown = sorted(set(self.scales) - set(SCALES))
        if unknown:
            raise ValueError(f"reproduction {self.name!r} declares unknown scales {unknown}; scales are {SCALES}")
        if ("long" in self.scales) != (self.long_minutes is not None):
            raise ValueError(f"reproduction {self.name!r}: a long scale and its long_minutes come together")
        for scale, count in self.seeds.items():
            check_choice("seeds scale", scale, SCALES)
            check_int(f"seeds[{scale!r}]", count, 1)
        ids = [claim.id for claim in self.claims]
        if not ids:
            raise ValueError(f"reproduction {self.name!r} declares no claims")
        if len(set(ids)) != len(ids):
            raise ValueError(f"reproduction {self.name!r} must declare each claim id once (got {ids})")

    def has_scale(self, scale: str) -> bool:
        """Whether this reproduction runs at ``scale`` (every one has smoke, quick and full; long where a claim needs
        it)."""
        check_choice("scale", scale, SCALES)
        return scale in self.scales

    def settings(self, scale: str):
        """The settings of ``scale``; a clear error where this reproduction has no such scale."""
        if not self.has_scale(scale):
            decided = sorted({claim.decided_at for claim in self.claims}, key=SCALES.index)
            raise ValueError(f"scale: reproduction {self.name!r} has no {scale} scale (its claims are decided at "
                             f"{' and '.join(decided)})")
        return self.scales[scale]

    def claim(self, claim_id: str) -> Claim:
        """The declared claim ``claim_id``."""
        check_choice("claim", claim_id, [claim.id for claim in self.claims])
        return next(claim for claim in self.claims if claim.id == claim_id)
