"""Every benchmark in one run: each speed ratio beside the goal issue 12 sets for it, MET or NOT MET.

Run: ``python benchmarks/run_all.py [--quick]``.  The default settings are those recorded in RESULTS.md (long:
hours on a shared 2-core machine); ``--quick`` shrinks repeats, batches and step counts so that the whole run
takes about ten minutes, ratios less steady.  Each benchmark's own functions do the measuring (interleaved,
median of repeats, one thread and torch's default); ``bench_probe`` has none returning its figures, so it runs
as a subprocess and its output is shown.  A ratio is always "how many times faster ours is", so every goal is a
lower bound: OLS ≥ 20x its per-prefix lstsq loop; every other baseline and the chosen LSA path ≥ 1x their
straightforward form; the GPT step ≥ 1.3x Garg et al.'s HuggingFace model; an ensemble of K = 8 runs ≥ 4x the
K runs one after another; ``import torch`` / ``icl-sim --help`` and ``import torch`` / ``icl-sim train --help`` ≥ 1x.
Thread ratios have no goal: they inform ``icl_sim.threads``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bench_boolean_graph
import bench_ensemble
import bench_prefix_solvers
import bench_startup
import bench_threads
import bench_training_step
import torch
from bench_prefix_solvers import interleaved_medians, load_average


@dataclass(frozen=True)
class Settings:
    repeats: int  # Boolean learners, graph algorithms and threads
    prefix_repeats: int
    prefix_batch: int
    boolean_batch: int
    graph_batch: int
    lsa_batches: tuple[int, ...]
    lsa_repeats: int
    gpt_repeats: int
    ensemble_steps: int
    ensemble_repeats: int
    startup_repeats: int


SETTINGS = {"recorded": Settings(repeats=5, prefix_repeats=3, prefix_batch=1280, boolean_batch=1280, graph_batch=1024,
                                 lsa_batches=(64, 256), lsa_repeats=15, gpt_repeats=7, ensemble_steps=20,
                                 ensemble_repeats=3, startup_repeats=7),
            "quick": Settings(repeats=2, prefix_repeats=2, prefix_batch=256, boolean_batch=256, graph_batch=256,
                              lsa_batches=(64,), lsa_repeats=2, gpt_repeats=1, ensemble_steps=5, ensemble_repeats=1,
                              startup_repeats=3)}


@dataclass(frozen=True)
class Ratio:
    name: str
    threads: int | str
    ratio: float
    goal: float | None  # None: no goal, the figure informs a choice

    def line(self) -> str:
        verdict = "" if self.goal is None else "MET" if self.ratio >= self.goal else "NOT MET"
        goal = "-" if self.goal is None else f">= {self.goal:g}x"
        return f"{self.name:<76} {self.threads!s:>7} {self.ratio:>8.2f}x {goal:>8} {verdict:>8}"


def thread_counts() -> tuple[int, ...]:
    return tuple(sorted({1, torch.get_num_threads()}))


def over_threads(measure_once):
    """Yield (threads, result of ``measure_once()``) at one thread and at torch's default, restoring the default."""
    default = torch.get_num_threads()
    try:
        for threads in thread_counts():
            torch.set_num_threads(threads)
            yield threads, measure_once()
    finally:
        torch.set_num_threads(default)


def prefix_solvers(settings: Settings):
    with torch.no_grad():
        for case, (name, ours, reference, *_) in enumerate(bench_prefix_solvers.cases(settings.prefix_batch, 41, 20)):
            goal = 20.0 if case == 0 else 1.0  # case 0: OLS
            for threads, (mine, theirs) in over_threads(
                    lambda: interleaved_medians(ours, reference, settings.prefix_repeats)):
                yield Ratio(name, threads, theirs / mine, goal)


def boolean_graph(settings: Settings):
    for name, threads, ours, reference, _ in bench_boolean_graph.measure(settings.boolean_batch, settings.graph_batch,
                                                                        settings.repeats):
        yield Ratio(name, threads, reference / ours, 1.0)


def training_steps(settings: Settings):
    parts = [("lsa", batch, 1.0, settings.lsa_repeats) for batch in settings.lsa_batches]
    if importlib.util.find_spec("transformers") is None:
        print("GPT vs HuggingFace: skipped, transformers is not installed (pip install -e '.[bench]')")
    else:
        parts.append(("gpt", 64, 1.3, settings.gpt_repeats))
    for part, batch, goal, repeats in parts:
        names = [name for name, *_ in (bench_training_step.lsa_cases(batch) if part == "lsa"
                                       else bench_training_step.gpt_cases(batch))]
        for case, name in enumerate(names):
            for threads, (mine, theirs) in over_threads(
                    lambda: interleaved_medians(*bench_training_step.steps(part, case, batch), repeats)):
                yield Ratio(name, threads, theirs / mine, goal)


def ensembles(settings: Settings):
    for name, config in bench_ensemble.CASES.items():
        for threads, seconds in over_threads(lambda: bench_ensemble.measure(config, 8, settings.ensemble_steps,
                                                                            settings.ensemble_repeats)):
            speed_up = seconds["sequential"] / seconds["ensemble"]
            yield Ratio(f"ensemble K=8 vs sequential: {name}", threads, speed_up, 4.0)


def startup(settings: Settings):
    def bare_torch():
        return bench_startup.seconds(bench_startup.IMPORT_TORCH)

    for name, command in bench_startup.HELPS.items():
        status = bench_startup.STATUS.get(name, 0)
        cli_time, torch_time = interleaved_medians(lambda: bench_startup.seconds(command, status), bare_torch,
                                                   settings.startup_repeats)
        yield Ratio(f"import torch / {name} (start-up, subprocesses)", "-", torch_time / cli_time, 1.0)


def threads(settings: Settings):
    cores = os.cpu_count() or 1
    for label, function in bench_threads.workloads():
        one, every = bench_threads.one_vs_all(function, cores, settings.repeats)
        yield Ratio(f"threads, no added load: t(1) / t({cores}), {label}", f"1/{cores}", one / every, None)


def probe() -> None:
    """bench_probe prints its figures and returns none: run it and show what it prints."""
    script = Path(__file__).with_name("bench_probe.py")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    print(result.stdout + result.stderr, flush=True)


BENCHMARKS = {"prefix solvers": prefix_solvers, "Boolean learners and graph algorithms": boolean_graph,
              "training steps": training_steps, "ensembles": ensembles, "start-up": startup, "threads": threads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small settings: about ten minutes, noisier ratios")
    settings = SETTINGS["quick" if parser.parse_args().quick else "recorded"]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, threads {thread_counts()}, load average "
          f"{load_average()}; {settings}", flush=True)
    ratios = []
    for title, benchmark in BENCHMARKS.items():
        print(f"\n== {title}", flush=True)
        for ratio in benchmark(settings):
            print(ratio.line(), flush=True)
            ratios.append(ratio)
    print("\n== probe (bench_probe.py, its own output)", flush=True)
    probe()
    missed = [ratio for ratio in ratios if ratio.goal is not None and ratio.ratio < ratio.goal]
    print(f"\n== summary: {len(ratios) - len(missed)} of {len(ratios)} figures meet or have no goal; NOT MET:")
    for ratio in missed:
        print(ratio.line())
    print(f"load average at the end {load_average()}")


if __name__ == "__main__":
    main()
