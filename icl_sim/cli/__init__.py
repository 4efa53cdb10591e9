"""The ``icl-sim`` command line: tasks, train, eval, probes, theory and paper reproductions.

Every failure a user can cause ends in one line ``Error: ...`` and exit status 2 (``errors``), an
option given twice too (``given_once``).  Each command lives in the module named in its group's
table and is imported only when it runs; that module imports the library inside the command's body and
takes its choices from ``choices``, so every ``--help`` starts without the numerical libraries.
"""
from __future__ import annotations

import click

from icl_sim.cli.errors import OneLineErrors
from icl_sim.cli.given_once import option
from icl_sim.cli.lazy import LazyCommand, LazyGroup

#: the environment variable behind ``icl-sim --threads``
THREADS_ENVIRONMENT = "ICL_SIM_THREADS"

COMMANDS = {
    "tasks": LazyCommand("icl_sim.cli.listing:tasks_command", "List every task family with its parameters and "
                         "defaults."),
    "train": LazyCommand("icl_sim.cli.train:train_command", "Train a model on a task; writes config.json, "
                         "checkpoint.pt and metrics.jsonl to --out."),
    "eval": LazyCommand("icl_sim.cli.evaluate:eval_command", "Compare a trained run with its task's baselines: "
                        "RUN_DIR/eval/results.{csv,json}, error_curve.png."),
    "probe": LazyCommand("icl_sim.cli.probes:probe_command", "Match every layer of a trained model with steps of "
                         "an algorithm."),
    "probe-latent": LazyCommand("icl_sim.cli.probes:probe_latent_command", "Probe every layer's state at the "
                                "final query for a latent (Akyürek et al.; Hewitt & Liang controls)."),
    "compare-weights": LazyCommand("icl_sim.cli.probes:compare_weights_command", "Compare each layer of a "
                                   "trained linear-attention run (lsa) with a step of (preconditioned) GD, one "
                                   "per layer."),
}
REPRO_COMMANDS = {
    "list": LazyCommand("icl_sim.cli.repro:repro_list", "Every reproduction: its name, paper, quick- and long-scale "
                        "times (2-core CPU) and the claims it tests, each with the scale that decides it."),
    "run": LazyCommand("icl_sim.cli.repro:repro_run", "Run reproduction NAME (or --all): figure, results table "
                       "and checks.json; print the claims held, failed, inconclusive and deferred apart from the "
                       "sanity checks; exit 1 if a claim decided at or below --scale fails or a sanity check fails "
                       "(smoke scale: only if the pipeline breaks)."),
    "gallery": LazyCommand("icl_sim.cli.repro:repro_gallery", "Regenerate the gallery: reproductions NAMES "
                           "(default: every one) at quick scale, and at long where they have it, over their default "
                           "seeds, with their untrained controls; their records in --figures/records.json (every "
                           "other reproduction's kept, so refreshes of different NAMES may run at once), the "
                           "figures, and the page --figures/README.md drawn from all records."),
}
THEORY_COMMANDS = {
    "list": LazyCommand("icl_sim.cli.theory:theory_list", "Every claim with its source."),
    "show": LazyCommand("icl_sim.cli.theory:theory_show", "The derivation of claim NAME, step by step, ending "
                        "with the final formula."),
    "verify": LazyCommand("icl_sim.cli.theory:theory_verify", "Check claims NAMES (default: all) against "
                          "numbers; exit 1 if any fails."),
}
SWEEP_COMMANDS = {
    "run": LazyCommand("icl_sim.cli.sweep:sweep_run", "Train every run of grid SPEC (skipping finished runs, "
                       "resuming interrupted ones); exit 1 if a job fails."),
    "status": LazyCommand("icl_sim.cli.sweep:sweep_status_command", "Each run of the sweep in ROOT: done, running, "
                          "failed or pending, with its steps and final loss."),
}


@click.group(cls=OneLineErrors, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="icl-sim")
@option("--threads", type=click.IntRange(min=1), envvar=THREADS_ENVIRONMENT, show_envvar=True,
        help="CPU threads of this command's tensor kernels [default: the cores other work leaves idle]")
def cli(threads):
    """icl-sim: train in-context learners and compare them with the algorithms theory predicts."""
    from icl_sim.threads import use_threads

    use_threads(threads)


@cli.group("repro", cls=LazyGroup, lazy_commands=REPRO_COMMANDS)
def repro_group():
    """Reproduce paper results end to end."""


@cli.group("theory", cls=LazyGroup, lazy_commands=THEORY_COMMANDS)
def theory_group():
    """Theoretical claims: list them, show their derivations, verify them numerically."""


@cli.group("sweep", cls=LazyGroup, lazy_commands=SWEEP_COMMANDS)
def sweep_group():
    """Grids of training runs as submitit jobs (local processes or SLURM), in directories named by config hash."""


def main():
    cli.main(prog_name="icl-sim")
