"""``icl-sim repro list | run | gallery``: paper reproductions end to end."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from icl_sim import catalogue
from icl_sim.cli import choices
from icl_sim.cli.directories import OutputDirectory, removed_on_user_error
from icl_sim.cli.given_once import option
from icl_sim.cli.options import device_option, loop_progress_option
from icl_sim.cli.sweep import with_executor_options


@click.command("list")
def repro_list():
    """Every reproduction: its name, paper, quick- and long-scale times (2-core CPU) and the claims it tests, each
    with the scale that decides it."""
    click.echo("\n".join(catalogue.read()["repro"]))


@click.command("run")
@click.argument("name", required=False)
@option("--all", "run_all", is_flag=True, help="run every reproduction, one after another")
@option("--scale", type=click.Choice(choices.SCALES), default="quick", show_default=True,
        help="smoke: seconds, the pipeline only; quick: CPU minutes; long: up to an hour of CPU, for the claims "
             "decided there; full: the paper's settings")
@option("--seeds", type=click.IntRange(min=1),
        help="training seeds per run  [default: smoke 1, quick 3, long 5, full 3, or the reproduction's own]")
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
@loop_progress_option
@with_executor_options
def repro_run(name, run_all, scale, seeds, first_seed, control, rehearse, out_dir, device, progress, executor):
    """Run reproduction NAME (or --all): figure, results table and checks.json; print the claims held, failed,
    inconclusive and deferred apart from the sanity checks; exit 1 if a claim decided at or below --scale fails or a
    sanity check fails (smoke scale: only if the pipeline breaks).  With --all --scale long, the reproductions
    without a long scale (every claim decided at quick or full) are skipped."""
    if run_all and name is not None:
        raise click.UsageError(f"give a reproduction NAME or --all, not both (--all runs {name} among the others)")
    if not run_all and name is None:
        raise click.UsageError("give a reproduction NAME or --all (see `icl-sim repro list`)")
    if rehearse and (scale != "full" or control):
        raise click.UsageError("--rehearse rehearses the full scale: give it with --scale full and no --control")
    if scale != "full" or rehearse:
        _refuse_executor_options(scale)
    if name is not None:
        catalogue.check_name("reproductions", "name", name)
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import Stopwatch, checkpointed_steps, record_minutes

    names = list(REPRODUCTIONS) if run_all else [name]
    if name is not None:
        REPRODUCTIONS[name].settings(scale)  # a scale it lacks: one line saying which scales decide its claims
    skipped = [current for current in names if not REPRODUCTIONS[current].has_scale(scale)]
    names = [current for current in names if current not in skipped]
    suffix = f"{scale}-rehearsal" if rehearse else scale
    run = _rehearse if rehearse else _control if control else _run
    failures, totals = 0, []
    for current in names:
        target = Path(out_dir or "runs") / f"{current}-{suffix}" if run_all or not out_dir else Path(out_dir)
        before, stopwatch = checkpointed_steps(target), Stopwatch()
        with removed_on_user_error(target, keep="runs"):
            failed, extra = run(REPRODUCTIONS[current], scale=scale, target=target, seeds=seeds,
                                first_seed=first_seed, control=control, device=device, progress=progress,
                                executor=executor)
        if run is _run:  # the gallery, reusing these runs, reports the minutes they took
            record_minutes(target, before, stopwatch.elapsed())
        failures += failed
        totals += extra
        elapsed = stopwatch.elapsed()
        click.echo(f"    ({60 * elapsed.minutes:.0f} s, {60 * elapsed.cpu_minutes:.0f} CPU s; results in {target})")
    if skipped:
        click.echo(f"no {scale} scale (their claims are decided at other scales), skipped: {', '.join(skipped)}")
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
    """Measure the untrained models; fails if any claim holds for them (it could not have failed).  A claim they fail
    only by a non-finite value is reported vacuous: it still needs a real control."""
    from icl_sim.paper_repro import run_reproduction
    from icl_sim.paper_repro.evidence import CONTROL_OUTCOMES, control_outcomes

    checks = run_reproduction(reproduction.name, scale, target, seeds=seeds, first_seed=first_seed, control=control,
                              device=device, progress=progress)
    _echo_checks(checks)
    outcomes = control_outcomes(reproduction, checks)
    claims = {outcome: [claim for claim, value in outcomes.items() if value == outcome] for outcome in CONTROL_OUTCOMES}
    line = (f"{reproduction.name}, {control} control: the untrained models fail {len(claims['fails'])} of "
            f"{len(outcomes)} claims by a finite value ({', '.join(claims['fails']) or 'none'})")
    if claims["vacuous"]:
        line += f"; VACUOUS (only a non-finite value fails): {', '.join(claims['vacuous'])}"
    if claims["inconclusive"]:
        line += f"; inconclusive: {', '.join(claims['inconclusive'])}"
    if claims["holds"]:
        line += f"; they HOLD {', '.join(claims['holds'])}"
    click.echo(line)
    return bool(claims["holds"]), []


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
@option("--scale", type=click.Choice(choices.GALLERY_SCALES), default="long", show_default=True,
        help="long: quick for every reproduction and long where it has a long scale; quick: skip the long runs")
@option("--figures", "figures_dir", type=OutputDirectory(), default="figures", show_default=True)
@option("--runs", "runs_dir", type=OutputDirectory(), default="runs", show_default=True)
@option("--readme", type=click.Path(dir_okay=False, exists=True, writable=True),
        help="a README whose generated reproductions table to redraw from the records (the project's: README.md)")
@option("--redraw", is_flag=True, help="run nothing: draw the page and --readme's table from the records alone")
@device_option
@loop_progress_option
def repro_gallery(names, scale, figures_dir, runs_dir, readme, redraw, device, progress):
    """Regenerate the gallery: reproductions NAMES (default: every one) at quick scale, and at long where they have
    it, over their default seeds, with their untrained controls; their records in --figures/records.json (every
    other reproduction's kept, so refreshes of different NAMES may run at once), the figures, and the page
    --figures/README.md drawn from all records."""
    if redraw and names:
        raise click.UsageError("--redraw draws every reproduction from the records: it takes no NAMES")
    for name in names:
        catalogue.check_name("reproductions", "names", name)
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import REPORTED_VERDICTS, minutes_text, redraw_gallery, refresh_gallery

    entries = (redraw_gallery(REPRODUCTIONS, figures_dir, readme=readme) if redraw else
               refresh_gallery(REPRODUCTIONS, figures_dir, runs_dir, names=list(names) or None, scale=scale,
                               device=device, progress=progress, readme=readme))
    for name, entry in entries.items():
        verdicts = [report.verdict for report in entry.claims()]
        counts = ", ".join(f"{verdicts.count(verdict)} {verdict}" for verdict in REPORTED_VERDICTS
                           if verdict in verdicts)
        minutes = ", ".join(f"{scale} {minutes_text(record.elapsed)}" for scale, record in entry.scales.items())
        click.echo(f"{name}: claims at their deciding scales: {counts} (of {len(verdicts)})  ({minutes})")
    missing = [name for name in REPRODUCTIONS if name not in entries]
    if missing:
        click.echo(f"not in the gallery (no record in {Path(figures_dir) / 'records.json'}): {', '.join(missing)}")
    click.echo(f"gallery in {Path(figures_dir) / 'README.md'}" + (f"; table in {readme}" if readme else ""))
