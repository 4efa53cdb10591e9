"""The machinery every reproduction shares: train or reuse its runs, measure, check, draw, write.

``run_reproduction(reproduction, scale, out_dir)`` trains each declared run (over ``seeds``
seeds) in ``out_dir/runs/NAME/seed-K``, reusing a finished run and resuming an interrupted
one (runs of one architecture train together as an ensemble, ``icl_sim.ensemble``), then
writes ``results.{csv,json}``, ``checks.json`` and ``figure.{png,pdf}`` to ``out_dir``.  Held-out
prompts come from named streams fixed here, disjoint from training.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from icl_sim.checks import Check, write_checks
from icl_sim.config import TrainConfig
from icl_sim.ensemble import ensemble_groups, train_ensemble
from icl_sim.evaluation import write_table
from icl_sim.models import InContextModel
from icl_sim.plots import draw_figure
from icl_sim.prompt import Prompt
from icl_sim.run_io import CHECKPOINT_FILE, CONFIG_FILE, load_config, trained_steps
from icl_sim.seeding import make_generator
from icl_sim.sweep import Executor, execute_runs
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


def train_ensembles(configs: list[TrainConfig], run_dirs: list[Path], *, progress: bool,
                    log_extra: Callable[[InContextModel], dict] | None) -> None:
    """Train, as ensembles, the runs that still have steps to take and can share one with another run (same
    architecture and batch shape, same step to start from); ``train_or_reuse`` then reuses them and trains
    the rest alone, refusing what it refuses."""
    pending: dict[int, list[int]] = {}
    for index, (config, run_dir) in enumerate(zip(configs, run_dirs)):
        start = _resumable_step(config, run_dir)
        if start is not None:
            pending.setdefault(start, []).append(index)
    for start, indices in pending.items():
        for group in ensemble_groups([configs[index] for index in indices]):
            if len(group) > 1:
                train_ensemble([configs[indices[i]] for i in group], [run_dirs[indices[i]] for i in group],
                               resume=start > 0, progress=progress, log_extra=log_extra)


def _resumable_step(config: TrainConfig, run_dir: Path) -> int | None:
    """The step ``config`` continues from in ``run_dir``: 0 for a new run, its checkpoint's for one of the same
    config; None if there is nothing to train, or something ``train_or_reuse`` refuses."""
    if not (run_dir / CONFIG_FILE).exists():
        return 0
    if load_config(run_dir).to_json() != config.to_json() or not (run_dir / CHECKPOINT_FILE).exists():
        return None
    step = trained_steps(run_dir)
    return step if step < config.steps else None


def held_out_prompts(task, stream: str, count: int, device, *, index: int = 0) -> Prompt:
    """``count`` float64 prompts of ``task`` from the named held-out ``stream`` (item ``index``) on ``device``."""
    check_choice("stream", stream, list(HELD_OUT_STREAMS))
    generator = make_generator(HELD_OUT_STREAMS[stream], "eval", index, device=device)
    return task.sample(count, generator, dtype=torch.float64)


def run_reproduction(reproduction: Reproduction, scale: str, out_dir, *, seeds: int = 1, device: str = "auto",
                     progress: bool = True, executor: Executor = Executor()) -> list[Check]:
    """Run ``reproduction`` at ``scale`` into ``out_dir``; returns its checks (also in ``checks.json``).

    At full scale each run is a job of ``executor`` (``icl_sim.sweep``: local processes or SLURM); smaller
    scales train here, as ensembles where runs share an architecture.
    """
    check_choice("scale", scale, SCALES)
    check_int("seeds", seeds, 1)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(device)
    settings = reproduction.scales[scale]
    monitor = reproduction.monitor(settings, device) if reproduction.monitor else None
    runs = {(name, seed): dataclasses.replace(config, seed=config.seed + seed, device=str(device))
            for name, config in reproduction.runs(settings).items() for seed in range(seeds)}
    run_dirs = {(name, seed): out_dir / "runs" / name / f"seed-{seed}" for name, seed in runs}
    if scale == "full":
        execute_runs({f"{name}/seed-{seed}": (config, run_dirs[name, seed]) for (name, seed), config in runs.items()},
                     executor, out_dir, log_extra=monitor)
    else:
        train_ensembles(list(runs.values()), list(run_dirs.values()), progress=progress, log_extra=monitor)
    models: dict[str, list[InContextModel]] = {}
    histories: dict[str, list[list[dict]]] = {}
    for key, run in runs.items():
        model, history = train_or_reuse(run, run_dirs[key], progress=progress, log_extra=monitor)
        models.setdefault(key[0], []).append(model)
        histories.setdefault(key[0], []).append(history)
    results = reproduction.measure(Measurement(settings, device, models, histories))
    checks = list(reproduction.checks(results, settings))
    write_table(results["rows"], out_dir, "results")
    write_checks(checks, out_dir)
    caption = f"{reproduction.caption} ({reproduction.paper.citation()}; icl-sim, {scale} scale)"
    draw_figure(out_dir / "figure", reproduction.figure(results, settings), caption)
    return checks
