"""The memory a machine has available, and refusing work that cannot fit there, with the estimate."""
from __future__ import annotations

import os
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


def available_bytes() -> int | None:
    """Memory available to a new allocation: Linux's MemAvailable, else free pages × page size, else None."""
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
