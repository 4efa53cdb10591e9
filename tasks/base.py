"""What every task family provides: a sampler, a metric and its reference baselines."""
from __future__ import annotations

from typing import ClassVar, Mapping, Protocol

import torch

from icl_sim.predictor import Predictor
from icl_sim.prompt import Prompt


class Task(Protocol):
    """A family of in-context problems with fixed parameters.

    ``sample`` draws ``batch_size`` prompts on ``generator.device``; the generator is
    the only source of randomness, so equal generator states give equal prompts.
    ``points`` and ``active_dims`` let a curriculum shorten prompts and zero the
    trailing input coordinates.
    """

    name: ClassVar[str]
    metric: ClassVar[str]
    dim: int
    points: int

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt: ...

    def baselines(self) -> Mapping[str, Predictor]: ...
