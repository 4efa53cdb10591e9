"""The gallery's figure style: panels wrap into rows, short log axes still carry numbers, a label keeps its
colour from panel to panel, curves over seeds carry their interval, bands cover only their range, legends cover
no data, baselines stay visible, heatmaps where a paper has one."""
import io

import matplotlib.image
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from scipy import stats

from icl_sim.plots import (MAX_COLUMNS, Curve, Heatmap, Panel, Target, _draw_panel, colors_by_label, draw_figure,
                           seed_curve, seeds_note)


def _panel(yscale="linear", y=(1.0, 2.0)):
    return Panel("x", "y", [Curve("c", [1, 2], list(y))], yscale=yscale)


def test_panels_beyond_a_row_wrap_onto_the_next(tmp_path):
    (one_row, _) = draw_figure(tmp_path / "one", [_panel()] * MAX_COLUMNS, "caption")
    (two_rows, _) = draw_figure(tmp_path / "two", [_panel()] * (MAX_COLUMNS + 2), "caption")
    height, width = matplotlib.image.imread(one_row).shape[:2]
    wrapped_height, wrapped_width = matplotlib.image.imread(two_rows).shape[:2]
    assert wrapped_width == width
    assert 1.8 * height < wrapped_height < 2.2 * height


def _drawn(panel):
    """Axes with ``panel`` drawn in the gallery's style."""
    axes = Figure().subplots()
    _draw_panel(axes, panel, colors_by_label([panel]))
    return axes


def _tick_labels(panel):
    axes = _drawn(panel)
    axes.figure.canvas.draw()
    low, high = axes.get_ylim()
    return [t.get_text() for t in axes.yaxis.get_ticklabels() if t.get_text() and low <= t.get_position()[1] <= high]


def _visible_ticks(curve, axis: str) -> list[float]:
    """The major tick positions within the limits of ``axis`` ("x" or "y") of a panel holding ``curve``."""
    axes = _drawn(Panel("x", "y", [curve]))
    low, high = getattr(axes, f"get_{axis}lim")()
    return [tick for tick in getattr(axes, f"get_{axis}ticks")() if low <= tick <= high]


def test_a_log_axis_within_one_decade_is_labelled_with_plain_numbers():
    labels = _tick_labels(_panel("log", (0.2, 0.37)))
    assert len(labels) >= 2
    assert all("10" not in label for label in labels)  # 0.2, 0.3, ... rather than 2 × 10⁻¹


def test_a_log_axis_over_decades_labels_the_decades_only():
    labels = _tick_labels(_panel("log", (1e-3, 10.0)))
    assert len(labels) >= 3
    assert all("10" in label for label in labels)


def test_a_label_has_one_colour_in_every_panel():
    """Least squares is the second curve of one panel and the first of the other: the same line colour in both."""
    first = Panel("k", "error", [Curve("Transformer", [1, 2], [1.0, 0.5]), Curve("Least squares", [1, 2], [1.0, 0.4])],
                  targets=[Target("required", 0.4, 0.3, 0.5)])
    second = Panel("k", "error", [Curve("Least squares", [1, 2], [2.0, 0.9]), Curve("Averaging", [1, 2], [2.0, 1.5])])
    lines = []
    for panel in (first, second):
        axes = Figure().subplots()
        _draw_panel(axes, panel, colors_by_label([first, second]))
        lines.append({line.get_label(): line.get_color() for line in axes.get_lines()})
    assert lines[0]["Least squares"] == lines[1]["Least squares"]
    colours = [lines[0]["Transformer"], lines[0]["Least squares"], lines[0]["required"], lines[1]["Averaging"]]
    assert len(set(colours)) == 4


def test_curves_of_one_color_key_share_a_colour_and_other_keys_do_not():
    """A model and its baseline at one setting (one key) are drawn in one colour, solid and dashed."""
    panel = Panel("step", "risk", [Curve(f"{name}, L = {length}", [0, 1], [1.0, 0.5], baseline=name == "linear",
                                         color_key=f"L = {length}")
                                   for length in (10, 100) for name in ("softmax", "linear")])
    axes = Figure().subplots()
    _draw_panel(axes, panel, colors_by_label([panel]))
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert lines["softmax, L = 10"].get_color() == lines["linear, L = 10"].get_color()
    assert lines["softmax, L = 100"].get_color() == lines["linear, L = 100"].get_color()
    assert lines["softmax, L = 10"].get_color() != lines["softmax, L = 100"].get_color()
    assert lines["linear, L = 10"].get_linestyle() == "--" and lines["softmax, L = 10"].get_linestyle() == "-"


def test_integer_x_values_get_integer_ticks_only():
    """Depths 1, 2, 4 are labelled 1, 2, 3, 4, not 1.0, 1.5, ...; fractional x keep fractional ticks."""
    depths = _visible_ticks(Curve("c", [1, 2, 4], [1.0, 2.0, 3.0]), "x")
    scales = _visible_ticks(Curve("c", [0.5, 0.75, 1.0], [1.0, 2.0, 3.0]), "x")
    assert depths and all(float(tick).is_integer() for tick in depths)
    assert not all(float(tick).is_integer() for tick in scales)


def test_integer_y_values_get_integer_ticks_only():
    """Rounds needed 2, 3, 4 are labelled 2, 3, 4, not 2.25, 2.5, ...; a curve with a fractional band does not."""
    rounds = _visible_ticks(Curve("c", [4, 8, 12], [2, 3, 4]), "y")
    banded = _visible_ticks(Curve("c", [4, 8, 12], [2, 3, 4], low=[1.5, 2.5, 3.5], high=[2.5, 3.5, 4.5]), "y")
    assert rounds and all(float(tick).is_integer() for tick in rounds)
    assert not all(float(tick).is_integer() for tick in banded)


def test_a_seed_curve_is_the_mean_with_its_student_t_interval():
    per_seed = [[1.0, 2.0, 3.0], [1.5, 2.5, 2.0], [0.5, 2.0, 4.0]]
    curve = seed_curve("model", [1, 2, 3], per_seed)
    values = np.array(per_seed)
    low, high = stats.t.interval(0.95, 2, loc=values.mean(axis=0), scale=stats.sem(values, axis=0))
    assert curve.label == "model" and curve.seeds == 3
    assert np.allclose(curve.y, values.mean(axis=0)) and np.allclose(curve.low, low) and np.allclose(curve.high, high)
    one = seed_curve("model", [1, 2], [[1.0, 2.0]])
    assert one.low is None and one.seeds == 1
    with pytest.raises(ValueError, match="per_seed"):
        seed_curve("model", [1, 2], [[1.0, 2.0, 3.0]])


def test_a_bounded_quantitys_band_stays_in_its_range():
    """Cosines of 0.5, 0.99 and 1.0: the interval [0.12, 1.54] of their mean is cut at 1; the mean is not moved."""
    per_seed = [[0.5], [0.99], [1.0]]
    values = np.array(per_seed)
    low, high = stats.t.interval(0.95, 2, loc=values.mean(axis=0), scale=stats.sem(values, axis=0))
    curve = seed_curve("cosine", [1], per_seed, bounds=(-1.0, 1.0))
    assert high[0] > 1 and curve.high == [1.0] and np.allclose(curve.low, low) and np.allclose(curve.y, values.mean())


def test_the_caption_says_over_how_many_seeds():
    three = Panel("x", "y", [seed_curve("m", [1, 2], [[1.0, 2.0]] * 3), Curve("b", [1, 2], [1.0, 1.0])])
    assert seeds_note([three]) == ("Trained models: the mean over 3 training seeds, shaded (or barred) its 95 % "
                                   "interval.")
    assert seeds_note([_panel()]) == ""
    assert seeds_note([three], trained=False) == ("Constructed models: the mean over 3 seeds of the random instances "
                                                  "they run on, shaded (or barred) its 95 % interval.")


def test_a_target_is_shaded_only_where_its_check_applies():
    axes = _drawn(Panel("k", "error", [Curve("model", [0, 10], [1.0, 0.0])],
                        targets=[Target("required", 0.1, 0.0, 0.2, where=(5, 10))]))
    (band,) = axes.collections
    xs = band.get_paths()[0].vertices[:, 0]
    assert xs.min() == 5 and xs.max() == 10


def test_a_band_from_0_leaves_a_log_axis_at_the_data():
    """An accepted band [0, 0.05] on a log axis: saved, the axis starts at half the smallest value (0.014 / 2), not
    at the clip of 0 that took it to 1e-14."""
    panel = Panel("N", "gap", [Curve("seed 0", [10, 25, 50, 100], [0.014, 0.08, 0.2, 112.0], continuous=False)],
                  targets=[Target("accepted", 0.05, 0.0, 0.05)], xscale="log", yscale="log")
    axes = Figure(layout="constrained").subplots()
    _draw_panel(axes, panel, colors_by_label([panel]))
    axes.figure.savefig(io.BytesIO(), format="png")
    assert axes.get_ylim()[0] == pytest.approx(0.007)


def test_legends_sit_below_the_axes_and_baselines_above_the_models():
    axes = _drawn(Panel("k", "error", [Curve("model", [1, 2, 3], [1.0, 0.5, 0.2]),
                                       Curve("least squares", [1, 2, 3], [1.0, 0.5, 0.2], baseline=True)]))
    axes.figure.canvas.draw()
    legend = axes.get_legend().get_window_extent()
    assert legend.y1 <= axes.get_window_extent().y0  # wholly below the data
    model, baseline = axes.get_lines()
    assert baseline.get_zorder() > model.get_zorder() and baseline.get_linestyle() == "--"
    assert baseline.get_marker() == "x" and model.get_marker() == "o"  # a baseline on the model stays visible


def test_a_legend_clears_the_x_label_of_short_axes():
    panel = Panel("in-context examples", "error", [Curve(f"curve {i}", [1, 2], [1.0, 0.5]) for i in range(8)])
    axes = Figure(figsize=(4.2, 2.0), layout="constrained").subplots()  # a panel squeezed by a long legend
    _draw_panel(axes, panel, colors_by_label([panel]))
    axes.figure.canvas.draw()
    assert axes.get_legend().get_window_extent().y1 <= axes.xaxis.label.get_window_extent().y0


def test_a_discrete_axis_gets_markers_and_error_bars_not_a_band():
    axes = _drawn(Panel("depth", "error", [Curve("model", [1, 2, 4], [1.0, 0.5, 0.2], [0.9, 0.4, 0.1],
                                                 [1.1, 0.6, 0.3], continuous=False)]))
    assert not any(isinstance(c, PolyCollection) for c in axes.collections)
    assert any(isinstance(c, LineCollection) for c in axes.collections)
    assert axes.get_lines()[0].get_marker() == "o"


def test_an_unjoined_curve_draws_its_markers_without_a_line():
    """Depths 1 and 4: no line through the depths 2 and 3 that were never trained."""
    axes = _drawn(Panel("depth", "error", [Curve("model", [1, 4], [1.0, 0.2], continuous=False, joined=False)]))
    (line,) = axes.get_lines()
    assert line.get_linestyle() == "None" and line.get_marker() == "o"


def test_a_heatmap_panel_draws_its_grid(tmp_path):
    panel = Panel("step", "layer", [], heatmap=Heatmap([[0.1, 0.9], [0.8, 0.2]], [1, 2], [1, 2], "cosine"))
    axes = _drawn(panel)
    (mesh,) = [c for c in axes.collections if c.__class__.__name__ == "QuadMesh"]
    assert mesh.get_array().reshape(2, 2).tolist() == [[0.1, 0.9], [0.8, 0.2]]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "2"]
    assert draw_figure(tmp_path / "heat", [panel, _panel()], "caption")[0].stat().st_size > 0
