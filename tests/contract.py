"""Checks that every Predictor must pass, and a structureless prompt, shared by the baseline and model tests."""
from __future__ import annotations

import torch


def assert_no_peek(predictor, xs: torch.Tensor, ys: torch.Tensor, atol: float = 1e-6) -> None:
    """``preds[:, :i+1]`` must not change when ``ys[:, i:]`` and ``xs[:, i+1:]`` change, for every i."""
    reference = predictor.predict(xs, ys)
    assert reference.shape == ys.shape, f"predict returned {tuple(reference.shape)}, expected {tuple(ys.shape)}"
    generator = torch.Generator().manual_seed(1234)
    for i in range(ys.shape[1]):
        xs_changed, ys_changed = xs.clone(), ys.clone()
        ys_changed[:, i:] = 10 * torch.randn(ys[:, i:].shape, generator=generator).to(ys)
        xs_changed[:, i + 1:] = 10 * torch.randn(xs[:, i + 1:].shape, generator=generator).to(xs)
        changed = predictor.predict(xs_changed, ys_changed)
        torch.testing.assert_close(changed[:, : i + 1], reference[:, : i + 1], atol=atol, rtol=0,
                                   msg=lambda m: f"position <= {i} peeked at later points: {m}")


def gaussian_prompt(batch: int, points: int, dim: int, seed: int = 0, dtype=torch.float64):
    """Standard normal xs (B, N, d) and ys (B, N) from one seeded generator: a prompt with no structure."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, points, dim, generator=generator, dtype=dtype),
            torch.randn(batch, points, generator=generator, dtype=dtype))
