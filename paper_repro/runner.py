"""The machinery every reproduction shares: train or reuse its runs, measure, check, draw, write.

``run_reproduction(reproduction, scale, out_dir)`` trains each declared run once per seed of a
block (``seed_block``: the scale's default count from ``first_seed``) in ``out_dir/runs/NAME/seed-K``,
reusing a finished run and resuming an interrupted one (runs of one architecture train together as
an ensemble, ``icl_sim.ensemble``), measures and checks them (a claim is deferred below the scale that
decides it; each claim check reports whether the runs its claim rests on converged,
``icl_sim.convergence``), then writes ``results.{csv,json}``, ``checks.json`` and ``figure.{png,pdf}`` to
``out_dir``.  The untrained control measures the same seeds' models at initialisation instead and
writes ``control.json``.  Held-out prompts come from named streams fixed here, disjoint from training.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from icl_sim.checks import Check, write_checks
from icl_sim.config import TrainConfig
from icl_sim.convergence import loss_decrease
from icl_sim.ensemble import ensemble_groups, train_ensemble
from icl_sim.evaluation import write_table
from icl_sim.models import InContextModel
from icl_sim.plots import draw_figure
from icl_sim.prompt import Prompt
from icl_sim.provenance import recorded_session
from icl_sim.run_io import CHECKPOINT_FILE, CONFIG_FILE, load_config, trained_steps
from icl_sim.seeding import make_generator
from icl_sim.executors import Executor
from icl_sim.locks import directory_lock
from icl_sim.output_dirs import claim_output
from icl_sim.sweep import execute_runs
from icl_sim.training import initial_model, resolve_device
from icl_sim.validation import check_choice, check_int

from .evidence import DEFAULT_SEEDS, check_claim_wiring
from .runs import train_or_reuse
from .spec import SCALES, Reproduction

#: the controls a reproduction can be measured against: its models at their initialisation
CONTROLS = ("untrained",)
#: where the untrained control's checks go, beside ``checks.json``
CONTROL_FILE = "control.json"
#: a setting repeated over several datasets per training seed gives repeat r the config seed r · REPEAT_STRIDE, to
#: which the runner adds the training seed; training seeds stay below the stride, so no two (seed, repeat) pairs
#: share a dataset and a fresh seed block never retrains an earlier block's data
REPEAT_STRIDE = 10**6
#: the held-out prompt streams of every reproduction: seeds of the "eval" stream, never the training one
HELD_OUT_STREAMS = {"tuning": 1, "probe": 2, "test": 3}


@dataclass
class Measurement:
    """What ``measure`` works from: the scale's settings, the trained models and the held-out prompts.

    ``models[name]``, ``histories[name]`` and ``configs[name]`` (what each model was trained from, for a
    reproduction that measures on its fixed training set: :func:`icl_sim.training.training_batch`) hold one entry
    per seed, in seed order.  ``seeds`` is the seed block and ``control`` the control measured (None, or
    ``"untrained"``): a constructed model, which has no training run, is built from them in ``measure``
    (``icl_sim.models.constructed``).
    """

    settings: Any
    device: torch.device
    models: dict[str, list[InContextModel]]
    histories: dict[str, list[list[dict]]]
    configs: dict[str, list[TrainConfig]]
    seeds: tuple[int, ...] = ()
    control: str | None = None

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


def seed_block(scale: str, seeds: int | None = None, first_seed: int = 0, *,
               declared: Mapping[str, int] | None = None) -> range:
    """The training seeds of a run: ``seeds`` of them (by default those the reproduction ``declared`` for the scale,
    else the scale's ``DEFAULT_SEEDS``) from ``first_seed`` on; a claim must hold on any block, not only the one it
    was developed on.  Seeds stay below ``REPEAT_STRIDE``."""
    check_choice("scale", scale, SCALES)
    if seeds is None:
        seeds = (declared or {}).get(scale, DEFAULT_SEEDS[scale])
    check_int("first_seed", first_seed, 0, REPEAT_STRIDE - 1)
    check_int("seeds", seeds, 1, REPEAT_STRIDE - first_seed, maximum_name=f"{REPEAT_STRIDE} - first_seed")
    return range(first_seed, first_seed + seeds)


def seeded_runs(reproduction: Reproduction, settings, block: range, device: torch.device) -> dict[tuple, TrainConfig]:
    """Every declared run of ``settings`` once per seed of ``block``: (name, seed) → its config on ``device``."""
    return {(name, seed): dataclasses.replace(config, seed=config.seed + seed, device=str(device))
            for name, config in reproduction.runs(settings).items() for seed in block}


def run_directories(runs, out_dir: Path) -> dict[tuple, Path]:
    """Where each (name, seed) run lives: ``out_dir/runs/NAME/seed-K``."""
    return {(name, seed): out_dir / "runs" / name / f"seed-{seed}" for name, seed in runs}


def run_reproduction(reproduction: Reproduction, scale: str, out_dir, *, seeds: int | None = None,
                     first_seed: int = 0, control: str | None = None, device: str = "auto", progress: bool = True,
                     executor: Executor = Executor()) -> list[Check]:
    """Run ``reproduction`` at ``scale`` into ``out_dir`` over the seeds ``seed_block(scale, seeds, first_seed)``;
    returns its checks (also in ``checks.json``, beside ``results.{csv,json}`` and ``figure.{png,pdf}``).

    At full scale each run is a job of ``executor`` (``icl_sim.sweep``: local processes or SLURM); smaller
    scales train here, as ensembles where runs share an architecture.  ``control="untrained"`` trains
    nothing: it measures the models at their initialisation (the same seeds) through the same measure and
    checks, and writes ``control.json`` alone.
    """
    block = seed_block(scale, seeds, first_seed, declared=reproduction.seeds)
    if control is not None:
        check_choice("control", control, CONTROLS)
    settings, out_dir, device = reproduction.settings(scale), Path(out_dir), resolve_device(device)
    with directory_lock(out_dir, "reproduction directory"):
        claim_output(out_dir, "reproduction", name=reproduction.name, scale=scale)
        with recorded_session(out_dir, device=device, seeds=block):
            return _measured(reproduction, scale, settings, out_dir, block, control, device, progress, executor)


def _measured(reproduction: Reproduction, scale: str, settings, out_dir: Path, block: range, control: str | None,
              device, progress: bool, executor: Executor) -> list[Check]:
    """The runs of ``block`` trained (or, for the control, initialised), measured and checked, into ``out_dir``."""
    runs = seeded_runs(reproduction, settings, block, device)
    if control == "untrained":
        models = {key: initial_model(config, device).eval() for key, config in runs.items()}
        histories = {key: [] for key in runs}
    else:
        models, histories = trained_models(reproduction, settings, scale, runs, out_dir, device, executor=executor,
                                           progress=progress)
    measurement = Measurement(settings, device, *models_by_name(models, histories, runs), seeds=tuple(block),
                              control=control)
    results, checks = evaluate(reproduction, scale, measurement, deferring=control is None,
                               convergence=run_convergence(histories))
    if control is not None:
        write_checks(checks, out_dir, CONTROL_FILE)
        return checks
    write_outputs(reproduction, scale, settings, results, checks, out_dir)
    return checks


def trained_models(reproduction: Reproduction, settings, scale: str, runs: dict, out_dir: Path, device, *,
                   executor: Executor, progress: bool) -> tuple[dict, dict]:
    """Each run's model trained to its end in ``out_dir/runs`` (a finished run reused, an unfinished one resumed)
    and its history."""
    monitor = reproduction.monitor(settings, device) if reproduction.monitor else None
    run_dirs = run_directories(runs, out_dir)
    if scale == "full":
        execute_runs({f"{name}/seed-{seed}": (config, run_dirs[name, seed]) for (name, seed), config in runs.items()},
                     executor, out_dir, log_extra=monitor)
    else:
        train_ensembles(list(runs.values()), list(run_dirs.values()), progress=progress, log_extra=monitor)
    models, histories = {}, {}
    for key, config in runs.items():
        models[key], histories[key] = train_or_reuse(config, run_dirs[key], progress=progress, log_extra=monitor)
    return models, histories


def models_by_name(models: dict, histories: dict, configs: dict) -> tuple[dict, dict, dict]:
    """{(name, seed): value} maps as ``Measurement`` takes them: name → values in seed order."""
    by_name: tuple[dict, dict, dict] = ({}, {}, {})
    for target, source in zip(by_name, (models, histories, configs)):
        for (name, _), value in sorted(source.items(), key=lambda item: item[0][1]):
            target.setdefault(name, []).append(value)
    return by_name


def run_convergence(histories: dict[tuple, list[dict]]) -> dict[tuple, float]:
    """(name, seed) → the relative decrease of each trained run's smoothed loss over its last fifth
    (``icl_sim.convergence``); runs with no logged loss (untrained models) are left out."""
    decreases = {key: loss_decrease(history) for key, history in histories.items()}
    return {key: value for key, value in decreases.items() if value is not None}


def evaluate(reproduction: Reproduction, scale: str, measurement: Measurement, *, deferring: bool = True,
             convergence: dict[tuple, float] | None = None) -> tuple[dict, list[Check]]:
    """Measure and check: the results and the checks, each claim check carrying its claim's deciding scale and the
    convergence of the runs the claim rests on, and marked deferred below that scale (if ``deferring``)."""
    results = reproduction.measure(measurement)
    checks = list(reproduction.checks(results, measurement.settings))
    check_claim_wiring(reproduction, checks)
    for claim in reproduction.claims:
        if claim.runs and not any(claim.rests_on(name) for name in measurement.models):
            raise ValueError(f"reproduction {reproduction.name!r}: claim {claim.id!r} rests on runs {claim.runs}, "
                             f"none of which it declares ({sorted(measurement.models)})")
    return results, [_as_evidence(check, reproduction, scale, deferring, convergence or {}) for check in checks]


def _as_evidence(check: Check, reproduction: Reproduction, scale: str, deferring: bool,
                 convergence: dict[tuple, float]) -> Check:
    """A claim check with its claim's deciding scale, its deferral and its runs' convergence; a sanity check as is."""
    if check.kind != "claim":
        return check
    claim = reproduction.claim(check.claim)
    return dataclasses.replace(check, decided_at=claim.decided_at, deferred=deferring and claim.deferred_at(scale),
                               convergence={f"{name}/seed-{seed}": value for (name, seed), value
                                            in sorted(convergence.items()) if claim.rests_on(name)})


def write_outputs(reproduction: Reproduction, scale: str, settings, results: dict, checks: list[Check],
                  out_dir: Path) -> None:
    """``results.{csv,json}``, ``checks.json`` and ``figure.{png,pdf}`` in ``out_dir``."""
    write_table(results["rows"], out_dir, "results")
    write_checks(checks, out_dir)
    caption = f"{reproduction.caption} ({reproduction.paper.citation()}; icl-sim, {scale} scale)."
    draw_figure(out_dir / "figure", reproduction.figure(results, settings), caption,
                trained=bool(reproduction.runs(settings)))  # a construction has no training run
