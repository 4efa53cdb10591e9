"""Throughput of an ensemble (K runs as one batched computation) against the same K runs trained one after another.

Run: ``python benchmarks/bench_ensemble.py [--runs 8] [--steps 20] [--repeats 5] [--only lsa]``.

Fairness: both sides train the same K configs (seeds 0..K-1) for the same steps, end to end with their
run directories (config, metrics, a checkpoint at the end): ``train_ensemble(configs)`` against
``train(config)`` for each config in turn.  They run in this process, interleaved (ensemble, sequential,
ensemble, ...) after one warm-up each, and the ratio is median(sequential) / median(ensemble) of wall
time; steps/s counts run-steps (K x steps).  Every case is measured with ``torch.set_num_threads(1)``
and with torch's default thread count.

Two ceilings on the ratio are measured in the same interleaved loop.  ``sampling``: every run's batches drawn
as ``train`` draws them, nothing else; the ensemble must draw them too (each from its run's own generator, so
that batch t is the one the run alone sees), so the ratio cannot exceed sequential / sampling.  ``wide``: one
run of batch K x 64, the same arithmetic as the ensemble's batched step with one run's overheads; the ratio
cannot much exceed sequential / wide, which is near 1 where the arithmetic dominates (compute-bound).
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
from icl_sim.tasks import make_task
from icl_sim.training import train, training_batch

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


def measure(config: TrainConfig, runs: int, steps: int, repeats: int, device: str = "cpu") -> dict[str, float]:
    """Median wall seconds of the ensemble, the sequential runs, their sampling alone and one wide run,
    interleaved, after one warm-up each (each ends with a checkpoint, which waits for the device)."""
    configs = [dataclasses.replace(config, seed=seed, steps=steps, batch_size=64, device=device,
                                   checkpoint_every=steps) for seed in range(runs)]
    wide_config = dataclasses.replace(configs[0], batch_size=64 * runs)
    tasks = [make_task(run_config.task, **run_config.task_params) for run_config in configs]
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

        def sampling():
            for step in range(steps):
                for task, run_config in zip(tasks, configs):
                    training_batch(task, run_config, step, torch.device(device))

        def wide():
            train(wide_config, directories()[0], progress=False)

        times = {ensemble: [], sequential: [], sampling: [], wide: []}
        for function in times:
            function()
        for _ in range(repeats):
            for function in times:
                times[function].append(timed(function))
    return {function.__name__: statistics.median(values) for function, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="measure only the cases whose name contains this")
    args = parser.parse_args()
    run_steps = args.runs * args.steps
    default_threads = torch.get_num_threads()
    print(f"K = {args.runs} runs x {args.steps} steps, batch 64; ratio = sequential / ensemble wall time (median of "
          f"{args.repeats}, interleaved)")
    for threads in sorted({1, default_threads}):
        torch.set_num_threads(threads)
        for name, config in CASES.items():
            if args.only not in name:
                continue
            seconds = measure(config, args.runs, args.steps, args.repeats)
            ratios = {side: seconds["sequential"] / seconds[side] for side in ("ensemble", "sampling", "wide")}
            print(f"{threads} thread(s)  {name:38s} ensemble {run_steps / seconds['ensemble']:7.1f} run-steps/s  "
                  f"sequential {run_steps / seconds['sequential']:7.1f} run-steps/s  ratio {ratios['ensemble']:5.2f}x  "
                  f"ceilings: sampling {ratios['sampling']:5.2f}x, wide {ratios['wide']:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
