"""Intra-op threads against the work: one thread vs all cores, on an idle machine and on a loaded one.

Run: ``python benchmarks/bench_threads.py [--repeats 7]``.  For each workload the two thread
counts alternate (``torch.set_num_threads`` between calls, one warm-up each, median of repeats);
the ratio is t(one thread) / t(all cores), so above 1 means all cores win.  "Loaded" starts one
busy process per core (a pure-Python loop, as another user's job would be) for the second pass.
The result decides ``icl_sim.threads``: which work runs on one thread and which on all cores.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from icl_sim.config import TrainConfig
from icl_sim.tasks import make_task
from icl_sim.theory import OLS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_check import step_function  # noqa: E402


def training_step(model: str, model_params: dict):
    """A closure running one training step (d = 20, N = 41, batch 64) of ``model``, and its parameter count."""
    config = TrainConfig(task="linear-regression", task_params={"dim": 20, "points": 41}, model=model,
                         model_params=model_params, batch_size=64, device="cpu", lr=1e-4)
    step, network = step_function(config, torch.device("cpu"))
    counter = iter(range(10**9))
    return (lambda: step(next(counter))), sum(p.numel() for p in network.parameters())


def ols_all_prefixes():
    prompt = make_task("linear-regression", dim=20, points=41).sample(1280, torch.Generator().manual_seed(0),
                                                                     dtype=torch.float64)
    return lambda: OLS().predict(prompt.xs, prompt.ys)


def workloads():
    for label, model, params in (("lsa 1 layer train step", "lsa", {"layers": 1}),
                                 ("gpt tiny (3 x 64) train step", "gpt", {"size": "tiny"}),
                                 ("gpt small (6 x 128) train step", "gpt", {"size": "small"}),
                                 ("gpt standard (12 x 256) train step", "gpt", {"size": "standard"})):
        function, parameters = training_step(model, params)
        yield f"{label}, {parameters:,} parameters", function
    yield "OLS all prefixes (B = 1280, N = 41, d = 20)", ols_all_prefixes()


def one_vs_all(function, cores: int, repeats: int) -> tuple[float, float]:
    """Median seconds of ``function`` on one thread and on ``cores`` threads, alternating."""
    times = {1: [], cores: []}
    for count in (1, cores):
        torch.set_num_threads(count)
        function()
    for _ in range(repeats):
        for count in (1, cores):
            torch.set_num_threads(count)
            start = time.perf_counter()
            function()
            times[count].append(time.perf_counter() - start)
    return statistics.median(times[1]), statistics.median(times[cores])


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    cases = list(workloads())
    print(f"torch {torch.__version__}, {cores} CPUs, load average {os.getloadavg()[0]:.2f} at the start; "
          f"ratio = t(1 thread) / t({cores} threads), median of {args.repeats}")
    print(f"{'workload':<66} {'machine':>7} {'1 thread s':>10} {f'{cores} threads s':>11} {'ratio':>6}")
    for machine in ("idle", "loaded"):
        busy = busy_processes(cores) if machine == "loaded" else []
        try:
            for label, function in cases:
                one, every = one_vs_all(function, cores, args.repeats)
                print(f"{label:<66} {machine:>7} {one:>10.4f} {every:>11.4f} {one / every:>5.2f}x", flush=True)
        finally:
            for process in busy:
                process.kill()


if __name__ == "__main__":
    main()
