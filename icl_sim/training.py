"""The training loop: seeded task stream -> model -> checkpoints and metrics, resumable bit for bit.

Batch t is drawn from ``make_generator(seed, "train", t)`` and dropout at step t
from ``derive_seed(seed, "dropout", t)``, so a run resumed from a checkpoint
replays exactly the computation of an uninterrupted one.
"""
from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Callable

import torch
from tqdm import tqdm

from icl_sim.atomic import write_text
from icl_sim.config import TrainConfig
from icl_sim.models import InContextModel
from icl_sim.prompt import Prompt
from icl_sim.run_io import (CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, build_run_model, load_checkpoint,
                            read_metrics, save_checkpoint, save_config)
from icl_sim.seeding import derive_seed, make_generator
from icl_sim.tasks import Task, make_task
from icl_sim.validation import check_int


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite."""


#: the environment variable behind ``icl-sim --threads``
THREADS_ENVIRONMENT = "ICL_SIM_THREADS"


def use_threads(count: int) -> None:
    """Run torch's CPU kernels on ``count`` intra-op threads.

    torch starts one per core; the small models and baselines of this field are often faster on one
    thread, many times so on a machine whose cores are shared (benchmarks/RESULTS.md).
    """
    check_int("threads", count, 1)
    torch.set_num_threads(count)


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when available; asking for CUDA without it is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but CUDA is not available; use --device cpu or auto")
    return torch.device(name)


def learning_rate_factor(config: TrainConfig) -> Callable[[int], float]:
    """Linear warm-up over ``warmup_steps``, then constant, cosine decay to zero at ``steps``, or geometric.

    Geometric (the decaying step size of Wu et al. 2024, Sec. 4, after Wu et al. 2022): over the
    s steps after warm-up, constant for the first s₁ = ⌈s/log₂ s⌉, then halved every ⌈(s − s₁)/log₂ s⌉.
    """
    remaining = max(1, config.steps - config.warmup_steps)
    first = math.ceil(remaining / max(1.0, math.log2(remaining)))
    phase = max(1, math.ceil((remaining - first) / max(1.0, math.log2(remaining))))

    def factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        if config.lr_schedule == "constant":
            return 1.0
        if config.lr_schedule == "geometric":
            after = step - config.warmup_steps - first
            return 1.0 if after < 0 else 0.5 ** (after // phase + 1)
        progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def training_batch(task: Task, config: TrainConfig, step: int, device: torch.device) -> Prompt:
    """Batch ``step`` of the run: a pure function of (seed, step), shaped by the curriculum."""
    points = config.curriculum_points.value_at(step, task.points) if config.curriculum_points else None
    dims = config.curriculum_dims.value_at(step, task.dim) if config.curriculum_dims else None
    generator = make_generator(config.seed, "train", step, device)
    return task.sample(config.batch_size, generator, points=points, active_dims=dims)


def squared_error_loss(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error over prompts, positions and the components of vector targets."""
    return (preds - targets).square().mean()


def logistic_loss(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log(1 + exp(−y·f)) for ±1 labels y and real scores f, averaged."""
    return torch.nn.functional.softplus(-targets * preds).mean()


#: training losses by name; a task names its loss in its ``loss`` attribute
LOSSES = {"squared_error": squared_error_loss, "logistic": logistic_loss}


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


def _make_optimizer(model: InContextModel, config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    optimizer_class = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    return optimizer_class(model.parameters(), lr=config.lr, betas=config.betas, eps=config.adam_eps,
                           weight_decay=config.weight_decay)


def _rng_devices(device: torch.device) -> list[int]:
    return [device.index or 0] if device.type == "cuda" else []


def train(config: TrainConfig, run_dir, *, resume: bool = False, progress: bool = True,
          log_extra: Callable[[InContextModel], dict] | None = None) -> InContextModel:
    """Train ``config`` in ``run_dir`` (resuming its checkpoint if ``resume``) and return the model.

    A new run refuses a directory that already holds one, so nothing is overwritten.
    ``log_extra(model)`` may add measurements to every metrics record.  On Ctrl-C the
    current state is checkpointed before the interrupt propagates.
    """
    run_dir = Path(run_dir)
    device = resolve_device(config.device)
    task = make_task(config.task, **config.task_params)
    if resume and not (run_dir / CHECKPOINT_FILE).is_file():
        raise ValueError(f"--resume: {str(run_dir)!r} holds no checkpoint to resume")
    if not resume and ((run_dir / CONFIG_FILE).exists() or (run_dir / CHECKPOINT_FILE).exists()):
        raise ValueError(f"out directory {str(run_dir)!r} already holds a run; pass --resume or choose another --out")

    with torch.random.fork_rng(devices=_rng_devices(device)):
        torch.manual_seed(derive_seed(config.seed, "init"))
        model = build_run_model(config).to(device)
        optimizer = _make_optimizer(model, config)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, learning_rate_factor(config))
        start = 0
        if resume:
            state = load_checkpoint(run_dir, device)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            start = state["step"]
            _truncate_metrics(run_dir, start)
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            save_config(run_dir, config)
        _run_steps(model, optimizer, scheduler, task, config, run_dir, device, start, progress, log_extra)
    return model.eval()


def _run_steps(model, optimizer, scheduler, task, config, run_dir, device, start, progress, log_extra):
    if config.compile:
        model.compile()  # in place, so that every method that calls the model runs compiled
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if (device.type == "cuda" and config.amp) \
        else contextlib.nullcontext()
    window_loss, window_steps = torch.zeros((), device=device), 0

    def checkpoint(step: int) -> None:
        save_checkpoint(run_dir, {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                  "scheduler": scheduler.state_dict()})

    def finite_window_mean(step: int) -> float:
        mean = window_loss.item() / max(window_steps, 1)
        if not math.isfinite(mean):
            raise TrainingDiverged(f"training loss became {mean} before step {step}; lower --lr or set --grad-clip "
                                   f"(last good checkpoint kept in {run_dir})")
        return mean

    model.train()
    bar = tqdm(total=config.steps, initial=start, disable=not progress, desc="train", dynamic_ncols=True)
    completed = settled = start  # optimiser steps taken; steps fully logged and checkpointed
    try:
        for step in range(start, config.steps):
            prompt = training_batch(task, config, step, device)
            torch.manual_seed(derive_seed(config.seed, "dropout", step))
            with autocast:
                loss = task_loss(model, prompt, task, config.loss_on, step)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            scheduler.step()
            completed = done = step + 1
            window_loss, window_steps = window_loss + loss.detach(), window_steps + 1
            if done % config.log_every == 0 or done == config.steps:
                mean = finite_window_mean(done)
                record = {"step": done, "loss": mean, "lr": scheduler.get_last_lr()[0],
                          "points": prompt.points, "active_dims": _active_dims(config, task, step)}
                if log_extra is not None:
                    record.update(log_extra(model))
                with open(run_dir / METRICS_FILE, "a") as metrics:
                    metrics.write(json.dumps(record) + "\n")
                bar.set_postfix(loss=f"{mean:.4g}")
                window_loss, window_steps = torch.zeros((), device=device), 0
            if done % config.checkpoint_every == 0 or done == config.steps:
                finite_window_mean(done)
                checkpoint(done)
            bar.update(1)
            settled = done
    except KeyboardInterrupt:
        # Only a state whose metrics are all written is saved; otherwise resume from the last checkpoint.
        if completed == settled and math.isfinite(window_loss.item()):
            checkpoint(completed)
        raise
    finally:
        bar.close()


def _active_dims(config: TrainConfig, task: Task, step: int) -> int:
    return config.curriculum_dims.value_at(step, task.dim) if config.curriculum_dims else task.dim


def _truncate_metrics(run_dir: Path, step: int) -> None:
    """Drop metric records past the checkpoint, so a resumed run logs each step once."""
    kept = [record for record in read_metrics(run_dir) if record["step"] <= step]
    write_text(run_dir / METRICS_FILE, "".join(json.dumps(record) + "\n" for record in kept))
