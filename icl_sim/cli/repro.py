"""``icl-sim repro list | run | gallery``: paper reproductions end to end."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from icl_sim import catalogue
from icl_sim.cli import choices
from icl_sim.cli.directories import OutputDirectory, removed_on_user_error
from icl_sim.cli.given_once import option
from icl_sim.cli.options import device_option, progress_option
from icl_sim.cli.sweep import with_executor_options


@click.command("list")
def repro_list():
    """Every reproduction: its name, paper, quick-scale time and the claims it tests (2-core CPU)."""
    click.echo("\n".join(catalogue.read()["repro"]))


@click.command("run")
@click.argument("name", required=False)
@option("--all", "run_all", is_flag=True, help="run every reproduction, one after another")
@option("--scale", type=click.Choice(choices.SCALES), default="quick", show_default=True,
        help="smoke: seconds, the pipeline only; quick: CPU minutes; full: the paper's settings")
@option("--seeds", type=click.IntRange(min=1), help="training seeds per run  [default: smoke 1, quick and full 3]")
@option("--first-seed", type=click.IntRange(min=0), default=0, show_default=True,
        help="the first seed of the block: a claim must hold on any block")
@option("--control", type=click.Choice(choices.CONTROLS),
        help="untrained: measure the models at their initialisation through the same checks (control.json); "
             "exit 1 if a claim holds for them")
@option("--rehearse", is_flag=True,
        help="with --scale full: build every run at full size, train a few steps of each, measure, check and draw, "
             "and print each run's parameters, memory, time here, FLOPs and projected H200 hours")
@option("--out", "out_dir", type=OutputDirectory(),
        help="output directory [runs/NAME-SCALE(-rehearsal); with --all, runs/ holds one per reproduction]")
@device_option
@progress_option
@with_executor_options
def repro_run(name, run_all, scale, seeds, first_seed, control, rehearse, out_dir, device, progress, executor):
    """Run reproduction NAME (or --all): figure, results table and checks.json; print the claims held, failed and
    deferred apart from the sanity checks; exit 1 if a claim or a sanity check fails (smoke scale: only if the
    pipeline breaks)."""
    if run_all == (name is not None):
        raise click.UsageError("give a reproduction NAME or --all (see `icl-sim repro list`)")
    if rehearse and (scale != "full" or control):
        raise click.UsageError("--rehearse rehearses the full scale: give it with --scale full and no --control")
    if scale != "full" or rehearse:
        _refuse_executor_options(scale)
    if name is not None:
        catalogue.check_name("reproductions", "name", name)
    from icl_sim.paper_repro import REPRODUCTIONS

    names = list(REPRODUCTIONS) if run_all else [name]
    suffix = f"{scale}-rehearsal" if rehearse else scale
    run = _rehearse if rehearse else _control if control else _run
    failures, totals = 0, []
    for current in names:
        target = Path(out_dir or "runs") / f"{current}-{suffix}" if run_all or not out_dir else Path(out_dir)
        start = time.perf_counter()
        with removed_on_user_error(target, keep="runs"):
            failed, extra = run(REPRODUCTIONS[current], scale=scale, target=target, seeds=seeds,
                                first_seed=first_seed, control=control, device=device, progress=progress,
                                executor=executor)
        failures += failed
        totals += extra
        click.echo(f"    ({time.perf_counter() - start:.0f} s; results in {target})")
    if rehearse and run_all:
        from icl_sim.paper_repro.rehearsal import total_line

        click.echo(total_line("all reproductions at full scale", totals))
    if failures:
        sys.exit(1)


def _refuse_executor_options(scale: str) -> None:
    """Below the full scale (and in its rehearsal) runs train in this process: an executor option would be ignored."""
    ctx = click.get_current_context()
    executor_parameters = ("kind", "partition", "timeout_min", "gpus", "parallel")
    given = [param.opts[0] for param in ctx.command.params if param.name in executor_parameters
             and ctx.get_parameter_source(param.name) is not click.core.ParameterSource.DEFAULT]
    if given:
        where = "in a rehearsal" if scale == "full" else f"at --scale {scale}"
        raise click.UsageError(f"{given[0]} applies to --scale full only: {where} the runs train in this process")


def _run(reproduction, *, scale, target, seeds, first_seed, device, progress, executor, **_) -> tuple[bool, list]:
    """Train, measure and check; print each check and the summary.  Fails on a failed claim or sanity check."""
    from icl_sim.paper_repro import run_reproduction
    from icl_sim.paper_repro.evidence import failed, summary_line

    checks = run_reproduction(reproduction.name, scale, target, seeds=seeds, first_seed=first_seed, device=device,
                              progress=progress, executor=executor)
    _echo_checks(checks)
    click.echo(f"{reproduction.name}: {summary_line(reproduction, checks)}")
    if scale == "smoke":
        click.echo("    smoke scale tests the pipeline only: a few steps of training, so its verdicts are no evidence")
        return False, []
    return failed(reproduction, checks), []


def _control(reproduction, *, scale, target, seeds, first_seed, control, device, progress, **_) -> tuple[bool, list]:
    """Measure the untrained models; fails if any claim holds for them (it could not have failed)."""
    from icl_sim.paper_repro import run_reproduction
    from icl_sim.paper_repro.evidence import held_claims

    checks = run_reproduction(reproduction.name, scale, target, seeds=seeds, first_seed=first_seed, control=control,
                              device=device, progress=progress)
    _echo_checks(checks)
    held = held_claims(reproduction, checks)
    failing = [claim.id for claim in reproduction.claims if claim.id not in held]
    click.echo(f"{reproduction.name}, {control} control: the untrained models fail "
               f"{len(failing)} of {len(reproduction.claims)} claims ({', '.join(failing) or 'none'})"
               + (f"; they HOLD {', '.join(held)}" if held else ""))
    return bool(held), []


def _rehearse(reproduction, *, target, seeds, first_seed, device, progress, **_) -> tuple[bool, list]:
    """Rehearse the full scale; print each run's cost and the reproduction's total."""
    from icl_sim.paper_repro import rehearse_reproduction
    from icl_sim.paper_repro.rehearsal import total_line

    costs, checks = rehearse_reproduction(reproduction.name, target, seeds=seeds, first_seed=first_seed, device=device,
                             progress=progress)
    for cost in costs:
        click.echo(f"    {cost.describe()}")
    click.echo(f"{reproduction.name}: rehearsed {len(checks)} checks on {len(costs)} runs; "
               + total_line("full scale", costs))
    return False, costs


def _echo_checks(checks) -> None:
    """The claim checks, then the sanity checks, one line each."""
    for kind in ("claim", "sanity"):
        for check in checks:
            if check.kind == kind:
                click.echo(check.describe())


@click.command("gallery")
@click.argument("names", nargs=-1)
@option("--figures", "figures_dir", type=OutputDirectory(), default="figures", show_default=True)
@option("--runs", "runs_dir", type=OutputDirectory(), default="runs", show_default=True)
@device_option
@progress_option
def repro_gallery(names, figures_dir, runs_dir, device, progress):
    """Regenerate the gallery: reproductions NAMES (default: every one) at quick scale over their default seeds,
    with their untrained controls; figures and the claims and sanity tables in --figures/README.md, which also
    shows every other reproduction an earlier gallery left in --runs."""
    for name in names:
        catalogue.check_name("reproductions", "names", name)
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.evidence import summary_line
    from icl_sim.paper_repro.gallery import refresh_gallery

    entries = refresh_gallery(REPRODUCTIONS, figures_dir, runs_dir, names=list(names) or None, device=device,
                              progress=progress)
    for name, entry in entries.items():
        click.echo(f"{name}: {summary_line(REPRODUCTIONS[name], entry.checks)}  ({entry.minutes:.1f} min)")
    missing = [name for name in REPRODUCTIONS if name not in entries]
    if missing:
        click.echo(f"not in the gallery (no earlier run in {runs_dir}): {', '.join(missing)}")
    click.echo(f"gallery in {Path(figures_dir) / 'README.md'}")
