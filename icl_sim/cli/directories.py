"""Output directories: refused up front when they cannot be made, removed again when a command fails at once."""
from __future__ import annotations

import os
from pathlib import Path

import click

from icl_sim.atomic import removed_if_failed
from icl_sim.cli.errors import user_error_message


class OutputDirectory(click.Path):
    """A directory to create or fill: a non-empty path whose nearest existing ancestor is a writable directory."""

    def __init__(self):
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        if not str(value).strip():
            self.fail("must name a directory, not an empty string (use . for the current one)", param, ctx)
        path = super().convert(value, param, ctx)
        ancestor = path.absolute()
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            self.fail(f"cannot create {str(path)!r}: {str(ancestor)!r} is a file, not a directory", param, ctx)
        if not os.access(ancestor, os.W_OK | os.X_OK):
            self.fail(f"cannot create {str(path)!r}: {str(ancestor)!r} is not writable; choose another directory",
                      param, ctx)
        return path


def removed_on_user_error(path: Path, keep: str | None = None):
    """:func:`~icl_sim.atomic.removed_if_failed` for a user error (bad input, memory, disk) only: a bug keeps
    what it made, to be looked at."""
    return removed_if_failed(path, keep=keep, removes=lambda error: user_error_message(error) is not None)
