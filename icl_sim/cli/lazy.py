"""Subcommands imported only when they run, so ``icl-sim --help`` starts without the numerical libraries.

This is click's "Defining lazily loaded subcommands" pattern; the group's own ``--help`` lists each
command with the one-line help given here instead of importing it (a test holds the two equal).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Mapping

import click


@dataclass(frozen=True)
class LazyCommand:
    """A command defined as attribute ``target`` (``"module:attribute"``), with its one-line help."""

    target: str
    help: str

    def load(self) -> click.Command:
        module, attribute = self.target.split(":")
        return getattr(importlib.import_module(module), attribute)


class LazyGroup(click.Group):
    """A click group whose ``lazy_commands`` are imported by name when invoked (or asked for their own help)."""

    def __init__(self, *args, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            return self.lazy_commands[name].load()
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of ``--help``, from the lazy commands' one-line help: nothing is imported."""
        rows = [(name, self.lazy_commands[name].help if name in self.lazy_commands
                 else self.commands[name].get_short_help_str(formatter.width)) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
