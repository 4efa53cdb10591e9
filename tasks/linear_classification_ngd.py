"""Linear classification with one-step supervision: the target is the normalised-GD prediction.

Zhang & Cao (arXiv 2605.06609) train one softmax self-attention layer "supervised by one-step
gradient descent" and loop it.  This task samples the prompts of ``linear-classification`` (x ~
N(0, I_d), y = sign(wᵀx), optional label flips) and sets the target of position i to the score
w_kᵀx_i of k = ``guidance`` normalised-GD steps of length ``lr`` on the context's exponential loss
(:class:`icl_sim.theory.normalized_gd.ExponentialNGD`), from w_0 = ``start_scale`` · x_i.

Why a start other than 0: at w = 0 every softmax score −u_jᵀw is 0, so the first step is
lr · mean(u_j) whatever the key-query weights are; a layer trained on that step alone learns its
value weights only.  From w_0 = c·x_i (the query's own input, a direction independent of the
context) the step depends on the scores, and a layer that meets it must implement the step for
a spread of iterates.  The paper's own start could not be read (see ``icl_sim.theory.normalized_gd``).
The loss is the squared error against that real-valued target.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import parameter
from icl_sim.tasks.linear_classification import LinearClassification
from icl_sim.theory.baselines import Zero
from icl_sim.theory.normalized_gd import ExponentialNGD
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class GuidedLinearClassification(LinearClassification):
    """``linear-classification`` prompts whose targets are k-step normalised-GD scores."""

    name: ClassVar[str] = "linear-classification-ngd"
    metric: ClassVar[str] = "squared_error"
    loss: ClassVar[str] = "squared_error"
    probe_algorithms: ClassVar[tuple[str, ...]] = ()

    guidance: int = parameter("k ≥ 1: the target is the score after k normalised-GD steps", 1)
    lr: float = parameter("η > 0: the length factor of each step, w ← w + η Σ softmax_j(−y_j wᵀx_j) y_j x_j", 1.0)
    start_scale: float = parameter("c ≥ 0: the steps start from w_0 = c·x_i (0: from the origin)", 1.0)

    def __post_init__(self):
        super().__post_init__()
        check_int("guidance", self.guidance, 1)
        check_float("lr", self.lr, 0.0, strict=True)
        check_float("start_scale", self.start_scale, 0.0)

    @property
    def learner(self) -> ExponentialNGD:
        """The normalised-GD learner whose scores are the targets."""
        return ExponentialNGD(self.guidance, self.lr, self.start_scale)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """``linear-classification`` prompts with ``targets`` the learner's scores (B, N)."""
        prompt = super().sample(batch_size, generator, points=points, active_dims=active_dims, dtype=dtype)
        return Prompt(prompt.xs, prompt.ys, prompt.latent, self.learner.predict(prompt.xs, prompt.ys).to(dtype))

    def baselines(self):
        """The target's learner itself (error 0) and the zero score."""
        return {"normalised GD (the target)": self.learner, "Zero": Zero()}

    def trivial_error(self) -> None:
        """No closed form for E[target²]: the zero score's error is reported as a baseline instead."""
        return None
