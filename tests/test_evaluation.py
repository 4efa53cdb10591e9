"""Evaluation: per-position metrics against known risks, bootstrap intervals, tables and figures."""
import csv
import json
import math

import pytest
import torch

from icl_sim import evaluation
from icl_sim.evaluation import (METRICS, bootstrap_interval, eval_prompts, evaluate, prompt_errors,
                                write_table)
from icl_sim.plots import plot_error_curves
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.linear_regression import LinearRegression

NUM_PROMPTS, BATCH, POINTS = 1280, 256, 11


class Zero:
    """Predicts 0 everywhere."""

    def predict(self, xs, ys):
        return torch.zeros_like(ys)


class Oracle:
    """Knows each evaluation prompt's w, by re-drawing the eval stream independently of evaluate."""

    def __init__(self, task, seed, num_prompts=NUM_PROMPTS, batch_size=BATCH, points=POINTS):
        sizes = [min(batch_size, num_prompts - start) for start in range(0, num_prompts, batch_size)]
        self._weights = iter([
            task.sample(size, make_generator(seed, "eval", t), points=points, dtype=torch.float64).latent["w"]
            for t, size in enumerate(sizes)])

    def predict(self, xs, ys):
        return torch.einsum("bnd,bd->bn", xs, next(self._weights))


def by_predictor(records, name):
    return sorted((r for r in records if r["predictor"] == name), key=lambda r: r["position"])


def test_zero_predictor_matches_trivial_error_at_every_position():
    task = LinearRegression(dim=5, points=POINTS, noise=0.0, prior_scale=1.0)
    records = evaluate({"Zero": Zero()}, task, num_prompts=NUM_PROMPTS, batch_size=BATCH, seed=3)
    assert [r["position"] for r in records] == list(range(POINTS))
    # y = wᵀx with w, x ~ N(0, I_d): E[y⁴] = 3(d² + 2d), so Var(y²/d) = (2d + 6)/d; allow 4 standard errors.
    d = task.dim
    tolerance = 4 * math.sqrt((2 * d + 6) / d / NUM_PROMPTS)
    for record in records:
        assert record["metric"] == "squared_error" and record["num_prompts"] == NUM_PROMPTS
        assert abs(record["mean"] - task.trivial_error()) < tolerance, record
        assert record["ci_low"] <= record["mean"] <= record["ci_high"]


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_oracle_error_is_noise_variance_over_d(noise):
    task = LinearRegression(dim=5, points=POINTS, noise=noise)
    records = evaluate({"Oracle": Oracle(task, seed=7), "Zero": Zero()}, task, num_prompts=NUM_PROMPTS,
                       batch_size=BATCH, seed=7)
    d = task.dim
    # error = ε²/d with ε ~ N(0, σ²): mean σ²/d, standard deviation √2 σ²/d; allow 4 standard errors.
    tolerance = 4 * math.sqrt(2) * noise**2 / d / math.sqrt(NUM_PROMPTS) + 1e-12
    for record in by_predictor(records, "Oracle"):
        assert abs(record["mean"] - noise**2 / d) < tolerance, record
    assert len(by_predictor(records, "Zero")) == POINTS


def test_eval_prompts_come_from_the_eval_stream(monkeypatch):
    task = LinearRegression(dim=3, points=4)
    first = next(eval_prompts(task, num_prompts=8, batch_size=8, seed=5))
    expected = task.sample(8, make_generator(5, "eval", 0), dtype=torch.float64)
    training = task.sample(8, make_generator(5, "train", 0), dtype=torch.float64)
    assert first.xs.dtype == torch.float64
    torch.testing.assert_close(first.xs, expected.xs, rtol=0, atol=0)
    assert not torch.allclose(first.xs, training.xs)
    monkeypatch.setattr(evaluation, "EVAL_STREAM", "train")
    with pytest.raises(RuntimeError, match="train"):
        evaluate({"Zero": Zero()}, task, num_prompts=8, batch_size=8, seed=5)


def test_bootstrap_contains_mean_and_matches_analytic_standard_error():
    generator = torch.Generator().manual_seed(0)
    half_widths = {}
    for count in (100, 400, 1600):
        values = 2.0 + 3.0 * torch.randn(count, 8, generator=generator, dtype=torch.float64)
        mean, low, high = bootstrap_interval(values, resamples=1000, confidence=0.95, seed=1)
        assert mean.shape == low.shape == high.shape == (8,)
        assert torch.all(low <= mean) and torch.all(mean <= high)
        torch.testing.assert_close(mean, values.mean(dim=0))
        analytic = 1.96 * values.std(dim=0) / math.sqrt(count)
        ratio = (high - low) / 2 / analytic
        assert torch.all((ratio > 0.85) & (ratio < 1.15)), ratio
        half_widths[count] = ((high - low) / 2).mean().item()
    assert half_widths[100] > half_widths[400] > half_widths[1600]


def test_bootstrap_rejects_bad_input():
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval(torch.zeros(4, 2), confidence=1.0)
    with pytest.raises(ValueError, match="values"):
        bootstrap_interval(torch.zeros(4))


def test_same_seed_same_records_different_seed_different():
    task = LinearRegression(dim=4, points=6, noise=0.1)

    def run(seed):
        return evaluate({"Zero": Zero()}, task, num_prompts=300, batch_size=128, seed=seed, bootstrap=200)

    first = run(0)
    assert first == run(0)
    assert [r["mean"] for r in first] != [r["mean"] for r in run(1)]


def test_prompt_errors_and_registered_metrics():
    xs = torch.zeros(1, 3, 2)
    prompt = Prompt(xs, torch.tensor([[1.0, -2.0, 3.0]]))
    errors = prompt_errors(Zero(), prompt, "squared_error")
    torch.testing.assert_close(errors, torch.tensor([[0.5, 2.0, 4.5]], dtype=torch.float64))
    accuracy = METRICS["accuracy"].function(torch.tensor([[0.3, 0.2]]), torch.tensor([[1.0, -1.0]]), 2)
    torch.testing.assert_close(accuracy, torch.tensor([[1.0, 0.0]]))
    similarity = METRICS["cosine"].function(torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[2.0, 0.0]]]), 2)
    torch.testing.assert_close(similarity, torch.tensor([[1.0]]))
    with pytest.raises(ValueError, match="metric"):
        prompt_errors(Zero(), prompt, "hinge")


def test_write_table_round_trips_and_plot_writes_png(tmp_path):
    task = LinearRegression(dim=3, points=5)
    records = evaluate({"Zero": Zero(), "Oracle": Oracle(task, 0, 64, 64, 5)}, task, num_prompts=64,
                       batch_size=64, bootstrap=100)
    csv_path, json_path = write_table(records, tmp_path / "out", stem="table")
    assert (csv_path.name, json_path.name) == ("table.csv", "table.json")
    assert json.loads(json_path.read_text()) == records
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    types = {"position": int, "num_prompts": int, "mean": float, "ci_low": float, "ci_high": float}
    assert [{k: types.get(k, str)(v) for k, v in row.items()} for row in rows] == records
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]

    figure = plot_error_curves(records, tmp_path / "curves.png", title="linear regression",
                               trivial_level=task.trivial_error())
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 1000
    with pytest.raises(ValueError, match="path"):
        plot_error_curves(records, tmp_path / "curves.jpg")


class SignOfFirstCoordinate:
    """A stand-in task scored at its last query only, with a named slice of prompts."""

    name, metric, loss, evaluated_positions, target_dim = "sign", "accuracy", "logistic", "last", 1
    dim, points = 3, 5

    def sample(self, batch_size, generator, *, points=None, active_dims=None, dtype=torch.float32):
        xs = torch.randn(batch_size, points or self.points, self.dim, generator=generator, dtype=dtype)
        return Prompt(xs, torch.sign(xs[..., 0]))

    def slices(self, prompt):
        return {"positive": prompt.ys[:, -1] > 0}


class SignOracle:
    def predict(self, xs, ys):
        return torch.sign(xs[..., 0])


def test_last_query_tasks_report_only_the_last_position_and_every_slice():
    records = evaluate({"oracle": SignOracle(), "zero": Zero()}, SignOfFirstCoordinate(), num_prompts=400,
                       batch_size=128, bootstrap=100)
    assert {r["position"] for r in records} == {4}
    by_key = {(r["predictor"], r["slice"]): r for r in records}
    positives = by_key["oracle", "positive"]["num_prompts"]
    assert by_key["oracle", "all"]["mean"] == 1.0
    assert by_key["zero", "all"]["mean"] == (400 - positives) / 400  # a score of 0 is the label −1
    assert by_key["zero", "positive"]["mean"] == 0.0
    assert by_key["oracle", "all"]["num_prompts"] == 400
    assert abs(positives - 200) < 4 * 10  # Binomial(400, 1/2): standard deviation 10


def test_logistic_loss_is_log_one_plus_exp_of_minus_margin():
    from icl_sim.training import logistic_loss

    scores = torch.tensor([-3.0, -0.5, 0.0, 2.0], dtype=torch.float64)
    labels = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    expected = sum(math.log1p(math.exp(-y * f)) for f, y in zip(scores.tolist(), labels.tolist())) / 4
    assert float(logistic_loss(scores, labels)) == pytest.approx(expected, rel=1e-12)


def test_an_error_curve_far_above_the_trivial_level_is_clipped_and_named():
    """Least squares' error near n = d (96 here) would flatten every other curve: the axis stops at 3 times the
    trivial level and says which curve it cut, and where that curve peaks; curves below it are drawn whole."""
    import matplotlib.pyplot as plt

    from icl_sim.plots import CLIP_ABOVE_TRIVIAL, _clip_above

    curves = {"OLS": [{"position": 2, "mean": 1.2}, {"position": 3, "mean": 96.0}, {"position": 4, "mean": 0.1}],
              "lsa": [{"position": 2, "mean": 0.9}, {"position": 3, "mean": 0.7}, {"position": 4, "mean": 0.5}]}
    figure, axes = plt.subplots()
    for rows in curves.values():
        axes.plot([row["position"] for row in rows], [row["mean"] for row in rows])
    _clip_above(axes, curves, CLIP_ABOVE_TRIVIAL * 1.0)
    assert axes.get_ylim()[1] == 3.0
    assert [text.get_text() for text in axes.texts] == ["axis clipped: OLS peaks at 96 (3 examples)"]
    _clip_above(axes, {"lsa": curves["lsa"]}, 3.0)  # nothing above: nothing added
    assert len(axes.texts) == 1
    plt.close(figure)
