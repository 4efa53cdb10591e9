"""Many runs of one architecture trained as one batched computation: an ensemble.

K runs that differ only in what leaves the architecture and the batch shape alone (seeds, learning
rates and other optimiser settings, task parameters such as ``pool_size``, ``pool_seed`` or
``noise``) train together: their weights are stacked along a leading run dimension, and one
``torch.func.vmap`` of :func:`icl_sim.training.task_loss` gives all K losses and, in one backward
pass, all K gradients.  Everything else stays each run's own, as in :func:`icl_sim.training.train`:
batch t from (seed, t), the initialisation from the seed (buffers too, such as a fixed head: they are
stacked beside the weights), gradient clipping by the norm of the run's own gradient (not of the stack),
and the optimiser and learning-rate schedule.  Adam, AdamW, SGD and SophiaG act elementwise, so one
optimiser over the stacked weights of the runs that share optimiser settings takes each run's own step
(normalised GD is told the run axis and normalises each run's slice alone); runs with other settings get
optimisers of their own.  Each run
directory gets its config, checkpoints and metrics from :class:`icl_sim.training.RunLog`, exactly
as for a run trained alone: a run trained in an ensemble resumes alone with ``train(..., resume=True)``.

Results equal separate runs up to floating-point reduction order (a vmapped matmul may sum in
another order; tests/test_ensemble.py bounds the difference).  Dropout is refused: its masks come
from the global generator seeded per run and step, which one vmapped call cannot reproduce for K runs.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from icl_sim.config import TrainConfig
from icl_sim.distributed import current_world, launched_by_torchrun
from icl_sim.locks import directory_lock
from icl_sim.output_dirs import claim_output
from icl_sim.models import InContextModel
from icl_sim.progress import Progress
from icl_sim.prompt import Prompt
from icl_sim.provenance import recorded_session
from icl_sim.tasks import make_task
from icl_sim.training import (RunLog, autocast_context, clip_matrix_norms_, initial_state, make_optimizer,
                              make_scheduler, prepare_run_dir, resolve_device, restored_run,
                              signals_stop_between_steps, stop_if_signalled, task_loss, training_batch)

#: TrainConfig fields that may differ between the runs of an ensemble; all others must be equal
PER_RUN_FIELDS = ("task_params", "seed", "lr", "optimizer", "betas", "adam_eps", "weight_decay", "momentum",
                  "lr_schedule", "warmup_steps", "grad_clip", "log_every", "checkpoint_every", "checkpoint_minutes",
                  "keep_every", "log", "unverified_edit")
#: the fields that decide a run's optimiser and learning-rate schedule: runs equal in them share one optimiser
OPTIMISER_FIELDS = ("optimizer", "lr", "betas", "adam_eps", "weight_decay", "momentum", "lr_schedule",
                    "warmup_steps")
#: what a task's parameters must leave equal between runs: the batch's shape and the loss
TASK_SHAPE = ("dim", "points", "target_dim", "loss", "evaluated_positions")


def check_ensemble(configs: Sequence[TrainConfig]) -> None:
    """Refuse, with a one-line ValueError naming the field, configs that cannot train as one ensemble."""
    if not configs:
        raise ValueError("configs must hold at least one run")
    first, shared = configs[0], _shared_settings(configs[0])
    for index, config in enumerate(configs[1:], start=1):
        for name, value in _shared_settings(config).items():
            if value != shared[name]:
                raise ValueError(f"ensemble runs must share {name}: run 0 has {shared[name]!r}, run {index} has "
                                 f"{value!r}; train them in separate ensembles")
    reason = _why_alone(first)  # the other runs share its model_params and compile
    if reason is not None:
        raise ValueError(reason)
    if launched_by_torchrun() or current_world().size > 1:
        raise ValueError("an ensemble trains in one process, and every torchrun process would write every run: "
                         "launch it without torchrun (torchrun is for one large run, icl-sim train)")


def ensemble_groups(configs: Sequence[TrainConfig]) -> list[list[int]]:
    """The indices of ``configs`` grouped into ensembles that :func:`train_ensemble` accepts (singletons for runs
    that must train alone), in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for index, config in enumerate(configs):
        alone = _why_alone(config) is not None
        key = f"alone {index}" if alone else json.dumps(_shared_settings(config), sort_keys=True, default=str)
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def _why_alone(config: TrainConfig) -> str | None:
    """Why ``config``'s run must train alone, as the error :func:`check_ensemble` raises; None if it need not."""
    if config.model_params.get("dropout", 0.0) > 0:
        return (f"model_params dropout must be 0 in an ensemble (got {config.model_params['dropout']}): its masks "
                f"could not match separate runs'; train such runs alone")
    if config.compile:
        return "compile must be false in an ensemble: torch.compile applies to runs trained alone"
    return None


def _shared_settings(config: TrainConfig) -> dict:
    """What the runs of one ensemble must share: every TrainConfig field but PER_RUN_FIELDS, and the task's
    batch shape and loss (which its parameters may change)."""
    task = make_task(config.task, **config.task_params)
    fields = {spec.name: getattr(config, spec.name) for spec in dataclasses.fields(TrainConfig)
              if spec.name not in PER_RUN_FIELDS}
    return {**fields, **{name: getattr(task, name) for name in TASK_SHAPE}}


class RunLoss(nn.Module):
    """One run's training loss as a module call, so that ``functional_call`` can swap in that run's weights."""

    def __init__(self, model: InContextModel, task, loss_on: str):
        super().__init__()
        self.model, self.task, self.loss_on = model, task, loss_on

    def forward(self, xs: torch.Tensor, ys: torch.Tensor, target: torch.Tensor, step: int) -> torch.Tensor:
        return task_loss(self.model, Prompt(xs, ys, targets=target), self.task, self.loss_on, step)


@dataclass
class _Group:
    """Runs that share optimiser settings: their weights stacked, one optimiser and schedule over them."""

    members: list[int]  # the runs' indices in the ensemble, in stacking order
    weights: list[torch.Tensor]  # one leaf (len(members), *shape) per parameter, in ``parameters()`` order
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    max_norms: torch.Tensor  # each member's grad_clip (0: off)
    matrix_clip: float = 0.0  # the members' grad_clip_matrix (0: off), applied first

    def clip_gradients(self) -> None:
        """``clip_grad_norm_`` applied to each member alone: its gradient's norm, not the stack's (after each
        member's matrices are clipped by ``matrix_clip``, as ``optimisation_step`` does)."""
        if self.matrix_clip:
            for weight in self.weights:
                clip_matrix_norms_(weight.grad, self.matrix_clip, weight.dim() - 1)
        if not bool((self.max_norms > 0).any()):
            return
        grads = [weight.grad for weight in self.weights]
        norms = torch.func.vmap(lambda *grad: torch.nn.utils.get_total_norm(grad, foreach=False))(*grads)
        factors = torch.where(self.max_norms > 0, torch.clamp(self.max_norms / (norms + 1e-6), max=1.0), 1.0)
        for grad in grads:
            grad.mul_(factors.view(-1, *[1] * (grad.dim() - 1)))

    def step(self) -> None:
        self.clip_gradients()
        self.optimizer.step()
        self.scheduler.step()


def train_ensemble(configs: Sequence[TrainConfig], run_dirs: Sequence, *, resume: bool = False,
                   progress: bool = True, log_extra: Callable[[InContextModel], dict] | None = None
                   ) -> list[InContextModel]:
    """Train the runs ``configs`` in ``run_dirs`` as one batched computation; return their models in order.

    Each run is what ``train(config, run_dir, resume=resume, log_extra=log_extra)`` would give, up to
    floating-point reduction order, with the same files in its directory.  Resumed runs must all
    continue from the same step.  If one run's loss becomes NaN, the ensemble stops with
    ``TrainingDiverged`` and every run keeps its last checkpoint.  On Ctrl-C or SIGTERM each run is
    checkpointed as ``train`` would.
    """
    configs, run_dirs = list(configs), [Path(run_dir) for run_dir in run_dirs]
    check_ensemble(configs)
    if len(run_dirs) != len(configs) or len({run_dir.resolve() for run_dir in run_dirs}) != len(configs):
        raise ValueError(f"run_dirs must name {len(configs)} distinct directories, one per config; got {run_dirs}")
    with contextlib.ExitStack() as locks:
        for run_dir in run_dirs:
            locks.enter_context(directory_lock(run_dir))
            claim_output(run_dir, "run")
        return _train_locked(configs, run_dirs, resume, progress, log_extra)


def _train_locked(configs: list[TrainConfig], run_dirs: list[Path], resume: bool, progress: bool,
                  log_extra: Callable[[InContextModel], dict] | None) -> list[InContextModel]:
    """:func:`train_ensemble` once every run directory's lock is held."""
    device = resolve_device(configs[0].device)
    states = [initial_state(config, run_dir, resume=resume, device=device)
              for config, run_dir in zip(configs, run_dirs)]
    starts = [0 if state is None else state["step"] for state in states]
    if len(set(starts)) > 1:
        raise ValueError(f"resume: the runs stopped at different steps {starts}; an ensemble continues runs from "
                         f"one step, so resume them in groups that share it")
    tasks = [make_task(config.task, **config.task_params) for config in configs]
    runs = [restored_run(config, run_dir, device, state) for config, run_dir, state in zip(configs, run_dirs, states)]
    for config, run_dir, state in zip(configs, run_dirs, states):  # every run validated before any is written
        prepare_run_dir(config, run_dir, state, resume=resume)
    groups = [_group(members, runs, configs, device) for members in _optimiser_groups(configs)]
    logs = []
    for group in groups:
        for position, index in enumerate(group.members):
            model, optimizer, scheduler = runs[index]
            logs.append(RunLog(model, optimizer, scheduler, tasks[index], configs[index], run_dirs[index], device,
                               states[index], log_extra,
                               before_write=functools.partial(_sync, runs[index], group, position)))
    order = [index for group in groups for index in group.members]
    with signals_stop_between_steps(), contextlib.ExitStack() as sessions:
        for config, run_dir in zip(configs, run_dirs):
            sessions.enter_context(recorded_session(run_dir, device=device, seeds=[config.seed]))
        try:
            _run_steps(groups, logs, order, tasks, configs, [runs[index][0] for index in order], device, starts[0],
                       progress)
        finally:
            for log in logs:
                log.close()
    for log in logs:
        log.before_write()
    return [model.eval() for model, _, _ in runs]


def _optimiser_groups(configs: Sequence[TrainConfig]) -> list[list[int]]:
    """The indices of the runs, grouped by equal optimiser settings, in order of first appearance."""
    groups: dict[tuple, list[int]] = {}
    for index, config in enumerate(configs):
        groups.setdefault(tuple(getattr(config, name) for name in OPTIMISER_FIELDS), []).append(index)
    return list(groups.values())


def _group(members: list[int], runs: list, configs: Sequence[TrainConfig], device: torch.device) -> _Group:
    """The members' weights stacked, with an optimiser and schedule built and loaded as ``train`` builds them."""
    config = configs[members[0]]
    weights = nn.ParameterList(torch.stack(parameters).detach()
                               for parameters in zip(*(runs[index][0].parameters() for index in members)))
    optimizer = make_optimizer(weights, config, stacked_runs=1,
                               names=[name for name, _ in runs[members[0]][0].named_parameters()])
    scheduler = make_scheduler(optimizer, config)
    optimizer.load_state_dict(_stacked_state([runs[index][1].state_dict() for index in members], weights))
    scheduler.load_state_dict(runs[members[0]][2].state_dict())
    max_norms = torch.tensor([configs[index].grad_clip for index in members], device=device)
    return _Group(members, list(weights), optimizer, scheduler, max_norms, config.grad_clip_matrix)


#: optimiser state entries the runs of a group share, not one per weight: the step count (equal, since the runs
#: start at the same step), a 0-dimensional tensor that a scalar weight's own entries must not be mistaken for
SHARED_ENTRIES = ("step",)


def _per_element(key: str, value, shape: torch.Size) -> bool:
    """Whether optimiser state entry ``key`` holds one value per element of a weight of ``shape``."""
    return key not in SHARED_ENTRIES and torch.is_tensor(value) and value.shape == shape


def _stacked_state(states: list[dict], weights: list[torch.Tensor]) -> dict:
    """The runs' optimiser states as one over their stacked weights: per-element tensors stacked, the rest
    (``SHARED_ENTRIES``, equal in every run) shared."""
    def stack(index: int, key: str, value):
        per_element = _per_element(key, value, weights[index].shape[1:])
        return torch.stack([state["state"][index][key] for state in states]) if per_element else value

    entries = {index: {key: stack(index, key, value) for key, value in entry.items()}
               for index, entry in states[0]["state"].items()}
    return {"state": entries, "param_groups": states[0]["param_groups"]}


def _run_state(state: dict, position: int, weights: list[torch.Tensor]) -> dict:
    """Member ``position``'s optimiser state, cut from the stacked one: the state its run alone would hold."""
    def cut(index: int, key: str, value):
        return value[position].clone() if _per_element(key, value, weights[index].shape) else value

    entries = {index: {key: cut(index, key, value) for key, value in entry.items()}
               for index, entry in state["state"].items()}
    return {"state": entries, "param_groups": state["param_groups"]}


@torch.no_grad()
def _sync(run: tuple, group: _Group, position: int) -> None:
    """Copy member ``position`` of ``group`` into its run's own model, optimiser and schedule, for RunLog to save."""
    model, optimizer, scheduler = run
    for parameter, weight in zip(model.parameters(), group.weights):
        parameter.copy_(weight[position])
    optimizer.load_state_dict(_run_state(group.optimizer.state_dict(), position, group.weights))
    scheduler.load_state_dict(group.scheduler.state_dict())


def _run_steps(groups: list[_Group], logs: list[RunLog], order: list[int], tasks: list, configs: list[TrainConfig],
               models: list[InContextModel], device: torch.device, start: int, progress: bool) -> None:
    """Steps ``start`` to the end for every run at once; ``logs``, ``order`` and ``models`` follow the stacking
    order.  Each run's buffers (a fixed head drawn from its seed, say) are stacked beside its weights."""
    template = RunLoss(copy.deepcopy(models[0]).train(), tasks[0], configs[0].loss_on)
    names = [f"model.{name}" for name, _ in models[0].named_parameters()]
    buffers = {f"model.{name}": torch.stack([model.get_buffer(name) for model in models])
               for name, _ in models[0].named_buffers()}
    steps = configs[0].steps

    def losses(weights: dict, xs: torch.Tensor, ys: torch.Tensor, target: torch.Tensor, step: int) -> torch.Tensor:
        return torch.func.functional_call(template, weights, (xs, ys, target, step))

    shown = Progress(steps, start=start, desc=f"train {len(order)} runs", enabled=progress)
    try:
        for step in range(start, steps):
            prompts = [training_batch(tasks[index], configs[index], step, device) for index in order]
            inputs = [torch.stack([getattr(prompt, field) for prompt in prompts]) for field in ("xs", "ys", "target")]
            weights = {name: torch.cat([group.weights[i] for group in groups]) if len(groups) > 1
                       else groups[0].weights[i] for i, name in enumerate(names)} | buffers
            # vmap has no batching rule for the CPU flash-attention kernel (it would loop over the runs); the
            # math kernel composes with vmap
            with autocast_context(configs[0], device), sdpa_kernel(SDPBackend.MATH):
                loss = torch.func.vmap(functools.partial(losses, step=step))(weights, *inputs)
            for group in groups:
                group.optimizer.zero_grad(set_to_none=True)
            loss.sum().backward()
            for log in logs:
                log.completed = step + 1  # the weights change from here: a half-done step is not checkpointed
            for group in groups:
                group.step()
            logged = [log.record(step, run_loss, prompt) for log, run_loss, prompt in zip(logs, loss.detach(), prompts)]
            logged = [mean for mean in logged if mean is not None]
            shown.advance(step + 1, f"{min(logged):.4g}..{max(logged):.4g}" if logged else None)
            stop_if_signalled()
    except KeyboardInterrupt as interrupt:
        for log in logs:
            log.interrupted(interrupt)
        raise
    finally:
        shown.close()
