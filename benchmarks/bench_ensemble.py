"""Throughput of an ensemble (K runs as one batched computation) against the same K runs trained one after another.

Run: ``python benchmarks/bench_ensemble.py [--runs 8] [--steps 20] [--repeats 5]``.

Fairness: both sides train the same K configs (seeds 0..K-1) for the same steps, end to end with their
run directories (config, metrics, a checkpoint at the end): ``train_ensemble(configs)`` against
``train(config)`` for each config in turn.  They run in this process, interleaved (ensemble, sequential,
ensemble, ...) after one warm-up each, and the ratio is median(sequential) / median(ensemble) of wall
time; steps/s counts run-steps (K x steps).  Every case is measured with ``torch.set_num_threads(1)``
and with torch's default thread count.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

import torch

from icl_sim.config import TrainConfig
from icl_sim.ensemble import train_ensemble
from icl_sim.training import train

CASES = {
    "lsa 1 layer, d=20, N=41, loss on last": TrainConfig(task_params={"dim": 20, "points": 41}, model="lsa",
                                                         loss_on="last"),
    "lsa 1 layer, d=20, N=41, loss on all": TrainConfig(task_params={"dim": 20, "points": 41}, model="lsa",
                                                        loss_on="all"),
    "gpt 1 x 32, d=5, N=11": TrainConfig(task_params={"dim": 5, "points": 11}, model="gpt", loss_on="all",
                                         model_params={"n_layer": 1, "n_embd": 32, "n_head": 2}),
    "gpt tiny (3 x 64), d=10, N=11": TrainConfig(task_params={"dim": 10, "points": 11}, model="gpt",
                                                 loss_on="all"),
}


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def measure(config: TrainConfig, runs: int, steps: int, repeats: int) -> tuple[float, float]:
    """Median wall seconds of (the ensemble, the sequential runs), interleaved, after one warm-up each."""
    configs = [dataclasses.replace(config, seed=seed, steps=steps, batch_size=64, device="cpu",
                                   checkpoint_every=steps) for seed in range(runs)]
    with tempfile.TemporaryDirectory() as scratch:
        counter = iter(range(10**6))

        def directories() -> list[Path]:
            trial = Path(scratch) / str(next(counter))
            return [trial / f"run-{index}" for index in range(runs)]

        def ensemble():
            train_ensemble(configs, directories(), progress=False)

        def sequential():
            for run_config, run_dir in zip(configs, directories()):
                train(run_config, run_dir, progress=False)

        ensemble(), sequential()
        times = {ensemble: [], sequential: []}
        for _ in range(repeats):
            for function in times:
                times[function].append(timed(function))
    return statistics.median(times[ensemble]), statistics.median(times[sequential])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    print(f"K = {args.runs} runs x {args.steps} steps, batch 64; ratio = sequential / ensemble wall time (median of "
          f"{args.repeats}, interleaved)")
    for threads in (1, default_threads):
        torch.set_num_threads(threads)
        for name, config in CASES.items():
            ensemble, sequential = measure(config, args.runs, args.steps, args.repeats)
            run_steps = args.runs * args.steps
            print(f"{threads} thread(s)  {name:38s} ensemble {run_steps / ensemble:7.1f} run-steps/s  "
                  f"sequential {run_steps / sequential:7.1f} run-steps/s  ratio {sequential / ensemble:5.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
