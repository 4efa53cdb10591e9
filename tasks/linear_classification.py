"""Linear classification in context: y = sign(wᵀx), optionally with flipped labels.

x ~ N(0, I_d) and w ~ N(0, I_d) per prompt (the direction of w is uniform on the sphere;
its scale does not matter for the labels).  With ``flip`` = q each label is flipped
independently with probability q (symmetric label noise), so the Bayes accuracy is
1 − q.  wᵀx = 0 has probability 0 under the Gaussian law; it would be labelled −1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, active_mask, parameter, sample_shape
from icl_sim.theory.baselines import KNN, Averaging
from icl_sim.theory.boolean_learners import LogisticGD
from icl_sim.validation import check_float, check_int



@dataclass(frozen=True)
class LinearClassification(TaskFamily):
    """Prompts (x_i, sign(wᵀx_i)) with x_i ~ N(0, I_d), w ~ N(0, I_d) drawn per prompt."""
    name: ClassVar[str] = "linear-classification"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    probe_algorithms: ClassVar[tuple[str, ...]] = ("gd", "gd-plus-plus", "newton", "ridge")

    dim: int = parameter("input dimension d", 20)
    points: int = parameter("points per prompt N (the last one is the final query)", 41)
    flip: float = parameter("probability that a label is flipped (label noise), in [0, 1/2)", 0.0)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("points", self.points, 1)
        check_float("flip", self.flip, 0.0)
        if self.flip >= 0.5:
            raise ValueError(f"flip must be >= 0.0 and < 0.5, got {self.flip}")

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; ``latent`` holds ``w`` (B, d) and ``flipped`` (B, N) bool."""
        n, active = sample_shape(self, batch_size, generator, dtype, points, active_dims)
        device, d = generator.device, self.dim
        options = dict(generator=generator, device=device, dtype=dtype)
        xs = torch.randn(batch_size, n, d, **options)
        if active < d:
            xs = xs * active_mask(d, active, device, dtype)
        w = torch.randn(batch_size, d, **options)
        clean = torch.where(torch.einsum("bnd,bd->bn", xs, w) > 0, 1.0, -1.0).to(dtype)
        flipped = torch.rand(batch_size, n, generator=generator, device=device) < self.flip
        ys = torch.where(flipped, -clean, clean)
        return Prompt(xs, ys, {"w": w, "flipped": flipped})

    def baselines(self):
        """Logistic regression by normalised GD, averaging and nearest neighbours."""
        return {"Logistic GD": LogisticGD(steps=100, lr=0.1), "Averaging": Averaging(), "3-NN": KNN(3)}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """1/2: the accuracy of a fair coin (or of any predictor blind to x)."""
        return 0.5
