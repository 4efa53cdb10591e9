"""Sun et al. 2023/2024 (paper_repro/sun_2023_ttt.py): the runs against the authors' settings written out, the
floor of predictors linear in the query against a Monte Carlo estimate, the scaled-GD reference against the closed
form of one GD step's optimal rate, and the measure on untrained models against an independent computation, which
fails every claim.

Tolerances: the Monte Carlo floor allows 4 standard errors of its mean over w; the one-step rate allows 3 % of
η* (the empirical optimum over 20 000 prompts has a relative standard error of about 1 %, and the rate grid
0.01); the measure predicts with the float32 models (``predict``), the reference in float64: a relative 1e-5."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from icl_sim.evaluation import eval_prompts
from icl_sim.paper_repro import sun_2023_ttt
from icl_sim.paper_repro.runner import Measurement
from icl_sim.training import initial_model

SMOKE = sun_2023_ttt.SCALES["smoke"]


def test_runs_are_the_authors_inner_loops():
    """mttt README and config_patch.py: MTTT-Linear (zero start, no bias, one step), MTTT-MLP (mlp_2, one step at
    inner_lr 1), T = 4 steps; lr 1e-3 at full; icl-sim's one-layer lsa as the linear attention; the 2024 paper's
    mini-batch TTT of the linear learner at b = 1 and 4 beside ttt-linear-1 (b = N = 20)."""
    full = sun_2023_ttt.runs(sun_2023_ttt.SCALES["full"])
    expected = {"ttt-linear-1": ("ttt", {"inner": "linear", "inner_steps": 1}), "lsa": ("lsa", {"layers": 1}),
                "ttt-linear-4": ("ttt", {"inner": "linear", "inner_steps": 4}),
                "tanh-linear": ("ttt", {"inner": "linear", "inner_steps": 1}),
                "tanh-mlp": ("ttt", {"inner": "mlp", "inner_steps": 1}),
                "ttt-linear-b1": ("ttt", {"inner": "linear", "mini_batch": 1}),
                "ttt-linear-b4": ("ttt", {"inner": "linear", "mini_batch": 4})}
    assert set(full) == set(expected)
    assert sun_2023_ttt.BATCH_SIZES == (1, 4, 20) and sun_2023_ttt.batch_run(20) == "ttt-linear-1"
    for name, config in full.items():
        assert (config.model, dict(config.model_params)) == expected[name]
        assert (config.lr, config.loss_on, config.task_params["dim"], config.task_params["points"]) == (
            1e-3, "last", 5, 21)
        assert config.task_params["link"] == ("tanh" if name.startswith("tanh") else "identity")
        assert config.task_params["noise"] == 0.0 and config.task_params["prior_scale"] == 1.0
    quick = sun_2023_ttt.runs(sun_2023_ttt.SCALES["quick"])
    assert {(c.steps, c.batch_size, c.lr) for c in quick.values()} == {(1500, 256, 1e-2)}


def test_the_linear_floor_is_a_monte_carlo_least_squares_fit_that_knows_w():
    """For each of 2 000 w, the least-squares β of tanh(wᵀx) on 2 000 Gaussian x, its in-sample residual corrected
    by n/(n − d); the mean over w against the quadrature."""
    rng = np.random.default_rng(0)
    dim, draws, samples = 5, 2000, 2000
    residuals = np.empty(draws)
    for index in range(draws):
        w = rng.normal(size=dim)
        x = rng.normal(size=(samples, dim))
        y = np.tanh(x @ w)
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        residuals[index] = np.mean((y - x @ beta) ** 2) * samples / (samples - dim)
    error = residuals.std() / math.sqrt(draws)
    assert sun_2023_ttt.linear_floor(sun_2023_ttt.TANH_TASK) == pytest.approx(residuals.mean(), abs=4 * error)
    assert sun_2023_ttt.linear_floor(sun_2023_ttt.TASK) == pytest.approx(0.0, abs=1e-10)  # the identity link


def test_scaled_gd_with_one_step_finds_one_steps_optimal_rate():
    """One step from 0 with rate η read out at scale c is (cη)·s with s = x_qᵀ (1/n) Σ y_j x_j, so the best c·η is
    one GD step's optimal rate η* = n σ²/(μ₄ + (d + n − 2) σ⁴) = n/(d + n + 1) for Gaussian inputs (μ₄ = 3)."""
    task = sun_2023_ttt.TASK
    prompt = next(eval_prompts(task, num_prompts=20000, batch_size=20000, seed=5))
    rate, scale = sun_2023_ttt.scaled_gd(prompt, 1)
    context = task.points - 1
    assert rate * scale == pytest.approx(context / (task.dim + context + 1), rel=0.03)


def _untrained_measurement():
    configs = {name: dataclasses.replace(config, device="cpu") for name, config in sun_2023_ttt.runs(SMOKE).items()}
    models = {name: [initial_model(config, torch.device("cpu"))] for name, config in configs.items()}
    return Measurement(SMOKE, torch.device("cpu"), models, {name: [[]] for name in configs},
                       {name: [config] for name, config in configs.items()}), models


def test_untrained_measure_equals_an_independent_computation_and_fails_every_claim():
    measurement, models = _untrained_measurement()
    results = sun_2023_ttt.measure(measurement)
    values = {row["quantity"]: row["value"] for row in results["rows"]}
    test = measurement.prompts(sun_2023_ttt.TASK, "test", SMOKE.test_prompts)
    with torch.no_grad():
        ttt, lsa = (models[name][0].double()(test.xs, test.ys)[:, -1].numpy() for name in ("ttt-linear-1", "lsa"))
    expected = np.linalg.norm(ttt - lsa) / np.sqrt((np.sum(ttt ** 2) + np.sum(lsa ** 2)) / 2)
    assert values["distance_ttt_lsa"] == pytest.approx(expected, rel=1e-5)
    tanh = measurement.prompts(sun_2023_ttt.TANH_TASK, "test", SMOKE.test_prompts)
    with torch.no_grad():
        errors = [float(((models[name][0].double()(tanh.xs, tanh.ys)[:, -1] - tanh.ys[:, -1]) ** 2).mean())
                  for name in ("tanh-linear", "tanh-mlp")]
    assert values["mlp_gain"] == pytest.approx(errors[0] / errors[1], rel=1e-5)
    with torch.no_grad():
        batch = {size: float(((models[name][0].double()(test.xs, test.ys)[:, -1] - test.ys[:, -1]) ** 2).mean())
                 for size, name in ((1, "ttt-linear-b1"), (4, "ttt-linear-b4"), (20, "ttt-linear-1"))}
    assert values["batch_gain_4_1"] == pytest.approx(batch[4] / batch[1], rel=1e-9)
    assert values["batch_gain_20_4"] == pytest.approx(batch[20] / batch[4], rel=1e-9)
    assert max(values[f"identity_gap_{name}"] for name in ("linear", "kernel", "dual")) < 1e-10  # identities
    checks = sun_2023_ttt.checks(results, SMOKE)
    assert {check.claim for check in checks if check.kind == "claim"} == {claim.id for claim in sun_2023_ttt.CLAIMS}
    assert not any(check.passed for check in checks if check.kind == "claim")
    assert all(check.passed for check in checks if check.kind != "claim")
