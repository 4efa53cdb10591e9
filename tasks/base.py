"""What every task family provides: a sampler, a metric and its reference baselines."""
from __future__ import annotations

from dataclasses import field
from typing import ClassVar, Mapping, Protocol

import torch

from icl_sim.predictor import Predictor
from icl_sim.prompt import Prompt
from icl_sim.tensor_validation import check_float_dtype, check_generator
from icl_sim.validation import check_int


class Task(Protocol):
    """A family of in-context problems with fixed parameters.

    ``sample`` draws ``batch_size`` prompts on ``generator.device``; the generator is
    the only source of randomness, so equal generator states give equal prompts.
    ``points`` and ``active_dims`` let a curriculum shorten prompts and zero the
    trailing input coordinates (a task may reject what it cannot honour).

    ``metric`` names an ``icl_sim.evaluation.METRICS`` entry and ``loss`` an
    ``icl_sim.training.LOSSES`` entry; ``target_dim`` is k for (B, N, k) targets
    and 1 for scalar ones; ``evaluated_positions`` is "all" when every position has
    a label to predict and "last" when only the final query does (e.g. a graph
    question after its edges).  ``slices(prompt)`` may name subsets of prompts,
    as boolean masks (B,), that evaluation reports beside the whole.
    ``probe_algorithms`` names the ``icl_sim.probing`` algorithms whose steps solve
    this task, the ones a trained model's layers can be matched with; ``dim_parameter`` names
    the field that ``icl-sim train --dim`` sets.  ``TaskFamily`` gives these their common values.
    """

    name: ClassVar[str]
    metric: ClassVar[str]
    loss: ClassVar[str]
    evaluated_positions: ClassVar[str]
    probe_algorithms: ClassVar[tuple[str, ...]]
    dim_parameter: ClassVar[str]
    dim: int
    points: int
    target_dim: int

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt: ...

    def baselines(self) -> Mapping[str, Predictor]: ...

    def slices(self, prompt: Prompt) -> Mapping[str, torch.Tensor]: ...


class TaskFamily:
    """The Task contract's class attributes at their common values: a family overrides what differs."""

    metric: ClassVar[str] = "squared_error"
    loss: ClassVar[str] = "squared_error"
    evaluated_positions: ClassVar[str] = "all"
    probe_algorithms: ClassVar[tuple[str, ...]] = ()
    target_dim: ClassVar[int] = 1
    #: the field that ``icl-sim train --dim`` sets (e.g. ``n`` for Boolean inputs)
    dim_parameter: ClassVar[str] = "dim"


def parameter(help_text: str, default):
    """A task field: its default, and the help that ``--task-param`` and ``icl-sim tasks`` show."""
    return field(default=default, metadata={"help": help_text})


def check_task(name: str, value) -> None:
    """Require a task (``icl_sim.tasks.make_task``): at least a ``sample`` method."""
    if not callable(getattr(value, "sample", None)):
        raise ValueError(f"{name} must be a task (icl_sim.tasks.make_task), got {type(value).__name__}")


def check_draw(batch_size: int, generator: torch.Generator, dtype: torch.dtype) -> None:
    """Check what every ``sample`` call takes: a batch of at least one, an explicit generator, a float dtype."""
    check_int("batch_size", batch_size, 1)
    check_generator("generator", generator)
    check_float_dtype("dtype", dtype)


def active_mask(dim: int, active: int, device, dtype: torch.dtype) -> torch.Tensor:
    """(dim,) ones on the first ``active`` coordinates and zeros on the rest: the dimensions a curriculum has not yet
    switched on (Garg et al.'s truncated inputs), multiplied into x (and into w or a covariance where the task
    draws them)."""
    return (torch.arange(dim, device=device) < active).to(dtype)


def sample_shape(task, batch_size: int, generator: torch.Generator, dtype: torch.dtype, points: int | None,
                 active_dims: int | None) -> tuple[int, int]:
    """The validated (points, active_dims) of one ``sample`` call (its other arguments checked by ``check_draw``):
    the task's own unless overridden."""
    check_draw(batch_size, generator, dtype)
    count = task.points if points is None else points
    active = task.dim if active_dims is None else active_dims
    check_int("points", count, 1)
    check_int("active_dims", active, 1, task.dim)
    return count, active
