"""What the run commands of ``icl-sim`` do, as library calls: each gives from Python what the command prints.

:func:`train_config` builds ``icl-sim train``'s TrainConfig (a config file's values, flags over them,
shortcuts); :func:`evaluate_run`, :func:`probe_run`, :func:`probe_latent_run` and
:func:`compare_weights_run` read a run directory and write their tables and figures inside it.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch
from tqdm import tqdm

from icl_sim.atomic import removed_if_failed
from icl_sim.config import SHORTCUTS, TrainConfig, typed_fields
from icl_sim.evaluation import evaluate, write_table
from icl_sim.latent_probes import probe_latent
from icl_sim.memory import available_bytes, check_fits, training_bytes
from icl_sim.models import MODELS
from icl_sim.params import parameter_table, parse_parameters, typed_parameters
from icl_sim.plots import plot_bars, plot_error_curves, plot_heatmap
from icl_sim.probing import probe
from icl_sim.run_io import load_config, load_run
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASKS, make_task
from icl_sim.theory import gd_lsa_weights, optimal_preconditioner
from icl_sim.theory.step_tuning import STEP_FAMILIES, tuning_seconds
from icl_sim.training import resolve_device
from icl_sim.validation import check_choice, check_float
from icl_sim.weight_comparison import compare_to_construction, effective_layer_maps

TRIVIAL = "Zero"
PRECONDITIONERS = ("identity", "optimal")
#: the looped models' parameters that ``icl-sim train`` sets with --loops / --loop-window
LOOP_PARAMETERS = ("loops", "loop_window")
#: copies of its float64 prompts that a probe holds at once, at least (prompts, layer states, outputs, fits)
PROBE_COPIES = 4


def train_config(values: Mapping[str, Any] | None = None, *, task_params: Iterable[str] = (),
                 model_params: Iterable[str] = (), dim: int | None = None, points: int | None = None,
                 layers: int | None = None, loops: int | None = None, loop_window: int | None = None) -> TrainConfig:
    """The TrainConfig of ``icl-sim train``: TrainConfig fields ``values``, then overrides, validated.

    Precedence, lowest first: TrainConfig's defaults, except ``loss_on``, which defaults to the
    model's ``default_loss_on``; ``values`` (e.g. :func:`icl_sim.config.read_config_file`'s, with
    the command line's fields over them, or a sweep's run), whose :data:`~icl_sim.config.SHORTCUTS`
    set parameters as the keyword shortcuts do; ``task_params`` / ``model_params`` as ``KEY=VALUE``
    text, merged key by key into ``values``' parameters; last the shortcuts ``dim`` and ``points``
    (the task's dimension parameter, whatever the family calls it, and its length), ``layers`` (the
    model's depth parameter) and ``loops``, ``loop_window`` (looped models only).  Two settings of
    one level that set the same parameter (``dim`` and ``task_params`` ``dim=...``; ``layers`` and
    ``loops`` of a looped model), be it ``values``' own or the keyword arguments', are an error, not a
    silent choice.  The task and model parameters, the curricula and the memory training needs
    (:func:`check_training_fits`) are checked here, before a run directory is made.
    """
    values = typed_fields(values or {})
    own_shortcuts = {name: values.pop(name) for name in SHORTCUTS if name in values}
    defaults = TrainConfig()
    task, model = values.get("task", defaults.task), values.get("model", defaults.model)
    task_class = TASKS.get(task) if isinstance(task, str) else None
    if task_class is None:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    if not isinstance(model, str) or model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    model_class = MODELS[model]
    merged = {"task": typed_parameters(task_class, values.get("task_params", {})),
              "model": typed_parameters(model_class.Config, values.get("model_params", {}))}
    targets = _shortcut_targets(task, task_class, model, model_class)
    _set_by_shortcuts(own_shortcuts, targets, merged, explicit={kind: dict(merged[kind]) for kind in merged})
    given = {"task": parse_parameters(task_class, task_params),
             "model": parse_parameters(model_class.Config, model_params)}
    for kind in merged:
        merged[kind].update(given[kind])
    shortcuts = {"dim": dim, "points": points, "layers": layers, "loops": loops, "loop_window": loop_window}
    _set_by_shortcuts(shortcuts, targets, merged, explicit=given)
    task_values, model_values = merged["task"], merged["model"]
    task_instance = make_task(task, **task_values)
    model_class.Config(**model_values)
    values.setdefault("loss_on", model_class.default_loss_on)
    config = TrainConfig(**{**values, "task_params": task_values, "model_params": model_values})
    check_curricula(config, task_instance)
    check_training_fits(config, task_instance)
    return config


def _shortcut_targets(task: str, task_class, model: str, model_class) -> dict[str, tuple[str, str]]:
    """Each shortcut -> the (task or model, parameter) it sets; one that does not apply -> the error it raises."""
    task_parameters = {name for name, *_ in parameter_table(task_class)}
    model_parameters = {name for name, *_ in parameter_table(model_class.Config)}
    targets = {"dim": ("task", task_class.dim_parameter), "points": ("task", "points"),
               "layers": ("model", model_class.depth_parameter)}
    targets.update({name: ("model", name) for name in LOOP_PARAMETERS})
    for shortcut, (kind, name) in targets.items():
        if kind == "task" and name not in task_parameters:
            targets[shortcut] = ValueError(f"{shortcut} does not apply to task {task!r}, which has no parameter "
                                           f"{name!r} (its parameters: {', '.join(sorted(task_parameters))})")
        elif shortcut in LOOP_PARAMETERS and name not in model_parameters:
            targets[shortcut] = ValueError(f"{name} applies to looped models only, not to {model!r}")
        elif kind == "model" and name not in model_parameters:
            targets[shortcut] = ValueError(f"{shortcut} does not apply to model {model!r}, whose {name} is fixed "
                                           f"(its parameters: {', '.join(sorted(model_parameters))})")
    return targets


def _set_by_shortcuts(shortcuts: Mapping[str, Any], targets: Mapping, merged: dict, explicit: Mapping) -> None:
    """Set the parameter of every shortcut given (not None) in ``merged``; one that ``explicit``'s parameters or
    another of ``shortcuts`` sets too is an error."""
    set_by: dict[tuple[str, str], str] = {}  # (task or model, parameter) -> the shortcut that set it
    for shortcut, value in shortcuts.items():
        if value is None:
            continue
        if isinstance(targets[shortcut], ValueError):
            raise targets[shortcut]
        kind, name = targets[shortcut]
        if name in explicit[kind] or (kind, name) in set_by:
            other = set_by.get((kind, name), f"{kind}_params {name}={explicit[kind].get(name)}")
            raise ValueError(f"{shortcut}={value} and {other} both set the {kind} parameter {name!r}; give it once")
        set_by[kind, name] = f"{shortcut}={value}"
        merged[kind][name] = value


def check_curricula(config: TrainConfig, task) -> None:
    """Refuse a curriculum that starts above the task's dimension or length: capped there from its first step,
    it would never change the batches, so it would do nothing."""
    for name, curriculum, size, value in (("curriculum_dims", config.curriculum_dims, "dim", task.dim),
                                          ("curriculum_points", config.curriculum_points, "points", task.points)):
        if curriculum is not None and curriculum.start > value:
            raise ValueError(f"{name} starts at {curriculum.start}, above the task's {size} ({value}), so it would "
                             f"do nothing; start it at most at {value}, or raise {size}")


#: training work (FLOP) past which ``train`` says how long it will take: about 20 minutes at 1 TFLOP/s
LARGE_TRAINING_FLOP = 1e15


def config_warnings(config: TrainConfig) -> list[str]:
    """What in ``config`` is legal but probably not meant: a warm-up longer than the run, a
    prompt with no in-context example (the query alone), and a run so long that its time should be
    known before it starts."""
    task = make_task(config.task, **config.task_params)
    warnings = []
    flop = training_flop(config, task)
    if flop > LARGE_TRAINING_FLOP:
        warnings.append(f"training this config is about {flop:.1e} FLOP (6 × parameters × tokens × steps): about "
                        f"{flop / 1e12 / 3600:.3g} hours at 1 TFLOP/s (a fast CPU; one GPU is ~10-100 times "
                        f"faster); lower --steps or the sizes if that is not meant")
    if config.warmup_steps > config.steps:
        warnings.append(f"warmup_steps={config.warmup_steps} is longer than the run (steps={config.steps}): "
                        f"the learning rate never reaches lr; lower warmup_steps")
    if task.points == 1:
        warnings.append("points=1: every prompt is its query alone, with no in-context example; use points >= 2")
    return warnings


def training_memory(config: TrainConfig, task=None) -> int:
    """Estimated peak memory of training ``config`` (:func:`icl_sim.memory.training_bytes`), from the model's
    parameter count and activations, without building the model; ``task`` is ``config``'s, if made already."""
    model_class, sizes = _model_sizes(config, task)
    return training_bytes(model_class.parameter_count(*sizes), model_class.activation_floats(*sizes),
                          config.batch_size)


def training_flop(config: TrainConfig, task=None) -> float:
    """The work of training ``config``, by the dense-layer rule: 6 FLOP per parameter per token (forward 2,
    backward 4), over batch × points tokens per step: an estimate, without building the model."""
    model_class, sizes = _model_sizes(config, task)
    _, points, *_ = sizes
    return 6.0 * model_class.parameter_count(*sizes) * config.batch_size * points * config.steps


def _model_sizes(config: TrainConfig, task=None) -> tuple[type, tuple]:
    """``config``'s model class and the sizes it is built from, (dim, points, model config, target_dim), without
    building it; ``task`` is ``config``'s, if made already."""
    task = task if task is not None else make_task(config.task, **config.task_params)
    model_class = MODELS[config.model]
    return model_class, (task.dim, task.points, model_class.Config(**config.model_params), task.target_dim)


def check_training_fits(config: TrainConfig, task=None) -> None:
    """Refuse ``config`` with a ``ValueError`` if training it needs more memory than is available (estimated by
    :func:`training_memory`), naming the setting that makes it large (:func:`_largest_setting`)."""
    needed = training_memory(config, task)
    if needed > (available_bytes() or math.inf):
        check_fits(*_largest_setting(config), needed)


def _largest_setting(config: TrainConfig) -> tuple[str, int]:
    """The size (batch_size, or an integer task or model parameter) whose default lowers ``config``'s
    :func:`training_memory` the most, and its value: the setting to lower."""
    model_class = MODELS[config.model]
    candidates = {("batch_size", config.batch_size): {"batch_size": TrainConfig().batch_size}}
    for field_name, parameters_class in (("task_params", TASKS[config.task]), ("model_params", model_class.Config)):
        parameters = getattr(config, field_name)
        for name, _, default, _ in parameter_table(parameters_class):
            value = parameters.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and isinstance(default, int) and value > default:
                candidates[name, value] = {field_name: {**parameters, name: default}}
    estimates = {}
    for setting, change in candidates.items():
        try:
            estimates[setting] = training_memory(dataclasses.replace(config, **change))
        except ValueError:  # the default does not fit the other settings (e.g. n_embd not divisible by n_head)
            continue
    return min(estimates, key=estimates.get, default=("batch_size", config.batch_size))


def evaluate_run(run_dir, *, num_prompts: int = 1280, seed: int = 0, device: str = "auto", out_dir=None,
                 progress: bool = False, checkpoint_format: str = "icl-sim",
                 step: int | None = None) -> tuple[list[dict], dict[str, Path]]:
    """Compare the run's model (or its snapshot of ``step``) with the task's baselines; write results.csv/json and
    error_curve.png."""
    device = resolve_device(device)
    model, task, model_name = run_model_and_task(run_dir, device, checkpoint_format, step)
    predictors = {f"{model_name} (trained)": model, **task.baselines()}
    records = evaluate(predictors, task, num_prompts=num_prompts, seed=seed, device=device, progress=progress)
    out_dir = output_folder(run_dir, out_dir, "eval", step)
    with removed_if_failed(out_dir):  # a full disk leaves no empty folder
        csv_path, json_path = write_table(records, out_dir)
        title = f"{model_name} on {task.name} (d={task.dim})"
        if task.evaluated_positions == "last":
            figure = plot_bars(records, out_dir / "error_curve.png", title=title)
        else:
            plotted = [r for r in records if r["predictor"] != TRIVIAL and r["slice"] == "all"]
            trivial = getattr(task, "trivial_error", None)
            figure = plot_error_curves(plotted, out_dir / "error_curve.png", title=title,
                                       trivial_level=trivial() if trivial is not None else None)
    return records, {"csv": csv_path, "json": json_path, "figure": figure}


#: the run directories ``eval`` and ``probe`` read: icl-sim's own, or Garg et al.'s (their released models)
CHECKPOINT_FORMATS = ("icl-sim", "garg")


def run_model_and_task(run_dir, device, checkpoint_format: str = "icl-sim", step: int | None = None):
    """The trained model of ``run_dir`` (a Predictor; with ``step``, its snapshot of that step), its task, and the
    model's name, for a run directory in ``checkpoint_format`` (:data:`CHECKPOINT_FORMATS`)."""
    check_choice("checkpoint_format", checkpoint_format, CHECKPOINT_FORMATS)
    if checkpoint_format == "garg":
        if step is not None:
            raise ValueError("step: Garg et al.'s run directories keep one state.pt, no snapshots")
        from icl_sim.models.hf_gpt2 import garg_task, load_garg_checkpoint

        return load_garg_checkpoint(run_dir, device), garg_task(run_dir), "gpt (Garg et al.'s checkpoint)"
    config = load_config(run_dir)
    name = config.model if step is None else f"{config.model} at step {step}"
    return load_run(run_dir, device, step=step), make_task(config.task, **config.task_params), name


def output_folder(run_dir, out_dir, kind: str, step: int | None) -> Path:
    """Where a command's outputs go: ``out_dir`` if given, else ``RUN_DIR/KIND``, or ``RUN_DIR/KIND-step-K`` for a
    snapshot's, so that the outputs of different steps never overwrite each other."""
    if out_dir is not None:
        return Path(out_dir)
    return Path(run_dir) / (kind if step is None else f"{kind}-step-{step}")


def final_position_summary(records: list[dict]) -> list[str]:
    """One line per predictor and slice: its mean metric at the last position with the interval."""
    last = max(record["position"] for record in records)
    return [f"{r['predictor']:<20} {r['slice']:<10} {r['mean']:.4f}  [{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
            for r in records if r["position"] == last]


def probe_run(run_dir, algorithm: str, *, step_params: str = "shared", steps: int | None = None,
              num_prompts: int = 1024, seed: int = 0, device: str = "auto", readout: str = "direct",
              out_dir=None, progress: bool = False, checkpoint_format: str = "icl-sim",
              step: int | None = None) -> tuple[dict, dict[str, Path]]:
    """:func:`icl_sim.probing.probe` of the run's model on its task, written as a table and a heatmap.

    Writes ``NAME.{csv,json}`` (the records) and ``NAME.png`` (layer × step residual cosine) to
    ``out_dir`` (default ``RUN_DIR/probe``), NAME being ``algorithm``, then ``-per-step`` for per-step
    parameters and ``-fitted`` for the fitted read-out, so no two settings overwrite each other;
    returns probe's result and the paths (``csv``, ``json``, ``figure``).  Per-step parameters are tuned one step
    count after another (:func:`icl_sim.theory.step_tuning.tuning_seconds`: quadratic in the steps): a tuning
    priced over ``PRICE_WARNING_SECONDS`` is one ``Warning:`` line, with its estimate, before the work starts.
    """
    device = resolve_device(device)
    model, task, model_name = run_model_and_task(run_dir, device, checkpoint_format, step)
    check_prompts_fit(task, "num_prompts", num_prompts, prompt_sets=2)  # tuning and probe prompts
    if step_params == "per-step" and algorithm in STEP_FAMILIES:
        count = steps or _layer_count(model, task)
        seconds = tuning_seconds(algorithm, count, num_prompts)
        if seconds > PRICE_WARNING_SECONDS:
            tqdm.write(f"Warning: tuning {count} per-step {algorithm} steps on {num_prompts} prompts takes about "
                       f"{seconds / 60:.0f} CPU minutes (quadratic in --steps); lower --steps or --num-prompts",
                       file=sys.stderr)
    result = probe(model, task, algorithm, steps=steps, step_params=step_params,
                   num_prompts=num_prompts, seed=seed, device=device, readout=readout, progress=progress)
    out_dir = output_folder(run_dir, out_dir, "probe", step)
    name = "-".join([algorithm] + [step_params] * (step_params != "shared") + [readout] * (readout != "direct"))
    with removed_if_failed(out_dir):  # a full disk leaves no empty folder
        csv_path, json_path = write_table(result["records"], out_dir, name)
        cosines = residual_cosines(result["records"])
        layers, steps = (sorted(set(index)) for index in zip(*cosines))
        figure = plot_heatmap([[cosines[layer, step] for step in steps] for layer in layers], out_dir / f"{name}.png",
                              rows=layers, columns=steps, xlabel=f"{algorithm} step ({step_params} step parameters)",
                              ylabel="layer", colorbar="residual cosine", title=f"{model_name} vs {algorithm}")
    return result, {"csv": csv_path, "json": json_path, "figure": figure}


#: a probe whose step tuning is estimated to take longer than this many CPU seconds says so before it starts
PRICE_WARNING_SECONDS = 60.0


def _layer_count(model, task) -> int:
    """How many layers (or loops) ``model`` reads out: one prompt of ``task`` through it."""
    prompt = task.sample(1, make_generator(0, "eval"), dtype=next(model.parameters()).dtype)
    device = next(model.parameters()).device
    with torch.no_grad():
        return len(model.layer_predictions(prompt.xs.to(device), prompt.ys.to(device)))


def check_prompts_fit(task, name: str, count: int, prompt_sets: int = 1) -> None:
    """Refuse ``prompt_sets`` × ``count`` prompts of ``task`` (argument ``name``) when :data:`PROBE_COPIES` copies of
    them in float64 exceed the available memory: a lower estimate, so work that cannot fit stops before it starts."""
    check_fits(name, count, PROBE_COPIES * prompt_sets * count * 8 * task.points * (task.dim + task.target_dim))


def residual_cosines(records: Iterable[Mapping]) -> dict[tuple[int, int], float]:
    """(layer, step) -> residual cosine, from probe records."""
    return {(r["layer"], r["step"]): r["value"] for r in records if r["metric"] == "residual_cosine"}


def probe_latent_run(run_dir, target: str, *, probes=("linear",), control: str = "permuted", num_fit: int = 2048,
                     num_prompts: int = 1024, ridge: float = 1e-3, seed: int = 0, device: str = "auto",
                     out_dir=None, progress: bool = False, checkpoint_format: str = "icl-sim",
                     step: int | None = None) -> tuple[list[dict], dict[str, Path]]:
    """:func:`icl_sim.latent_probes.probe_latent` of the run's model (``checkpoint_format`` and ``step`` as in
    :func:`probe_run`), written as a table and a heatmap.

    Writes ``NAME.{csv,json}`` and ``NAME.png`` (held-out R² by layer and probe) to ``out_dir``
    (default ``RUN_DIR/probe``, or ``RUN_DIR/probe-step-K`` for snapshot K), NAME being ``latent-TARGET``, then the probe kinds other than the default
    linear one alone (``-mlp``, ``-linear-mlp``), then ``-query-projection`` for that control; returns the
    records and the paths (``csv``, ``json``, ``figure``).
    """
    device = resolve_device(device)
    model, task, model_name = run_model_and_task(run_dir, device, checkpoint_format, step)
    for name, count in (("num_fit", num_fit), ("num_prompts", num_prompts)):
        check_prompts_fit(task, name, count)
    records = probe_latent(model, task, target, probes=probes, control=control, num_fit=num_fit,
                           num_prompts=num_prompts, ridge=ridge, seed=seed, device=device, progress=progress)
    out_dir = output_folder(run_dir, out_dir, "probe", step)
    kinds = "" if tuple(probes) == ("linear",) else "-" + "-".join(probes)
    name = f"latent-{target}{kinds}" + (f"-{control}" if control != "permuted" else "")
    with removed_if_failed(out_dir):  # a full disk leaves no empty folder
        csv_path, json_path = write_table(records, out_dir, name)
        r2 = {(r["layer"], r["probe"]): r["value"] for r in records if r["metric"] == "r2"}
        figure = _layer_heatmap(r2, out_dir / f"{name}.png", xlabel="probe", colorbar="held-out R²",
                                title=f"{model_name}: probes for {target}")
    return records, {"csv": csv_path, "json": json_path, "figure": figure}


def compare_weights_run(run_dir, lr: float = 1.0, preconditioner: str = "identity",
                        out_dir=None) -> tuple[list[dict], dict[str, Path]]:
    """Each layer of the run's linear-attention model against a step of the GD construction (von Oswald et al.).

    ``lr`` > 0 is the construction's step; ``preconditioner``: ``identity``, or ``optimal``, the
    optimal one-layer Γ* (Ahn et al.) for the task's mean covariance over 4096 prompts drawn from
    the run's evaluation seed.  Writes :func:`icl_sim.weight_comparison.compare_to_construction`'s
    records as ``PRECONDITIONER-lrLR.{csv,json}`` and a heatmap (cosine by layer and map) ``.png``
    to ``out_dir`` (default ``RUN_DIR/compare-weights``); returns the records and the paths.
    """
    check_float("lr", lr, 0.0, strict=True)
    check_choice("preconditioner", preconditioner, PRECONDITIONERS)
    config = load_config(run_dir)
    task = make_task(config.task, **config.task_params)
    if "gd" not in task.probe_algorithms:  # as probe refuses it: the construction is GD's on this task's prompts
        raise ValueError(f"compare-weights compares with the GD construction, which task {config.task!r} has no "
                         f"algorithm for (its probe algorithms: {', '.join(task.probe_algorithms) or 'none'})")
    model = load_run(run_dir, "cpu")
    layers = len(effective_layer_maps(model))
    if model.target_dim != 1:
        raise ValueError(f"compare-weights needs scalar labels (the GD construction); target_dim={model.target_dim}")
    matrix = None
    if preconditioner == "optimal":
        prompt = task.sample(4096, make_generator(config.seed, "eval", 0), dtype=torch.float64)
        if "covariance" not in prompt.latent:
            raise ValueError(f"preconditioner 'optimal' needs a task with a covariance, not {config.task!r}")
        matrix = optimal_preconditioner(prompt.latent["covariance"].mean(dim=0), prompt.points - 1)
    records = compare_to_construction(model, gd_lsa_weights(model.dim, layers, lr, matrix))
    out_dir = Path(out_dir) if out_dir is not None else Path(run_dir) / "compare-weights"
    name = f"{preconditioner}-lr{lr:g}"
    with removed_if_failed(out_dir):  # a full disk leaves no empty folder
        csv_path, json_path = write_table(records, out_dir, name)
        cosines = {(r["layer"], r["map"]): r["cosine"] for r in records}
        figure = _layer_heatmap(cosines, out_dir / f"{name}.png", xlabel="map", colorbar="cosine with the construction",
                                title=f"{config.model} vs GD (lr {lr:g}, {preconditioner} preconditioner)")
    return records, {"csv": csv_path, "json": json_path, "figure": figure}


def _layer_heatmap(cells: Mapping[tuple[int, str], float], path, *, xlabel: str, colorbar: str, title: str) -> Path:
    """A layer × column heatmap of ``cells[layer, column]``, rows and columns in their first order."""
    layers, columns = (list(dict.fromkeys(index)) for index in zip(*cells))
    return plot_heatmap([[cells[layer, column] for column in columns] for layer in layers], path, rows=layers,
                        columns=columns, xlabel=xlabel, ylabel="layer", colorbar=colorbar, title=title)
