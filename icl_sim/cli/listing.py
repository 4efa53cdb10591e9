"""``icl-sim tasks``: every task family with its parameters and defaults (read from the catalogue, so it starts at once)."""
from __future__ import annotations

import click

from icl_sim import catalogue


@click.command("tasks")
def tasks_command():
    """List every task family with its parameters and defaults."""
    click.echo("\n".join(catalogue.read()["tasks"]))
