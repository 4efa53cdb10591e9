"""One error path for the command line: every failure a user can cause ends in one line ``Error: ...``.

A bad value, file or directory, a corrupt run, memory or disk space running out: each becomes one
line naming what to change, exit status 2.  A run that failed (``icl_sim.failures.RunFailed``: it
diverged, a sweep's jobs died) is one line too, exit status 1; one that SIGTERM stopped (its checkpoint
saved) exits with status 143.  Any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import errno
import os
import pickle
import re
import signal
import sys

import click

from icl_sim.cli.lazy import LazyGroup
from icl_sim.failures import RunFailed, Terminated
from icl_sim.memory import format_bytes

#: what an OSError's errno asks the user to do
_OS_ADVICE = {errno.ENOSPC: "free disk space or choose another location",
              errno.EDQUOT: "free disk space or choose another location",
              errno.EACCES: "choose a location you can write", errno.EPERM: "choose a location you can write",
              errno.EROFS: "choose a location you can write", errno.ENOENT: "check the path",
              errno.ENOTDIR: "a part of the path is a file, not a directory"}
#: the tensor library's messages for a failed allocation (CPU allocator, CUDA, MPS), and the size in them
_ALLOCATION = re.compile(r"can't allocate memory|not enough memory|out of memory", re.IGNORECASE)
_ALLOCATION_SIZE = re.compile(r"allocate (\d+) bytes|allocate ([\d.]+ [KMGT]i?B)", re.IGNORECASE)
_SMALLER = "reduce --batch-size, --num-prompts, --dim or --points"


def user_error_message(error: BaseException) -> str | None:
    """The one-line message for a failure the user caused (bad input, files, memory, disk), None for a bug."""
    if isinstance(error, ValueError):
        return " ".join(str(error).split())
    if isinstance(error, OSError):
        return _os_message(error)
    if isinstance(error, MemoryError):
        return f"out of memory; {_SMALLER}"
    if isinstance(error, RuntimeError) and _ALLOCATION.search(str(error)):
        return f"out of memory{_allocation_size(str(error))}; {_SMALLER}"
    if isinstance(error, (EOFError, pickle.UnpicklingError)):
        return f"a file ended early or was not written by icl-sim ({type(error).__name__}: {error}); restore it"
    return None


def _os_message(error: OSError) -> str:
    paths = " -> ".join(repr(str(name)) for name in (error.filename, error.filename2) if name is not None)
    reason = error.strerror or str(error)
    advice = _OS_ADVICE.get(error.errno)
    return f"{reason}: {paths or 'a file'}" + (f"; {advice}" if advice else "")


def _allocation_size(message: str) -> str:
    match = _ALLOCATION_SIZE.search(message)
    if match is None:
        return ""
    if match.group(1):
        return f": an allocation of {format_bytes(int(match.group(1)))} failed"
    return f": an allocation of {match.group(2)} failed"


class OneLineErrors(LazyGroup):
    """The root group: reports usage errors and every failure :func:`user_error_message` knows as one line."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise
        except RunFailed as error:  # a diverged run, a sweep's failed jobs: exit status 1
            raise click.ClickException(str(error)) from None
        except Terminated:  # training said where its checkpoint is; exit as a process that SIGTERM ended does
            raise click.exceptions.Exit(128 + signal.SIGTERM) from None
        except Exception as error:
            message = user_error_message(error)
            if message is None:
                raise
            raise click.UsageError(message) from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            if not standalone_mode:
                raise
            click.echo(f"Error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except click.Abort:
            if not standalone_mode:
                raise
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as the Python docs advise
            if not standalone_mode:
                raise
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result
