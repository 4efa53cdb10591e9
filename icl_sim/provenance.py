"""Provenance: what produced a run, a reproduction, a sweep or a gallery, in ``environment.json`` beside it.

Each session of work in a directory (a run's first training and every resume, a reproduction rerun) appends one
record: icl-sim's version and, in a git checkout, its commit and whether the tree had uncommitted changes; the
Python, torch, numpy and CUDA versions; the device and threads; the host, the command line and the seeds; when it
started and when and how it ended.  A session cut off by ``kill -9`` keeps ``ended: null``.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from icl_sim.atomic import write_text

ENVIRONMENT_FILE = "environment.json"


@contextlib.contextmanager
def recorded_session(directory, *, device=None, seeds=None):
    """Record this session of work in ``directory/environment.json`` for the block: its environment when it
    starts, its end time and outcome ("completed", "interrupted" or "failed: ...") when it ends."""
    path = Path(directory) / ENVIRONMENT_FILE
    session = {"session": uuid.uuid4().hex, **environment(device), "pid": os.getpid(), "command": sys.argv,
               "seeds": None if seeds is None else list(seeds), "started": _now(), "ended": None, "outcome": None}
    _record(path, session)
    outcome = "completed"
    try:
        yield
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise
    except BaseException as error:
        outcome = f"failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        raise
    finally:
        session.update(ended=_now(), outcome=outcome)
        with contextlib.suppress(OSError):  # a full disk must not hide the error that ended the session
            _record(path, session)


def _record(path: Path, session: dict) -> None:
    """Put ``session`` into the file's list, replacing its earlier state and keeping every other session's as read
    now (two galleries of different reproductions may record into one figures directory at once)."""
    sessions = [earlier for earlier in _read_sessions(path)
                if not isinstance(earlier, dict) or earlier.get("session") != session["session"]]
    write_text(path, json.dumps({"sessions": [*sessions, session]}, indent=1) + "\n")


def environment(device=None) -> dict:
    """The software and hardware this process runs on."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    return {"icl_sim": _version(), "git": _git(), "python": platform.python_version(), "torch": torch.__version__,
            "numpy": np.__version__, "cuda": torch.version.cuda, "device": _device_name(device),
            "threads": torch.get_num_threads(), "host": socket.gethostname()}


def _read_sessions(path: Path) -> list:
    """The sessions recorded so far; a file that does not read back is started afresh (it is a record, not an
    input: nothing depends on it)."""
    try:
        sessions = json.loads(path.read_text())["sessions"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return []
    return sessions if isinstance(sessions, list) else []


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _device_name(device: torch.device) -> str:
    if device.type == "cuda" and torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return device.type


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        return metadata.version("icl-sim")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def _git() -> dict | None:
    """The commit of the checkout the package runs from, and whether its tree has uncommitted changes (None
    outside a git checkout, or without git)."""
    source = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        status = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode != 0 or status.returncode != 0:
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
