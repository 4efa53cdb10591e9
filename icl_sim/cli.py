"""The ``icl-sim`` command line: tasks, train, eval, probes, theory and paper reproductions.

Every bad input ends in one line ``Error: ...`` and exit status 2, never a traceback.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
import typing
from pathlib import Path
from typing import Iterable, Mapping

import click
import sympy

from icl_sim.claims import CLAIMS
from icl_sim.config import DEVICES, TrainConfig, read_config_file
from icl_sim.models import MODELS
from icl_sim.paper_repro import REPRODUCTIONS, SCALES, run_reproduction
from icl_sim.paper_repro.gallery import refresh_gallery
from icl_sim.params import is_mapping, non_optional, parameter_table
from icl_sim.probing import STEP_PARAMS
from icl_sim.reports import (PRECONDITIONERS, compare_weights_run, evaluate_run, final_position_summary,
                             probe_latent_run, probe_run, residual_cosines, train_config)
from icl_sim.run_io import load_config
from icl_sim.tasks import TASKS
from icl_sim.training import THREADS_ENVIRONMENT, TrainingDiverged, train, use_threads


class OneLineErrors(click.Group):
    """A click group that reports every usage error, and every ValueError, as a single line."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ValueError as error:
            raise click.UsageError(str(error)) from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            if not standalone_mode:
                raise
            click.echo(f"Error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except click.Abort:
            if not standalone_mode:
                raise
            click.echo("Aborted.", err=True)
            sys.exit(130)
        if standalone_mode:
            sys.exit(result if isinstance(result, int) else 0)
        return result


class Parsed(click.ParamType):
    """A value written as text and read by ``cls.parse`` (e.g. a Curriculum's START:INC:EVERY)."""

    def __init__(self, cls):
        self.cls, self.name = cls, cls.__name__.lower()

    def convert(self, value, param, ctx):
        if isinstance(value, self.cls):
            return value
        try:
            return self.cls.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


def field_options(cls, choices: Mapping[str, Iterable[str]] | None = None):
    """Decorate a command with one option per field of dataclass ``cls``, named and typed after the field.

    The option's value reaches the command under the field's name.  The field's ``metadata`` gives
    ``help``, ``minimum`` (``strict``) and ``choices`` (-> IntRange, FloatRange, Choice), ``metavar``,
    ``option`` (another flag name) and ``default_text``; a bool field is a ``--x/--no-x`` flag, a
    two-float tuple two numbers, a class with ``parse`` its text form, a mapping a repeatable
    ``KEY=VALUE``.  ``choices`` adds the choices known only above ``cls``'s layer (e.g. the models).
    """
    hints, choices = typing.get_type_hints(cls), choices or {}

    def option(spec):
        metadata, flag = spec.metadata, spec.name.replace("_", "-")
        kind = non_optional(hints[spec.name])
        settings = {"help": metadata.get("help"), "metavar": metadata.get("metavar"),
                    "show_default": metadata.get("default_text", True), "default": spec.default}
        minimum, named = metadata.get("minimum"), metadata.get("choices", choices.get(spec.name))
        if is_mapping(kind):
            settings.update(multiple=True, default=(), show_default=False)
        elif kind is bool:
            flag = f"{flag}/--no-{flag}"
        elif named is not None:
            settings["type"] = click.Choice(list(named))
        elif kind is int:
            settings["type"] = click.IntRange(min=minimum)
        elif kind is float:
            settings["type"] = click.FloatRange(min=minimum, min_open=metadata.get("strict", False))
        elif typing.get_origin(kind) is tuple:
            settings["type"] = typing.get_args(kind)
        elif callable(getattr(kind, "parse", None)):
            settings["type"] = Parsed(kind)
        return click.option(metadata.get("option", f"--{flag}"), spec.name, **settings)

    def decorate(command):
        for spec in reversed(dataclasses.fields(cls)):
            command = option(spec)(command)
        return command

    return decorate


def mapping_fields(cls) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` that map names to values (set as repeatable KEY=VALUE options)."""
    hints = typing.get_type_hints(cls)
    return tuple(spec.name for spec in dataclasses.fields(cls) if is_mapping(hints[spec.name]))


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="icl-sim")
@click.option("--threads", type=click.IntRange(min=1), envvar=THREADS_ENVIRONMENT, show_envvar=True,
              help="CPU threads of this command's tensor kernels (default: one per core)")
def cli(threads):
    """icl-sim: train in-context learners and compare them with the algorithms theory predicts."""
    if threads is not None:
        use_threads(threads)


@cli.command("tasks")
def tasks_command():
    """List every task family with its parameters and defaults."""
    for name, task_class in TASKS.items():
        algorithms = ", ".join(task_class.probe_algorithms) or "none"
        click.echo(f"{name}  (metric: {task_class.metric}; probe algorithms: {algorithms})")
        click.echo(f"    {(task_class.__doc__ or '').strip().splitlines()[0]}")
        for parameter, type_name, default, help_text in parameter_table(task_class):
            click.echo(f"    {parameter:<18} {type_name:<24} default {default!r:<10} {help_text}")
    click.echo("Set any of these with  icl-sim train --task NAME --task-param KEY=VALUE")


@cli.command("train")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="a YAML, JSON or TOML file of the options below by field name (a run's config.json too); "
                   "options given here override it")
@field_options(TrainConfig, choices={"model": sorted(MODELS)})
@click.option("--dim", type=click.IntRange(min=1), help="input dimension d (the task's dimension parameter)")
@click.option("--points", type=click.IntRange(min=1), help="points per prompt N, query included")
@click.option("--layers", type=click.IntRange(min=1),
              help="depth: layers (lsa, softmax-attention), n_layer (gpt), loops (looped models)")
@click.option("--loops", type=click.IntRange(min=1), help="looped models: training loops b (model parameter `loops`)")
@click.option("--loop-window", type=click.IntRange(min=0),
              help="looped models: the loss averages over the last T loops (model parameter `loop_window`)")
@click.option("--out", "run_dir", required=True, type=click.Path(file_okay=False), help="run directory")
@click.option("--resume", is_flag=True, help="continue the run saved in --out (other options must not be given, "
              "except --steps to extend it and --device)")
@click.option("--progress/--no-progress", default=True, show_default=True)
def train_command(run_dir, resume, progress, config_file, dim, points, layers, loops, loop_window, **fields):
    """Train a model on a task; writes config.json, checkpoint.pt and metrics.jsonl to --out.

    Settings, lowest precedence first: the defaults, --config's file, the options given here
    (--task-param and --model-param merged key by key into the file's), then --dim, --points,
    --layers, --loops and --loop-window.  See icl_sim.reports.train_config.
    """

    ctx = click.get_current_context()
    given = [name for name in ctx.params if name not in ("run_dir", "resume", "progress")
             and ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
    if resume:
        forbidden = sorted(set(given) - {"steps", "device"})
        if forbidden:
            flag = next(param.opts[0] for param in ctx.command.params if param.name == forbidden[0])
            raise ValueError(f"--resume continues the saved config; do not pass {flag}")
        config = dataclasses.replace(load_config(run_dir), **{name: fields[name] for name in given})
    else:
        values = read_config_file(config_file) if config_file else {}
        pairs = mapping_fields(TrainConfig)
        values.update({name: fields[name] for name in given if name in fields and name not in pairs})
        config = train_config(values, **{name: fields[name] for name in pairs}, dim=dim, points=points,
                              layers=layers, loops=loops, loop_window=loop_window)
    try:
        train(config, run_dir, resume=resume, progress=progress)
    except TrainingDiverged as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(1)
    click.echo(f"trained {config.model} on {config.task} for {config.steps} steps -> {run_dir}")


@cli.command("eval")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--num-prompts", type=click.IntRange(min=2), default=1280, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="evaluation seed")
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
def eval_command(run_dir, num_prompts, seed, device):
    """Compare a trained run with its task's baselines: RUN_DIR/eval/results.{csv,json}, error_curve.png."""

    records, paths = evaluate_run(run_dir, num_prompts=num_prompts, seed=seed, device=device)
    click.echo("metric at the last position, by predictor and slice of prompts (mean [95% bootstrap interval]):")
    for line in final_position_summary(records):
        click.echo(f"  {line}")
    for kind, path in paths.items():
        click.echo(f"{kind}: {path}")


@cli.command("probe")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--algorithm", required=True,
              help="gd, preconditioned-gd, gd-plus-plus, newton, ridge, power-method: one the run's task declares "
                   "(see `icl-sim tasks`)")
@click.option("--step-params", type=click.Choice(STEP_PARAMS), default="shared", show_default=True,
              help="shared: one hyper-parameter setting for all steps; per-step: each step its own, tuned on the "
                   "task's risk (von Oswald et al.), for gd, preconditioned-gd, gd-plus-plus")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="algorithm steps 1..K  [default: 10 shared, the number of layers per-step]")
@click.option("--num-prompts", type=click.IntRange(min=2), default=1024, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="evaluation seed")
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
@click.option("--readout", type=click.Choice(["direct", "fitted"]), default="direct", show_default=True,
              help="direct: the model's own read-out after each layer; fitted: a linear read-out of each layer's "
                   "hidden state fitted on held-out prompts (Fu et al.)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object {records, best, parameters}")
def probe_command(run_dir, algorithm, step_params, steps, num_prompts, seed, device, readout, as_json):
    """Match every layer of a trained model with steps of an algorithm.

    \b
    Metrics, per layer and step, on the final query of held-out prompts:
      residual_cosine                cosine of the error vectors ŷ − y across prompts (Fu et al.); higher is
                                     closer
      sensitivity_cosine             mean cosine of ∂ŷ/∂x_query (von Oswald et al.); higher is closer
      squared_prediction_difference  mean (ŷ_model − ŷ_algorithm)² (Akyürek et al.'s SPD); lower is closer
      weight_difference              mean ‖ŵ_model − ŵ_algorithm‖² of implicit linear weights (ILWD); lower is
                                     closer
    Shared: the one setting under which the layers' closest steps are closest.  Per-step: one step
    per layer, the risk-optimal steps of that length, chosen without looking at the model.
    Writes RUN_DIR/probe/NAME.{csv,json} and NAME.png (layer × step residual cosine), NAME being
    ALGORITHM, or ALGORITHM-per-step.
    """

    result, paths = probe_run(run_dir, algorithm, step_params=step_params, steps=steps, num_prompts=num_prompts,
                              seed=seed, device=device, readout=readout)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        cosines = residual_cosines(result["records"])
        click.echo(f"{algorithm} ({step_params} step parameters): {_rounded(result['parameters'])}")
        for layer, step in result["best"].items():
            click.echo(f"layer {layer}: closest to {algorithm} step {step} "
                       f"(residual cosine {cosines[layer, step]:.4f})")
        click.echo(f"table and heatmap in {paths['figure'].parent}")


def _rounded(value):
    """Floats to 4 significant digits, inside lists and dicts too, for printing."""
    if isinstance(value, dict):
        return {name: _rounded(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return float(f"{value:.4g}") if isinstance(value, float) else value


@cli.command("probe-latent")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--latent", "--target", "target", required=True,
              help="w, xty ((1/n) Σ y_j x_j of the context) or any latent key of the task's prompts")
@click.option("--probe", "probes", type=click.Choice(["linear", "mlp"]), multiple=True, default=["linear"],
              show_default=True, help="probe kind (repeatable)")
@click.option("--control", type=click.Choice(["permuted", "query-projection"]), default="permuted",
              show_default=True, help="control task: targets of permuted prompts, or a random projection of x_query")
@click.option("--num-fit", type=click.IntRange(min=2), default=2048, show_default=True, help="prompts to fit on")
@click.option("--num-prompts", type=click.IntRange(min=2), default=1024, show_default=True, help="held-out prompts")
@click.option("--ridge", type=float, default=1e-3, show_default=True, help="relative ridge of the linear probe")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print the records as JSON")
def probe_latent_command(run_dir, target, probes, control, num_fit, num_prompts, ridge, seed, device, as_json):
    """Probe every layer's state at the final query for a latent (Akyürek et al.; Hewitt & Liang controls).

    Writes RUN_DIR/probe/latent-TARGET.{csv,json}: held-out r2, control_r2, selectivity, fit_r2, control_fit_r2.
    """

    records, paths = probe_latent_run(run_dir, target, probes=probes, control=control, num_fit=num_fit,
                                      num_prompts=num_prompts, ridge=ridge, seed=seed, device=device)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    values = {(r["layer"], r["probe"], r["metric"]): r["value"] for r in records}
    for layer, probe_name, _ in sorted(key for key in values if key[2] == "r2"):
        click.echo(f"layer {layer} {probe_name}: R² {values[layer, probe_name, 'r2']:.4f}, "
                   f"control ({control}) {values[layer, probe_name, 'control_r2']:.4f}, "
                   f"selectivity {values[layer, probe_name, 'selectivity']:.4f}")
    click.echo(f"table in {paths['csv'].parent}")


@cli.command("compare-weights")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--lr", type=float, default=1.0, show_default=True,
              help="step of the GD construction; the scale column reads as the learned step relative to it")
@click.option("--preconditioner", type=click.Choice(PRECONDITIONERS), default="identity", show_default=True,
              help="A of the construction: I, or the optimal one-layer Γ* (Ahn et al.) for the task's mean covariance")
@click.option("--json", "as_json", is_flag=True, help="print the records as JSON")
def compare_weights_command(run_dir, lr, preconditioner, as_json):
    """Compare each layer of a trained linear-attention run (lsa) with a step of (preconditioned) GD, one per layer.

    Per layer and effective map (full, label, label_feature; see icl_sim.weight_comparison), invariant to
    P -> cP, Q -> Q/c and head permutations: cosine with the construction, best scale, relative residual,
    fraction of the squared norm on the construction's non-zero entries.
    """

    records = compare_weights_run(run_dir, lr, preconditioner)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    click.echo(f"{'layer':>5} {'map':<14} {'cosine':>8} {'scale':>9} {'residual':>9} {'support':>8}")
    for r in records:
        click.echo(f"{r['layer']:>5} {r['map']:<14} {r['cosine']:>8.4f} {r['scale']:>9.4g} "
                   f"{r['relative_residual']:>9.4f} {r['support_fraction']:>8.4f}")


@cli.group("repro", cls=OneLineErrors)
def repro_group():
    """Reproduce paper results end to end."""


@repro_group.command("list")
def repro_list():
    """Every reproduction: its name, paper, claim and quick-scale time (2-core CPU)."""

    for name, reproduction in REPRODUCTIONS.items():
        paper = reproduction.paper
        click.echo(f"{name}  {paper.authors.split(',')[0]} et al., {paper.venue} "
                   f"(quick scale ≈ {reproduction.quick_minutes:g} min)")
        click.echo(f"    {reproduction.claim}")


@repro_group.command("run")
@click.argument("name", required=False)
@click.option("--all", "run_all", is_flag=True, help="run every reproduction, one after another")
@click.option("--scale", type=click.Choice(SCALES), default="quick", show_default=True,
              help="smoke: seconds, the pipeline only; quick: CPU minutes; full: the paper's settings")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, help="training seeds per run")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="output directory [runs/NAME-SCALE; with --all, runs/ holds one per reproduction]")
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True)
def repro_run(name, run_all, scale, seeds, out_dir, device, progress):
    """Run reproduction NAME (or --all): figure, results table and checks.json; exit 1 if a check fails."""

    if run_all == (name is not None):
        raise click.UsageError("give a reproduction NAME or --all (see `icl-sim repro list`)")
    names = list(REPRODUCTIONS) if run_all else [name]
    failures = 0
    for current in names:
        target = Path(out_dir or "runs") / f"{current}-{scale}" if run_all or not out_dir else Path(out_dir)
        start = time.perf_counter()
        checks = run_reproduction(current, scale, target, seeds=seeds, device=device, progress=progress)
        for check in checks:
            click.echo(check.describe())
        failed = sum(not check.passed for check in checks)
        failures += failed
        click.echo(f"{current}: {len(checks) - failed} of {len(checks)} checks passed in "
                   f"{time.perf_counter() - start:.0f} s; results in {target}")
    if failures:
        sys.exit(1)


@repro_group.command("gallery")
@click.option("--figures", "figures_dir", type=click.Path(file_okay=False), default="figures", show_default=True)
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False), default="runs", show_default=True)
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
def repro_gallery(figures_dir, runs_dir, device):
    """Regenerate the gallery: every reproduction at quick scale, its figure and checks in --figures/README.md."""

    for name, (_, checks) in refresh_gallery(REPRODUCTIONS, figures_dir, runs_dir, device=device).items():
        click.echo(f"{name}: {sum(c.passed for c in checks)} of {len(checks)} checks passed")
    click.echo(f"gallery in {Path(figures_dir) / 'README.md'}")


@cli.group("theory", cls=OneLineErrors)
def theory_group():
    """Theoretical claims: list them, show their derivations, verify them numerically."""


@theory_group.command("list")
def theory_list():
    """Every claim with its source."""

    for claim in CLAIMS.values():
        click.echo(f"{claim.name:<30} {claim.summary}")
        click.echo(f"{'':<30} source: {claim.source}")


@theory_group.command("show")
@click.argument("name")
@click.option("--latex", is_flag=True, help="print LaTeX instead of pretty-printed formulas")
def theory_show(name, latex):
    """The derivation of claim NAME, step by step, ending with the final formula."""

    claim = _claim(name)
    click.echo(f"{claim.name}: {claim.summary}\nsource: {claim.source}\n")
    for number, step in enumerate(claim.derive(), start=1):
        rendered = sympy.latex(step.expression) if latex else sympy.pretty(step.expression, use_unicode=True)
        click.echo(f"({number}) {step.label}\n{rendered}\n")


@theory_group.command("verify")
@click.argument("names", nargs=-1)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
def theory_verify(names, seed, as_json):
    """Check claims NAMES (default: all) against numbers; exit 1 if any fails."""

    selected = [_claim(name) for name in names] or list(CLAIMS.values())
    results = []
    for claim in selected:
        start = time.perf_counter()
        checks = claim.verify(seed)
        results.append({"name": claim.name, "source": claim.source, "passed": all(c.passed for c in checks),
                        "seconds": round(time.perf_counter() - start, 3), "checks": checks})
    passed = all(result["passed"] for result in results)
    if as_json:
        claims = [{**result, "checks": [check.as_dict() for check in result["checks"]]} for result in results]
        click.echo(json.dumps({"passed": passed, "seed": seed, "claims": claims}, indent=2))
    else:
        for result in results:
            click.echo(f"[{'PASS' if result['passed'] else 'FAIL'}] {result['name']} ({result['seconds']:.1f} s)")
            for check in result["checks"]:
                click.echo(f"    {check.describe()}")
        click.echo(f"{sum(r['passed'] for r in results)} of {len(results)} claims verified")
    if not passed:
        sys.exit(1)


def _claim(name):
    if name not in CLAIMS:
        raise ValueError(f"claim must be one of {', '.join(CLAIMS)}; got {name!r}")
    return CLAIMS[name]


def main():
    cli.main(prog_name="icl-sim")
