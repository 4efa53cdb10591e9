"""Output directories: refused up front when they cannot be made, removed again when a command fails at once."""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import click

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


@contextlib.contextmanager
def removed_on_user_error(path: Path, keep: str | None = None):
    """Run the block; if it fails with a user error (bad input, memory, disk) remove what it made of ``path``.

    Only a directory that did not exist before the block is removed, with the parents it created,
    and not if it holds a file named ``keep`` (e.g. a checkpoint worth resuming).
    """
    path = Path(path).absolute()
    created = path
    while not created.parent.exists():
        created = created.parent
    existed = path.exists()
    try:
        yield
    except Exception as error:
        if not existed and created.exists() and user_error_message(error) is not None \
                and not (keep and (path / keep).exists()):
            shutil.rmtree(created)
        raise
