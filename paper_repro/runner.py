"""The machinery every reproduction shares: train or reuse its runs, measure, check, draw, write.

``run_reproduction(reproduction, scale, out_dir)`` trains each declared run (over ``seeds``
seeds) in ``out_dir/runs/NAME/seed-K``, reusing a finished run and resuming an interrupted
one, then writes ``results.{csv,json}``, ``checks.json`` and ``figure.{png,pdf}`` to
``out_dir``.  Held-out prompts come from named streams fixed here, disjoint from training.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from icl_sim.checks import Check, write_checks
from icl_sim.evaluation import write_table
from icl_sim.models import InContextModel
from icl_sim.plots import draw_figure
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.training import resolve_device
from icl_sim.validation import check_choice, check_int

from .runs import train_or_reuse
from .spec import SCALES, Reproduction

#: the held-out prompt streams of every reproduction: seeds of the "eval" stream, never the training one
HELD_OUT_STREAMS = {"tuning": 1, "probe": 2, "test": 3}


@dataclass
class Measurement:
    """What ``measure`` works from: the scale's settings, the trained models and the held-out prompts.

    ``models[name]`` and ``histories[name]`` hold one entry per seed, in seed order.
    """

    settings: Any
    device: torch.device
    models: dict[str, list[InContextModel]]
    histories: dict[str, list[list[dict]]]

    def prompts(self, task, stream: str, count: int, *, index: int = 0) -> Prompt:
        """``count`` float64 prompts of ``task`` from the named held-out ``stream`` (item ``index``)."""
        return held_out_prompts(task, stream, count, self.device, index=index)


def held_out_prompts(task, stream: str, count: int, device, *, index: int = 0) -> Prompt:
    """``count`` float64 prompts of ``task`` from the named held-out ``stream`` (item ``index``) on ``device``."""
    check_choice("stream", stream, list(HELD_OUT_STREAMS))
    generator = make_generator(HELD_OUT_STREAMS[stream], "eval", index, device=device)
    return task.sample(count, generator, dtype=torch.float64)


def run_reproduction(reproduction: Reproduction, scale: str, out_dir, *, seeds: int = 1, device: str = "auto",
                     progress: bool = True) -> list[Check]:
    """Run ``reproduction`` at ``scale`` into ``out_dir``; returns its checks (also in ``checks.json``)."""
    check_choice("scale", scale, SCALES)
    check_int("seeds", seeds, 1)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(device)
    settings = reproduction.scales[scale]
    monitor = reproduction.monitor(settings, device) if reproduction.monitor else None
    models: dict[str, list[InContextModel]] = {}
    histories: dict[str, list[list[dict]]] = {}
    for name, config in reproduction.runs(settings).items():
        for seed in range(seeds):
            run = dataclasses.replace(config, seed=config.seed + seed, device=str(device))
            model, history = train_or_reuse(run, out_dir / "runs" / name / f"seed-{seed}", progress=progress,
                                            log_extra=monitor)
            models.setdefault(name, []).append(model)
            histories.setdefault(name, []).append(history)
    results = reproduction.measure(Measurement(settings, device, models, histories))
    checks = list(reproduction.checks(results, settings))
    write_table(results["rows"], out_dir, "results")
    write_checks(checks, out_dir)
    caption = f"{reproduction.caption} ({reproduction.paper.citation()}; icl-sim, {scale} scale)"
    draw_figure(out_dir / "figure", reproduction.figure(results, settings), caption)
    return checks
