"""``icl-sim repro list | run | gallery``: paper reproductions end to end."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from icl_sim.cli import choices
from icl_sim.cli.directories import OutputDirectory, removed_on_user_error
from icl_sim.cli.given_once import option
from icl_sim.cli.options import device_option, progress_option
from icl_sim.cli.sweep import with_executor_options


@click.command("list")
def repro_list():
    """Every reproduction: its name, paper, claim and quick-scale time (2-core CPU)."""
    from icl_sim.paper_repro import REPRODUCTIONS

    for name, reproduction in REPRODUCTIONS.items():
        paper = reproduction.paper
        click.echo(f"{name}  {paper.authors.split(',')[0]} et al., {paper.venue} "
                   f"(quick scale ≈ {reproduction.quick_minutes:g} min)")
        click.echo(f"    {reproduction.claim}")


@click.command("run")
@click.argument("name", required=False)
@option("--all", "run_all", is_flag=True, help="run every reproduction, one after another")
@option("--scale", type=click.Choice(choices.SCALES), default="quick", show_default=True,
        help="smoke: seconds, the pipeline only; quick: CPU minutes; full: the paper's settings")
@option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="training seeds per run")
@option("--out", "out_dir", type=OutputDirectory(),
        help="output directory [runs/NAME-SCALE; with --all, runs/ holds one per reproduction]")
@device_option
@progress_option
@with_executor_options
def repro_run(name, run_all, scale, seeds, out_dir, device, progress, executor):
    """Run reproduction NAME (or --all): figure, results table and checks.json; exit 1 if a check fails."""
    from icl_sim.paper_repro import REPRODUCTIONS, run_reproduction

    if run_all == (name is not None):
        raise click.UsageError("give a reproduction NAME or --all (see `icl-sim repro list`)")
    names = list(REPRODUCTIONS) if run_all else [name]
    failures = 0
    for current in names:
        target = Path(out_dir or "runs") / f"{current}-{scale}" if run_all or not out_dir else Path(out_dir)
        start = time.perf_counter()
        with removed_on_user_error(target, keep="runs"):
            checks = run_reproduction(current, scale, target, seeds=seeds, device=device, progress=progress,
                                      executor=executor)
        for check in checks:
            click.echo(check.describe())
        failed = sum(not check.passed for check in checks)
        failures += failed
        click.echo(f"{current}: {len(checks) - failed} of {len(checks)} checks passed in "
                   f"{time.perf_counter() - start:.0f} s; results in {target}")
    if failures:
        sys.exit(1)


@click.command("gallery")
@option("--figures", "figures_dir", type=OutputDirectory(), default="figures", show_default=True)
@option("--runs", "runs_dir", type=OutputDirectory(), default="runs", show_default=True)
@device_option
@progress_option
def repro_gallery(figures_dir, runs_dir, device, progress):
    """Regenerate the gallery: every reproduction at quick scale, its figure and checks in --figures/README.md."""
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import refresh_gallery

    entries = refresh_gallery(REPRODUCTIONS, figures_dir, runs_dir, device=device, progress=progress)
    for name, (_, checks) in entries.items():
        click.echo(f"{name}: {sum(c.passed for c in checks)} of {len(checks)} checks passed")
    click.echo(f"gallery in {Path(figures_dir) / 'README.md'}")
