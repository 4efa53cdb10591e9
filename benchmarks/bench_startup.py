"""Start-up time of ``icl-sim --help``, ``train --help``, the listings and an unknown name's error against
``python -c "import torch"``.

The commands run as subprocesses, interleaved, ``--repeats`` times each; the medians and each help's
ratio to importing torch are printed (a ratio below 1: that help starts faster than importing torch alone).

    python benchmarks/bench_startup.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

ICL_SIM = [sys.executable, "-c", "from icl_sim.cli import main; main()"]
HELPS = {"icl-sim --help": [*ICL_SIM, "--help"], "icl-sim train --help": [*ICL_SIM, "train", "--help"],
         "icl-sim tasks": [*ICL_SIM, "tasks"], "icl-sim repro list": [*ICL_SIM, "repro", "list"],
         "icl-sim theory list": [*ICL_SIM, "theory", "list"],
         "icl-sim repro run NOPE (error)": [*ICL_SIM, "repro", "run", "NOPE"]}
IMPORT_TORCH = [sys.executable, "-c", "import torch"]


#: the exit status each command must end with (0 unless named here)
STATUS = {"icl-sim repro run NOPE (error)": 2}


def seconds(command: list[str], status: int = 0) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if result.returncode != status:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}, not {status}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    reference = "python -c 'import torch'"
    commands = {**HELPS, reference: IMPORT_TORCH}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            times[name].append(seconds(command, STATUS.get(name, 0)))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:<28} median {median:.3f} s over {repeats} runs")
    for name in HELPS:
        print(f"ratio {name} / import torch: {medians[name] / medians[reference]:.3f}")


if __name__ == "__main__":
    main()
