"""Closed-form baselines against plain-numpy references that loop over batch and prefix.

The predictor contract (no peeking, float64, shapes, constructor errors): tests/test_contracts.py.
"""
import numpy as np
import pytest
import torch

from icl_sim.theory import GD, KNN, OLS, Averaging, Ridge, Zero, baselines


def prompt(batch=6, points=14, dim=5, seed=0, noise=0.1):
    """Gaussian xs (B, N, d) and noisy linear ys (B, N), float64."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(batch, points, dim, generator=g, dtype=torch.float64)
    w = torch.randn(batch, dim, 1, generator=g, dtype=torch.float64)
    ys = (xs @ w).squeeze(-1) + noise * torch.randn(batch, points, generator=g, dtype=torch.float64)
    return xs, ys


def per_prefix(predict_one, xs, ys):
    """preds[b, i] = predict_one(X_{<i}, y_{<i}, x_i), by explicit loops; 0 at i = 0."""
    xs, ys = xs.numpy(), ys.numpy()
    preds = np.zeros(ys.shape)
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            preds[b, i] = predict_one(xs[b, :i], ys[b, :i], xs[b, i])
    return preds


def linear(fit):
    """Turn fit(X, y) -> w into predict_one(X, y, x) -> xᵀw."""
    return lambda X, y, x: x @ fit(X, y)


def lstsq(X, y):
    return np.linalg.lstsq(X, y, rcond=None)[0]


def ridge(lam):
    return lambda X, y: np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ y)


def gradient_descent(steps, lr):
    def fit(X, y):
        w = np.zeros(X.shape[1])
        for _ in range(steps):
            w = w - lr * X.T @ (X @ w - y) / len(y)
        return w
    return fit


def nearest_neighbours(k):
    def predict_one(X, y, x):
        order = np.argsort(np.linalg.norm(X - x, axis=1), kind="stable")
        return y[order[:k]].mean()
    return predict_one


def check(baseline, predict_one, xs, ys, rtol, atol):
    np.testing.assert_allclose(baseline.predict(xs, ys).numpy(), per_prefix(predict_one, xs, ys),
                               rtol=rtol, atol=atol)


# OLS: min-norm lstsq to 1e-8 relative, through n < d, n = d (worst conditioned) and n > d.
@pytest.mark.parametrize("batch, points, dim", [(8, 24, 8), (4, 6, 1), (3, 1, 4), (2, 40, 20)])
def test_ols_matches_numpy_lstsq(batch, points, dim):
    xs, ys = prompt(batch, points, dim)
    check(OLS(), linear(lstsq), xs, ys, rtol=1e-8, atol=1e-10)


def test_ols_weights_are_minimum_norm_when_rank_deficient():
    """xs in a 3-dim subspace of R^6: every prefix is rank-deficient, pinv picks the min-norm w."""
    xs, ys = prompt(5, 12, 3)
    xs = xs @ torch.randn(3, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    weights = OLS().weights(xs, ys).numpy()
    for b in range(5):
        for i in range(12):
            expected = lstsq(xs[b, :i].numpy(), ys[b, :i].numpy()) if i else np.zeros(6)
            np.testing.assert_allclose(weights[b, i], expected, rtol=1e-8, atol=1e-10)


def test_ols_is_the_same_in_batch_chunks(monkeypatch):
    """One prompt per chunk, in the factored path and in the SVD path (prompt 1 repeats a point), changes nothing."""
    xs, ys = prompt(5, 10, 4)
    xs[1, 2] = xs[1, 0]
    whole = OLS().predict(xs, ys)
    monkeypatch.setattr(baselines, "CHUNK_BYTES", 1)
    monkeypatch.setattr(OLS, "FACTOR_CHUNK_BYTES", 1)
    torch.testing.assert_close(OLS().predict(xs, ys), whole, rtol=1e-12, atol=1e-12)


def test_ols_nested_factorisations_match_numpy_lstsq_on_every_prefix():
    """The fast path itself (not the SVD fallback) certifies Gaussian prompts and matches lstsq, i < d, i ≈ d, i > d."""
    xs, ys = prompt(32, 31, 12, seed=3, noise=0.5)
    weights, certified = OLS()._factored(xs, ys)
    assert bool(certified.all())
    for b in range(32):
        for i in range(1, 31):
            expected = lstsq(xs[b, :i].numpy(), ys[b, :i].numpy())
            assert np.linalg.norm(weights[b, i].numpy() - expected) <= 1e-9 * np.linalg.norm(expected)


@pytest.mark.parametrize("condition", [1e6, 1e8])
def test_ols_nested_factorisations_certify_ill_conditioned_prompts(condition):
    """Singular values spread over ``condition``: the refinement converges (the fast path keeps every prompt) and
    agrees with lstsq on every prefix to within rounding, a few eps·cond (measured 3-10 eps·cond)."""
    g = torch.Generator().manual_seed(0)
    rotation = torch.linalg.qr(torch.randn(8, 8, generator=g, dtype=torch.float64))[0]
    spread = torch.logspace(0, -np.log10(condition), 8, dtype=torch.float64)
    xs = torch.randn(8, 24, 8, generator=g, dtype=torch.float64) * spread @ rotation
    ys = (xs @ torch.randn(8, 8, 1, generator=g, dtype=torch.float64)).squeeze(-1)
    ys = ys + 0.1 * torch.randn(8, 24, generator=g, dtype=torch.float64)
    weights, certified = OLS()._factored(xs, ys)
    assert bool(certified.all())
    for b in range(8):
        for i in range(1, 24):
            expected = lstsq(xs[b, :i].numpy(), ys[b, :i].numpy())
            error = np.linalg.norm(weights[b, i].numpy() - expected) / np.linalg.norm(expected)
            assert error <= 100 * np.finfo(np.float64).eps * condition


def test_ols_sends_rank_deficient_prompts_to_the_svd_path():
    xs, ys = prompt(3, 9, 4)
    xs[1, 2] = xs[1, 0]  # a repeated point among the first d: that prompt is not certified
    weights, certified = OLS()._factored(xs, ys)
    assert certified.tolist() == [True, False, True]
    np.testing.assert_allclose(OLS().weights(xs, ys).numpy()[1, 5], lstsq(xs[1, :5].numpy(), ys[1, :5].numpy()),
                               rtol=1e-10)


@pytest.mark.parametrize("lam", [0.1, 2.0])
def test_ridge_matches_numpy_solve(lam):
    xs, ys = prompt()
    check(Ridge(lam), linear(ridge(lam)), xs, ys, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("steps, lr", [(0, 0.3), (1, 0.3), (4, 0.3), (10, 0.05)])
def test_gd_matches_numpy_loop(steps, lr):
    xs, ys = prompt()
    check(GD(steps, lr), linear(gradient_descent(steps, lr)), xs, ys, rtol=1e-10, atol=1e-12)


def test_averaging_matches_numpy_mean():
    xs, ys = prompt()
    check(Averaging(), linear(lambda X, y: (y[:, None] * X).mean(axis=0)), xs, ys, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("k", [1, 3, 50])
def test_knn_matches_sorted_distances(k):
    xs, ys = prompt()
    check(KNN(k), nearest_neighbours(k), xs, ys, rtol=1e-12, atol=1e-14)


def test_knn_breaks_ties_by_lower_index():
    """xs on {0, 1}^2 repeat often, so most neighbour sets are decided by ties."""
    g = torch.Generator().manual_seed(2)
    xs = torch.randint(0, 2, (6, 16, 2), generator=g).double()
    ys = torch.randn(6, 16, generator=g, dtype=torch.float64)
    check(KNN(3), nearest_neighbours(3), xs, ys, rtol=1e-12, atol=1e-14)


def test_zero_predicts_zero():
    xs, ys = prompt()
    assert torch.equal(Zero().predict(xs, ys), torch.zeros_like(ys))


def test_one_gd_step_is_scaled_average():
    """w = (lr/i) Σ_{j<i} y_j x_j after one step from 0, up to rounding."""
    xs, ys = prompt()
    lr, sums = 0.7, torch.cumsum(ys[..., None] * xs, dim=1)  # sums[:, j] = Σ_{l<=j} y_l x_l
    i = torch.arange(1, xs.shape[1])
    expected = torch.zeros_like(ys)
    expected[:, i] = lr / i.double() * (sums[:, i - 1] * xs[:, i]).sum(-1)
    torch.testing.assert_close(GD(1, lr).predict(xs, ys), expected, rtol=1e-14, atol=1e-14)


def test_gd_with_many_small_steps_approaches_ols():
    """On prefixes with i >= 8d points, L_i is well conditioned and GD converges geometrically."""
    xs, ys = prompt(4, 60, 4)
    gd, ols = GD(steps=300, lr=0.2).predict(xs, ys), OLS().predict(xs, ys)
    torch.testing.assert_close(gd[:, 32:], ols[:, 32:], rtol=1e-8, atol=1e-8)


def test_ridge_with_vanishing_lam_approaches_ols():
    """(G + lam I)⁻¹ b tends to pinv(X) y, the min-norm solution, on every prefix, also n < d."""
    xs, ys = prompt(4, 30, 6)
    torch.testing.assert_close(Ridge(1e-9).predict(xs, ys), OLS().predict(xs, ys), rtol=1e-5, atol=1e-5)


ALL = [OLS(), Ridge(0.5), GD(3, 0.2), Averaging(), KNN(3), Zero()]


# NaN, inf, strings, negative or non-integer counts: tests/test_contracts.py, for every baseline.
@pytest.mark.parametrize("make, name", [(lambda: Ridge(0.0), "lam"), (lambda: Ridge(-1.0), "lam"),
                                        (lambda: KNN(0), "k")])
def test_bad_parameters_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_repr_shows_parameters():
    assert [repr(b) for b in ALL] == ["OLS()", "Ridge(lam=0.5)", "GD(steps=3, lr=0.2)",
                                      "Averaging()", "KNN(k=3)", "Zero()"]
