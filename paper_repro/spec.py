"""What a reproduction declares: the paper, its claims, its runs, measures, checks and figure.

A reproduction module reads like the paper's experimental section and holds no machinery: it
builds one ``Reproduction`` whose functions the shared runner (``paper_repro.runner``) calls.

* ``claims``: the paper's central claims (``Claim``: an id, the statement, the figure, table or
  section it comes from), each tested by at least one claim check; a claim that CPU minutes
  cannot show is declared ``needs="full"`` with its measured reason, and is deferred below it;
* ``scales``: a settings object per scale, ``smoke`` (seconds; the test suite runs it and checks
  only the pipeline), ``quick`` (CPU minutes, over seeds) and ``full`` (the paper's own settings);
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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.plots import Panel
from icl_sim.validation import check_choice

SCALES = ("smoke", "quick", "full")


@dataclass(frozen=True)
class Paper:
    """A citation: who, what, where, and the arXiv identifier."""

    authors: str
    title: str
    venue: str
    arxiv: str

    def citation(self) -> str:
        return f"{self.authors}, “{self.title}”, {self.venue}, arXiv:{self.arxiv}"


#: what a claim may need beyond CPU minutes: the paper's full scale
NEEDS = ("full",)


@dataclass(frozen=True)
class Claim:
    """One central claim of a paper: ``id`` (short, unique in its reproduction), ``statement``, its ``source``
    (figure, table or section); ``needs="full"`` defers it below full scale, ``reason`` saying why with the
    quick scale's measured value."""

    id: str
    statement: str
    source: str
    needs: str | None = None
    reason: str = ""

    def __post_init__(self):
        if self.needs is not None:
            check_choice("needs", self.needs, NEEDS)
            if not self.reason:
                raise ValueError(f"claim {self.id!r} needs {self.needs!r} and must say why (reason)")

    def deferred_at(self, scale: str) -> bool:
        """Whether this claim's checks are deferred at ``scale``: it needs the full scale and runs below it."""
        return self.needs == "full" and scale != "full"


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

    def __post_init__(self):
        missing = [scale for scale in SCALES if scale not in self.scales]
        if missing:
            raise ValueError(f"reproduction {self.name!r} must declare the scales {missing}")
        ids = [claim.id for claim in self.claims]
        if not ids:
            raise ValueError(f"reproduction {self.name!r} declares no claims")
        if len(set(ids)) != len(ids):
            raise ValueError(f"reproduction {self.name!r} must declare each claim id once (got {ids})")

    def claim(self, claim_id: str) -> Claim:
        """The declared claim ``claim_id``."""
        check_choice("claim", claim_id, [claim.id for claim in self.claims])
        return next(claim for claim in self.claims if claim.id == claim_id)
