"""The full scale rehearsed on this machine, so that a paper-scale run on a GPU is not the first time its code runs.

``rehearse(reproduction, out_dir)`` builds every full-scale run of the seed block at its full size
(validating its config, task and model), trains the first seed's runs a few steps through the path
the full scale takes (a job of the sweep executor, here submitit's in-process ``debug`` one), and
runs measure, checks and figure on those models with fewer held-out prompts (and probe fitting steps).  For each distinct model size and batch shape
it measures, on one optimisation step: the parameters, the peak memory (on CUDA the allocator's
peak; on a CPU the weights, gradients and optimiser state plus the activations autograd saves), the
seconds per step here, and the FLOPs (``torch.utils.flop_counter``: matrix products, forward and
backward), which give the full run's total and its projected hours on one H200 at 40 % of its dense
bf16 peak.  The step measured is one of the run's last, so a curriculum's prompts are at their full
size and its early, smaller steps are counted at that size: an upper bound.  The
projection counts arithmetic only: a small model's GPU step is bound by kernel launches, not FLOPs,
so for the linear-attention runs it is a lower bound on the time.
"""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from icl_sim.atomic import write_text
from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.memory import available_bytes, format_bytes
from icl_sim.reports import training_memory
from icl_sim.executors import Executor
from icl_sim.tasks import make_task
from icl_sim.training import (initial_model, make_optimizer, make_scheduler, optimisation_step, resolve_device,
                              training_batch)

from .runner import Measurement, evaluate, models_by_name, seed_block, seeded_runs, trained_models, write_outputs
from .spec import Reproduction

#: optimiser steps each rehearsed run takes (the full path: schedule, logging, checkpoint, the monitor)
REHEARSAL_STEPS = 1
#: a step that takes longer than this (seconds) is timed as its FLOPs are counted, the counting's overhead small
#: beside its arithmetic; a quicker one is timed again without the counter
COUNTED_TIMING_SECONDS = 1.0
#: held-out prompts per stream in a rehearsal, and steps of a measure's own fit (a probe's): enough to run every
#: measure, not to judge it
REHEARSAL_PROMPTS, REHEARSAL_FIT_STEPS = 16, 20
#: one H200's dense bf16 tensor-core throughput (NVIDIA's datasheet: 989 TFLOP/s; 1979 is with sparsity)
H200_BF16_FLOPS = 989e12
#: the fraction of that peak a training run is assumed to sustain
UTILISATION = 0.4
#: the share of this machine's available memory that a rehearsed CPU step may be estimated to need; a larger step
#: runs on a fraction of its batch (the estimate is rough, hence the margin)
MEMORY_SHARE = 0.5
REHEARSAL_FILE = "rehearsal.json"


@dataclass(frozen=True)
class StepCost:
    """What one optimisation step of a model size and batch shape costs."""

    parameters: int
    peak_bytes: int
    seconds: float
    flops: float
    batch_fraction: int = 1  # k > 1: measured on 1/k of the batch (it would not fit here), costs scaled by k


@dataclass(frozen=True)
class RunCost:
    """A full-scale run's cost: its step's, times its steps."""

    run: str
    steps: int
    step: StepCost

    @property
    def total_flops(self) -> float:
        return self.step.flops * self.steps

    @property
    def h200_hours(self) -> float:
        return self.total_flops / (UTILISATION * H200_BF16_FLOPS) / 3600

    @property
    def hours_here(self) -> float:
        return self.step.seconds * self.steps / 3600

    def describe(self) -> str:
        return (f"{self.run}: {self.step.parameters:,} parameters, peak memory {format_bytes(self.step.peak_bytes)}, "
                f"{self.step.seconds:.3g} s/step here ({_hours(self.hours_here)} for its {self.steps:,} steps), "
                f"{self.total_flops:.3g} FLOP, {_hours(self.h200_hours)} on one H200"
                + (f" (measured on 1/{self.step.batch_fraction} of the batch, which would not fit here, and scaled)"
                   if self.step.batch_fraction > 1 else ""))

    def as_dict(self) -> dict:
        return {"run": self.run, "steps": self.steps, **dataclasses.asdict(self.step),
                "total_flops": self.total_flops, "h200_hours": self.h200_hours, "hours_here": self.hours_here}


def _hours(hours: float) -> str:
    """A duration given in hours, in the unit that reads best."""
    seconds = hours * 3600
    return f"{seconds:.2g} s" if seconds < 60 else f"{seconds / 60:.2g} min" if seconds < 3600 else f"{hours:.3g} h"


def total_hours(costs) -> float:
    """The projected H200 hours of ``costs`` together."""
    return sum(cost.h200_hours for cost in costs)


def total_line(label: str, costs) -> str:
    """``label``: its runs, FLOPs and projected H200 time, one line."""
    flops = sum(cost.total_flops for cost in costs)
    here = sum(cost.hours_here for cost in costs)
    return (f"{label}: {len(costs)} runs, {flops:.3g} FLOP, {_hours(total_hours(costs))} on one H200 at "
            f"{UTILISATION:.0%} of bf16 peak ({_hours(here)} at this machine's pace)")


def rehearse(reproduction: Reproduction, out_dir, *, seeds: int | None = None, first_seed: int = 0,
             device: str = "auto", progress: bool = False) -> tuple[list[RunCost], list[Check]]:
    """Rehearse ``reproduction``'s full scale in ``out_dir``: the costs of its runs over the seed block (also in
    ``rehearsal.json``) and the checks of the briefly trained models of the block's first seed (their verdicts
    mean nothing; that they are computed does).  The other seeds' runs are the same code at the same sizes:
    they are built and validated, and costed, not trained."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(device)
    full = reproduction.scales["full"]
    block = seed_block("full", seeds, first_seed, declared=reproduction.seeds)
    runs = seeded_runs(reproduction, full, block, device)
    for config in runs.values():
        initial_model(config, device)  # every run's task and model at full size, built once
    step_costs: dict[str, StepCost] = {}
    costs = []
    for (name, seed), config in runs.items():
        shape = _shape(config, device)
        if shape not in step_costs:
            step_costs[shape] = step_cost(config, device)
        costs.append(RunCost(f"{name}/seed-{seed}", config.steps, step_costs[shape]))
    short = {key: dataclasses.replace(fitting(config, batch_fraction(config, device)), steps=REHEARSAL_STEPS)
             for key, config in runs.items() if key[1] == block.start}
    models, histories = trained_models(reproduction, full, "full", short, out_dir, device,
                                       executor=Executor("debug"), progress=progress)
    settings = fewer_prompts(full)
    measurement = Measurement(settings, device, *models_by_name(models, histories, short), seeds=(block.start,))
    results, checks = evaluate(reproduction, "full", measurement)
    write_outputs(reproduction, "full", settings, results, checks, out_dir)
    write_text(out_dir / REHEARSAL_FILE, json.dumps([cost.as_dict() for cost in costs], indent=2) + "\n")
    return costs, checks


#: the settings a rehearsal shrinks, by the ending of their names, and the most each keeps
SHRUNK = {"_prompts": REHEARSAL_PROMPTS, "_fit_steps": REHEARSAL_FIT_STEPS}


def fewer_prompts(settings):
    """``settings`` with each held-out prompt count (a field named ``*_prompts``) at most ``REHEARSAL_PROMPTS`` and
    each measure's fitting steps (``*_fit_steps``) at most ``REHEARSAL_FIT_STEPS``; training settings unchanged."""
    if not dataclasses.is_dataclass(settings):
        return settings
    counts = {field.name: min(getattr(settings, field.name), most) for field in dataclasses.fields(settings)
              for ending, most in SHRUNK.items() if field.name.endswith(ending)}
    return dataclasses.replace(settings, **counts)


def _shape(config: TrainConfig, device: torch.device) -> str:
    """What a step's cost depends on: the shapes of a late training batch (the task's sizes, whatever its other
    parameters), the model, the batch and the positions in the loss."""
    task = make_task(config.task, **config.task_params)
    prompt = training_batch(task, config, config.steps - 1, device)
    return json.dumps([list(prompt.xs.shape), list(prompt.ys.shape), config.model, config.model_params,
                       config.batch_shards, config.loss_on, config.optimizer, config.compile], sort_keys=True,
                      default=str)


def batch_fraction(config: TrainConfig, device: torch.device) -> int:
    """1, or on a CPU the power of two k by which a rehearsed step's batch is cut when the whole batch is estimated
    (:func:`icl_sim.reports.training_memory`) to need more than ``MEMORY_SHARE`` of the available memory; the
    batch stays a multiple of its shards."""
    available = available_bytes()
    if device.type != "cpu" or available is None:
        return 1
    fraction = 1
    while ((config.batch_size // fraction) % (2 * config.batch_shards) == 0
           and training_memory(fitting(config, fraction)) > MEMORY_SHARE * available):
        fraction *= 2
    return fraction


def fitting(config: TrainConfig, fraction: int) -> TrainConfig:
    """``config`` with 1/``fraction`` of its batch."""
    return config if fraction == 1 else dataclasses.replace(config, batch_size=config.batch_size // fraction)


def step_cost(config: TrainConfig, device: torch.device) -> StepCost:
    """One optimisation step of ``config`` at its full size (its last steps' batches), measured on a fresh model:
    parameters, peak memory, seconds and FLOPs.  The seconds are those of the counted step when it is slow (over
    ``COUNTED_TIMING_SECONDS``: one step of a large model is the rehearsal's main cost, and timing it again would
    double it), else of one more step without the counter, whose overhead would dominate a small model's step.
    A step too large for this machine's memory (:func:`batch_fraction`) is measured on 1/k of its batch and its
    activations, seconds and FLOPs, which grow with the batch, are scaled by k."""
    fraction = batch_fraction(config, device)
    config = fitting(config, fraction)
    task = make_task(config.task, **config.task_params)
    model = initial_model(config, device).train()
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config)

    def timed_step(index: int) -> float:  # a late step: a curriculum's prompts at their full size
        late = config.steps - 1 - index
        start = time.perf_counter()
        optimisation_step(model, optimizer, scheduler, training_batch(task, config, late, device), task, config,
                          late, device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    saved = SavedActivations(model)
    with FlopCounterMode(display=False) as counter, saved:
        seconds = timed_step(0)
    peak = (torch.cuda.max_memory_allocated(device) if device.type == "cuda"
            else _tensor_bytes([*model.parameters(), *_gradients(model), *_optimiser_tensors(optimizer)])
            + fraction * saved.bytes)
    if seconds <= COUNTED_TIMING_SECONDS:
        seconds = timed_step(1)
    return StepCost(sum(p.numel() for p in model.parameters()), int(peak), fraction * seconds,
                    fraction * float(counter.get_total_flops()), fraction)


class SavedActivations(torch.autograd.graph.saved_tensors_hooks):
    """While active, the bytes of the distinct tensors autograd saves for backward, the model's weights aside:
    a step's activation memory."""

    def __init__(self, model: torch.nn.Module):
        self.bytes = 0
        self._seen = {p.untyped_storage().data_ptr() for p in model.parameters()}
        super().__init__(self._pack, lambda tensor: tensor)

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self._seen:
            self._seen.add(storage.data_ptr())
            self.bytes += storage.nbytes()
        return tensor


def _gradients(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad for p in model.parameters() if p.grad is not None]


def _optimiser_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [value for state in optimizer.state.values() for value in state.values() if torch.is_tensor(value)]


def _tensor_bytes(tensors) -> int:
    return sum(tensor.numel() * tensor.element_size() for tensor in tensors)
