"""Probing: a constructed L-layer LSA (L steps of GD) is matched layer by layer to GD steps."""
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.models import InContextModel
from icl_sim.probing import LEARNING_RATES, _fitted_readouts, best_steps, probe, probe_prompts
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.models import constructed_lsa
from icl_sim.theory import GD, GDPlusPlus, Newton, PreconditionedGD
from icl_sim.theory.step_tuning import tune_steps
from icl_sim.training import train

TASK = make_task("linear-regression", dim=4, points=13)
LR = LEARNING_RATES[17]  # ≈ 0.5, a point of the probe grid, so the matching run exists exactly


def test_constructed_layers_are_matched_to_their_gd_steps():
    result = probe(constructed_lsa(4, 13, 3, LR), TASK, "gd", steps=5, num_prompts=256)
    assert result["best"] == {1: 1, 2: 2, 3: 3}
    values = {(r["layer"], r["step"], r["metric"]): r["value"] for r in result["records"]}
    for layer in (1, 2, 3):
        assert values[layer, layer, "residual_cosine"] == pytest.approx(1.0, abs=1e-9)
        assert values[layer, layer, "sensitivity_cosine"] == pytest.approx(1.0, abs=1e-9)
        assert values[layer, layer, "squared_prediction_difference"] < 1e-18
        assert values[layer, layer, "weight_difference"] < 1e-18
        other = layer % 3 + 1
        assert values[layer, other, "squared_prediction_difference"] > 1e-3  # a different step is visibly different


def test_best_steps_reads_the_direction_of_each_metric():
    records = [{"layer": 1, "step": s, "metric": m, "value": v}
               for s, m, v in [(1, "residual_cosine", 0.5), (2, "residual_cosine", 0.9),
                               (1, "squared_prediction_difference", 0.1), (2, "squared_prediction_difference", 0.3)]]
    assert best_steps(records) == {1: 2}
    assert best_steps(records, "squared_prediction_difference") == {1: 1}


def test_unknown_algorithm_names_the_parameter():
    with pytest.raises(ValueError, match="algorithm"):
        probe(constructed_lsa(4, 13, 1, LR), TASK, "bogus")


def test_probe_cli_writes_table_heatmap_and_json(tmp_path):
    config = TrainConfig(task_params={"dim": 3, "points": 8}, model_params={"layers": 2}, steps=20, batch_size=32,
                         device="cpu", log_every=10)
    train(config, tmp_path / "run", progress=False)
    result = CliRunner().invoke(cli, ["probe", str(tmp_path / "run"), "--algorithm", "newton", "--steps", "3",
                                      "--num-prompts", "64", "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report["best"]) == {"1", "2"} and all(1 <= step <= 3 for step in report["best"].values())
    metrics = {r["metric"] for r in report["records"]}
    assert metrics == {"residual_cosine", "sensitivity_cosine", "squared_prediction_difference", "weight_difference"}
    assert len(report["records"]) == 2 * 3 * 4
    assert (tmp_path / "run" / "probe" / "newton.png").stat().st_size > 1000
    assert torch.isfinite(torch.tensor([r["value"] for r in report["records"]])).all()
    result = CliRunner().invoke(cli, ["probe", str(tmp_path / "run"), "--algorithm", "gd-plus-plus", "--step-params",
                                      "per-step", "--num-prompts", "64", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "gd-plus-plus (per-step step parameters): {'step_sizes': [" in result.output and "'risk': " in result.output
    assert (tmp_path / "run" / "probe" / "gd-plus-plus-per-step.csv").is_file()
    table = (tmp_path / "run" / "probe" / "gd-plus-plus-per-step.json").read_text()
    assert {record["step"] for record in json.loads(table)} == {1, 2}  # one step per layer by default


class AffineGDFeatures(InContextModel):
    """Layer ℓ's hidden state is an affine image of GD step ℓ's prediction, so its own read-out is useless."""

    def __init__(self, layers: int):
        super().__init__()
        self.keep_sizes(TASK.dim, TASK.points, None, 1)
        self.layers = layers
        self.unused = torch.nn.Parameter(torch.zeros(()))

    def layer_features(self, xs, ys):
        return [torch.stack([3 * GD(step, LR).predict(xs, ys) + 1, torch.ones_like(ys)], dim=-1)
                for step in range(1, self.layers + 1)]

    def layer_predictions(self, xs, ys):
        return [torch.zeros_like(ys) for _ in range(self.layers)]


def test_fitted_readouts_are_least_squares_fits_of_the_target_on_each_layer():
    """Fu et al.'s read-out: per layer, the affine map of the hidden state closest to y on the tuning prompts."""
    tuning = TASK.sample(300, make_generator(1, "eval"), dtype=torch.float64)
    model = AffineGDFeatures(2).double()
    layered = _fitted_readouts(model, tuning)
    for layer, fitted in enumerate(layered(tuning.xs, tuning.ys), start=1):
        features = model.layer_features(tuning.xs, tuning.ys)[layer - 1][:, -1].numpy()
        design = np.concatenate([features, np.ones((len(features), 1))], axis=1)
        coefficients = np.linalg.lstsq(design, tuning.ys[:, -1].numpy(), rcond=None)[0]
        np.testing.assert_allclose(fitted[:, -1].numpy(), design @ coefficients, rtol=1e-7, atol=1e-9)
    result = probe(AffineGDFeatures(2), TASK, "gd", steps=3, num_prompts=128, readout="fitted")
    assert set(result["best"]) == {1, 2}
    with pytest.raises(ValueError, match="readout"):
        probe(AffineGDFeatures(1), TASK, "gd", readout="logit-lens")


def test_per_step_parameters_match_an_lsa_built_from_it_in_either_order():
    """An LSA whose layers take the risk-optimal 3-step GD's step sizes (tuned on the probe's own tuning
    prompts), largest step first: the probe recovers every layer exactly.  GD's steps commute, so the
    reversed order is as good as the tuner's order and the tie goes to the model's order."""
    tuning, _ = probe_prompts(TASK, 256, seed=0)
    sizes = tune_steps("gd", tuning.xs, tuning.ys, 3)[0].parameters["step_sizes"].sort(descending=True).values
    model = constructed_lsa(4, 13, 3, 1.0)
    with torch.no_grad():
        model.value.mul_(sizes[:, None, None, None])
    result = probe(model, TASK, "gd", step_params="per-step", num_prompts=256)
    values = {(r["layer"], r["step"], r["metric"]): r["value"] for r in result["records"]}
    assert result["best"] == {1: 1, 2: 2, 3: 3}
    np.testing.assert_allclose(result["parameters"]["step_sizes"], sizes.numpy(), rtol=1e-6)
    assert {r["step"] for r in result["records"]} == {1, 2, 3}  # one step per layer
    for layer in (1, 2, 3):
        assert values[layer, layer, "squared_prediction_difference"] < 1e-14  # optimiser precision, not rounding
    shared = probe(model, TASK, "gd", steps=3, num_prompts=256)
    closest = min(r["value"] for r in shared["records"]
                  if r["layer"] == 2 and r["metric"] == "squared_prediction_difference")
    assert closest > 1e-6  # no run with one shared step size reproduces the tuned steps


@pytest.mark.parametrize("options, named", [({"step_params": "per-step", "algorithm": "newton"}, "step_params"),
                                            ({"step_params": "adaptive"}, "step_params"), ({"steps": 0}, "steps")])
def test_bad_probe_options_name_the_parameter(options, named):
    with pytest.raises(ValueError, match=named):
        probe(constructed_lsa(4, 13, 1, LR), TASK, **{"algorithm": "gd", **options})


@pytest.mark.parametrize("task, algorithm", [(make_task("pca", dim=4, points=13), "gd"),
                                             (TASK, "power-method"), (make_task("boolean"), "gd")])
def test_algorithms_the_task_does_not_declare_are_refused(task, algorithm):
    with pytest.raises(ValueError, match=f"algorithm '{algorithm}' does not solve the {task.name} task"):
        probe(constructed_lsa(4, 13, 1, LR), task, algorithm)


def test_probe_computes_context_statistics_once_per_prompt_set_with_unchanged_results(monkeypatch):
    """The cache changes no number, and the 26 learning rates × 4 steps share one Ĝ, b̂ per context."""
    import icl_sim.probing as probing
    model = constructed_lsa(4, 13, 2, LR)
    calls = []
    counted = probing.context_statistics

    def counting(xs, ys):
        calls.append(xs.shape)
        return counted(xs, ys)

    monkeypatch.setattr(probing, "context_statistics", counting)
    cached = probe(model, TASK, "gd", steps=4, num_prompts=64)
    assert len(calls) == 2  # the tuning prompts' contexts and the probe prompts' contexts, once each
    monkeypatch.setattr(probing.ContextStatistics, "query_predictor", lambda self, predictor: predictor.query_predictor)
    uncached = probe(model, TASK, "gd", steps=4, num_prompts=64)
    assert cached["best"] == uncached["best"] and cached["parameters"] == uncached["parameters"]
    assert [(r["layer"], r["step"], r["metric"]) for r in cached["records"]] == \
        [(r["layer"], r["step"], r["metric"]) for r in uncached["records"]]
    np.testing.assert_allclose([r["value"] for r in cached["records"]], [r["value"] for r in uncached["records"]],
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("family", [lambda k: GD(k, 0.3), lambda k: GDPlusPlus(k, 0.3, 0.1), lambda k: Newton(k),
                                    lambda k: PreconditionedGD(k, 0.3, torch.eye(4, dtype=torch.float64) * 0.5)],
                         ids=["gd", "gd-plus-plus", "newton", "preconditioned-gd"])
def test_step_by_step_weights_are_each_step_count_run_alone_and_cost_one_iteration(family, monkeypatch):
    """Steps 1..K of one family, the longest asked first, come from one iteration of K steps (linear in K, not
    quadratic) and equal each K-step predictor's own weights."""
    import icl_sim.probing as probing
    prompt = TASK.sample(32, make_generator(5, "eval"), dtype=torch.float64)
    xs, ys = prompt.xs[:, :-1], prompt.ys[:, :-1]
    cache, predictors = probing.ContextStatistics(), [family(k) for k in range(1, 13)]
    iterations = []
    counted = type(predictors[0]).weight_steps

    def counting(self, gram, moment, steps):
        iterations.append(steps)
        return counted(self, gram, moment, steps)

    monkeypatch.setattr(type(predictors[0]), "weight_steps", counting)
    weights = [cache.step_weights(xs, ys, predictor) for predictor in reversed(predictors)][::-1]
    assert iterations == [12]
    for predictor, weight in zip(predictors, weights):
        torch.testing.assert_close(weight, predictor._from_statistics(*cache.statistics(xs, ys)), rtol=1e-12, atol=1e-14)
