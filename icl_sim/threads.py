"""How many intra-op threads torch's CPU kernels use: by default, the cores that other work leaves idle.

Measured on a 2-core machine (benchmarks/bench_threads.py, benchmarks/RESULTS.md): idle, both cores
make a GPT training step 1.4-1.7x faster than one; with both cores busy elsewhere, two threads make
the same step 1.4-2x slower (their kernels wait for the slower core at every barrier) and only the
12-layer GPT still gains (1.1x).  So the load, not the size of the work, decides.
"""
from __future__ import annotations

import os
import sys

from icl_sim.validation import check_int


def allocated_cores() -> int:
    """The cores this process may run on: a SLURM job's ``--cpus-per-task``, else the CPU affinity the scheduler
    or container set (``sched_getaffinity``), else the machine's cores."""
    if os.environ.get("SLURM_CPUS_PER_TASK", "").isdigit():
        return max(1, int(os.environ["SLURM_CPUS_PER_TASK"]))
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def idle_cores() -> int:
    """The cores not busy with other work: in a SLURM job its allocation (the node's load is other jobs', on
    other cores); elsewhere the allocated cores minus the 1-minute load average, at least one."""
    cores = allocated_cores()
    if "SLURM_JOB_ID" in os.environ:
        return cores
    return max(1, min(cores, round(cores - os.getloadavg()[0])))


def use_threads(count: int | None = None) -> int:
    """Run torch's CPU kernels on ``count`` intra-op threads (None: :func:`idle_cores`); returns the count.
    More threads than cores are legal but only wait on each other: a one-line warning on stderr says so.

    Before torch is imported this sets ``OMP_NUM_THREADS``, which torch reads when it loads, so that a
    command line that never needs torch does not pay for importing it.
    """
    count = idle_cores() if count is None else count
    check_int("threads", count, 1)
    cores = allocated_cores()
    if count > cores:
        print(f"Warning: threads={count} is more than the {cores} cores this process may use, which only slows "
              f"the kernels down; use at most {cores}", file=sys.stderr)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(count)
    else:
        os.environ["OMP_NUM_THREADS"] = str(count)
    return count
