"""The in-context prompt that every task samples and every predictor reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import torch


@dataclass(frozen=True)
class Prompt:
    """A batch of in-context prompts.

    ``xs`` is (B, N, d) and ``ys`` is (B, N) (or (B, N, k) for vector labels);
    position ``i`` is predicted from the points ``0..i-1`` and the query ``xs[:, i]``.
    ``latent`` holds the hidden function (``w``, ``covariance``, ...) for baselines and
    theory.  ``targets`` are what predictions are scored against when they are not the
    labels themselves (e.g. the principal direction of a PCA prompt, whose points have
    no labels); ``target`` gives whichever applies.
    """

    xs: torch.Tensor
    ys: torch.Tensor
    latent: Mapping[str, torch.Tensor] = field(default_factory=dict)
    targets: torch.Tensor | None = None

    @property
    def target(self) -> torch.Tensor:
        """What position i's prediction is scored against: ``targets`` if given, else the labels."""
        return self.ys if self.targets is None else self.targets

    @property
    def batch_size(self) -> int:
        return self.xs.shape[0]

    @property
    def points(self) -> int:
        return self.xs.shape[1]

    @property
    def dim(self) -> int:
        return self.xs.shape[2]

    def to(self, device=None, dtype=None) -> "Prompt":
        """The same prompt with floating tensors moved/cast (integer latents keep their dtype)."""

        def move(t: torch.Tensor) -> torch.Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        targets = None if self.targets is None else move(self.targets)
        return Prompt(move(self.xs), move(self.ys), {k: move(v) for k, v in self.latent.items()}, targets)
