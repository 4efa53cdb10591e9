"""Atomic file writes: a crash leaves either the old file or the new one, never half of one."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def remove_leftovers(directory) -> None:
    """Delete the temporary files that processes killed inside :func:`atomic_path` left in ``directory``."""
    for leftover in Path(directory).glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def write_text(path, text: str) -> None:
    """Atomically replace ``path`` with ``text``."""
    with atomic_path(path) as temporary:
        temporary.write_text(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
