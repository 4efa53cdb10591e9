"""Speed ratios: icl-sim's vectorised prefix computations against per-prefix reference loops.

Run: ``python benchmarks/bench_prefix_solvers.py``.  Both sides run in this process on the
same prompts; the ratio (reference time / ours) is what matters, not the seconds.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from icl_sim.models import build_model
from icl_sim.theory import OLS, Ridge


def best_time(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def ols_reference(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """numpy lstsq for every prompt and every prefix, one at a time."""
    preds = np.zeros(ys.shape)
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            w = np.linalg.lstsq(xs[b, :i], ys[b, :i], rcond=None)[0]
            preds[b, i] = xs[b, i] @ w
    return preds


def ridge_reference(xs: np.ndarray, ys: np.ndarray, lam: float) -> np.ndarray:
    preds = np.zeros(ys.shape)
    eye = np.eye(xs.shape[2])
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            X, y = xs[b, :i], ys[b, :i]
            preds[b, i] = xs[b, i] @ np.linalg.solve(X.T @ X + lam * eye, X.T @ y)
    return preds


def lsa_token_reference(model, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """The LSA applied literally to each prefix's token matrix (query excluded from the keys)."""
    value, key_query = model.value.detach(), model.key_query.detach()
    preds = torch.zeros(ys.shape, dtype=xs.dtype)
    for b in range(xs.shape[0]):
        for i in range(xs.shape[1]):
            tokens = torch.cat([xs[b, : i + 1], torch.cat([ys[b, :i], ys.new_zeros(1)])[:, None]], dim=1).T
            mask = torch.ones(i + 1, dtype=xs.dtype)
            mask[i] = 0
            for layer in range(value.shape[0]):
                keys = tokens * mask
                tokens = tokens + sum(value[layer, h] @ keys @ keys.T @ key_query[layer, h] @ tokens
                                      for h in range(value.shape[1])) / max(i, 1)
            preds[b, i] = -tokens[-1, -1]
    return preds


def main() -> None:
    torch.manual_seed(0)
    batch, points, dim = 64, 41, 20
    xs = torch.randn(batch, points, dim, dtype=torch.float64)
    ys = xs @ torch.randn(dim, dtype=torch.float64)
    xs_np, ys_np = xs.numpy(), ys.numpy()
    model = build_model("lsa", dim, points, layers=3).double()
    cases = [
        ("OLS, all prefixes (B=64, N=41, d=20)", lambda: OLS().predict(xs, ys), lambda: ols_reference(xs_np, ys_np)),
        ("Ridge, all prefixes", lambda: Ridge(0.1).predict(xs, ys), lambda: ridge_reference(xs_np, ys_np, 0.1)),
        ("3-layer LSA forward, all prefixes", lambda: model.layer_predictions(xs, ys),
         lambda: lsa_token_reference(model, xs, ys)),
    ]
    print(f"{'computation':<40} {'ours (s)':>10} {'reference (s)':>14} {'speed-up':>9}")
    with torch.no_grad():
        for name, ours, reference in cases:
            ours_time, reference_time = best_time(ours), best_time(reference, repeats=1)
            print(f"{name:<40} {ours_time:>10.4f} {reference_time:>14.4f} {reference_time / ours_time:>8.1f}x")


if __name__ == "__main__":
    main()
