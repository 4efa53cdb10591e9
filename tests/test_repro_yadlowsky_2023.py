"""Yadlowsky et al. 2023 (paper_repro/yadlowsky_2023.py): the runs' recipe and mixture, the families' common scale
against a numpy Monte Carlo, the measured late relative error against the models' own predictions recomputed
outside the measure, and the claim checks' per-seed values against hand-computed ones."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from icl_sim.paper_repro import yadlowsky_2023 as repro
from icl_sim.paper_repro.runner import HELD_OUT_STREAMS, Measurement
from icl_sim.seeding import make_generator
from icl_sim.training import initial_model

SMOKE = repro.SCALES["smoke"]


def test_the_three_runs_share_one_recipe_and_differ_in_their_data():
    configs = repro.runs(repro.SCALES["quick"])
    assert list(configs) == ["mixture", "linear", "sinusoid", "selection"]
    stripped = {dataclasses.replace(config, task="", task_params={}, steps=1, checkpoint_every=1).to_json()
                for config in configs.values()}
    assert len(stripped) == 1
    # each expert sees as many prompts of its family as the mixture model, whose prompts are half of each
    assert [config.steps for config in configs.values()] == [2400, 1200, 1200, 500]
    # Garg et al.'s read-in and read-out are nn.Linear layers at PyTorch's default initialisation
    assert configs["mixture"].model_params["io_init"] == "pytorch"
    selection = configs["selection"].task_params
    assert configs["selection"].task == "mixture" and selection["weights"] == (1.0, 1.0, 1.0)
    assert selection["families"] == ("linear-regression", "linear-regression:sparsity=1", "relu-network:hidden=100")
    assert (selection["dim"], selection["points"]) == (8, 15)
    mixture = configs["mixture"].task_params
    assert configs["mixture"].task == "mixture" and mixture["weights"] == (0.5, 0.5)
    assert mixture["families"] == ("linear-regression", f"sinusoid:amplitude={math.sqrt(2)!r}")
    assert configs["sinusoid"].task_params["amplitude"] == pytest.approx(math.sqrt(2))
    assert (configs["sinusoid"].task_params["frequency_low"], configs["sinusoid"].task_params["frequency_high"]) == \
        repro.TRAINED_BAND
    full = repro.runs(repro.SCALES["full"])  # Garg et al.'s src/conf: standard GPT-2, lr 1e-4, batch 64
    assert (full["mixture"].model_params["size"], full["mixture"].lr, full["mixture"].batch_size,
            full["mixture"].steps) == ("standard", 1e-4, 64, 500_001)
    # their sparse linear family: 3 non-zero weights of 20
    assert full["selection"].task_params["families"][1] == "linear-regression:sparsity=3"
    assert full["selection"].task_params["dim"] == 20 and full["selection"].steps == 500_001


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_every_family_and_combination_has_the_scale_its_trivial_error_says(alpha):
    """E[y²]/d by numpy Monte Carlo: a sin(ω uᵀx + φ) with a = √(2d) has E[y²] = d like wᵀx, w ~ N(0, I); the α = ½
    combination d/2 (the two parts uncorrelated)."""
    settings = dataclasses.replace(SMOKE, dim=3)
    task = settings.combination(alpha)
    prompt = task.sample(20000, make_generator(5, "eval"), dtype=torch.float64)
    per_prompt = prompt.ys.numpy() ** 2 / 3
    estimate, error = per_prompt.mean(), per_prompt.mean(axis=1).std() / math.sqrt(20000)
    expected = alpha**2 + (1 - alpha) ** 2
    assert task.trivial_error() == pytest.approx(expected)
    assert abs(estimate - expected) <= 5 * error


def test_the_measured_late_relative_error_is_the_models_own():
    configs = repro.runs(SMOKE)
    models = {run: [initial_model(config, torch.device("cpu")) for config in [config]] for run, config in
              configs.items()}
    measurement = Measurement(SMOKE, torch.device("cpu"), models, {run: [[]] for run in configs},
                              {run: [config] for run, config in configs.items()})
    results = repro.measure(measurement)
    sparse = SMOKE.selection.family("sparse").sample(SMOKE.test_prompts,
                                                     make_generator(HELD_OUT_STREAMS["test"], "eval"),
                                                     dtype=torch.float64)
    with torch.no_grad():
        preds = models["selection"][0].double()(sparse.xs, sparse.ys).numpy()
    relative = ((preds - sparse.ys.numpy()) ** 2).mean(axis=0) / (SMOKE.selection.dim
                                                                   * SMOKE.selection.family("sparse").trivial_error())
    row = next(row for row in results["rows"] if row["run"] == "selection" and row["condition"] == "sparse")
    assert row["value"] == pytest.approx(relative[list(SMOKE.selection.window)].mean(), rel=1e-10)
    assert list(SMOKE.selection.window) == [2]
    prompt = SMOKE.band(3.0, 4.0).sample(SMOKE.test_prompts, make_generator(HELD_OUT_STREAMS["test"], "eval"),
                                         dtype=torch.float64)
    with torch.no_grad():
        preds = models["mixture"][0].double()(prompt.xs, prompt.ys).numpy()
    errors = ((preds - prompt.ys.numpy()) ** 2).mean(axis=0)
    late = errors[list(SMOKE.late)].mean() / SMOKE.band(3.0, 4.0).trivial_error()
    row = next(row for row in results["rows"] if row["run"] == "mixture" and row["condition"] == "band=3-4")
    assert row["value"] == pytest.approx(late, rel=1e-10)
    assert list(SMOKE.late) == [5, 6, 7, 8, 9, 10]


def test_least_squares_and_lasso_on_the_quick_selection_prompts():
    """Least squares' relative error on isotropic x at k < d is 1 − k/d whatever the law of w (the residual of w off
    a uniformly random k-dimensional span); Lasso's lies far below it on sparse prompts and above it on dense ones,
    so that the half-way contrast separates the right estimator from the wrong one on both families."""
    selection = repro.SCALES["quick"].selection
    window, results = list(selection.window), {}
    for family in ("dense", "sparse"):
        task = selection.family(family)
        prompt = task.sample(1000, make_generator(11, "eval"), dtype=torch.float64)
        for label, baseline in (("Least squares", repro.OLS()), ("Lasso", repro.Lasso(repro.LASSO_PENALTY))):
            per_prompt = ((baseline.predict(prompt.xs, prompt.ys) - prompt.ys) ** 2)[:, window].mean(dim=1)
            per_prompt = per_prompt.numpy() / (task.dim * task.trivial_error())
            results[family, label] = (per_prompt.mean(), per_prompt.std() / math.sqrt(len(per_prompt)))
        mean, error = results[family, "Least squares"]
        expected = np.mean([1 - k / selection.dim for k in window])
        assert abs(mean - expected) <= 4 * error + 0.01
    assert results["sparse", "Lasso"][0] < 0.5 * results["sparse", "Least squares"][0]
    assert results["dense", "Lasso"][0] > 1.25 * results["dense", "Least squares"][0]


def test_the_selection_checks_place_each_seed_between_the_two_estimators():
    rows = [{"run": "selection", "seed": seed, "condition": family, "quantity": "window_relative_error",
             "value": value} for family, values in (("sparse", (0.15, 0.35)), ("dense", (0.45, 0.60)))
            for seed, value in enumerate(values)]
    baselines = {"sparse": {"Lasso": 0.10, "Least squares": 0.40}, "dense": {"Lasso": 0.60, "Least squares": 0.40}}
    sparse, dense = repro._selection_checks({"rows": rows, "selection": baselines})
    assert sparse.per_seed == pytest.approx(((0.15 - 0.10) / 0.30, (0.35 - 0.10) / 0.30))
    assert dense.per_seed == pytest.approx(((0.45 - 0.40) / 0.20, (0.60 - 0.40) / 0.20))
    assert sparse.expected == dense.expected == 0.5 and sparse.claim == dense.claim == "selects-sparsity"


def _rows(values: dict) -> list[dict]:
    return [{"run": run, "seed": seed, "condition": condition, "quantity": "late_relative_error", "value": value}
            for (run, condition), per_seed in values.items() for seed, value in enumerate(per_seed)]


def test_claim_checks_take_each_seeds_contrast():
    values = {("mixture", "alpha=1"): [0.10, 0.30], ("linear", "alpha=1"): [0.05, 0.05],
              ("sinusoid", "alpha=1"): [0.80, 0.60], ("mixture", "alpha=0"): [0.20, 0.10],
              ("sinusoid", "alpha=0"): [0.15, 0.05], ("linear", "alpha=0"): [4.0, 2.0],
              ("mixture", "alpha=0.5"): [0.60, 0.15], ("mixture", "band=1-2"): [0.2, 0.1],
              ("mixture", "band=3-4"): [0.9, 0.1]}
    selection = [{"run": "selection", "seed": seed, "condition": family, "quantity": "window_relative_error",
                  "value": 0.5} for family in ("sparse", "dense") for seed in range(2)]
    baselines = {"sparse": {"Lasso": 0.1, "Least squares": 0.4}, "dense": {"Lasso": 0.6, "Least squares": 0.4}}
    checks = repro.checks({"rows": _rows(values) + selection, "selection": baselines}, SMOKE)
    assert [check.claim for check in checks] == ["selects-family"] * 4 + ["combinations-degrade"] + \
        ["selects-sparsity"] * 2 + ["frequencies-degrade"]
    margin_linear, far_linear, margin_wave, far_wave, combination, _, _, frequency = checks
    assert margin_linear.per_seed == pytest.approx((0.05, 0.25)) and margin_linear.expected == repro.MARGIN
    assert far_linear.per_seed == pytest.approx((0.10 / 0.80, 0.30 / 0.60))
    assert margin_wave.per_seed == pytest.approx((0.05, 0.05))
    assert far_wave.per_seed == pytest.approx((0.05, 0.05))
    assert combination.per_seed == pytest.approx((0.60 / 0.20, 0.15 / 0.30))  # over the larger pure family's
    assert frequency.per_seed == pytest.approx((4.5, 1.0))
    assert np.all([check.kind == "claim" for check in checks])
