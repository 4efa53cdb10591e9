"""Two-layer ReLU networks in context: Garg et al. (2022)'s ``relu_2nn_regression`` family.

Garg, Tsipras, Liang & Valiant ("What can transformers learn in-context?", NeurIPS 2022, Sec. 5, and their
dtsip ``src/tasks.py``, ``Relu2nnRegression``) draw per prompt a network f(x) = √(2/h) Σ_{i=1}^{h} a_i ReLU(w_iᵀx)
with w_i ~ N(0, I_d) and a_i ~ N(0, 1), h = 100 hidden units; Yadlowsky, Doshi & Tripuraneni (2023) put this family
in their pretraining mixtures.  The √(2/h) scale makes E[f(x)²] = d, as for a linear function with w ~ N(0, I_d).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, active_mask, parameter, sample_shape
from icl_sim.theory import KNN, OLS, Averaging, Zero
from icl_sim.validation import check_int


@dataclass(frozen=True)
class ReLUNetwork(TaskFamily):
    """Prompts (x_i, √(2/h) aᵀReLU(W x_i)) with x_i ~ N(0, I_d) and W (h × d), a (h) standard gaussian per prompt.

    The latent holds ``W`` (B, h, d) and ``a`` (B, h).  With ``active_dims`` = k < d, x is zero beyond its first k
    coordinates.
    """

    name: ClassVar[str] = "relu-network"

    dim: int = parameter("input dimension d", 20)
    points: int = parameter("points per prompt N (the last one is the final query)", 101)
    hidden: int = parameter("hidden units h (Garg et al.: 100)", 100)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_int("hidden", self.hidden, 1)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        options = dict(generator=generator, device=generator.device, dtype=dtype)
        keep = active_mask(self.dim, active, generator.device, dtype)
        xs = torch.randn(batch_size, n, self.dim, **options) * keep
        weights = torch.randn(batch_size, self.hidden, self.dim, **options)
        readout = torch.randn(batch_size, self.hidden, **options)
        hidden = torch.relu(torch.bmm(xs, weights.transpose(1, 2)))
        ys = math.sqrt(2 / self.hidden) * torch.bmm(hidden, readout.unsqueeze(-1)).squeeze(-1)
        return Prompt(xs, ys, {"W": weights, "a": readout})

    def baselines(self):
        """Garg et al.'s reference predictors for this family: least squares, averaging, 3-NN, 0."""
        return {"OLS": OLS(), "Averaging": Averaging(), "3-NN": KNN(3), "Zero": Zero()}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets: every prompt is alike."""
        return {}

    def trivial_error(self) -> float:
        """E[y²]/d = 1: (2/h) Σ_i E[a_i²] E[ReLU(w_iᵀx)²] = (2/h) h d/2 (wᵀx is symmetric with variance E‖w‖² = d
        given x, and the cross terms vanish, the a_i being centred and independent)."""
        return 1.0
