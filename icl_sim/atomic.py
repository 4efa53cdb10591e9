"""Atomic file writes: a crash leaves either the old file or the new one, never half of one."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it over ``path`` only if the block succeeds.

    The new file's bytes reach the disk before the rename and the rename before this returns (``fsync`` of the
    file, then of its directory), so after a node's crash ``path`` is the old file or the whole new one, never a
    renamed file whose bytes were still in the page cache.  A failed write in the block (a full disk) is an
    OSError naming ``path`` (:func:`naming_in_errors`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with naming_in_errors(path):
            yield Path(temporary)
            _synced(temporary, os.O_RDONLY)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(temporary, path)
        _synced(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _synced(path, flags: int) -> None:
    """``fsync`` the file or directory at ``path`` (a file system that cannot sync a directory is let be)."""
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    except OSError:
        if not os.path.isdir(path):  # some network file systems refuse fsync on a directory
            raise
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def naming_in_errors(path):
    """Run the block; an OSError in it that names no file (a failed ``write``: a full disk) is raised again naming
    ``path``, so that the one-line error says which file could not be written."""
    try:
        yield
    except OSError as error:
        if error.filename is not None:
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


@contextlib.contextmanager
def removed_if_failed(directory, *, keep: str | None = None,
                      removes: Callable[[BaseException], bool] = lambda error: True):
    """Run the block; if it raises an error for which ``removes(error)`` holds (by default any), remove
    ``directory`` and the parents it created, when the block made them and ``directory`` holds no file named
    ``keep`` (e.g. a checkpoint worth resuming): a failed command leaves no empty or half-filled folder behind."""
    path = Path(directory).absolute()
    if path.exists():
        yield
        return
    created = path
    while not created.parent.exists():
        created = created.parent
    try:
        yield
    except BaseException as error:
        if created.exists() and removes(error) and not (keep and (path / keep).exists()):
            shutil.rmtree(created, ignore_errors=True)
        raise


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
