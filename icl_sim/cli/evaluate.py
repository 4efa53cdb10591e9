"""``icl-sim eval``: a trained run against its task's baselines, per position, with bootstrap intervals."""
from __future__ import annotations

import click

from icl_sim.cli.given_once import option
from icl_sim.cli.options import (checkpoint_format_option, device_option, progress_option, run_dir_argument,
                                 seed_option, step_option)


@click.command("eval")
@run_dir_argument
@option("--num-prompts", type=click.IntRange(min=2), default=1280, show_default=True,
        help="held-out prompts; refused up front if the estimated memory exceeds what is available")
@seed_option
@device_option
@checkpoint_format_option
@step_option
@progress_option
def eval_command(run_dir, num_prompts, seed, device, checkpoint_format, step, progress):
    """Compare a trained run with its task's baselines: RUN_DIR/eval/results.{csv,json}, error_curve.png."""
    from icl_sim.evaluation import METRICS
    from icl_sim.reports import evaluate_run, final_position_summary

    records, paths = evaluate_run(run_dir, num_prompts=num_prompts, seed=seed, device=device, progress=progress,
                                  checkpoint_format=checkpoint_format, step=step)
    metric = records[0]["metric"]
    click.echo(f"{METRICS[metric].label} at the last position, by predictor and slice of prompts "
               f"(mean [95% bootstrap interval]):")
    for line in final_position_summary(records):
        click.echo(f"  {line}")
    for kind, path in paths.items():
        click.echo(f"{kind}: {path}")
