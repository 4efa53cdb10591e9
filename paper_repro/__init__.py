"""Paper reproductions: one module per paper, each with quick (CPU) and full (paper) scales."""
from __future__ import annotations

from pathlib import Path

from icl_sim.checks import Check, write_checks
from icl_sim.evaluation import write_table
from icl_sim.paper_repro import von_oswald_2023
from icl_sim.training import resolve_device
from icl_sim.validation import check_choice

REPRODUCTIONS = {module.NAME: module for module in (von_oswald_2023,)}
SCALES = ("quick", "full")


def run_reproduction(name: str, scale: str, out_dir, *, device: str = "auto", progress: bool = True) -> list[Check]:
    """Run reproduction ``name`` at ``scale``: figures, ``results.{csv,json}`` and ``checks.json`` in ``out_dir``."""
    check_choice("name", name, list(REPRODUCTIONS))
    check_choice("scale", scale, SCALES)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    checks, rows = REPRODUCTIONS[name].run(scale, out_dir, device=resolve_device(device), progress=progress)
    write_table(rows, out_dir, "results")
    write_checks(checks, out_dir)
    return checks


__all__ = ["REPRODUCTIONS", "Check", "run_reproduction"]
