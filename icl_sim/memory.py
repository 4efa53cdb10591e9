"""The memory a machine has available, and refusing work that cannot fit there, with the estimate."""
from __future__ import annotations

import os
from pathlib import Path

MEMINFO = Path("/proc/meminfo")
#: cgroup v2's memory limit and use of this process's group (what SLURM and containers enforce)
CGROUP_LIMIT, CGROUP_USE = Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current")


def available_bytes() -> int | None:
    """Memory available to a new allocation: the least of the machine's (Linux's MemAvailable, else free pages ×
    page size), what this process's cgroup leaves under its limit, and a SLURM job's allocation; None if none is
    known.  On a shared node the machine's free memory is not the job's."""
    found = [value for value in (_machine_available(), _cgroup_available(), _slurm_allocation()) if value is not None]
    return min(found) if found else None


def _machine_available() -> int | None:
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _cgroup_available() -> int | None:
    """The cgroup's limit minus its use (None without a cgroup v2 limit: "max" or no file)."""
    try:
        limit = CGROUP_LIMIT.read_text().strip()
        return None if limit == "max" else max(0, int(limit) - int(CGROUP_USE.read_text()))
    except (OSError, ValueError):
        return None


def _slurm_allocation() -> int | None:
    """A SLURM job's memory: ``--mem`` (SLURM_MEM_PER_NODE, MB) or ``--mem-per-cpu`` times its CPUs."""
    try:
        if "SLURM_MEM_PER_NODE" in os.environ:
            return int(os.environ["SLURM_MEM_PER_NODE"]) * 2**20
        if "SLURM_MEM_PER_CPU" in os.environ:
            cpus = int(os.environ.get("SLURM_CPUS_ON_NODE", os.environ.get("SLURM_CPUS_PER_TASK", "1")))
            return int(os.environ["SLURM_MEM_PER_CPU"]) * 2**20 * cpus
    except ValueError:
        return None
    return None


def check_fits(name: str, value, needed_bytes: int) -> None:
    """Refuse ``name=value`` with a ``ValueError`` if its estimated ``needed_bytes`` exceed the available memory."""
    available = available_bytes()
    if available is not None and needed_bytes > available:
        raise ValueError(f"{name}={value} needs about {format_bytes(needed_bytes)} of memory (estimate), more than "
                         f"the {format_bytes(available)} available; lower {name}")


#: float32 copies of every parameter that training holds: the weights, their gradients and Adam's two moments
TRAINING_COPIES = 4


def training_bytes(parameters: int, activation_floats: int, batch_size: int) -> int:
    """Estimated peak memory of a float32 training step, in bytes: :data:`TRAINING_COPIES` copies of the
    ``parameters`` and, for each of the ``batch_size`` prompts, the ``activation_floats`` kept for backward."""
    return 4 * (TRAINING_COPIES * parameters + batch_size * activation_floats)


def format_bytes(count: float) -> str:
    """``count`` bytes in B, kB, MB, GB or TB (powers of 1000), 3 significant digits."""
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000:
            return f"{count:.3g} {unit}"
        count /= 1000
    return f"{count:.3g} TB"
