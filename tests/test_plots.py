"""The gallery's figure style: panels wrap into rows, and short log axes still carry numbers."""
import matplotlib.image
from matplotlib.figure import Figure

from icl_sim.plots import MAX_COLUMNS, Curve, Panel, _draw_panel, draw_figure


def _panel(yscale="linear", y=(1.0, 2.0)):
    return Panel("x", "y", [Curve("c", [1, 2], list(y))], yscale=yscale)


def test_panels_beyond_a_row_wrap_onto_the_next(tmp_path):
    (one_row, _) = draw_figure(tmp_path / "one", [_panel()] * MAX_COLUMNS, "caption")
    (two_rows, _) = draw_figure(tmp_path / "two", [_panel()] * (MAX_COLUMNS + 2), "caption")
    height, width = matplotlib.image.imread(one_row).shape[:2]
    wrapped_height, wrapped_width = matplotlib.image.imread(two_rows).shape[:2]
    assert wrapped_width == width
    assert 1.8 * height < wrapped_height < 2.2 * height


def _tick_labels(panel):
    figure = Figure()
    axes = figure.subplots()
    _draw_panel(axes, panel)
    figure.canvas.draw()
    low, high = axes.get_ylim()
    return [t.get_text() for t in axes.yaxis.get_ticklabels() if t.get_text() and low <= t.get_position()[1] <= high]


def test_a_log_axis_within_one_decade_is_labelled_with_plain_numbers():
    labels = _tick_labels(_panel("log", (0.2, 0.37)))
    assert len(labels) >= 2
    assert all("10" not in label for label in labels)  # 0.2, 0.3, ... rather than 2 × 10⁻¹


def test_a_log_axis_over_decades_labels_the_decades_only():
    labels = _tick_labels(_panel("log", (1e-3, 10.0)))
    assert len(labels) >= 3
    assert all("10" in label for label in labels)
