"""The one contract shared by trained models and closed-form baselines."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Predictor(Protocol):
    """Anything that predicts every position of a prompt in context.

    ``predict(xs, ys)`` takes ``xs`` (B, N, d) and ``ys`` (B, N) float tensors on any
    device and returns predictions (B, N) on the same device; ``preds[:, i]`` may
    depend only on ``xs[:, :i+1]`` and ``ys[:, :i]``.
    """

    def predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor: ...


def check_prompt_shapes(xs: torch.Tensor, ys: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``xs`` is (B, N, d) and ``ys`` is (B, N) or (B, N, k)."""
    if xs.ndim != 3:
        raise ValueError(f"xs must have shape (B, N, d), got {tuple(xs.shape)}")
    if ys.shape[:2] != xs.shape[:2] or ys.ndim not in (2, 3):
        raise ValueError(f"ys must have shape {tuple(xs.shape[:2])} or {tuple(xs.shape[:2])} + (k,) to match xs, "
                         f"got {tuple(ys.shape)}")
