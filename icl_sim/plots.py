"""Figures from evaluation records (seaborn style, Agg canvas, atomic writes)."""
from __future__ import annotations

import contextlib
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from icl_sim.atomic import atomic_path
from icl_sim.evaluation import METRICS

FORMATS = (".png", ".pdf")
#: panels to a row; more wrap onto further rows
MAX_COLUMNS = 4


#: how far above the trivial level an error curve's y axis goes (``plot_error_curves``)
CLIP_ABOVE_TRIVIAL = 3.0


def plot_error_curves(records: Sequence[Mapping], path, *, title: str | None = None,
                      trivial_level: float | None = None, ylabel: str | None = None) -> Path:
    """Mean metric vs number of in-context examples, one line and bootstrap band per predictor.

    ``records`` are ``icl_sim.evaluation.evaluate`` records of a single metric; the
    y label defaults to that metric's label.  ``trivial_level`` adds Garg et al.'s
    dashed "trivial (predict 0)" line, and the y axis stops at ``CLIP_ABOVE_TRIVIAL`` times it, the
    curves that go higher (least squares near n = d) named with their peak, so that one position's
    error does not flatten the others.  Written atomically as PNG or PDF by suffix.
    """

    path = _check_path(path)
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

    with _figure(path, panels=1) as (axes,):
        for index, (color, (name, rows)) in enumerate(zip(_palette(len(curves)), curves.items())):
            rows = sorted(rows, key=lambda row: row["position"])
            positions = [row["position"] for row in rows]
            axes.plot(positions, [row["mean"] for row in rows], color=color, label=name)
            axes.fill_between(positions, [row["ci_low"] for row in rows], [row["ci_high"] for row in rows],
                              color=color, alpha=0.2, linewidth=0,
                              label="shaded: 95 % bootstrap interval" if index == 0 else None)
        if trivial_level is not None:
            axes.axhline(trivial_level, color="0.4", linestyle="--", linewidth=1, label="trivial (predict 0)")
            _clip_above(axes, curves, CLIP_ABOVE_TRIVIAL * trivial_level)
        axes.set_xlabel("in-context examples")
        axes.set_ylabel(ylabel)
        if title is not None:
            axes.set_title(title)
        axes.legend(frameon=False)
    return path


def _clip_above(axes, curves: Mapping[str, list[Mapping]], top: float) -> None:
    """Stop the y axis at ``top`` if a curve goes higher, and say which curves were cut and where they peak."""
    peaks = {name: max(rows, key=lambda row: row["mean"]) for name, rows in curves.items()}
    cut = {name: row for name, row in peaks.items() if row["mean"] > top}
    if not cut:
        return
    axes.set_ylim(top=top)
    note = "; ".join(f"{name} peaks at {row['mean']:.3g} ({row['position']} examples)" for name, row in cut.items())
    axes.text(0.99, 0.98, f"axis clipped: {note}", transform=axes.transAxes, ha="right", va="top", fontsize=7)


def plot_bars(records: Sequence[Mapping], path, *, title: str | None = None) -> Path:
    """Mean metric with its bootstrap interval per predictor, one bar group per slice of prompts.

    For tasks scored at their final query only, where a curve over positions has one point.
    """

    path = _check_path(path)
    if not records:
        raise ValueError("records must not be empty")
    metric = records[0]["metric"]
    slices = list(dict.fromkeys(record.get("slice", "all") for record in records))
    predictors = list(dict.fromkeys(record["predictor"] for record in records))
    width = 0.8 / len(slices)
    with _figure(path, panels=1) as (axes,):
        for offset, (color, slice_name) in enumerate(zip(_palette(len(slices)), slices)):
            rows = {r["predictor"]: r for r in records if r.get("slice", "all") == slice_name}
            xs = [index + offset * width for index, name in enumerate(predictors) if name in rows]
            shown = [rows[name] for name in predictors if name in rows]
            means = [row["mean"] for row in shown]
            errors = [[row["mean"] - row["ci_low"] for row in shown], [row["ci_high"] - row["mean"] for row in shown]]
            axes.bar(xs, means, width=width, color=color, yerr=errors, capsize=2, label=slice_name)
        axes.set_xticks([index + 0.4 - width / 2 for index in range(len(predictors))], predictors, rotation=20)
        axes.set_ylabel(METRICS[metric].label if metric in METRICS else metric)
        if title is not None:
            axes.set_title(title)
        axes.legend(frameon=False, title="prompts")
    return path


def plot_heatmap(values: Sequence[Sequence[float]], path, *, rows: Sequence, columns: Sequence, xlabel: str,
                 ylabel: str, colorbar: str, title: str | None = None) -> Path:
    """A rows × columns heatmap with its values written in the cells (e.g. layer × algorithm step)."""
    path = _check_path(path)
    with _figure(path, panels=1) as (axes,):
        _draw_heatmap(axes, Panel(xlabel, ylabel, [], title=title or "",
                                  heatmap=Heatmap(values, rows, columns, colorbar)))
    return path


@dataclass(frozen=True)
class Curve:
    """One line of a panel, with an optional 95 % band; a ``baseline`` is drawn dashed, above the models, so
    that one lying under a model's curve stays visible.  ``continuous=False``: x takes a few measured values
    (depths, layers, pool sizes): markers, joined only between measured points.  Curves of one ``color_key``
    share a colour (a model and its baseline at one setting); by default each label has its own.  ``joined=False``:
    markers alone, where a line between two measured x would pass values never measured (depths 1 and 4)."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    baseline: bool = False
    continuous: bool = True
    seeds: int | None = None
    color_key: str | None = None
    joined: bool = True

    @property
    def color(self) -> str:
        """The key this curve's colour is chosen by: its ``color_key``, else its label."""
        return self.color_key or self.label


def seed_curve(label: str, x: Sequence[float], per_seed: Sequence[Sequence[float]], *,
               bounds: tuple[float, float] | None = None, **options) -> Curve:
    """The mean over seeds of per-seed curves (``per_seed[k][i]``: seed k at ``x[i]``) with its 95 % Student-t
    interval as the band (none for a single seed), clipped to ``bounds`` where the quantity has a range (a cosine's
    [−1, 1], a probability's [0, 1]); ``options`` as for :class:`Curve`.  The figure's caption says over how many
    seeds (:func:`draw_figure`)."""
    import torch
    from scipy import stats

    values = torch.tensor([list(map(float, ys)) for ys in per_seed], dtype=torch.float64)
    if values.ndim != 2 or values.shape[1] != len(x):
        raise ValueError(f"per_seed must hold one curve of {len(x)} values per seed, got shape {tuple(values.shape)}")
    mean, seeds = values.mean(dim=0), values.shape[0]
    if seeds < 2:
        return Curve(label, list(x), mean.tolist(), seeds=seeds, **options)
    half = float(stats.t.ppf(0.975, seeds - 1)) * values.std(dim=0) / seeds ** 0.5
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = low.clamp(*bounds), high.clamp(*bounds)
    return Curve(label, list(x), mean.tolist(), low.tolist(), high.tolist(), seeds=seeds, **options)


def seeds_note(panels: Sequence["Panel"], trained: bool = True) -> str:
    """What the caption says of the curves drawn over seeds: their mean and 95 % interval over how many training
    seeds, or, for constructed (untrained) models, over how many seeds of the random instances they run on."""
    counts = sorted({curve.seeds for panel in panels for curve in panel.curves if curve.seeds})
    if not counts:
        return ""
    seeds = " or ".join(map(str, counts))
    plural = "s" if counts != [1] else ""
    what = (f"Trained models: the mean over {seeds} training seed{plural}" if trained else
            f"Constructed models: the mean over {seeds} seed{plural} of the random instances they run on")
    return what + (", shaded (or barred) its 95 % interval." if counts[-1] > 1 else ".")


@dataclass(frozen=True)
class Target:
    """An expected value where a check applies: a dotted line at ``value`` and the band the check accepts, over
    the x range ``where`` (lowest, highest x) the check's criterion covers (None: the whole axis)."""

    label: str
    value: float
    low: float
    high: float
    where: tuple[float, float] | None = None


@dataclass(frozen=True)
class Heatmap:
    """A grid of values, ``values[i][j]`` at row ``rows[i]`` and column ``columns[j]``, coloured by ``colorbar``."""

    values: Sequence[Sequence[float]]
    rows: Sequence
    columns: Sequence
    colorbar: str


@dataclass(frozen=True)
class Panel:
    """One axes of a reproduction figure, on the paper's scales (``"linear"`` or ``"log"``) and y range (``ylim``);
    a panel with a ``heatmap`` draws that grid (x: its columns, y: its rows) instead of curves.  ``xticks``, pairs
    (x, label), replaces the x axis's ticks: a point drawn in for a value off the axis (M = ∞) is named there."""

    xlabel: str
    ylabel: str
    curves: Sequence[Curve]
    targets: Sequence[Target] = ()
    title: str = ""
    xscale: str = "linear"
    yscale: str = "linear"
    ylim: tuple[float, float] | None = None
    heatmap: Heatmap | None = None
    xticks: Sequence[tuple[float, str]] = ()


def draw_figure(stem, panels: Sequence[Panel], caption: str, *, trained: bool = True) -> list[Path]:
    """The gallery's one figure style: ``stem``.png and ``stem``.pdf, panels side by side (``MAX_COLUMNS`` to a
    row), the caption below, which says what the curves over seeds are (``trained``: training seeds; else the
    seeds of a construction's random instances).

    Models are solid with their band, baselines dashed, each check's accepted band shaded; a label has one
    colour in every panel (:func:`colors_by_label`).
    """
    colors = colors_by_label(panels)
    caption = " ".join(filter(None, [caption, seeds_note(panels, trained)]))
    paths = []
    for suffix in FORMATS:
        path = Path(stem).with_suffix(suffix)
        with _figure(path, panels=len(panels)) as axes_list:
            for axes, panel in zip(axes_list, panels):
                _draw_panel(axes, panel, colors)
            width = 55 * min(len(panels), MAX_COLUMNS)
            axes_list[0].figure.supxlabel("\n".join(textwrap.wrap(caption, width)), fontsize=7)
        paths.append(path)
    return paths


def colors_by_label(panels: Sequence[Panel]) -> dict[str, tuple]:
    """One palette colour per curve colour key and target label of a figure, in order of first appearance over its
    panels, so that a predictor keeps its colour from panel to panel."""
    labels = dict.fromkeys([curve.color for panel in panels for curve in panel.curves]
                           + [target.label for panel in panels for target in panel.targets])
    return dict(zip(labels, _palette(len(labels))))


def _draw_panel(axes, panel: Panel, colors: Mapping[str, tuple]) -> None:
    if panel.heatmap is not None:
        _draw_heatmap(axes, panel)
        return
    for curve in panel.curves:
        _draw_curve(axes, curve, colors[curve.color])
    for target in panel.targets:
        _draw_target(axes, target, colors[target.label])
    axes.set_xscale(panel.xscale)
    axes.set_yscale(panel.yscale)
    _choose_ticks(axes, panel)
    axes.set_xlabel(panel.xlabel)
    axes.set_ylabel(panel.ylabel)
    if panel.title:
        axes.set_title(panel.title)
    if axes.get_legend_handles_labels()[0]:  # below the axes and their x label, where it covers no curve
        axes.legend(frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=2,
                    bbox_transform=_below_x_label(axes))


def _below_x_label(axes):
    """The axes' coordinates moved down past the x tick labels and the x label: a fixed distance in points
    (a fraction of the axes' height would reach into the label when a figure's axes are short)."""
    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties
    from matplotlib.transforms import offset_copy

    def points(size) -> float:
        return FontProperties(size=size).get_size_in_points()

    drop = (rcParams["xtick.major.size"] + rcParams["xtick.major.pad"] + points(rcParams["xtick.labelsize"])
            + rcParams["axes.labelpad"] + points(rcParams["axes.labelsize"]))
    return offset_copy(axes.transAxes, fig=axes.figure, y=-drop, units="points")


def _draw_curve(axes, curve: Curve, color) -> None:
    """A model solid with its band; a baseline dashed and on top; markers where x is discrete or short."""
    marked = not curve.continuous or len(curve.x) <= 12
    marker = ("x" if curve.baseline else "o") if marked else None
    linestyle = ("--" if curve.baseline else "-") if curve.joined else "none"
    axes.plot(curve.x, curve.y, color=color, label=curve.label, linestyle=linestyle,
              marker=marker, markersize=4 if curve.baseline else 3, zorder=3 if curve.baseline else 2)
    if curve.low is not None and curve.high is not None:
        if curve.continuous:
            axes.fill_between(curve.x, curve.low, curve.high, color=color, alpha=0.2, linewidth=0)
        else:  # an interval at each measured point, not a band between them
            axes.errorbar(curve.x, curve.y, yerr=[[y - low for y, low in zip(curve.y, curve.low)],
                                                  [high - y for y, high in zip(curve.y, curve.high)]],
                          color=color, linestyle="none", capsize=2, linewidth=1)


def _draw_target(axes, target: Target, color) -> None:
    """The expected value dotted and the accepted band shaded, over the x range the check covers."""
    if target.where is None:
        axes.axhline(target.value, color=color, linestyle=":", linewidth=1.2, label=target.label)
        axes.axhspan(target.low, target.high, color=color, alpha=0.12, linewidth=0)
        return
    xs = list(target.where)
    axes.plot(xs, [target.value] * 2, color=color, linestyle=":", linewidth=1.2, label=target.label)
    axes.fill_between(xs, [target.low] * 2, [target.high] * 2, color=color, alpha=0.12, linewidth=0)


def _draw_heatmap(axes, panel: Panel) -> None:
    import seaborn as sns

    grid = panel.heatmap
    sns.heatmap(grid.values, ax=axes, annot=len(grid.rows) * len(grid.columns) <= 150, fmt=".2f", cmap="viridis",
                xticklabels=list(grid.columns), yticklabels=list(grid.rows), cbar_kws={"label": grid.colorbar})
    axes.set_xlabel(panel.xlabel)
    axes.set_ylabel(panel.ylabel)
    if panel.title:
        axes.set_title(panel.title)


def _choose_ticks(axes, panel: Panel) -> None:
    """Integer ticks for an integer-valued linear axis; on a log axis the decades, or plain numbers within one."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

    ys = [y for curve in panel.curves for y in (*curve.y, *(curve.low or ()), *(curve.high or ()))]
    ys += [y for target in panel.targets for y in (target.value, target.low, target.high)]
    for axis, scale, values in ((axes.xaxis, panel.xscale, [x for curve in panel.curves for x in curve.x]),
                                (axes.yaxis, panel.yscale, ys)):
        if scale == "linear" and all(float(value).is_integer() for value in values):
            axis.set_major_locator(MaxNLocator(integer=True))  # layers, loops, rounds: no tick at 1.5
    if panel.ylim is not None:
        axes.set_ylim(*panel.ylim)
    elif panel.yscale == "log" and any(target.low <= 0 for target in panel.targets):
        # an accepted band down to 0 would draw a log axis down to the clip of 0 (1e-14): the data set its end
        positive = [y for y in ys if 0 < y < math.inf]
        axes.set_ylim(bottom=min(positive) / 2)
    for axis, scale, limits in ((axes.xaxis, panel.xscale, axes.get_xlim()),
                                (axes.yaxis, panel.yscale, axes.get_ylim())):
        if scale == "log":  # label the decades only (minor labels of a short log range overlap) ...
            axis.set_minor_formatter(NullFormatter())
            low, high = sorted(limits)
            if math.floor(math.log10(high)) - math.ceil(math.log10(low)) < 1:  # ... or plain numbers within a decade
                axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    if panel.xticks:  # after the log axis's own formatting, which it replaces
        axes.set_xticks([x for x, _ in panel.xticks], [label for _, label in panel.xticks])
        axes.xaxis.set_minor_locator(NullLocator())


def _check_path(path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"path must end in one of {', '.join(FORMATS)}, got {str(path)!r}")
    return path


def _palette(count: int) -> list:
    import seaborn as sns

    return sns.color_palette(n_colors=max(count, 1))


@contextlib.contextmanager
def _figure(path: Path, panels: int) -> Iterator[list]:
    """A seaborn-styled figure of ``panels`` axes on its own Agg canvas, saved atomically on exit."""
    import seaborn as sns
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with sns.axes_style("whitegrid"), sns.plotting_context("paper"):
        columns = min(panels, MAX_COLUMNS)
        rows = -(-panels // columns)
        figure = Figure(figsize=(5.5 if panels == 1 else 4.2 * columns, 3.8 * rows), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(rows, columns, squeeze=False).flatten().tolist()
        for unused in axes[panels:]:
            unused.set_axis_off()
        yield axes[:panels]
        with atomic_path(path) as temporary:
            form = path.suffix.lower()[1:]
            # no creation date in a PDF: a regenerated gallery differs from the last one only where a figure does
            figure.savefig(temporary, format=form, dpi=150, metadata={"CreationDate": None} if form == "pdf" else None)
