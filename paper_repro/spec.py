"""What a reproduction declares: the paper, the claim, its runs, measures, checks and figure.

A reproduction module reads like the paper's experimental section and holds no machinery: it
builds one ``Reproduction`` whose functions the shared runner (``paper_repro.runner``) calls.

* ``scales``: a settings object per scale, ``smoke`` (seconds; the test suite runs it and checks
  only the pipeline), ``quick`` (CPU minutes; its checks must pass) and ``full`` (the paper's
  own settings);
* ``runs(settings)``: the training runs as a map name → ``TrainConfig`` (seed 0; the runner
  repeats them over ``--seeds``), so a sweep is a comprehension;
* ``measure(measurement)``: the numbers, from the trained models (``measurement.models``) and
  the named held-out prompt streams (``measurement.prompts``), as a dict whose ``"rows"`` is the
  tidy results table;
* ``checks(results, settings)``: the paper's expected values (each ``Check`` citing its figure,
  table or equation) against the measured ones;
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


@dataclass(frozen=True)
class Reproduction:
    """One paper's result, declared; ``paper_repro.runner.run_reproduction`` executes it."""

    name: str
    paper: Paper
    claim: str
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
