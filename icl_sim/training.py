"""The training loop: seeded task stream -> model -> checkpoints and metrics, resumable bit for bit.

Batch t is drawn from ``make_generator(seed, "train", t)`` and dropout at step t
from ``derive_seed(seed, "dropout", t)``, so a run resumed from a checkpoint
replays exactly the computation of an uninterrupted one.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from tqdm import tqdm

from icl_sim.atomic import naming_in_errors, remove_leftovers
from icl_sim.config import TrainConfig
from icl_sim.distributed import World, current_world, parallel, process_group
from icl_sim.failures import RunFailed, Terminated
from icl_sim.locks import directory_lock
from icl_sim.log_sinks import open_sink
from icl_sim.output_dirs import claim_output
from icl_sim.models import InContextModel
from icl_sim.optimizers import NormalizedGD, SophiaG
from icl_sim.progress import Progress
from icl_sim.prompt import Prompt
from icl_sim.provenance import recorded_session
from icl_sim.run_io import (CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, build_run_model, check_metrics_history,
                            check_optimizer_state, load_checkpoint, load_config, load_initial_weights,
                            load_model_state, load_run, save_checkpoint, save_config, save_snapshot,
                            trained_steps, truncate_metrics)
from icl_sim.seeding import derive_seed, make_generator, seed_global_generators
from icl_sim.tasks import Task, make_task


class TrainingDiverged(RunFailed):
    """The training loss became NaN or infinite."""


#: a logged loss this many times the loss of step 0 is warned about, once per call of ``train``
LOSS_GROWTH_WARNING = 1e3

def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when available; asking for CUDA without it is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but CUDA is not available; use --device cpu or auto")
    return torch.device(name)


def learning_rate_factor(config: TrainConfig) -> Callable[[int], float]:
    """The factor of ``lr`` at each step: linear warm-up over ``warmup_steps``, then constant, cosine decay to zero at
    ``steps``, geometric or halving; or Raventós et al.'s triangle, which has its own rise.

    Geometric (the decaying step size of Wu et al. 2024, Sec. 4, after Wu et al. 2022): over the
    s steps after warm-up, constant for the first s₁ = ⌈s/log₂ s⌉, then halved every ⌈(s − s₁)/log₂ s⌉.
    Halving (Ahn et al. 2023's notebooks, ``lr *= 0.5`` when t % 4000 == 0 and t > 1): 0.5^⌊t'/K⌋ at step t'
    after warm-up, K = ``lr_halving_every``.  Triangle (Raventós et al. 2023, ``icl/optim.py``: two optax linear
    schedules joined at W = ``warmup_steps``): t/W at step t < W (0 at the first step), then (s − t)/(s − W).
    """
    remaining = max(1, config.steps - config.warmup_steps)
    first = math.ceil(remaining / max(1.0, math.log2(remaining)))
    phase = max(1, math.ceil((remaining - first) / max(1.0, math.log2(remaining))))

    def factor(step: int) -> float:
        if config.lr_schedule == "triangle":
            return triangle_factor(step, config.warmup_steps, config.steps)
        if step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        if config.lr_schedule == "constant":
            return 1.0
        if config.lr_schedule == "geometric":
            after = step - config.warmup_steps - first
            return 1.0 if after < 0 else 0.5 ** (after // phase + 1)
        if config.lr_schedule == "halving":
            return 0.5 ** ((step - config.warmup_steps) // config.lr_halving_every)
        progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def triangle_factor(step: int, rise: int, steps: int) -> float:
    """Raventós et al.'s triangle at (0-based) ``step``: step/rise up to ``rise``, then linearly to 0 at ``steps``."""
    if step < rise:
        return step / rise
    return max(0.0, (steps - step) / max(1, steps - rise))


def drawn_at(config: TrainConfig, step: int) -> int:
    """The step whose batch step ``step`` trains on: batches are redrawn every ``batch_redraw_every`` steps."""
    return step - step % config.batch_redraw_every


def training_batch(task: Task, config: TrainConfig, step: int, device: torch.device) -> Prompt:
    """Batch ``step`` of the run, shaped by the curriculum: this process's shards of it (all of them in a process
    of its own, :mod:`icl_sim.distributed`), shard s a pure function of (seed, step, s).  With
    ``batch_redraw_every`` R > 1 it is the batch of step ``drawn_at(config, step)``, reused for R steps."""
    step = drawn_at(config, step)
    points = config.curriculum_points.value_at(step, task.points) if config.curriculum_points else None
    dims = config.curriculum_dims.value_at(step, task.dim) if config.curriculum_dims else None
    shards = [task.sample(config.batch_size // config.batch_shards,
                          make_generator(config.seed, "train", step, device, shard=shard),
                          points=points, active_dims=dims)
              for shard in current_world().shards(config.batch_shards)]
    return shards[0] if len(shards) == 1 else _concatenated(shards)


def _concatenated(prompts: list[Prompt]) -> Prompt:
    """One batch of ``prompts``' prompts, for training: their latents are left out, as the loss never reads them."""
    targets = None if prompts[0].targets is None else torch.cat([prompt.targets for prompt in prompts])
    return Prompt(torch.cat([prompt.xs for prompt in prompts]), torch.cat([prompt.ys for prompt in prompts]),
                  targets=targets)


def squared_error_loss(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error over prompts, positions and the components of vector targets."""
    return (preds - targets).square().mean()


def logistic_loss(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log(1 + exp(−y·f)) for ±1 labels y and real scores f, averaged."""
    return torch.nn.functional.softplus(-targets * preds).mean()


def cross_entropy_loss(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of logits (..., k) against a multi-hot target set (..., k) normalised to a distribution: the
    mean loss of a label drawn uniformly from the set (Saparov et al. 2024's next vertex), averaged."""
    weights = targets / targets.sum(dim=-1, keepdim=True).clamp(min=1)
    return -(weights * torch.log_softmax(preds, dim=-1)).sum(dim=-1).mean()


#: training losses by name; a task names its loss in its ``loss`` attribute
LOSSES = {"squared_error": squared_error_loss, "logistic": logistic_loss, "cross_entropy": cross_entropy_loss}


def task_loss(model, prompt: Prompt, task: Task, loss_on: str, step: int) -> torch.Tensor:
    """The task's loss at the last position, or averaged over all positions.

    Tasks whose only label is the final query (``evaluated_positions == "last"``) are
    always trained on the last position.  A model with several training outputs (a
    looped model's last loops) is trained on their average loss.
    """
    loss = LOSSES[task.loss]
    last_only = loss_on == "last" or task.evaluated_positions == "last"
    outputs = model.training_predictions(prompt.xs, prompt.ys, step, last_only)
    targets = prompt.target[:, -1] if last_only else prompt.target
    return sum(loss(preds.float(), targets) for preds in outputs) / len(outputs)


def parameter_groups(model: nn.Module, config: TrainConfig, names: list[str] | None = None) -> list:
    """``model``'s parameters as the optimiser takes them: all in one group, or with ``config.lr_group`` one group per
    parameter in ``parameters()`` order (so an optimiser state's entry i stays parameter i), those whose name (from
    ``names``, by default ``named_parameters()``) starts with ``lr_group`` at ``lr × lr_group_scale``."""
    parameters = list(model.parameters())
    if not config.lr_group:
        return parameters
    names = [name for name, _ in model.named_parameters()] if names is None else names
    scaled = [name.startswith(config.lr_group) for name in names]
    if not any(scaled):
        raise ValueError(f"lr_group {config.lr_group!r} names none of the model's parameters ({', '.join(names)})")
    return [{"params": [parameter], "lr": config.lr * (config.lr_group_scale if group else 1.0)}
            for parameter, group in zip(parameters, scaled)]


def make_optimizer(model: nn.Module, config: TrainConfig, *, stacked_runs: int = 0,
                   names: list[str] | None = None) -> torch.optim.Optimizer:
    """The optimiser ``config`` names over ``model``'s parameters (any module: an ensemble passes its stacked ones,
    whose ``stacked_runs`` leading run axis normalised GD must not mix, and the model's parameter ``names``), in
    :func:`parameter_groups`.

    On CUDA, Adam is the fused kernel (one launch per step for all parameters, which the tiny models'
    launch-bound steps need); on the CPU the reference implementation, so CPU runs stay as they were.
    """
    groups = parameter_groups(model, config, names)
    if config.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    if config.optimizer == "normalized-gd":
        return NormalizedGD(groups, lr=config.lr, penalty=config.weight_decay, stacked_runs=stacked_runs)
    if config.optimizer == "sophiag":
        return SophiaG(groups, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay,
                       batch_size=config.batch_size)
    optimizer_class = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    on_cuda = all(parameter.is_cuda for parameter in model.parameters())
    return optimizer_class(groups, lr=config.lr, betas=config.betas, eps=config.adam_eps,
                           weight_decay=config.weight_decay, fused=True if on_cuda else None)


def make_scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning-rate schedule of ``config`` (:func:`learning_rate_factor`) on ``optimizer``."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, learning_rate_factor(config))


def autocast_context(config: TrainConfig, device: torch.device):
    """bf16 autocast on CUDA if ``config.amp``; nothing on CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if (device.type == "cuda" and config.amp) \
        else contextlib.nullcontext()


def _rng_devices(device: torch.device) -> list[int]:
    return [device.index or 0] if device.type == "cuda" else []


def train(config: TrainConfig, run_dir, *, resume: bool = False, progress: bool = True,
          log_extra: Callable[[InContextModel], dict] | None = None) -> InContextModel:
    """Train ``config`` in ``run_dir`` (continuing the run saved there if ``resume``) and return the model.

    A new run refuses a directory that already holds one, so nothing is overwritten, and the run holds the
    directory's lock (:func:`~icl_sim.locks.directory_lock`) while it trains, so a second writer is refused.  Resuming
    continues from the last checkpoint, or from step 0 if the run stopped before its first one;
    ``config`` must be the saved one but for ``device`` and ``steps``, which may grow and is then
    saved.  ``log_extra(model)`` may add measurements to every metrics record.  On Ctrl-C or SIGTERM the run
    stops after the step under way (:func:`signals_stop_between_steps`; a second Ctrl-C stops at once) and is
    checkpointed before the interrupt (:class:`Terminated` for SIGTERM) propagates.  ``config.init_from`` starts
    a new run from another run's trained weights.  Started by ``torchrun``, the processes train the run together
    and rank 0 writes it (:mod:`icl_sim.distributed`).
    """
    run_dir = Path(run_dir)
    task = make_task(config.task, **config.task_params)
    with process_group(resolve_device(config.device)) as (device, world), \
            directory_lock(run_dir) if world.is_main else contextlib.nullcontext():
        world.shards(config.batch_shards)
        claim_output(run_dir, "run")
        state = initial_state(config, run_dir, resume=resume, device=device)
        world.barrier()  # every rank has looked at the directory before rank 0 writes to it
        model, optimizer, scheduler = restored_run(config, run_dir, device, state)
        if world.is_main:
            prepare_run_dir(config, run_dir, state, resume=resume)
        with torch.random.fork_rng(devices=_rng_devices(device)), signals_stop_between_steps(world.size == 1), \
                recorded_session(run_dir, device=device, seeds=[config.seed]) if world.is_main \
                else contextlib.nullcontext():
            _run_steps(model, optimizer, scheduler, task, config, run_dir, device, state, progress, log_extra, world)
        world.barrier()  # the run directory is complete when any rank returns
    return model.eval()


def train_to_end(config: TrainConfig, run_dir, *, progress: bool = True,
                 log_extra: Callable[[InContextModel], dict] | None = None) -> InContextModel:
    """The model of ``config`` trained to its end in ``run_dir``: a new run started, an unfinished one resumed,
    a finished one loaded.  A directory holding a run of another config is refused rather than overwritten."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        return train(config, run_dir, progress=progress, log_extra=log_extra)
    if load_config(run_dir).to_json() != config.to_json():
        raise ValueError(f"out directory {str(run_dir)!r} holds a run with another config; choose another --out")
    if trained_steps(run_dir) < config.steps:
        return train(config, run_dir, resume=True, progress=progress, log_extra=log_extra)
    return load_run(run_dir, config.device)


def initial_state(config: TrainConfig, run_dir: Path, *, resume: bool, device: torch.device) -> dict | None:
    """The checkpoint a run in ``run_dir`` starts from (None: step 0), refusing a directory it must not touch."""
    if not resume and ((run_dir / CONFIG_FILE).exists() or (run_dir / CHECKPOINT_FILE).exists()):
        raise ValueError(f"out directory {str(run_dir)!r} already holds a run; pass --resume or choose another --out")
    return _resumable_state(config, run_dir, device) if resume else None


def restored_run(config: TrainConfig, run_dir: Path, device: torch.device, state: dict | None):
    """The run's model, optimiser and schedule, loaded from ``state``; at step 0 (``state`` None) the model
    initialised from its seed, or the trained weights of ``config.init_from`` with a fresh optimiser and schedule.

    Nothing is written: a checkpoint that does not fit the config fails here, before any file of the run changes.
    """
    model = initial_model(config, device)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config)
    if state is not None:
        load_model_state(model, state["model"], run_dir)
        check_optimizer_state(state, run_dir)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    elif config.init_from:
        load_initial_weights(model, config.init_from, device)
    return model, optimizer, scheduler


def prepare_run_dir(config: TrainConfig, run_dir: Path, state: dict | None, *, resume: bool) -> None:
    """Make ``run_dir`` ready for training from ``state``: a new run's config saved; a resumed run's killed writes'
    leftovers and metrics past the checkpoint dropped, then its config saved with the new ``steps`` (last, so a
    failure leaves config.json as it was)."""
    if resume:
        remove_leftovers(run_dir)
        truncate_metrics(run_dir, state["step"] if state is not None else 0)
        save_config(run_dir, dataclasses.replace(load_config(run_dir), steps=config.steps))
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(run_dir, config)


def initial_model(config: TrainConfig, device: torch.device) -> InContextModel:
    """The model a run of ``config`` starts from (its step 0): initialised from the seed's "init" stream."""
    with torch.random.fork_rng(devices=_rng_devices(device)):
        torch.manual_seed(derive_seed(config.seed, "init"))
        return build_run_model(config).to(device)


def _resumable_state(config: TrainConfig, run_dir: Path, device: torch.device) -> dict | None:
    """The checkpoint to continue ``config`` from (None: from step 0), after checking that there is work left."""
    if not (run_dir / CONFIG_FILE).is_file():
        raise ValueError(f"--resume: {str(run_dir)!r} holds no run to resume (no {CONFIG_FILE})")
    saved_config = load_config(run_dir)
    saved, given = saved_config.settings(), config.settings()
    changed = [name for name in given if given[name] != saved[name] and name not in ("steps", "device")]
    if changed:
        raise ValueError(f"--resume continues the run in {str(run_dir)!r}, whose {CONFIG_FILE} has another "
                         f"{changed[0]} ({saved[changed[0]]!r}); only --steps and --device may change")
    state = load_checkpoint(run_dir, device) if (run_dir / CHECKPOINT_FILE).is_file() else None
    done = state["step"] if state is not None else 0
    check_metrics_history(run_dir, done, saved_config.log_every)  # refused before anything is written
    if config.steps < done:
        raise ValueError(f"--steps {config.steps} is fewer than the {done} steps {str(run_dir)!r} has trained; "
                         f"pass --steps above {done}")
    if config.steps == done:
        raise ValueError(f"{str(run_dir)!r} has already trained all its {done} steps; pass --steps above {done} "
                         f"to train it further")
    _warn_if_schedule_changes(saved_config, config, done)
    return state


def _warn_if_schedule_changes(saved: TrainConfig, config: TrainConfig, done: int) -> None:
    """Warn when more ``steps`` change the learning rate of the steps still to come (a cosine or geometric
    schedule stretched to the new end): the run then differs from a fresh run of as many steps."""
    before, after = learning_rate_factor(saved)(done), learning_rate_factor(config)(done)
    if done > 0 and before != after:
        tqdm.write(f"Warning: --steps {config.steps} stretches the {config.lr_schedule} schedule of the run, which "
                   f"decayed to step {saved.steps}: step {done} trains at {after:.3g} x lr, not {before:.3g} x lr, "
                   f"so the run differs from a fresh {config.steps}-step run", file=sys.stderr)


class RunLog:
    """A run's bookkeeping after each optimiser step: the loss window, metrics records, checkpoints, divergence.

    ``train`` keeps one; an ensemble (:mod:`icl_sim.ensemble`) keeps one per run, whose ``before_write``
    brings the run's model, optimiser and schedule up to date before anything is read from them.
    A log that ``writes`` nothing (a rank other than 0 of a distributed run) keeps the same accounts.
    The loss window (the sum and count of losses since the last record) is checkpointed too, so a
    record is a pure function of the steps it covers, wherever the run was stopped and resumed.
    """

    def __init__(self, model, optimizer, scheduler, task: Task, config: TrainConfig, run_dir: Path,
                 device: torch.device, state: dict | None, log_extra: Callable[[InContextModel], dict] | None,
                 before_write: Callable[[], None] | None = None, writes: bool = True):
        self.writes = writes
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.task, self.config, self.run_dir, self.log_extra = task, config, run_dir, log_extra
        self.before_write = before_write or (lambda: None)
        self.start = state["step"] if state is not None else 0
        self.window_loss = state["window_loss"] if state is not None else torch.zeros((), device=device)
        self.window_steps = state["window_steps"] if state is not None else 0
        self.initial_loss = state["initial_loss"] if state is not None else math.nan  # the loss of step 0
        self.saved_step, self.saved_at = (self.start if state is not None else None), time.monotonic()
        self.warned = False
        self.completed = self.settled = self.start  # optimiser steps begun; steps fully logged and checkpointed
        self.sink = open_sink(config.log, run_dir, config.settings()) if writes else None

    def record(self, step: int, loss: torch.Tensor, prompt: Prompt) -> float | None:
        """Account for optimiser step ``step`` (its loss and batch), logging and checkpointing when due.

        Returns the logged mean loss, or None if no record was due.
        """
        config, done = self.config, step + 1
        self.completed = done
        self.window_loss, self.window_steps = self.window_loss + loss.detach(), self.window_steps + 1
        if step == 0:
            self.initial_loss = loss.item()
        log_due = done % config.log_every == 0 or done == config.steps
        checkpoint_due = (done % config.checkpoint_every == 0 or done == config.steps
                          or time.monotonic() - self.saved_at >= 60 * config.checkpoint_minutes)
        snapshot_due = config.keep_every > 0 and done % config.keep_every == 0
        mean = None
        if log_due or checkpoint_due or snapshot_due:
            self.before_write()
        if log_due:
            mean = self._finite_window_mean(done)
            if not self.warned and mean > LOSS_GROWTH_WARNING * self.initial_loss > 0:
                tqdm.write(f"Warning: training loss {mean:.3g} at step {done} is over {LOSS_GROWTH_WARNING:g} "
                           f"times its initial {self.initial_loss:.3g}; lower --lr or set --grad-clip", file=sys.stderr)
                self.warned = True
            if self.writes:
                self._write_record(done, mean, prompt)
            self.window_loss, self.window_steps = torch.zeros_like(self.window_loss), 0
        if snapshot_due and self.writes:  # before the checkpoint: a checkpointed step's snapshot exists
            self._finite_window_mean(done)  # a diverged model is never kept
            save_snapshot(self.run_dir, done, self.model.state_dict())
        if checkpoint_due:
            self._finite_window_mean(done)
            self.checkpoint(done)
        self.settled = done
        return mean

    def _write_record(self, done: int, mean: float, prompt: Prompt) -> None:
        record = {"step": done, "loss": mean, "lr": self.scheduler.get_last_lr()[0],
                  "points": prompt.points, "active_dims": _active_dims(self.config, self.task, done - 1)}
        if self.log_extra is not None:
            record.update(self.log_extra(self.model))
        path = self.run_dir / METRICS_FILE
        with naming_in_errors(path), open(path, "a") as metrics:  # a full disk names the file; a torn line is dropped
            metrics.write(json.dumps(record) + "\n")
        if self.sink is not None:
            self.sink.write(record)

    def close(self) -> None:
        """Close the log's other sink (TensorBoard's event file, the W&B run), if any."""
        if self.sink is not None:
            self.sink.close()

    def interrupted(self, interrupt: KeyboardInterrupt) -> None:
        """On Ctrl-C or SIGTERM: checkpoint if every step begun is logged (otherwise, a step cut short or not logged,
        the run resumes from its last checkpoint), and say which checkpoint the run resumes from."""
        if self.completed == self.settled and math.isfinite(self.window_loss.item()):
            self.before_write()
            self.checkpoint(self.completed)
        if self.writes:
            cause = "stopped by SIGTERM" if isinstance(interrupt, Terminated) else "interrupted"
            kept = ("no checkpoint yet, it restarts from step 0" if self.saved_step is None
                    else f"checkpoint of step {self.saved_step} saved")
            tqdm.write(f"Training {cause} at step {self.completed}: {kept} in {self.run_dir}; continue it with "
                       f"`icl-sim train --resume --out {self.run_dir}`", file=sys.stderr)

    def checkpoint(self, step: int) -> None:
        if self.writes:
            save_checkpoint(self.run_dir, {"step": step, "model": self.model.state_dict(),
                                           "optimizer": self.optimizer.state_dict(),
                                           "scheduler": self.scheduler.state_dict(), "window_loss": self.window_loss,
                                           "window_steps": self.window_steps, "initial_loss": self.initial_loss})
        self.saved_step, self.saved_at = step, time.monotonic()

    def _finite_window_mean(self, step: int) -> float:
        mean = self.window_loss.item() / max(self.window_steps, 1)
        if not math.isfinite(mean):
            kept = ("no checkpoint was written" if self.saved_step is None
                    else f"the checkpoint of step {self.saved_step} is kept")
            raise TrainingDiverged(f"training loss became {mean} before step {step}; lower --lr or set --grad-clip "
                                   f"({kept} in {self.run_dir})")
        return mean


class TrainingPredictions(nn.Module):
    """``model.training_predictions`` as a module's forward: what ``torch.compile`` compiles and
    DistributedDataParallel synchronises (a model's cheaper training paths, such as the last position
    alone, bypass its own ``forward``).  It holds nothing but ``model``."""

    def __init__(self, model: InContextModel):
        super().__init__()
        self.model = model

    def forward(self, xs: torch.Tensor, ys: torch.Tensor, step: int, last_only: bool) -> list[torch.Tensor]:
        return self.model.training_predictions(xs, ys, step, last_only)

    def training_predictions(self, xs: torch.Tensor, ys: torch.Tensor, step: int,
                             last_only: bool) -> list[torch.Tensor]:
        return self(xs, ys, step, last_only)


def training_forward(model: InContextModel, config: TrainConfig, device: torch.device,
                     world: World = World()) -> nn.Module:
    """What the training loss calls for ``model``'s predictions: compiled in ``config.compile_mode`` if
    ``config.compile``, and under DistributedDataParallel when the ``world`` has several processes."""
    forward = TrainingPredictions(model)
    if config.compile:
        forward.compile(mode=config.compile_mode)
    return parallel(forward, device, world)


def optimisation_step(model: nn.Module, optimizer: torch.optim.Optimizer, scheduler, prompt: Prompt, task: Task,
                      config: TrainConfig, step: int, device: torch.device, *, forward: nn.Module | None = None
                      ) -> torch.Tensor:
    """Step ``step`` of ``config``'s training on ``prompt``, and its loss (attached to the graph).

    Dropout draws from (seed, step), the loss is computed under :func:`autocast_context` by ``forward``
    (``model`` itself, or its :func:`training_forward`: compiled, distributed), then backward, the gradient
    clipping of ``config``, the optimiser's and the schedule's step.  The one training step that ``train`` runs and
    that the benchmarks time.
    """
    seed_global_generators(derive_seed(config.seed, "dropout", step), device)
    if config.compile and config.compile_mode == "reduce-overhead":
        torch.compiler.cudagraph_mark_step_begin()  # the last step's CUDA-graph outputs may be overwritten
    with autocast_context(config, device):
        loss = task_loss(forward or model, prompt, task, config.loss_on, step)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if config.grad_clip_matrix:
        for parameter in model.parameters():
            if parameter.grad is not None:
                clip_matrix_norms_(parameter.grad, config.grad_clip_matrix, parameter.dim())
    if config.grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    scheduler.step()
    return loss


@torch.no_grad()
def clip_matrix_norms_(grad: torch.Tensor, max_norm: float, dims: int) -> None:
    """Scale, in place, each matrix of ``grad`` whose Frobenius norm exceeds ``max_norm`` down to ``max_norm``.

    The matrices are the last ``min(dims, 2)`` axes of a parameter with ``dims`` axes (a vector is one, a
    scalar its own); ``grad`` may carry leading axes beyond them (an ensemble's runs).  As Ahn et al. 2023's
    ``clip_and_step`` does for each (layer, head, P or Q) matrix: g ← g · max_norm/‖g‖ when ‖g‖ > max_norm.
    """
    axes = tuple(range(grad.dim() - min(dims, 2), grad.dim()))
    norms = grad.abs() if not axes else torch.linalg.vector_norm(grad, dim=axes, keepdim=True)
    grad.mul_(torch.where(norms > max_norm, max_norm / norms, torch.ones_like(norms)))


#: the stop signals received inside :func:`signals_stop_between_steps` and not yet acted on: (signal, when)
_stop_requests: list[tuple[int, float]] = []
#: a SIGINT this soon after the first is the same Ctrl-C forwarded again by a parent process (submitit's local job
#: controller resends the terminal's SIGINT to its jobs), not a second press
FORWARDED_CTRL_C_SECONDS = 0.5
#: what the first Ctrl-C prints
_STOPPING = b"stopping after this step; Ctrl-C again to stop at once\n"


@contextlib.contextmanager
def signals_stop_between_steps(enabled: bool = True):
    """Within the block, SIGTERM and a first Ctrl-C (SIGINT) make the next :func:`stop_if_signalled` raise
    :class:`Terminated` or KeyboardInterrupt instead of stopping the process wherever it is: a training loop calls
    it after each step, so the run stops between two steps and its checkpoint resumes bit for bit (SLURM sends
    SIGTERM before it kills a job; a Ctrl-C inside ``optimizer.step()`` would leave the weights half updated).
    A second Ctrl-C raises KeyboardInterrupt at once.

    The previous handlers are restored afterwards.  Signals are caught only if ``enabled`` and in the main thread
    (the only one that may set a handler), and a signal the process ignores stays ignored; a distributed run keeps
    the defaults, as its ranks would stop at different steps.
    """
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    _stop_requests.clear()
    previous = {signum: signal.signal(signum, _request_stop) for signum in (signal.SIGTERM, signal.SIGINT)
                if signal.getsignal(signum) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        _stop_requests.clear()


def _request_stop(signum: int, frame) -> None:
    """The handler of :func:`signals_stop_between_steps`: notes the signal; a second Ctrl-C raises KeyboardInterrupt."""
    now = time.monotonic()
    pressed = [at for number, at in _stop_requests if number == signal.SIGINT]
    if signum == signal.SIGINT and pressed:
        if now - pressed[0] >= FORWARDED_CTRL_C_SECONDS:
            raise KeyboardInterrupt
        return
    _stop_requests.append((signum, now))
    if signum == signal.SIGINT:
        with contextlib.suppress(OSError):  # os.write: this may interrupt a write to sys.stderr, which is not reentrant
            os.write(2, _STOPPING)


def stop_if_signalled() -> None:
    """Raise :class:`Terminated` (SIGTERM) or KeyboardInterrupt (Ctrl-C) for the first stop signal that arrived
    inside :func:`signals_stop_between_steps`."""
    if _stop_requests:
        raise Terminated("SIGTERM") if _stop_requests[0][0] == signal.SIGTERM else KeyboardInterrupt


def _run_steps(model, optimizer, scheduler, task, config, run_dir, device, state, progress, log_extra,
               world: World):
    """Steps from the checkpoint ``state`` (None: step 0) to ``config.steps``; a :class:`RunLog` logs and saves
    (on rank 0 of the ``world``, the whole batch's loss: the mean of the ranks' equally sized shares)."""
    log = RunLog(model, optimizer, scheduler, task, config, run_dir, device, state, log_extra, writes=world.is_main)
    trained = training_forward(model.train(), config, device, world)
    shown = Progress(config.steps, start=log.start, desc="train", enabled=progress and world.is_main)
    try:
        for step in range(log.start, config.steps):
            prompt = training_batch(task, config, step, device)
            log.completed = step + 1  # the weights change from here: a half-done step is not checkpointed
            loss = optimisation_step(model, optimizer, scheduler, prompt, task, config, step, device, forward=trained)
            mean = log.record(step, world.mean(loss), prompt)
            shown.advance(step + 1, None if mean is None else f"{mean:.4g}")
            stop_if_signalled()
    except KeyboardInterrupt as interrupt:
        log.interrupted(interrupt)
        raise
    finally:
        shown.close()
        log.close()


def _active_dims(config: TrainConfig, task: Task, step: int) -> int:
    return config.curriculum_dims.value_at(drawn_at(config, step), task.dim) if config.curriculum_dims else task.dim
