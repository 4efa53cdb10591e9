"""Figures from evaluation records (seaborn style, Agg canvas, atomic writes)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from icl_sim.atomic import atomic_path

FORMATS = (".png", ".pdf")


def plot_error_curves(records: Sequence[Mapping], path, *, title: str | None = None,
                      trivial_level: float | None = None, ylabel: str | None = None) -> Path:
    """Mean metric vs number of in-context examples, one line and bootstrap band per predictor.

    ``records`` are ``icl_sim.evaluation.evaluate`` records of a single metric; the
    y label defaults to that metric's label.  ``trivial_level`` adds Garg et al.'s
    dashed "trivial (predict 0)" line.  Written atomically as PNG or PDF by suffix.
    """
    import seaborn as sns
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from icl_sim.evaluation import METRICS

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"path must end in one of {', '.join(FORMATS)}, got {str(path)!r}")
    if not records:
        raise ValueError("records must not be empty")
    metrics = {record["metric"] for record in records}
    if len(metrics) != 1:
        raise ValueError(f"records must hold a single metric, got {sorted(metrics)}")
    metric = metrics.pop()
    if ylabel is None:
        ylabel = METRICS[metric].label if metric in METRICS else metric

    curves: dict[str, list[Mapping]] = {}
    for record in records:
        curves.setdefault(record["predictor"], []).append(record)

    with sns.axes_style("whitegrid"), sns.plotting_context("paper"):
        figure = Figure(figsize=(5.5, 3.8), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        for color, (name, rows) in zip(sns.color_palette(n_colors=len(curves)), curves.items()):
            rows = sorted(rows, key=lambda row: row["position"])
            positions = [row["position"] for row in rows]
            axes.plot(positions, [row["mean"] for row in rows], color=color, label=name)
            axes.fill_between(positions, [row["ci_low"] for row in rows], [row["ci_high"] for row in rows],
                              color=color, alpha=0.2, linewidth=0)
        if trivial_level is not None:
            axes.axhline(trivial_level, color="0.4", linestyle="--", linewidth=1, label="trivial (predict 0)")
        axes.set_xlabel("in-context examples")
        axes.set_ylabel(ylabel)
        if title is not None:
            axes.set_title(title)
        axes.legend(frameon=False)
        with atomic_path(path) as temporary:
            figure.savefig(temporary, format=path.suffix.lower()[1:], dpi=150)
    return path
