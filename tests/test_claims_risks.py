"""Risk-curve and comparison-metric predictions: verify passes, formulas against independent references."""
import math

import numpy as np
import pytest
import sympy as sp
import torch

from icl_sim.claims import comparison_metrics as cm_claims
from icl_sim.claims import risk_curves as rc_claims
from icl_sim.theory.formulas import comparison_metrics as cm
from icl_sim.theory.formulas import risk_curves as rc
from icl_sim.theory.symbolic import torch_function

ALL = [*rc_claims.CLAIMS, *cm_claims.CLAIMS]


def test_names():
    assert [p.name for p in ALL] == ["ols-risk-curve", "averaging-risk-curve", "ridge-bayes-risk",
                                     "finite-pool-bayes", "akyurek-metrics"]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("prediction", ALL, ids=lambda p: p.name)
def test_verify_passes(prediction, seed):
    comparisons = prediction.verify(seed)
    assert comparisons
    failed = [c.as_dict() for c in comparisons if not c.passed]
    assert not failed, failed


@pytest.mark.parametrize("prediction", ALL, ids=lambda p: p.name)
def test_derive_ends_with_a_formula(prediction):
    steps = prediction.derive()
    assert len(steps) >= 3
    assert all(isinstance(step.expression, sp.Basic) for step in steps)


# --- OLS ---------------------------------------------------------------------------------
def test_wishart_trace_identity_numpy():
    """E tr (XᵀX)⁺ by numpy sampling against the variance term, on both sides of the peak."""
    rng = np.random.default_rng(0)
    d = 8
    for n in (3, 5, 12, 20):
        X = rng.standard_normal((20000, n, d))
        traces = np.trace(np.linalg.pinv(X.transpose(0, 2, 1) @ X), axis1=1, axis2=2)
        formula = float(rc.ols_risk(n, d, prior_scale=1e-300, noise=1.0, query_noise=False))
        assert formula == pytest.approx(min(n, d) / (abs(n - d) - 1), rel=1e-12)
        se = traces.std() / math.sqrt(len(traces))
        assert abs(traces.mean() - formula) < 4 * se + 1e-3, (n, traces.mean(), formula)


def test_ols_projection_bias_numpy():
    """E‖(I − P)w‖² = s²(d − n) for n < d, by numpy (the noiseless risk)."""
    rng = np.random.default_rng(1)
    d, n, s = 7, 3, 1.5
    X = rng.standard_normal((5000, n, d))
    w = s * rng.standard_normal((5000, d))
    residual = w - np.einsum("bij,bj->bi", np.linalg.pinv(X) @ X, w)
    values = (residual**2).sum(1)
    assert abs(values.mean() - float(rc.ols_risk(n, d, s, 0.0))) < 4 * values.std() / math.sqrt(5000)


def test_ols_risk_shape_and_peak():
    curve = rc.ols_risk(torch.arange(0, 21), 10, 1.0, 0.5)
    assert torch.isinf(curve[9:12]).all() and torch.isfinite(curve[:9]).all() and torch.isfinite(curve[12:]).all()
    assert float(curve[0]) == pytest.approx(10 + 0.25)
    noiseless = rc.ols_risk(torch.arange(0, 21), 10, 2.0, 0.0)
    assert torch.equal(noiseless, 4.0 * (10 - torch.arange(0, 21).clamp(max=10)).double())
    assert torch.allclose(rc.ols_risk_per_dim(torch.arange(0, 21), 10, 1.0, 0.5)[12:], curve[12:] / 10)
    with pytest.raises(ValueError, match="points"):
        rc.ols_risk(-1, 10)


def test_ols_derive_last_step_matches_numeric():
    final = rc_claims.OLS_RISK_CURVE.derive()[-1].expression.rhs
    f = torch_function(final, [rc.n, rc.d, rc.s, rc.sigma])
    points = torch.tensor([0.0, 1, 4, 8, 12, 15, 40], dtype=torch.float64)
    assert torch.allclose(f(points, 10.0, 1.3, 0.7), rc.ols_risk(points, 10, 1.3, 0.7), rtol=1e-12)


# --- Averaging ------------------------------------------------------------------------------
def test_averaging_fourth_moment_numpy():
    """E‖(1/n)Σ y x − w‖² by numpy sampling (independent of the sympy moments)."""
    rng = np.random.default_rng(2)
    d, n, s, noise, B = 5, 7, 0.8, 0.4, 40000
    X = rng.standard_normal((B, n, d))
    w = s * rng.standard_normal((B, d))
    y = np.einsum("bnd,bd->bn", X, w) + noise * rng.standard_normal((B, n))
    err = (((X * y[..., None]).mean(1) - w) ** 2).sum(1)
    formula = float(rc.averaging_risk(n, d, s, noise, query_noise=False))
    assert formula == pytest.approx((s**2 * d * (d + 1) + noise**2 * d) / n)
    assert abs(err.mean() - formula) < 4 * err.std() / math.sqrt(B)


def test_averaging_derive_last_step_matches_numeric():
    final = rc_claims.AVERAGING_RISK_CURVE.derive()[-1].expression.rhs
    f = torch_function(final, [rc.n, rc.d, rc.s, rc.sigma])
    points = torch.tensor([1.0, 2, 9, 50], dtype=torch.float64)
    assert torch.allclose(f(points, 6.0, 0.9, 0.3), rc.averaging_risk(points, 6, 0.9, 0.3), rtol=1e-12)
    assert float(rc.averaging_risk(0, 6, 0.9, 0.3)) == pytest.approx(6 * 0.81 + 0.09)


# --- Ridge / Bayes ------------------------------------------------------------------------------
def test_ridge_conditional_risk_numpy():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5, 6, 4))
    s, noise = 1.2, 0.5
    reference = [s**2 * np.trace(np.linalg.inv(np.eye(4) + s**2 / noise**2 * x.T @ x)) + noise**2 for x in X]
    got = rc.ridge_bayes_conditional_risk(torch.from_numpy(X), s, noise)
    np.testing.assert_allclose(got.numpy(), reference, rtol=1e-12)
    # the derivation's last step (the per-eigenvalue term) through torch_function
    term = torch_function(rc_claims.RIDGE_BAYES_RISK.derive()[-1].expression.rhs, [rc.mu, rc.s, rc.sigma])
    eigenvalues = torch.linalg.eigvalsh(torch.from_numpy(X).mT @ torch.from_numpy(X))
    np.testing.assert_allclose((term(eigenvalues, s, noise).sum(-1) + noise**2).numpy(), reference, rtol=1e-10)


def test_ridge_bayes_posterior_mean_numpy():
    """Ridge(σ²/s²) equals the Gaussian posterior mean (precision XᵀX/σ² + I/s²) on one prompt."""
    from icl_sim.theory import Ridge
    rng = np.random.default_rng(4)
    X, y, s, noise = rng.standard_normal((9, 3)), rng.standard_normal(9), 0.7, 0.4
    posterior_mean = np.linalg.solve(X.T @ X / noise**2 + np.eye(3) / s**2, X.T @ y / noise**2)
    xs = torch.from_numpy(np.vstack([X, np.zeros((1, 3))]))[None]
    ys = torch.from_numpy(np.append(y, 0.0))[None]
    np.testing.assert_allclose(Ridge(noise**2 / s**2).weights(xs, ys)[0, -1].numpy(), posterior_mean, rtol=1e-10)


def test_marchenko_pastur_known_limits():
    # σ → 0 with n > d: the Bayes risk tends to the OLS variance limit σ² d/(n − d) + σ² (relative)
    n_, d_, noise = 400.0, 100.0, 1e-3
    value = float(rc.ridge_bayes_risk_mp(n_, d_, 1.0, noise))
    assert value == pytest.approx(noise**2 * d_ / (n_ - d_) + noise**2, rel=1e-2)
    # n → 0: the prior risk s² d + σ²
    assert float(rc.ridge_bayes_risk_mp(1e-9, 10.0, 1.0, 0.5)) == pytest.approx(10.25, rel=1e-6)


# --- dMMSE ----------------------------------------------------------------------------------------
def test_finite_pool_last_step():
    final = rc_claims.FINITE_POOL_BAYES.derive()[-1].expression.rhs
    assert float(torch_function(final, [rc.sigma])(0.7)) == pytest.approx(0.49)


def test_exceeds_is_one_sided():
    assert rc_claims.exceeds("x", 0.0, torch.tensor([1.0, 1.1, 0.9, 1.0])).passed
    assert not rc_claims.exceeds("x", 0.0, torch.tensor([-1.0, -1.1, -0.9, -1.0])).passed
    assert not rc_claims.exceeds("x", 0.0, torch.tensor([1.0, -1.0, 1.0, -1.0])).passed
    assert rc_claims.exceeds("x", 0.0, torch.tensor([1.0, 1.1])).as_dict()["relation"] == "at_least"


# --- Akyürek metrics -------------------------------------------------------------------------------
def test_ilwd_and_spd_against_numpy():
    rng = np.random.default_rng(6)
    for k in (3, 5, 12):  # rank-deficient, square, tall
        X = rng.standard_normal((4, k, 5))
        a, b = np.tanh(X.sum(-1)), X[..., 0] ** 2  # non-linear predictors
        reference = [np.sum((np.linalg.lstsq(X[i], a[i], rcond=None)[0]
                             - np.linalg.lstsq(X[i], b[i], rcond=None)[0]) ** 2) for i in range(4)]
        got = cm.ilwd(torch.from_numpy(X), torch.from_numpy(a), torch.from_numpy(b))
        np.testing.assert_allclose(got.numpy(), reference, rtol=1e-9)
        np.testing.assert_allclose(cm.spd(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                                   ((a - b) ** 2).mean(-1), rtol=1e-14)
    with pytest.raises(ValueError):
        cm.spd(torch.zeros(2, 3), torch.zeros(2, 4))


def test_spd_derive_last_step_matches_numeric():
    g = torch.Generator().manual_seed(1)
    w_a, w_b = torch.randn(6, 2, generator=g, dtype=torch.float64), torch.randn(6, 2, generator=g,
                                                                                dtype=torch.float64)
    L = torch.randn(6, 2, 2, generator=g, dtype=torch.float64)
    cov = L @ L.mT
    delta = w_a - w_b
    formula = cm.spd_formula_d2(delta[:, 0], delta[:, 1], cov[:, 0, 0], cov[:, 0, 1], cov[:, 1, 1])
    assert torch.allclose(formula, cm.spd_linear(w_a, w_b, cov), rtol=1e-12)
