"""The training configuration: a frozen dataclass saved as ``config.json`` in each run directory."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from icl_sim.validation import check_choice, check_float, check_int

OPTIMIZERS = ("adam", "adamw")
LR_SCHEDULES = ("constant", "cosine")
LOSS_POSITIONS = ("last", "all")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class Curriculum:
    """A quantity growing from ``start`` by ``increment`` every ``interval`` steps, capped at the task's value."""

    start: int
    increment: int
    interval: int

    def __post_init__(self):
        check_int("curriculum start", self.start, 1)
        check_int("curriculum increment", self.increment, 0)
        check_int("curriculum interval", self.interval, 1)

    def value_at(self, step: int, end: int) -> int:
        return min(end, self.start + self.increment * (step // self.interval))


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (together with the code version)."""

    task: str = "linear-regression"
    task_params: Mapping[str, Any] = field(default_factory=dict)
    model: str = "lsa"
    model_params: Mapping[str, Any] = field(default_factory=dict)
    steps: int = 5000
    batch_size: int = 256
    lr: float = 1e-3
    optimizer: str = "adam"
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    weight_decay: float = 0.0
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    grad_clip: float = 0.0
    loss_on: str = "last"
    seed: int = 0
    device: str = "auto"
    amp: bool = True
    compile: bool = False
    curriculum_dims: Curriculum | None = None
    curriculum_points: Curriculum | None = None
    log_every: int = 50
    checkpoint_every: int = 1000

    def __post_init__(self):
        check_int("steps", self.steps, 1)
        check_int("batch_size", self.batch_size, 1)
        check_float("lr", self.lr, 0.0, strict=True)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be two numbers (β1, β2), got {self.betas!r}")
        for index, beta in enumerate(self.betas):
            check_float(f"betas[{index}]", beta, 0.0, maximum=1.0)
            if beta == 1.0:
                raise ValueError(f"betas[{index}] must be < 1, got {beta}")
        object.__setattr__(self, "betas", tuple(self.betas))  # JSON gives a list
        check_float("adam_eps", self.adam_eps, 0.0, strict=True)
        check_float("weight_decay", self.weight_decay, 0.0)
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_int("warmup_steps", self.warmup_steps, 0)
        check_float("grad_clip", self.grad_clip, 0.0)
        check_choice("loss_on", self.loss_on, LOSS_POSITIONS)
        check_int("seed", self.seed, 0)
        check_choice("device", self.device, DEVICES)
        check_int("log_every", self.log_every, 1)
        check_int("checkpoint_every", self.checkpoint_every, 1)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        data = json.loads(text)
        for key in ("curriculum_dims", "curriculum_points"):
            if data.get(key) is not None:
                data[key] = Curriculum(**data[key])
        return cls(**data)
