"""What akyurek-2023's checks rely on, against independent numpy references.

* ILWD of two linear predictors read from probe queries (``icl_sim.probe_metrics``) is ‖w₁ − w₂‖²,
  and the implicit weights equal numpy's least-squares fit to the probe outputs;
* the Bayes-ridge risk (``ridge_bayes_risk``) matches a numpy Monte Carlo of the posterior mean's
  error, and lies below the OLS and one-step-GD risks at the quick scale's (d, n, σ);
* the quick scale's MLP probe (the paper's kind, §5) decodes a latent held as a sum of products of
  state coordinates, as Xᵀy is of x and y, which numpy's least-squares (linear) probe cannot.
"""
import math

import numpy as np
import pytest
import torch

from icl_sim.latent_probes import fit_mlp_probes, r_squared
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


def test_quick_mlp_probe_decodes_a_product_latent_that_a_linear_probe_cannot():
    generator = torch.Generator().manual_seed(0)
    fit, held_out, width = SETTINGS.probe_fit, 2048, 64  # width: the quick probe GPT's hidden state
    states = torch.randn(fit + held_out, width, generator=generator, dtype=torch.float64)
    latent = ((states[:, 0] * states[:, 1] + states[:, 2] * states[:, 3]) / math.sqrt(2)).unsqueeze(1)
    predict = fit_mlp_probes(states[:fit], latent[:fit].unsqueeze(0), hidden=SETTINGS.mlp_probe_hidden,
                             steps=SETTINGS.mlp_probe_steps, lr=SETTINGS.mlp_probe_lr, generator=generator)
    assert r_squared(predict(states[fit:])[0], latent[fit:]) >= 0.8
    design = np.c_[states.numpy(), np.ones(fit + held_out)]
    coefficients = np.linalg.lstsq(design[:fit], latent[:fit].numpy(), rcond=None)[0]
    residual = design[fit:] @ coefficients - latent[fit:].numpy()
    assert 1 - (residual**2).sum() / ((latent[fit:].numpy() - latent[fit:].numpy().mean()) ** 2).sum() <= 0.05
