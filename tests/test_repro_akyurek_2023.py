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
    """… and the per-prompt terms the checks average (or take the median of) average to SPD and ILWD."""
    task = SETTINGS.task(SIGMA)
    prompt = task.sample(64, make_generator(5, "eval", 0), dtype=torch.float64)
    learners = akyurek_2023.algorithms(SETTINGS, SIGMA)
    ols, gd = (behaviours(learners[name].query_predictor, prompt, True)[-1]
               for name in ("least squares", "one GD step"))
    weights = {name: learners[name].weights(prompt.xs, prompt.ys)[:, -1].numpy() for name in learners}
    distance = ((weights["least squares"] - weights["one GD step"]) ** 2).sum(-1).mean()
    assert compare(ols, gd, last(prompt.target))["weight_difference"] == pytest.approx(distance, rel=1e-9)
    np.testing.assert_allclose(ols.weights.numpy(), weights["least squares"], rtol=1e-8, atol=1e-10)
    terms, metrics = akyurek_2023.per_prompt_differences(ols, gd), compare(ols, gd, last(prompt.target))
    assert float(terms["SPD"].mean()) == pytest.approx(metrics["squared_prediction_difference"], rel=1e-12)
    assert float(terms["ILWD"].mean()) == pytest.approx(metrics["weight_difference"], rel=1e-12)


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
    fit, held_out, width = SETTINGS.probe_fit_prompts, 2048, 64  # width: the quick probe GPT's hidden state
    states = torch.randn(fit + held_out, width, generator=generator, dtype=torch.float64)
    latent = ((states[:, 0] * states[:, 1] + states[:, 2] * states[:, 3]) / math.sqrt(2)).unsqueeze(1)
    predict = fit_mlp_probes(states[:fit], latent[:fit].unsqueeze(0), hidden=SETTINGS.mlp_probe_hidden,
                             steps=SETTINGS.mlp_probe_fit_steps, lr=SETTINGS.mlp_probe_lr, generator=generator)
    assert r_squared(predict(states[fit:])[0], latent[fit:]) >= 0.8
    design = np.c_[states.numpy(), np.ones(fit + held_out)]
    coefficients = np.linalg.lstsq(design[:fit], latent[:fit].numpy(), rcond=None)[0]
    residual = design[fit:] @ coefficients - latent[fit:].numpy()
    assert 1 - (residual**2).sum() / ((latent[fit:].numpy() - latent[fit:].numpy().mean()) ** 2).sum() <= 0.05


def test_claim_checks_take_one_ratio_per_seed_from_that_seeds_models():
    settings = akyurek_2023.SCALES["smoke"]  # GPT depths 1, 2 (σ = 0.5: 2), LSA 1, 2; the probed GPT's layer 1
    spd = {(0.0, 1): {"one GD step": (1.0, 3.0), "least squares": (4.0, 2.0)},
           (0.0, 2): {"one GD step": (5.0, 2.0), "least squares": (1.0, 4.0), "Bayes ridge": (2.0, 8.0)},
           (0.5, 2): {"one GD step": (4.0, 4.0), "least squares": (2.0, 8.0), "Bayes ridge": (1.0, 2.0)},
           (0.5, 1): {"one GD step": (1.0, 1.0), "least squares": (1.0, 1.0), "Bayes ridge": (1.0, 1.0)}}
    rows = [{"family": family, "noise": noise, "depth": depth, "seed": seed, "examples": settings.exemplars,
             "predictor": "model", "against": against, "metric": metric,
             "value": values[seed] * (2 if metric == "ILWD" else 1) * (10 if family == "lsa" else 1)}
            for family in ("gpt", "lsa") for (noise, depth), by_algorithm in spd.items()
            for against, values in by_algorithm.items() for seed in (0, 1) for metric in ("SPD", "ILWD")]
    # held-out R² by layer (1, 2): seed 0's Xᵀy rises at layer 1 and its w at layer 2; seed 1's both at layer 1
    probes = [{"seed": seed, "target": target, "layer": layer, "probe": "mlp", "metric": "r2", "value": value}
              for seed, by_target in enumerate(({"xty": (0.6, 0.7), "w": (0.1, 0.6)}, {"xty": (0.4, 0.3), "w": (0.45, 0.5)}))
              for target, values in by_target.items() for layer, value in enumerate(values, start=1)]
    # the LSA's training loss levels (median over the last fifth), against E[y²] = 4 (σ = 0) and 4.25 (σ = 0.5)
    training = [{"noise": noise, "depth": 2, "seed": seed, "value": value}
                for noise, values in ((0.0, (0.5, 8.5)), (0.5, (1.0, 2.0))) for seed, value in enumerate(values)]
    generator = torch.Generator().manual_seed(0)
    samples = 0.5 + 0.01 * torch.randn(100, dtype=torch.float64, generator=generator)
    identities = {"ilwd_probes": 1.0, "weight_distance": 1.0, "spd_over_distance": samples * 2,
                  "ridge_risk_samples": samples, "ridge_test_errors": samples.flip(0), "ols_risk": 0.6, "gd_risk": 1.8}
    checks = akyurek_2023.checks({"rows": rows, "identities": identities, "probes": probes, "training": training},
                                 settings)
    by_claim = {}
    for check in checks:
        by_claim.setdefault(check.claim, []).append(check.per_seed)
    depth_ratios = [(0.25, 1.5), (0.2, 2.0), (0.25, 1.5), (0.2, 2.0)]
    assert by_claim["depth-gd-to-least-squares"] == depth_ratios  # two depths: no trend check
    assert by_claim["lsa-depth-extra"] == [*depth_ratios, (0.125, 2.125)]
    noise_ratios = [(0.5, 0.25), (0.25, 0.5)]
    assert by_claim["noise-bayes-ridge"] == [*noise_ratios, (0.5, 0.5)]  # the noiseless contrast: LS / ridge
    assert by_claim["lsa-noise-extra"] == [*noise_ratios, pytest.approx((1 / 4.25, 2 / 4.25))]
    assert by_claim["probes-xty-before-w"] == [(1.0, 0.0)]
    diverged = next(check for check in checks if check.claim == "lsa-depth-extra" and "training" in check.quantity)
    assert diverged.every_seed and diverged.outcome == "failed"  # seed 1's loss level above E[y²]
    assert len(by_claim[None]) == 5 and all(check.passed for check in checks if check.kind == "sanity")


def test_lsa_extra_reads_the_median_over_prompts_and_the_gpt_the_paper_mean():
    """A heavy-tailed set of per-prompt differences: one prompt must not decide the LSA's statistic."""
    values = torch.tensor([0.01, 0.02, 0.03, 1e12], dtype=torch.float64)
    assert akyurek_2023._statistic(values, akyurek_2023.STATISTICS["lsa"]) == pytest.approx(0.02)
    assert akyurek_2023._statistic(values, akyurek_2023.STATISTICS["gpt"]) == pytest.approx(2.5e11)


def test_prefix_prompts_and_the_step_size_follow_the_number_of_examples():
    prompt = SETTINGS.task(0.0).sample(4, make_generator(5, "eval", 0), dtype=torch.float64)
    short = akyurek_2023.prefix(prompt, 3)
    assert short.xs.shape == (4, 4, D) and torch.equal(short.xs, prompt.xs[:, :4])
    gd = akyurek_2023.algorithms(SETTINGS, 0.0, examples=3)["one GD step"]
    assert gd.lr == pytest.approx(3 / (3 + D + 1))  # η* = n/(n + d + 1), Mahankali et al. 2023


def test_the_depth_trend_is_the_least_squares_slope_against_log2_depth():
    """Per seed, log(SPD(LS)/SPD(GD)) against log₂ depth, fitted as numpy's polyfit fits it."""
    depths, ratios = (1, 2, 4, 8), {0: (1.5, 0.9, 0.4, 0.2), 1: (1.2, 1.1, 1.3, 0.9)}
    rows = [{"family": "gpt", "noise": 0.0, "depth": depth, "seed": seed, "examples": 8, "predictor": "model",
             "against": against, "metric": "SPD", "value": ratio if against == "least squares" else 1.0}
            for seed, values in ratios.items() for depth, ratio in zip(depths, values)
            for against in ("least squares", "one GD step")]
    slopes = akyurek_2023.depth_slopes({"rows": rows}, depths, 8)
    expected = [np.polyfit(np.log2(depths), np.log(values), 1)[0] for values in ratios.values()]
    assert slopes == pytest.approx(expected, rel=1e-12)


def test_the_training_loss_level_is_the_median_over_the_last_fifth():
    history = [{"step": step, "loss": loss} for step, loss in zip(range(0, 1001, 100), (9, 8, 7, 6, 5, 4, 3, 2, 1e9, 0.5, 0.4))]
    assert akyurek_2023.training_loss_level(history) == pytest.approx(0.5)  # steps 800-1000: 2, 1e9, 0.5, 0.4
    assert math.isnan(akyurek_2023.training_loss_level([]))
