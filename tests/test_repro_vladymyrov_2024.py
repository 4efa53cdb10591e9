"""The oracle ridge behind vladymyrov-2024: a per-prompt λ = σ²/s² (``Ridge.oracle``), against numpy."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory import OLS, Ridge

TASK = LinearRegression(dim=4, points=7, noise_law="categorical", noise_levels=(0.5, 2.0), prior_scale=1.5)


def test_per_prompt_ridge_matches_numpy_solve_at_every_position():
    prompt = TASK.sample(6, make_generator(0, "eval"), dtype=torch.float64)
    ridge = Ridge.oracle(prompt.latent["noise"], TASK.prior_scale)
    preds = ridge.predict(prompt.xs, prompt.ys).numpy()
    xs, ys, noise = prompt.xs.numpy(), prompt.ys.numpy(), prompt.latent["noise"].numpy()
    for b in range(xs.shape[0]):
        lam = noise[b] ** 2 / TASK.prior_scale ** 2
        for i in range(xs.shape[1]):
            x, y = xs[b, :i], ys[b, :i]
            w = np.linalg.solve(x.T @ x + lam * np.eye(TASK.dim), x.T @ y)
            assert preds[b, i] == pytest.approx(xs[b, i] @ w, rel=1e-10, abs=1e-12)


def test_per_prompt_ridge_equals_scalar_ridge_prompt_by_prompt():
    prompt = TASK.sample(5, make_generator(1, "eval"), dtype=torch.float64)
    lams = torch.tensor([0.1, 0.5, 1.0, 2.0, 7.0], dtype=torch.float64)
    batched = Ridge(lams).predict(prompt.xs, prompt.ys)
    for b, lam in enumerate(lams.tolist()):
        single = Ridge(lam).predict(prompt.xs[b:b + 1], prompt.ys[b:b + 1])
        torch.testing.assert_close(batched[b:b + 1], single, rtol=1e-12, atol=1e-12)


def test_oracle_ridge_is_the_posterior_mean_so_beats_any_fixed_lambda():
    """Monte Carlo: the oracle's risk at the query is below every fixed λ's (one-sided, 3 standard errors)."""
    prompt = TASK.sample(20_000, make_generator(2, "eval"), dtype=torch.float64)
    y = prompt.ys[:, -1]
    oracle = (Ridge.oracle(prompt.latent["noise"], TASK.prior_scale).predict(prompt.xs, prompt.ys)[:, -1] - y) ** 2
    for lam in (0.1, 0.5, 1.0, 1.8, 4.0):
        fixed = (Ridge(lam).predict(prompt.xs, prompt.ys)[:, -1] - y) ** 2
        gap = fixed - oracle  # paired: same prompts
        assert float(gap.mean()) > 3 * float(gap.std()) / gap.numel() ** 0.5


@pytest.mark.parametrize("bad", [torch.tensor([1.0, 0.0]), torch.tensor([[1.0]]), torch.tensor([float("nan")])])
def test_per_prompt_lambda_must_be_positive_finite_and_one_dimensional(bad):
    with pytest.raises(ValueError, match="lam"):
        Ridge(bad)


def test_per_prompt_lambda_must_match_the_batch():
    prompt = TASK.sample(3, make_generator(3, "eval"), dtype=torch.float64)
    with pytest.raises(ValueError, match="per-prompt lam"):
        Ridge(torch.ones(4, dtype=torch.float64)).predict(prompt.xs, prompt.ys)


def test_oracle_with_a_noiseless_prompt_is_least_squares_once_the_prefix_holds_d_points():
    """σ = 0 (possible under U(0, σ_max)) floors λ, so short prefixes stay solvable; at i ≥ d it is OLS."""
    prompt = TASK.sample(3, make_generator(4, "eval"), dtype=torch.float64)
    noise = torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64)
    preds = Ridge.oracle(noise, TASK.prior_scale).predict(prompt.xs, prompt.ys)
    assert torch.isfinite(preds).all()
    ols = OLS().predict(prompt.xs[:1], prompt.ys[:1])
    torch.testing.assert_close(preds[:1, TASK.dim:], ols[:, TASK.dim:], rtol=1e-8, atol=1e-8)


def test_claim_checks_take_one_value_per_seed_from_that_seeds_models():
    """Seed k's DIAG − FULL gap pairs seed k's two models; the loss differences are the seeds' own rows."""
    from icl_sim.paper_repro import vladymyrov_2024 as repro

    settings = repro.SCALES["smoke"]
    rows = [{"predictor": f"ridge λ={lam:g}", "quantity": "adjusted_loss", "layers": 0, "seed": 0, "value": 0.5,
             "standard_error": 0.01} for lam in repro.LAMBDAS]
    for seed, (full, diag) in enumerate([(0.2, 0.25), (0.3, 0.1)]):
        for label, value in (("FULL", full), ("DIAG", diag)):
            rows += [{"predictor": label, "quantity": "adjusted_loss", "layers": 1, "seed": seed, "value": value,
                      "standard_error": 0.01},
                     {"predictor": label, "quantity": "loss_minus_const_rr", "layers": 1, "seed": seed,
                      "value": value - 0.5, "standard_error": 0.01}]
    checks = repro.checks({"rows": rows, "best_lambda": 1.0}, settings)
    claims = [check for check in checks if check.kind == "claim"]
    assert [check.claim for check in claims] == ["beats-const-rr", "diag-matches-full", "diag-matches-full"]
    assert claims[0].per_seed == pytest.approx((-0.3, -0.2))
    assert claims[1].per_seed == pytest.approx((-0.25, -0.4))
    assert claims[2].per_seed == pytest.approx((0.1, 0.4))  # |0.25 − 0.2| / 0.5, |0.1 − 0.3| / 0.5
    assert all(check.kind == "sanity" and check.passed for check in checks[:len(repro.LAMBDAS)])
