"""Paper reproductions: one declarative module per paper (``spec.Reproduction``), run by ``runner``.

Each has a smoke scale (seconds; the tests check the pipeline), a quick scale (CPU minutes; its
checks must pass) and a full scale (the paper's settings).
"""
from __future__ import annotations

from icl_sim.checks import Check
from icl_sim.paper_repro import von_oswald_2023
from icl_sim.paper_repro.runner import run_reproduction as run
from icl_sim.paper_repro.spec import SCALES, Reproduction
from icl_sim.validation import check_choice

REPRODUCTIONS: dict[str, Reproduction] = {
    reproduction.name: reproduction for reproduction in (von_oswald_2023.REPRODUCTION,)
}


def run_reproduction(name: str, scale: str, out_dir, *, seeds: int = 1, device: str = "auto",
                     progress: bool = True) -> list[Check]:
    """Run reproduction ``name`` at ``scale``: ``figure.{png,pdf}``, ``results.{csv,json}`` and ``checks.json``."""
    check_choice("name", name, list(REPRODUCTIONS))
    return run(REPRODUCTIONS[name], scale, out_dir, seeds=seeds, device=device, progress=progress)


__all__ = ["REPRODUCTIONS", "SCALES", "Check", "Reproduction", "run_reproduction"]
