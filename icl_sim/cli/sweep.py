"""``icl-sim sweep run | status``: a grid of training runs as submitit jobs, and where each run stands."""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from icl_sim.cli import choices
from icl_sim.cli.directories import OutputDirectory
from icl_sim.cli.given_once import option
from icl_sim.cli.options import loop_progress_option

executor_options = [
    option("--executor", "kind", type=click.Choice(choices.EXECUTORS), default="local", show_default=True,
           help="local: one process per run on this machine; slurm: one SLURM job per run; debug: in this process, "
                "one run after another (repro run: full scale only)"),
    option("--partition", help="the SLURM partition (default: the cluster's)"),
    option("--timeout-min", type=click.IntRange(min=1), default=24 * 60, show_default=True,
           help="minutes a job may run"),
    option("--gpus", type=click.IntRange(min=0), help="GPUs per job  [default: 1 where CUDA is available, else 0]"),
    option("--parallel", type=click.IntRange(min=1),
           help="runs executing at once  [default: local: one per GPU where CUDA is available, else as many as the "
                "cores hold at --threads threads each; slurm: no limit]"),
]


def with_executor_options(command):
    """Add the options that choose where runs execute; they reach the command as one ``executor``."""
    @functools.wraps(command)
    def build(kind, partition, timeout_min, gpus, parallel, **rest):
        from icl_sim.executors import Executor

        return command(executor=Executor(kind, partition, timeout_min, gpus, parallel), **rest)

    for executor_option in reversed(executor_options):
        build = executor_option(build)
    return build


@click.command("run")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@option("--out", "root", type=OutputDirectory(), help="sweep directory  [default: runs/SPEC's name]")
@option("--max-runs", type=click.IntRange(min=1), default=10_000, show_default=True,  # icl_sim.sweep.MAX_RUNS
        help="refuse a grid of more runs than this (a typo, not a plan)")
@with_executor_options
@loop_progress_option
def sweep_run(spec, root, max_runs, executor, progress):
    """Train every run of grid SPEC (skipping finished runs, resuming interrupted ones); exit 1 if a job fails."""
    from icl_sim.reports import config_warnings
    from icl_sim.sweep import expand_grid, read_spec, run_sweep

    root = root or Path("runs") / Path(spec).stem
    threads = click.get_current_context().find_root().params.get("threads")
    grid = read_spec(spec, max_runs)
    for warning in dict.fromkeys(text for _, config in expand_grid(grid) for text in config_warnings(config)):
        click.echo(f"Warning: {warning}", err=True)  # each once, however many runs it concerns
    try:
        rows = run_sweep(grid, root, executor, threads=threads, progress=progress)
    except KeyboardInterrupt:
        click.echo(f"Interrupted: each run checkpointed as it stopped; `icl-sim sweep run {spec} --out {root}` "
                   f"resumes them", err=True)
        sys.exit(130)
    click.echo(f"{len(rows)} runs done; summary in {root / 'summary.csv'}")


@click.command("status")
@click.argument("root", type=click.Path(exists=True, file_okay=False, path_type=Path))
def sweep_status_command(root):
    """Each run of the sweep in ROOT: done, running, failed or pending, with its steps and final loss."""
    from icl_sim.sweep import STATES, sweep_status

    rows = sweep_status(root)
    for row in rows:
        values = ", ".join(f"{key}={value}" for key, value in row.items()
                           if key not in ("run", "state", "steps", "final_loss", "problem"))
        loss = "" if row["final_loss"] is None else f"  loss {row['final_loss']:.4g}"
        steps = "" if row["steps"] is None else f"{row['steps']:>7} steps"
        problem = f"  ({row['problem']})" if row["problem"] else ""
        click.echo(f"{row['run']}  {row['state']:<8} {steps}{loss}  {values}{problem}")
    counts = [f"{sum(row['state'] == state for row in rows)} {state}" for state in STATES]
    click.echo(", ".join(counts))
