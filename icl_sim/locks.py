"""Advisory locks on output directories: one process writes a run directory, or a sweep's root, at a time.

A lock is the file ``DIRECTORY/.icl-sim.lock``, held with ``flock`` for the writer's lifetime and naming its
holder (pid, host, start time).  The operating system releases a ``flock`` when its process ends, however it
ends, so a lock file whose lock is free was left by a holder that died (``kill -9``, a node's crash): the next
writer takes it over with a warning.  A second writer while the holder lives gets one line naming the holder.

The locks are advisory (only icl-sim's writers ask for them) and, on network file systems whose ``flock`` is
local to a host, they exclude the processes of one host only.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

LOCK_FILE = ".icl-sim.lock"


class DirectoryInUse(ValueError):
    """Another live process holds the directory's lock."""


@contextlib.contextmanager
def directory_lock(directory, what: str = "run directory"):
    """Hold the lock of ``directory`` (created if missing) for the block; ``what`` names it in messages."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    descriptor = _acquire(path, f"{what} {str(directory)!r}")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # before the lock is released: a waiting writer opens a fresh file
        os.close(descriptor)


def lock_holder(directory) -> str | None:
    """Who holds the lock of ``directory`` now ("pid N on HOST since TIME"), or None if nobody does."""
    path = Path(directory) / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _described(_read_holder(descriptor))
    finally:
        os.close(descriptor)  # closing releases the probe's shared lock
    return None


def _acquire(path: Path, named: str) -> int:
    """An open descriptor of ``path`` holding its exclusive lock; a live holder is a DirectoryInUse error."""
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _described(_read_holder(descriptor))
            os.close(descriptor)
            raise DirectoryInUse(f"{named} is in use by {holder}; wait for it to end, or stop that process "
                                 f"and run again") from None
        if _is_current(descriptor, path):
            break
        os.close(descriptor)  # the holder removed the file between our open and our lock: lock the new one
    previous = _read_holder(descriptor)
    if previous is not None:
        print(f"Warning: took over the lock of {named} from {_described(previous)}, which is no longer running",
              file=sys.stderr)
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, (json.dumps(holder) + "\n").encode(), 0)
    return descriptor


def _is_current(descriptor: int, path: Path) -> bool:
    """Whether ``descriptor`` is still the file at ``path`` (not one a releasing holder unlinked)."""
    try:
        return os.fstat(descriptor).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _read_holder(descriptor: int) -> dict | None:
    """The holder recorded in an open lock file, or None if it records none."""
    text = os.pread(descriptor, 4096, 0).decode(errors="replace")
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        return {} if text.strip() else None
    return holder if isinstance(holder, dict) else {}


def _described(holder: dict | None) -> str:
    if not holder:
        return "another process"
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {holder.get('since', '?')}"
