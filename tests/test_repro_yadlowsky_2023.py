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
    assert list(configs) == ["mixture", "linear", "sinusoid"]
    stripped = {dataclasses.replace(config, task="", task_params={}, steps=1, checkpoint_every=1).to_json()
                for config in configs.values()}
    assert len(stripped) == 1
    # each expert sees as many prompts of its family as the mixture model, whose prompts are half of each
    assert [config.steps for config in configs.values()] == [2400, 1200, 1200]
    mixture = configs["mixture"].task_params
    assert configs["mixture"].task == "mixture" and mixture["weights"] == (0.5, 0.5)
    assert mixture["families"] == ("linear-regression", f"sinusoid:amplitude={math.sqrt(2)!r}")
    assert configs["sinusoid"].task_params["amplitude"] == pytest.approx(math.sqrt(2))
    assert (configs["sinusoid"].task_params["frequency_low"], configs["sinusoid"].task_params["frequency_high"]) == \
        repro.TRAINED_BAND
    full = repro.runs(repro.SCALES["full"])["mixture"]  # Garg et al.'s src/conf: standard GPT-2, lr 1e-4, batch 64
    assert (full.model_params["size"], full.lr, full.batch_size, full.steps) == ("standard", 1e-4, 64, 500_001)


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
    prompt = SMOKE.band(3.0, 4.0).sample(SMOKE.test_prompts, make_generator(HELD_OUT_STREAMS["test"], "eval"),
                                         dtype=torch.float64)
    with torch.no_grad():
        preds = models["mixture"][0].double()(prompt.xs, prompt.ys).numpy()
    errors = ((preds - prompt.ys.numpy()) ** 2).mean(axis=0)
    late = errors[list(SMOKE.late)].mean() / SMOKE.band(3.0, 4.0).trivial_error()
    row = next(row for row in results["rows"] if row["run"] == "mixture" and row["condition"] == "band=3-4")
    assert row["value"] == pytest.approx(late, rel=1e-10)
    assert list(SMOKE.late) == [5, 6, 7, 8, 9, 10]


def _rows(values: dict) -> list[dict]:
    return [{"run": run, "seed": seed, "condition": condition, "quantity": "late_relative_error", "value": value}
            for (run, condition), per_seed in values.items() for seed, value in enumerate(per_seed)]


def test_claim_checks_take_each_seeds_contrast():
    values = {("mixture", "alpha=1"): [0.10, 0.30], ("linear", "alpha=1"): [0.05, 0.05],
              ("sinusoid", "alpha=1"): [0.80, 0.60], ("mixture", "alpha=0"): [0.20, 0.10],
              ("sinusoid", "alpha=0"): [0.15, 0.05], ("linear", "alpha=0"): [4.0, 2.0],
              ("mixture", "alpha=0.5"): [0.60, 0.15], ("mixture", "band=1-2"): [0.2, 0.1],
              ("mixture", "band=3-4"): [0.9, 0.1]}
    checks = repro.checks({"rows": _rows(values)}, SMOKE)
    assert [check.claim for check in checks] == ["selects-family"] * 4 + ["combinations-degrade",
                                                                          "frequencies-degrade"]
    margin_linear, far_linear, margin_wave, far_wave, combination, frequency = checks
    assert margin_linear.per_seed == pytest.approx((0.05, 0.25)) and margin_linear.expected == repro.MARGIN
    assert far_linear.per_seed == pytest.approx((0.10 / 0.80, 0.30 / 0.60))
    assert margin_wave.per_seed == pytest.approx((0.05, 0.05))
    assert far_wave.per_seed == pytest.approx((0.05, 0.05))
    assert combination.per_seed == pytest.approx((0.60 / 0.20, 0.15 / 0.30))  # over the larger pure family's
    assert frequency.per_seed == pytest.approx((4.5, 1.0))
    assert np.all([check.kind == "claim" for check in checks])
