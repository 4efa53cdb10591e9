"""An example icl-sim plugin: a task and a model, found by icl-sim through this package's entry points."""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.prompt import Prompt
from icl_sim.tasks.linear_regression import LinearRegression


@dataclasses.dataclass(frozen=True)
class SignRegression(LinearRegression):
    """Linear regression's prompts (x_i, sign(wᵀx_i)): a linear classifier's labels, scored by squared error."""

    name = "sign-regression"

    def sample(self, batch_size: int, generator: torch.Generator, **options) -> Prompt:
        prompt = super().sample(batch_size, generator, **options)
        return dataclasses.replace(prompt, ys=torch.sign(prompt.ys))


@dataclasses.dataclass(frozen=True)
class LearnedStepGDConfig:
    """How many GD steps, and where their learned step sizes start."""

    steps: int = dataclasses.field(default=1, metadata={"help": "GD steps K (the model's depth)"})
    initial_step: float = dataclasses.field(default=0.1, metadata={"help": "every step size's start"})

    def __post_init__(self):
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {self.steps!r}")


class LearnedStepGD(InContextModel):
    """K steps of GD from w = 0 on each prefix's least squares, w ← w − η_k (Ĝ_i w − b̂_i) with Ĝ_i, b̂_i the
    means of x_j x_jᵀ and y_j x_j over j < i, and ŷ_i = x_iᵀ w: von Oswald et al.'s K-layer construction with its K
    step sizes η_k trained (one scalar per layer)."""

    Config = LearnedStepGDConfig
    depth_parameter = "steps"

    def __init__(self, dim: int, points: int, config: LearnedStepGDConfig = LearnedStepGDConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        self.step_sizes = nn.Parameter(torch.full((config.steps,), config.initial_step))

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        counts = torch.arange(xs.shape[1], device=xs.device).clamp(min=1)[None, :, None]
        outer = xs[..., :, None] * xs[..., None, :]
        gram = (torch.cumsum(outer, dim=1) - outer) / counts[..., None]  # Ĝ_i over j < i: (B, N, d, d)
        moment = (torch.cumsum(ys[..., None] * xs, dim=1) - ys[..., None] * xs) / counts  # b̂_i: (B, N, d)
        w, predictions = torch.zeros_like(moment), []
        for step in self.step_sizes:
            w = w - step * ((gram @ w[..., None]).squeeze(-1) - moment)
            predictions.append((xs * w).sum(dim=-1))
        return predictions
