"""The one contract shared by trained models and closed-form baselines."""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

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


def replicated_query_predictor(layered: Callable, xs: torch.Tensor,
                               ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
    """``query_predictor`` for any per-position predictor ``layered``: one prompt per query, the context then it."""

    def predict(queries: torch.Tensor) -> list[torch.Tensor]:
        batch, count = queries.shape[:2]
        prompt_xs = torch.cat([xs[:, None].expand(batch, count, *xs.shape[1:]), queries[:, :, None]], dim=2)
        label = ys.new_zeros(batch, count, 1, *ys.shape[2:])
        prompt_ys = torch.cat([ys[:, None].expand(batch, count, *ys.shape[1:]), label], dim=2)
        return [preds[:, -1].unflatten(0, (batch, count))
                for preds in layered(prompt_xs.flatten(0, 1), prompt_ys.flatten(0, 1))]

    return predict
