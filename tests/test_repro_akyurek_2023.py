"""What akyurek-2023's checks rely on, against independent numpy references.

* ILWD of two linear predictors read from probe queries (``icl_sim.probe_metrics``) is ‖w₁ − w₂‖²,
  and the implicit weights equal numpy's least-squares fit to the probe outputs;
* the Bayes-ridge risk (``ridge_bayes_risk``) matches a numpy Monte Carlo of the posterior mean's
  error, and lies below the OLS and one-step-GD risks at the quick scale's (d, n, σ).
"""
import math

import numpy as np
import pytest
import torch

from icl_sim.paper_repro import akyurek_2023
from icl_sim.probe_metrics import behaviours, compare, last
from icl_sim.seeding import make_generator
from icl_sim.theory.formulas import ols_risk, one_step_gd_risk, ridge_bayes_risk

SETTINGS = akyurek_2023.SCALES["quick"]
D, N, SIGMA = SETTINGS.dim, SETTINGS.exemplars, max(SETTINGS.noises)


def test_ilwd_of_two_linear_learners_is_their_squared_weight_distance():
    task = SETTINGS.task(SIGMA)
    prompt = task.sample(64, make_generator(5, "eval", 0), dtype=torch.float64)
    learners = akyurek_2023.algorithms(SETTINGS, SIGMA)
    ols, gd = (behaviours(learners[name].query_predictor, prompt, True)[-1]
               for name in ("least squares", "one GD step"))
    weights = {name: learners[name].weights(prompt.xs, prompt.ys)[:, -1].numpy() for name in learners}
    distance = ((weights["least squares"] - weights["one GD step"]) ** 2).sum(-1).mean()
    assert compare(ols, gd, last(prompt.target))["weight_difference"] == pytest.approx(distance, rel=1e-9)
    np.testing.assert_allclose(ols.weights.numpy(), weights["least squares"], rtol=1e-8, atol=1e-10)


def _numpy_risks(samples: int = 40_000, seed: int = 0) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, N + 1, D))
    w = rng.standard_normal((samples, D))
    y = np.einsum("bnd,bd->bn", x, w) + SIGMA * rng.standard_normal((samples, N + 1))
    design, labels, query = x[:, :N], y[:, :N], x[:, N]
    gram = design.transpose(0, 2, 1) @ design
    moment = np.einsum("bnd,bn->bd", design, labels)
    fits = {"ridge": np.linalg.solve(gram + SIGMA**2 * np.eye(D), moment[..., None])[..., 0],
            "ols": np.linalg.solve(gram, moment[..., None])[..., 0]}
    step = N / (N + D + 1 + SIGMA**2)  # Mahankali et al. 2023, Thm 1
    fits["gd"] = step * moment / N
    risks = {}
    for name, fit in fits.items():
        errors = (np.einsum("bd,bd->b", query, fit) - y[:, N]) ** 2
        risks[name] = (errors.mean(), errors.std() / math.sqrt(samples))
    return risks


def test_bayes_ridge_risk_matches_numpy_and_beats_ols_and_one_gd_step():
    risks = _numpy_risks()
    formula, error = ridge_bayes_risk(N, D, 1.0, SIGMA)
    mean, numpy_error = risks["ridge"]
    assert abs(mean - formula) <= 4 * math.hypot(error, numpy_error)
    for name, closed in (("ols", float(ols_risk(N, D, 1.0, SIGMA))), ("gd", one_step_gd_risk(D, N, SIGMA, 1.0))):
        assert abs(risks[name][0] - closed) <= 4 * risks[name][1]
        assert formula + 3 * error < closed
