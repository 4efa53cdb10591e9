"""Token selection: which of a prompt's tokens should attention pick to classify the prompt?

The task of Tarzanagh, Li, Thrampoulidis & Oymak, "Transformers as support vector machines" (2023, arXiv
2308.16898), as their umich-sota/TF-as-SVM notebooks draw it: T tokens x_1..x_T and a query z, each uniform on
the unit sphere of R^d, and a label y = ±1 with probability ½ each, independent of them.  A model with a fixed
linear head v scores the prompt f = vᵀ Σ_t softmax_t(x_tᵀ W z) x_t (``icl_sim.models.SelectionAttention``) and is
trained on the logistic loss log(1 + exp(−y f)); the token it can best select is the one maximising y vᵀx_t, and
gradient descent on W drives the softmax onto one token per prompt, in the direction of an attention SVM
(``icl_sim.theory.max_margin.attention_svm``).

Encoding: ``xs`` (B, T + 1, d) holds the T tokens then the query z; ``ys`` (B, T + 1) is 0 at the tokens, which
carry no label, and y at the query, the only position evaluated.  Latent: ``tokens`` (B, T, d), ``query`` (B, d).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_int


@dataclass(frozen=True)
class TokenSelection(TaskFamily):
    """T tokens and a query uniform on the unit sphere, a fair ±1 label: Tarzanagh et al.'s data."""

    name: ClassVar[str] = "token-selection"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    evaluated_positions: ClassVar[str] = "last"

    dim: int = parameter("token dimension d", 10)
    tokens: int = parameter("tokens per prompt T (the query z comes after them)", 8)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("tokens", self.tokens, 2)

    @property
    def points(self) -> int:
        """T tokens and the query."""
        return self.tokens + 1

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; a curriculum over points or dimensions is refused (the sphere is fixed)."""
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points) or active_dims not in (None, self.dim):
            raise ValueError(f"token-selection prompts have {self.points} points and {self.dim} dimensions; a "
                             f"curriculum (points={points}, active_dims={active_dims}) is not supported")
        options = dict(generator=generator, device=generator.device, dtype=dtype)
        labels = torch.where(torch.rand(batch_size, generator=generator, device=generator.device) < 0.5, 1.0, -1.0)
        xs = _on_sphere(torch.randn(batch_size, self.points, self.dim, **options))
        ys = torch.zeros(batch_size, self.points, device=generator.device, dtype=dtype)
        ys[:, -1] = labels.to(dtype)
        return Prompt(xs, ys, {"tokens": xs[:, :-1], "query": xs[:, -1]})

    def baselines(self):
        """None: the reference is the attention SVM of the trained model's own head."""
        return {}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """1/2: the accuracy of a fair coin (or of any predictor blind to the prompt)."""
        return 0.5


def _on_sphere(points: torch.Tensor) -> torch.Tensor:
    """Gaussian ``points`` scaled onto the unit sphere (uniform there)."""
    return points / torch.linalg.vector_norm(points, dim=-1, keepdim=True)
