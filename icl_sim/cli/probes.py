"""``icl-sim probe``, ``probe-latent`` and ``compare-weights``: what a trained run's layers compute."""
from __future__ import annotations

import json

import click

from icl_sim.cli import choices
from icl_sim.cli.given_once import option
from icl_sim.cli.options import (checkpoint_format_option, device_option, json_option, progress_option,
                                 run_dir_argument, seed_option, step_option)

#: the most steps a probe takes: a model's layers match within the first few tens
MAX_STEPS = 1000


@click.command("probe")
@run_dir_argument
@option("--algorithm", required=True,
        help="gd, preconditioned-gd, gd-plus-plus, newton, ridge, power-method: one the run's task declares "
             "(see `icl-sim tasks`)")
@option("--step-params", type=click.Choice(choices.STEP_PARAMS), default="shared", show_default=True,
        help="shared: one hyper-parameter setting for all steps; per-step: each step its own, tuned on the "
             "task's risk (von Oswald et al.), for gd, preconditioned-gd, gd-plus-plus")
@option("--steps", type=click.IntRange(min=1, max=MAX_STEPS), default=None,
        help="algorithm steps 1..K  [default: 10 shared, the number of layers per-step]")
@option("--num-prompts", type=click.IntRange(min=2), default=1024, show_default=True)
@seed_option
@device_option
@option("--readout", type=click.Choice(choices.READOUTS), default="direct", show_default=True,
        help="direct: the model's own read-out after each layer; fitted: a linear read-out of each layer's "
             "hidden state fitted on held-out prompts (Fu et al.)")
@option("--json", "as_json", is_flag=True, help="print one JSON object {records, best, parameters}")
@checkpoint_format_option
@step_option
@progress_option
def probe_command(run_dir, algorithm, step_params, steps, num_prompts, seed, device, readout, as_json,
                  checkpoint_format, step, progress):
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
    ALGORITHM, then -per-step for per-step parameters and -fitted for the fitted read-out.
    """
    from icl_sim.reports import probe_run, residual_cosines

    result, paths = probe_run(run_dir, algorithm, step_params=step_params, steps=steps, num_prompts=num_prompts,
                              seed=seed, device=device, readout=readout, progress=progress,
                              checkpoint_format=checkpoint_format, step=step)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    cosines = residual_cosines(result["records"])
    click.echo(f"{algorithm} ({step_params} step parameters): {_rounded(result['parameters'])}")
    for layer, step in result["best"].items():
        click.echo(f"layer {layer}: closest to {algorithm} step {step} (residual cosine {cosines[layer, step]:.4f})")
    click.echo(f"table and heatmap in {paths['figure'].parent}")


def _rounded(value):
    """Floats to 4 significant digits, inside lists and dicts too, for printing."""
    if isinstance(value, dict):
        return {name: _rounded(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return float(f"{value:.4g}") if isinstance(value, float) else value


@click.command("probe-latent")
@run_dir_argument
@option("--latent", "--target", "target", required=True,
        help="w, xty ((1/n) Σ y_j x_j of the context) or any latent key of the task's prompts")
@option("--probe", "probes", type=click.Choice(choices.LATENT_PROBES), multiple=True, default=["linear"],
        show_default=True, help="probe kind (repeatable)")
@option("--control", type=click.Choice(choices.LATENT_CONTROLS), default="permuted",
        show_default=True, help="control task: targets of permuted prompts, or a random projection of x_query")
@option("--num-fit", type=click.IntRange(min=2), default=2048, show_default=True, help="prompts to fit on")
@option("--num-prompts", type=click.IntRange(min=2), default=1024, show_default=True, help="held-out prompts")
@option("--ridge", type=click.FloatRange(min=0), default=1e-3, show_default=True,
        help="relative ridge of the linear probe")
@seed_option
@device_option
@json_option
@checkpoint_format_option
@step_option
@progress_option
def probe_latent_command(run_dir, target, probes, control, num_fit, num_prompts, ridge, seed, device, as_json,
                         checkpoint_format, step, progress):
    """Probe every layer's state at the final query for a latent (Akyürek et al.; Hewitt & Liang controls).

    Writes RUN_DIR/probe/latent-TARGET.{csv,json,png} (probe-step-K/ for --step K), the name extended by the probe kinds unless the
    linear one alone (latent-TARGET-mlp, latent-TARGET-linear-mlp) and by -query-projection for that control:
    held-out r2, control_r2, selectivity, fit_r2, control_fit_r2; the figure: held-out R² by layer and probe.
    """
    from icl_sim.reports import probe_latent_run

    records, paths = probe_latent_run(run_dir, target, probes=probes, control=control, num_fit=num_fit,
                                      num_prompts=num_prompts, ridge=ridge, seed=seed, device=device,
                                      progress=progress, checkpoint_format=checkpoint_format, step=step)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    values = {(r["layer"], r["probe"], r["metric"]): r["value"] for r in records}
    for layer, probe_name, _ in sorted(key for key in values if key[2] == "r2"):
        click.echo(f"layer {layer} {probe_name}: R² {values[layer, probe_name, 'r2']:.4f}, "
                   f"control ({control}) {values[layer, probe_name, 'control_r2']:.4f}, "
                   f"selectivity {values[layer, probe_name, 'selectivity']:.4f}")
    click.echo(f"table and figure in {paths['csv'].parent}")


@click.command("compare-weights")
@run_dir_argument
@option("--lr", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
        help="step of the GD construction (> 0); the scale column reads as the learned step relative to it")
@option("--preconditioner", type=click.Choice(choices.PRECONDITIONERS), default="identity", show_default=True,
        help="A of the construction: I, or the optimal one-layer Γ* (Ahn et al.) for the task's mean covariance")
@json_option
def compare_weights_command(run_dir, lr, preconditioner, as_json):
    """Compare each layer of a trained linear-attention run (lsa) with a step of (preconditioned) GD, one per layer.

    Per layer and effective map (full, label, label_feature; see icl_sim.weight_comparison), invariant to
    P -> cP, Q -> Q/c and head permutations: cosine with the construction, best scale, relative residual,
    fraction of the squared norm on the construction's non-zero entries.  Writes
    RUN_DIR/compare-weights/PRECONDITIONER-lrLR.{csv,json,png} (the figure: cosine by layer and map).
    """
    from icl_sim.reports import compare_weights_run

    records, paths = compare_weights_run(run_dir, lr, preconditioner)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    click.echo(f"{'layer':>5} {'map':<14} {'cosine':>8} {'scale':>9} {'residual':>9} {'support':>8}")
    for r in records:
        click.echo(f"{r['layer']:>5} {r['map']:<14} {r['cosine']:>8.4f} {r['scale']:>9.4g} "
                   f"{r['relative_residual']:>9.4f} {r['support_fraction']:>8.4f}")
    click.echo(f"table and figure in {paths['csv'].parent}")
