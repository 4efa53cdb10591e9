"""``icl-sim train``: one option per TrainConfig field, a config file under them, and resume."""
from __future__ import annotations

import dataclasses

import click

from icl_sim.cli import choices
from icl_sim.cli.directories import OutputDirectory, removed_on_user_error
from icl_sim.cli.given_once import option
from icl_sim.cli.options import field_options, loop_progress_option, mapping_fields
from icl_sim.config import TrainConfig, read_config_file
from icl_sim.validation import LARGEST_INT


@click.command("train")
@option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
        help="a YAML, JSON or TOML file of the options below by field name, --dim, --points, --layers, --loops "
             "and --loop-window too (as dim, ..., loop_window; a run's config.json too); options given here "
             "override it")
@field_options(TrainConfig, choices={"model": choices.MODELS})
@option("--dim", type=click.IntRange(min=1, max=LARGEST_INT),
        help="input dimension d (the task's dimension parameter)")
@option("--points", type=click.IntRange(min=1, max=LARGEST_INT), help="points per prompt N, query included")
@option("--layers", type=click.IntRange(min=1, max=LARGEST_INT),
        help="depth: layers (lsa, softmax-attention), n_layer (gpt), loops (looped models)")
@option("--loops", type=click.IntRange(min=1, max=LARGEST_INT),
        help="looped models: training loops b (model parameter `loops`)")
@option("--loop-window", type=click.IntRange(min=0, max=LARGEST_INT),
        help="looped models: the loss averages over the last T loops (model parameter `loop_window`)")
@option("--out", "run_dir", required=True, type=OutputDirectory(), help="run directory")
@option("--resume", is_flag=True,
        help="continue the run saved in --out (other options must not be given, except --steps to extend it and "
             "--device)")
@option("--force-unverified", is_flag=True,
        help="with --resume: accept a config.json edited after the run wrote it (or without its checksum), "
             "recorded in it as unverified_edit")
@loop_progress_option
def train_command(run_dir, resume, force_unverified, progress, config_file, dim, points, layers, loops, loop_window,
                  **fields):
    """Train a model on a task; writes config.json, checkpoint.pt and metrics.jsonl to --out.

    Settings, lowest precedence first: the defaults, --config's file, the options given here
    (--task-param and --model-param merged key by key into the file's), then --dim, --points,
    --layers, --loops and --loop-window.  Setting one parameter twice (e.g. by --dim and by
    --task-param dim=...) is an error.  See icl_sim.reports.train_config.
    """
    from icl_sim.locks import directory_lock
    from icl_sim.reports import config_warnings, train_config
    from icl_sim.run_io import CHECKPOINT_FILE, accept_unverified_config, load_config
    from icl_sim.training import train

    ctx = click.get_current_context()
    given = [name for name in ctx.params if name not in ("run_dir", "resume", "force_unverified", "progress")
             and ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if force_unverified and not resume:
        raise ValueError("--force-unverified accepts the edited config of a run to resume; pass it with --resume")
    if resume:
        forbidden = sorted(set(given) - {"steps", "device"})
        if forbidden:
            flag = next(param.opts[0] for param in ctx.command.params if param.name == forbidden[0])
            raise ValueError(f"--resume continues the saved config; do not pass {flag} (to change it, start a new "
                             f"run from this one's weights: --init-from {run_dir} --out NEW_DIR)")
        if force_unverified:
            load_config(run_dir, verified=False)  # a missing or invalid config is refused before anything is made
            with directory_lock(run_dir):  # not under a live run
                saved = accept_unverified_config(run_dir)
        else:
            saved = load_config(run_dir)
        config = dataclasses.replace(saved, **{name: fields[name] for name in given})
    else:
        values = read_config_file(config_file) if config_file else {}
        pairs = mapping_fields(TrainConfig)
        values.update({name: fields[name] for name in given if name in fields and name not in pairs})
        config = train_config(values, **{name: fields[name] for name in pairs}, dim=dim, points=points,
                              layers=layers, loops=loops, loop_window=loop_window)
        for warning in config_warnings(config):
            click.echo(f"Warning: {warning}", err=True)
    with removed_on_user_error(run_dir, keep=CHECKPOINT_FILE):
        train(config, run_dir, resume=resume, progress=progress)
    click.echo(f"trained {config.model} on {config.task} for {config.steps} steps -> {run_dir}")
