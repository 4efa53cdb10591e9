"""Speed ratios: icl-sim's all-prefix baselines against the straightforward per-prefix computation.

Run: ``python benchmarks/bench_prefix_solvers.py [--repeats 5] [--batch 1280] [--only OLS]``.

Fairness: both sides run in this process on the same prompts (B = 1280, N = 41, d = 20, float64
unless told otherwise), interleaved (ours, reference, ours, reference, ...) after one warm-up
each, and the ratio is median(reference) / median(ours).  Every case is measured twice: with
``torch.set_num_threads(1)`` and with torch's default thread count, since on a shared machine
the two differ a lot.  The reference is what one would write first: a Python loop over prefix
sizes i, each a batched (over B) torch call on X_{<i} (``torch.linalg.lstsq`` with gelsd for OLS).

Accuracy: the max normwise relative deviation of ours from the reference weights, per prefix.
Peak memory: the growth of the peak resident set size while one call runs, measured in a
fresh interpreter per side and case (so earlier cases do not hide it), in MB.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

from icl_sim.models import build_model
from icl_sim.theory import GD, OLS, Newton, Ridge


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, for the first line of every benchmark's output."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def interleaved_medians(ours, reference, repeats: int) -> tuple[float, float]:
    """Median seconds of each side, run alternately ``repeats`` times after one warm-up each."""
    ours(), reference()
    ours_times, reference_times = [], []
    for _ in range(repeats):
        for function, times in ((ours, ours_times), (reference, reference_times)):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
    return statistics.median(ours_times), statistics.median(reference_times)


def peak_memory_mb(case: int, side: int, args) -> float:
    """Growth of peak RSS (MB) while one call of case ``case`` (side 0: ours, 1: reference) runs,
    in a fresh interpreter so that earlier allocations do not hide it (fork would deadlock OpenMP)."""
    command = [sys.executable, __file__, "--memory-of", f"{case},{side}", "--batch", str(args.batch),
               "--points", str(args.points), "--dim", str(args.dim)]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return float(result.stdout.strip() or "nan")


def _report_memory(case: int, side: int, args) -> None:
    _, *functions = list(cases(args.batch, args.points, args.dim))[case]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.no_grad():
        functions[side]()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)


def per_prefix(solve, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """Weights (B, N, d): ``solve(X_{<i}, y_{<i})`` -> (B, d) for each prefix size i ≥ 1, batched over B."""
    weights = xs.new_zeros(xs.shape)
    for i in range(1, xs.shape[1]):
        weights[:, i] = solve(xs[:, :i], ys[:, :i])
    return weights


def lstsq_prefix(x, y):
    return torch.linalg.lstsq(x, y[..., None], driver="gelsd").solution.squeeze(-1)


def ridge_prefix(lam):
    def solve(x, y):
        gram = x.mT @ x + lam * torch.eye(x.shape[-1], dtype=x.dtype)
        return torch.cholesky_solve((x.mT @ y[..., None]), torch.linalg.cholesky(gram)).squeeze(-1)
    return solve


def statistics_prefix(from_statistics):
    def solve(x, y):
        i = x.shape[1]
        return from_statistics(x.mT @ x / i, (x.mT @ y[..., None]).squeeze(-1) / i)
    return solve


def newton_prefix(steps):
    """Newton's iteration exactly as ``Newton`` defines it, on one prefix's statistics."""
    def from_statistics(gram, moment):
        alpha = 2 / torch.linalg.matrix_norm(gram @ gram.mT)
        m = alpha[:, None, None] * gram
        for _ in range(steps):
            m = 2 * m - m @ gram @ m
            m = (m + m.mT) / 2
        return (m @ moment[..., None]).squeeze(-1)
    return statistics_prefix(from_statistics)


def gd_prefix(steps, lr):
    def from_statistics(gram, moment):
        w = torch.zeros_like(moment)
        for _ in range(steps):
            w = w - lr * ((gram @ w[..., None]).squeeze(-1) - moment)
        return w
    return statistics_prefix(from_statistics)


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


def relative_deviation(ours: torch.Tensor, reference: torch.Tensor, first: int = 1) -> float:
    """max over prompts and prefixes i ≥ ``first`` of ‖ours − reference‖/‖reference‖ (last axis)."""
    if ours.ndim == 2:
        return float(((ours - reference).abs() / reference.abs().amax()).amax())
    ours, reference = ours[:, first:], reference[:, first:]
    return float(((ours - reference).norm(dim=-1) / reference.norm(dim=-1).clamp(min=1e-300)).amax())


def cases(batch: int, points: int, dim: int):
    generator = torch.Generator().manual_seed(0)
    xs = torch.randn(batch, points, dim, generator=generator, dtype=torch.float64)
    w = torch.randn(batch, dim, 1, generator=generator, dtype=torch.float64)
    ys = (xs @ w).squeeze(-1) + 0.1 * torch.randn(batch, points, generator=generator, dtype=torch.float64)
    shape = f"B={batch}, N={points}, d={dim}"
    yield (f"OLS vs lstsq(gelsd) per prefix ({shape})", lambda: OLS().weights(xs, ys),
           lambda: per_prefix(lstsq_prefix, xs, ys))
    yield ("Ridge(0.1) vs Cholesky per prefix", lambda: Ridge(0.1).weights(xs, ys),
           lambda: per_prefix(ridge_prefix(0.1), xs, ys))
    # from i = 2: at i = 1 Fu et al.'s α = 2/‖S Sᵀ‖_F maps the one point's eigenvalue to 0, so both sides
    # return rounding noise (~1e-10) around a zero answer and their normwise ratio means nothing
    yield ("Newton(20) vs Newton per prefix (i ≥ 2)", lambda: Newton(20).weights(xs, ys),
           lambda: per_prefix(newton_prefix(20), xs, ys), 2)
    yield ("GD(100, 0.05) vs GD per prefix", lambda: GD(100, 0.05).weights(xs, ys),
           lambda: per_prefix(gd_prefix(100, 0.05), xs, ys))
    small_xs, small_ys = xs[:16], ys[:16]
    model = build_model("lsa", dim, points, layers=3).double()
    yield ("3-layer LSA forward vs token loop (B=16)", lambda: model.layer_predictions(small_xs, small_ys)[-1],
           lambda: lsa_token_reference(model, small_xs, small_ys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1280)
    parser.add_argument("--points", type=int, default=41)
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text (e.g. OLS)")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        _report_memory(*map(int, args.memory_of.split(",")), args)
        return
    default_threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, default threads {default_threads}, "
          f"load average {load_average()}, repeats {args.repeats} "
          "(interleaved, median)", flush=True)
    header = (f"{'computation':<46} {'threads':>7} {'ours s':>8} {'ref s':>8} {'ratio':>7} {'rel dev':>8} "
              f"{'peak MB':>15}")
    print(header)
    with torch.no_grad():
        for case, (name, ours, reference, *first) in enumerate(cases(args.batch, args.points, args.dim)):
            if args.only.lower() not in name.lower():
                continue
            deviation = relative_deviation(ours(), reference(), *first)
            memory = f"{peak_memory_mb(case, 0, args):.0f} / {peak_memory_mb(case, 1, args):.0f}"
            for threads in (1, default_threads):
                torch.set_num_threads(threads)
                ours_time, reference_time = interleaved_medians(ours, reference, args.repeats)
                print(f"{name:<46} {threads:>7} {ours_time:>8.3f} {reference_time:>8.3f} "
                      f"{reference_time / ours_time:>6.1f}x {deviation:>8.1e} {memory:>15}", flush=True)
            torch.set_num_threads(default_threads)
    print("ratio = median reference time / median ours; peak MB = peak RSS growth of one call, ours / reference")


if __name__ == "__main__":
    main()
