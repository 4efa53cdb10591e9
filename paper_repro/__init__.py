"""Paper reproductions: one declarative module per paper (``spec.Reproduction``), run by ``runner``.

Each declares the paper's claims and tests them on trained models over seeds, apart from its
sanity checks; it has a smoke scale (seconds; the tests check the pipeline), a quick scale (CPU
minutes) and a full scale (the paper's settings, rehearsed on a CPU by ``rehearsal``).
"""
from __future__ import annotations

from icl_sim.checks import Check
from icl_sim.paper_repro import (ahn_2023, ahn_2024, akyurek_2023, bhattamishra_2023, boyer_boursier_2025,
                                 deluca_fountoulakis_2024, fu_2023, garg_2022, giannou_2023, goldwaser_dherin_2025,
                                 kajitsuka_sato_2024, mahankali_2023, raventos_2023, sanford_2024, saparov_2024,
                                 saxe_2013, song_2024, sun_2023_ttt, tarzanagh_2023, tian_2023, vladymyrov_2024,
                                 von_oswald_2023, von_oswald_2023_ablations, von_oswald_2023b, wu_2023, wu_su_2025,
                                 wu_zhang_cao_2026, yadlowsky_2023, yang_2023, ye_2025, zhang_cao_2026,
                                 zhang_frei_bartlett_2023, zheng_2024)
from icl_sim.paper_repro import fu_guo_2023
from icl_sim.paper_repro import sanford_hsu_2023
from icl_sim.paper_repro.rehearsal import RunCost, rehearse
from icl_sim.paper_repro.runner import run_reproduction as run
from icl_sim.paper_repro.spec import SCALES, Reproduction
from icl_sim.executors import Executor
from icl_sim.plugins import WithPlugins
from icl_sim.validation import check_choice

REPRODUCTIONS: dict[str, Reproduction] = WithPlugins({
    module.REPRODUCTION.name: module.REPRODUCTION
    for module in (von_oswald_2023, von_oswald_2023_ablations, garg_2022, akyurek_2023, ahn_2023, mahankali_2023,
                   zhang_frei_bartlett_2023, wu_2023, raventos_2023, fu_2023, vladymyrov_2024,  # linear regression
                   zheng_2024, bhattamishra_2023, sanford_2024, saparov_2024, ye_2025, yang_2023,
                   wu_zhang_cao_2026, saxe_2013,  # beyond linear regression (II)
                   tarzanagh_2023, zhang_cao_2026, ahn_2024, song_2024, von_oswald_2023b,
                   boyer_boursier_2025,  # issue 24's new papers
                   giannou_2023, deluca_fountoulakis_2024, wu_su_2025, goldwaser_dherin_2025, sun_2023_ttt,
                   tian_2023, yadlowsky_2023, kajitsuka_sato_2024,  # issue 42's: constructions, in-context learners
                   fu_guo_2023, sanford_hsu_2023)

}, "reproductions", lambda reproduction: isinstance(reproduction, Reproduction), "a Reproduction")


def run_reproduction(name: str, scale: str, out_dir, *, seeds: int | None = None, first_seed: int = 0,
                     control: str | None = None, device: str = "auto", progress: bool = True,
                     executor: Executor = Executor()) -> list[Check]:
    """Run reproduction ``name`` at ``scale`` over ``seeds`` seeds from ``first_seed`` (``runner.run_reproduction``):
    ``figure.{png,pdf}``, ``results.{csv,json}`` and ``checks.json``, or with ``control="untrained"`` the
    checks of the untrained models in ``control.json`` (at full scale each training run a job of ``executor``)."""
    check_choice("name", name, list(REPRODUCTIONS))
    return run(REPRODUCTIONS[name], scale, out_dir, seeds=seeds, first_seed=first_seed, control=control,
               device=device, progress=progress, executor=executor)


def rehearse_reproduction(name: str, out_dir, *, seeds: int | None = None, first_seed: int = 0, device: str = "auto",
                          progress: bool = False) -> tuple[list[RunCost], list[Check]]:
    """Rehearse reproduction ``name``'s full scale in ``out_dir`` (``rehearsal.rehearse``): each run's cost and the
    checks of the briefly trained models."""
    check_choice("name", name, list(REPRODUCTIONS))
    return rehearse(REPRODUCTIONS[name], out_dir, seeds=seeds, first_seed=first_seed, device=device,
                    progress=progress)


__all__ = ["REPRODUCTIONS", "SCALES", "Check", "Reproduction", "RunCost", "rehearse_reproduction", "run_reproduction"]
