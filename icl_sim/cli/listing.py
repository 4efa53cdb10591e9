"""``icl-sim tasks``: every task family with its parameters and defaults."""
from __future__ import annotations

import click

from icl_sim.params import parameter_table


@click.command("tasks")
def tasks_command():
    """List every task family with its parameters and defaults."""
    from icl_sim.tasks import TASKS

    for name, task_class in TASKS.items():
        algorithms = ", ".join(task_class.probe_algorithms) or "none"
        click.echo(f"{name}  (metric: {task_class.metric}; probe algorithms: {algorithms})")
        click.echo(f"    {(task_class.__doc__ or '').strip().splitlines()[0]}")
        for parameter, type_name, default, help_text in parameter_table(task_class):
            click.echo(f"    {parameter:<18} {type_name:<24} default {default!r:<10} {help_text}")
    click.echo("Set any of these with  icl-sim train --task NAME --task-param KEY=VALUE")
