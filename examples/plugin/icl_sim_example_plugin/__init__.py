"""An example icl-sim plugin: a task and a model, found by icl-sim through this package's entry points."""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.prompt import Prompt
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.validation import check_float, check_int


@dataclasses.dataclass(frozen=True)
class SignRegression(LinearRegression):
    """Linear regression's prompts (x_i, sign(wᵀx_i)): a linear classifier's labels, scored by squared error."""

    name = "sign-regression"

    def sample(self, batch_size: int, generator: torch.Generator, **options) -> Prompt:
        prompt = super().sample(batch_size, generator, **options)
        return dataclasses.replace(prompt, ys=torch.sign(prompt.ys))

    def trivial_error(self) -> float:
        """E[y²]/d of predicting 0: every label is ±1."""
        return 1.0 / self.dim


@dataclasses.dataclass(frozen=True)
class PreconditionedStepsConfig:
    """How many preconditioned GD steps, and how their preconditioners start."""

    steps: int = dataclasses.field(default=1, metadata={"help": "GD steps K (the model's depth)"})
    initial_step: float = dataclasses.field(default=0.1, metadata={"help": "each preconditioner starts at this "
                                                                           "times the identity"})
    init_std: float = dataclasses.field(default=0.01, metadata={"help": "plus gaussian entries of this std"})

    def __post_init__(self):
        check_int("steps", self.steps, 1)
        check_float("initial_step", self.initial_step)
        check_float("init_std", self.init_std, 0.0)


class PreconditionedSteps(InContextModel):
    """K preconditioned GD steps from w = 0 on each prefix's least squares, w ← w − Γ_k (Ĝ_i w − b̂_i) with Ĝ_i, b̂_i
    the means of x_j x_jᵀ and y_j x_j over j < i, and ŷ_i = x_iᵀ w: the K-layer construction of von Oswald et al.
    and Ahn et al. with its K preconditioners Γ_k trained (Γ_k = η I is GD with step η)."""

    Config = PreconditionedStepsConfig
    depth_parameter = "steps"

    def __init__(self, dim: int, points: int, config: PreconditionedStepsConfig = PreconditionedStepsConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        start = config.initial_step * torch.eye(dim).expand(config.steps, dim, dim)
        self.preconditioners = nn.Parameter(start + config.init_std * torch.randn(config.steps, dim, dim))

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        counts = torch.arange(xs.shape[1], device=xs.device).clamp(min=1)[None, :, None]
        outer = xs[..., :, None] * xs[..., None, :]
        gram = (torch.cumsum(outer, dim=1) - outer) / counts[..., None]  # Ĝ_i over j < i: (B, N, d, d)
        moment = (torch.cumsum(ys[..., None] * xs, dim=1) - ys[..., None] * xs) / counts  # b̂_i: (B, N, d)
        w, predictions = torch.zeros_like(moment), []
        for preconditioner in self.preconditioners:
            gradient = (gram @ w[..., None]).squeeze(-1) - moment
            w = w - gradient @ preconditioner.T
            predictions.append((xs * w).sum(dim=-1))
        return predictions
