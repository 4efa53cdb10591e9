"""Evaluate a trained run against its task's baselines: one table and one figure in ``RUN_DIR/eval``."""
from __future__ import annotations

from pathlib import Path

from icl_sim.evaluation import evaluate, write_table
from icl_sim.plots import plot_bars, plot_error_curves
from icl_sim.run_io import load_config, load_run
from icl_sim.tasks import make_task
from icl_sim.training import resolve_device

TRIVIAL = "Zero"


def evaluate_run(run_dir, *, num_prompts: int = 1280, seed: int = 0, device: str = "auto",
                 out_dir=None) -> tuple[list[dict], dict[str, Path]]:
    """Compare the run's model with the task's baselines; write results.csv/json and error_curve.png."""
    config = load_config(run_dir)
    device = resolve_device(device)
    task = make_task(config.task, **config.task_params)
    model = load_run(run_dir, device)
    predictors = {f"{config.model} (trained)": model, **task.baselines()}
    records = evaluate(predictors, task, num_prompts=num_prompts, seed=seed, device=device)
    out_dir = Path(out_dir) if out_dir is not None else Path(run_dir) / "eval"
    csv_path, json_path = write_table(records, out_dir)
    title = f"{config.model} on {config.task} (d={task.dim})"
    if task.evaluated_positions == "last":
        figure = plot_bars(records, out_dir / "error_curve.png", title=title)
    else:
        plotted = [r for r in records if r["predictor"] != TRIVIAL and r["slice"] == "all"]
        trivial = getattr(task, "trivial_error", None)
        figure = plot_error_curves(plotted, out_dir / "error_curve.png", title=title,
                                   trivial_level=trivial() if trivial is not None else None)
    return records, {"csv": csv_path, "json": json_path, "figure": figure}


def final_position_summary(records: list[dict]) -> list[str]:
    """One line per predictor and slice: its mean metric at the last position with the interval."""
    last = max(record["position"] for record in records)
    return [f"{r['predictor']:<20} {r['slice']:<10} {r['mean']:.4f}  [{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
            for r in records if r["position"] == last]
