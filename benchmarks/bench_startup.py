"""Start-up time of ``icl-sim --help`` against ``python -c "import torch"``, as subprocesses.

Both commands run interleaved, ``--repeats`` times each; the medians and their ratio are printed
(a ratio below 1: the CLI's help starts faster than importing torch alone).

    python benchmarks/bench_startup.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {"icl-sim --help": [sys.executable, "-c", "from icl_sim.cli import main; main()", "--help"],
            "python -c 'import torch'": [sys.executable, "-c", "import torch"]}


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):
        for name, command in COMMANDS.items():
            times[name].append(seconds(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:<28} median {median:.3f} s over {repeats} runs")
    cli, torch = medians.values()
    print(f"ratio icl-sim --help / import torch: {cli / torch:.3f}")


if __name__ == "__main__":
    main()
