"""Iterative in-context algorithms against plain-numpy loops over batch, prefix and step."""
import numpy as np
import pytest
import torch

from icl_sim.theory import (GD, OLS, DiscreteMMSE, GDPlusPlus, StepwiseGDPlusPlus, Newton, PowerMethod,
                            PreconditionedGD, StepwisePreconditionedGD, RecursiveLeastSquares, Ridge)
from icl_sim.theory.baselines import gradient_descent, gradient_descent_spectral, in_eigenbasis
from icl_sim.theory.prefix import context_statistics
from test_baselines import check, linear, prompt


def per_prefix_weights(fit, xs, ys):
    """weights[b, i] = fit(X_{<i}, y_{<i}) by explicit loops; fit gets empty arrays at i = 0."""
    xs, ys = xs.numpy(), ys.numpy()
    out = np.zeros(xs.shape)
    for b in range(xs.shape[0]):
        for i in range(xs.shape[1]):
            out[b, i] = fit(xs[b, :i], ys[b, :i])
    return out


# ---- GD closed form ---------------------------------------------------------------------------

@pytest.mark.parametrize("steps, lr, points, dim", [
    (0, 0.3, 10, 4), (1, 0.3, 10, 4), (7, 0.2, 12, 5), (5, 0.1, 6, 10),   # last: every prefix n < d
    (400, 0.1, 20, 6), (2000, 0.05, 8, 12)])
def test_gd_closed_form_equals_iteration(steps, lr, points, dim):
    xs, ys = prompt(5, points, dim)
    gd = GD(steps, lr)
    np.testing.assert_allclose(gd.closed_form_weights(xs, ys).numpy(), gd.weights(xs, ys).numpy(),
                               rtol=0, atol=1e-10)


def test_gd_closed_form_on_rank_deficient_prefixes():
    """xs in a 2-dim subspace of R^5: the null-space eigenvalues are rounding noise, f stays bounded."""
    xs, ys = prompt(4, 12, 2)
    xs = xs @ torch.randn(2, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    gd = GD(300, 0.05)
    np.testing.assert_allclose(gd.closed_form_weights(xs, ys).numpy(), gd.weights(xs, ys).numpy(),
                               rtol=0, atol=1e-10)


# ---- preconditioned GD ------------------------------------------------------------------------

def preconditioned_gd(matrices):
    """w ← w − A_t Xᵀ(Xw − y)/i for each matrix A_t in turn."""
    def fit(X, y):
        w = np.zeros(X.shape[1])
        for a in matrices:
            w = w - a @ (X.T @ (X @ w - y)) / len(y)
        return w
    return fit


def test_preconditioned_gd_matches_numpy_loop():
    xs, ys = prompt(5, 12, 4)
    p = torch.randn(4, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 0.3
    check(PreconditionedGD(4, 0.3, p), linear(preconditioned_gd([0.3 * p.numpy()] * 4)), xs, ys,
          rtol=1e-10, atol=1e-12)


def test_stepwise_preconditioned_gd_matches_numpy_loop():
    xs, ys = prompt(5, 12, 4)
    matrices = torch.randn(3, 4, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64) * 0.3
    check(StepwisePreconditionedGD(matrices), linear(preconditioned_gd(matrices.numpy())), xs, ys,
          rtol=1e-10, atol=1e-12)
    p = torch.eye(4, dtype=torch.float64) + 0.1
    torch.testing.assert_close(StepwisePreconditionedGD(torch.stack([0.3 * p] * 4)).predict(xs, ys),
                               PreconditionedGD(4, 0.3, p).predict(xs, ys), rtol=1e-13, atol=1e-13)


def test_preconditioned_gd_with_identity_is_gd():
    xs, ys = prompt()
    torch.testing.assert_close(PreconditionedGD(6, 0.2, torch.eye(5)).predict(xs, ys),
                               GD(6, 0.2).predict(xs, ys), rtol=1e-13, atol=1e-13)


def test_one_preconditioned_step_is_scaled_preconditioned_average():
    xs, ys = prompt()
    p = torch.diag(torch.arange(1.0, 6.0, dtype=torch.float64))
    expected = per_prefix_weights(lambda X, y: 0.7 * p.numpy() @ (y @ X) / max(len(y), 1), xs, ys)
    np.testing.assert_allclose(PreconditionedGD(1, 0.7, p).weights(xs, ys).numpy(), expected,
                               rtol=1e-13, atol=1e-13)


# ---- GD++ ---------------------------------------------------------------------------------------

def gd_plus_plus_tokens(step_sizes, corrections):
    """Literal token-matrix GD++: rows (x_j, y_j) for the context and (x_q, 0) for the query."""
    def predict_one(X, y, x):
        i, d = X.shape
        tokens = np.vstack([np.column_stack([X, y]), np.append(x, 0.0)])
        for lr, gamma in zip(step_sizes, corrections):
            xc, rc = tokens[:i, :d], tokens[:i, d]
            gram, m = xc.T @ xc / i, xc.T @ rc / i
            new = tokens.copy()
            new[:, d] = tokens[:, d] - lr * tokens[:, :d] @ m
            new[:, :d] = tokens[:, :d] - gamma * tokens[:, :d] @ gram
            tokens = new
        return -tokens[i, d]
    return predict_one


@pytest.mark.parametrize("steps, lr, gamma, dim", [(1, 0.5, 0.3, 4), (4, 0.4, 0.2, 4), (6, 0.3, 0.1, 7)])
def test_gd_plus_plus_matches_token_loop(steps, lr, gamma, dim):
    xs, ys = prompt(4, 12, dim)
    check(GDPlusPlus(steps, lr, gamma), gd_plus_plus_tokens([lr] * steps, [gamma] * steps), xs, ys,
          rtol=1e-9, atol=1e-11)


def test_stepwise_gd_plus_plus_matches_token_loop():
    xs, ys = prompt(4, 12, 4)
    step_sizes, corrections = (0.2, 0.9, 0.5), (0.3, 0.1, 0.4)
    check(StepwiseGDPlusPlus(step_sizes, corrections), gd_plus_plus_tokens(step_sizes, corrections), xs, ys,
          rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(StepwiseGDPlusPlus([0.4] * 3, [0.2] * 3).predict(xs, ys),
                               GDPlusPlus(3, 0.4, 0.2).predict(xs, ys), rtol=1e-13, atol=1e-13)


def test_gd_in_the_eigenbasis_is_gd():
    """The step tuner's O(d)-per-step form of GD equals the matrix iteration the baselines run."""
    xs, ys = prompt(4, 12, 5)
    gram, moment = context_statistics(xs, ys)
    sizes = [0.3, 0.9, 0.5, 1.2]
    torch.testing.assert_close(in_eigenbasis(gradient_descent_spectral, gram, moment, sizes),
                               gradient_descent(gram, moment, sizes), rtol=1e-12, atol=1e-13)


def test_gd_plus_plus_with_zero_gamma_is_gd():
    xs, ys = prompt()
    torch.testing.assert_close(GDPlusPlus(5, 0.3, 0.0).predict(xs, ys), GD(5, 0.3).predict(xs, ys),
                               rtol=1e-13, atol=1e-13)


def test_gd_plus_plus_beats_gd_on_ill_conditioned_inputs():
    """The curvature correction is the point of GD++: with cond(Ĝ) ≈ 16, 5 steps of GD++ (which
    tolerate a larger lr) get closer to OLS than 5 GD steps at the best lr of a grid."""
    xs, ys = prompt(64, 40, 4, noise=0.0)
    xs = xs * torch.tensor([1.0, 1.0, 0.5, 0.25], dtype=torch.float64)
    ols = OLS().predict(xs, ys)[:, 20:]
    gd_error = min(((GD(5, lr).predict(xs, ys)[:, 20:] - ols) ** 2).mean() for lr in (0.5, 0.75, 1.0, 1.25))
    plus_error = ((GDPlusPlus(5, 1.8, 0.1).predict(xs, ys)[:, 20:] - ols) ** 2).mean()
    assert plus_error < 0.6 * gd_error


# ---- Newton -------------------------------------------------------------------------------------

def newton_numpy(steps, scale=2.0):
    """Fu et al.'s code: M_0 = scale/‖S Sᵀ‖_F · S (scale 2), M <- 2M − M S M, w = M Xᵀy."""
    def fit(X, y):
        s = X.T @ X
        norm = np.linalg.norm(s @ s.T, "fro") if len(y) else 0.0
        m = scale / norm * s if norm > 0 else np.zeros_like(s)
        for _ in range(steps):
            m = 2 * m - m @ s @ m
        return m @ X.T @ y
    return fit


@pytest.mark.parametrize("steps, scale", [(0, 2.0), (1, 2.0), (4, 2.0), (3, 1.5), (3, 0.4)])
def test_newton_matches_numpy_loop(steps, scale):
    xs, ys = prompt(4, 12, 5)
    check(Newton(steps, scale), linear(newton_numpy(steps, scale)), xs, ys, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dim", [4, 12])
def test_newton_converges_to_min_norm_ols(dim):
    """Prefixes with 2 <= i <= d/4 (n < d) or i >= 4d are well conditioned; 40 steps are plenty."""
    xs, ys = prompt(6, 4 * dim + 10, dim)
    newton, ols = Newton(40).weights(xs, ys), OLS().weights(xs, ys)
    positions = [i for i in range(2, xs.shape[1]) if i <= max(dim // 4, 2) or i >= 4 * dim]
    torch.testing.assert_close(newton[:, positions], ols[:, positions], rtol=1e-8, atol=1e-8)


def test_newton_with_fu_scale_loses_a_single_point_and_a_smaller_scale_does_not():
    """Rank-one S: α = 2/‖S Sᵀ‖_F = 2/λ² puts the only eigenvalue of M_0 S at 2, which maps to 0."""
    xs, ys = prompt(3, 4, 3)
    stuck = Newton(10).weights(xs, ys)[:, 1]  # in floating point it creeps back only after ~50 steps
    torch.testing.assert_close(stuck, torch.zeros(3, 3, dtype=torch.float64), atol=1e-9, rtol=0)
    torch.testing.assert_close(Newton(30, scale=1.0).weights(xs, ys)[:, 1], OLS().weights(xs, ys)[:, 1])


def test_newton_converges_much_faster_than_gd():
    xs, ys = prompt(16, 60, 5, noise=0.0)
    ols = OLS().predict(xs, ys)[:, 30:]
    newton_error = ((Newton(8).predict(xs, ys)[:, 30:] - ols) ** 2).mean()
    gd_error = ((GD(8, 0.5).predict(xs, ys)[:, 30:] - ols) ** 2).mean()
    assert newton_error < 1e-6 * gd_error


# ---- Ridge.bayes_optimal and recursive least squares ------------------------------------------

def test_bayes_optimal_ridge_is_noise_over_prior_variance():
    assert Ridge.bayes_optimal(0.5, 2.0).lam == pytest.approx(0.0625)
    assert Ridge.bayes_optimal(noise=1.0, prior_scale=1.0).lam == 1.0


@pytest.mark.parametrize("lam", [0.1, 1.0, 3.0])
def test_recursive_least_squares_equals_ridge(lam):
    xs, ys = prompt(5, 40, 6)
    np.testing.assert_allclose(RecursiveLeastSquares(lam).weights(xs, ys).numpy(),
                               Ridge(lam).weights(xs, ys).numpy(), rtol=0, atol=1e-9)


# ---- discrete MMSE ------------------------------------------------------------------------------

def discrete_mmse_numpy(pool, noise):
    def fit(X, y):
        losses = np.array([np.sum((y - X @ w) ** 2) for w in pool]) / (2 * noise ** 2)
        weights = np.exp(-(losses - losses.min()))
        return (weights / weights.sum()) @ pool
    return fit


@pytest.mark.parametrize("size, noise", [(1, 0.5), (4, 0.5), (16, 1.0), (16, 0.05)])
def test_discrete_mmse_matches_numpy_loop(size, noise):
    xs, ys = prompt(4, 10, 3)
    pool = torch.randn(size, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    np.testing.assert_allclose(DiscreteMMSE(pool, noise).weights(xs, ys).numpy(),
                               per_prefix_weights(discrete_mmse_numpy(pool.numpy(), noise), xs, ys),
                               rtol=1e-10, atol=1e-12)


def test_discrete_mmse_starts_at_pool_mean_and_single_task_pool_is_that_task():
    xs, ys = prompt(3, 8, 3)
    pool = torch.randn(5, 3, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    torch.testing.assert_close(DiscreteMMSE(pool, 0.3).weights(xs, ys)[:, 0], pool.mean(0).expand(3, 3))
    single = DiscreteMMSE(pool[:1], 0.3).weights(xs, ys)
    torch.testing.assert_close(single, pool[0].expand(3, 8, 3), rtol=0, atol=0)


def test_discrete_mmse_is_stable_for_huge_residuals_and_the_same_in_batch_chunks(monkeypatch):
    g = torch.Generator().manual_seed(0)
    xs, pool = torch.randn(10, 4, 3, generator=g, dtype=torch.float64), torch.randn(50, 3, generator=g,
                                                                                   dtype=torch.float64)
    huge = DiscreteMMSE(pool, 1e-3).weights(xs, 100 * xs @ pool[3])  # logits ~ -1e8: log-sum-exp keeps it finite
    assert torch.isfinite(huge).all()
    whole = DiscreteMMSE(pool, 0.5).weights(xs, xs @ pool[7] + 0.1)
    monkeypatch.setattr(DiscreteMMSE, "chunk_elements", 1)
    torch.testing.assert_close(DiscreteMMSE(pool, 0.5).weights(xs, xs @ pool[7] + 0.1), whole, rtol=1e-13, atol=0)


def test_discrete_mmse_identifies_the_task_in_the_pool():
    """Noiseless labels from pool row 2: the posterior concentrates on it."""
    pool = torch.randn(6, 4, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    xs = prompt(3, 20, 4)[0]
    ys = xs @ pool[2]
    torch.testing.assert_close(DiscreteMMSE(pool, 0.1).weights(xs, ys)[:, -1], pool[2].expand(3, 4))


# ---- power method -------------------------------------------------------------------------------

def power_numpy(steps):
    def fit(X, y):
        d = X.shape[1]
        v = np.full(d, d ** -0.5)
        if len(X) == 0:
            return v
        g = X.T @ X / len(X)
        for _ in range(steps):
            image = g @ v
            v = image / np.linalg.norm(image)
        return v
    return fit


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_power_method_matches_numpy_loop(steps):
    xs, ys = prompt(4, 10, 5)
    np.testing.assert_allclose(PowerMethod(steps).directions(xs).numpy(),
                               per_prefix_weights(power_numpy(steps), xs, ys), rtol=1e-12, atol=1e-13)


def test_power_method_finds_the_top_eigenvector():
    """Points with a clear top axis (scales 3, 1, 0.5): |cos| with numpy's eigh vector → 1."""
    g = torch.Generator().manual_seed(4)
    rotation = torch.linalg.qr(torch.randn(3, 3, generator=g, dtype=torch.float64))[0]
    xs = torch.randn(5, 30, 3, generator=g, dtype=torch.float64) * torch.tensor([3.0, 1.0, 0.5]) @ rotation.T
    directions = PowerMethod(60).directions(xs).numpy()
    for b in range(5):
        for i in (10, 29):
            top = np.linalg.eigh(xs[b, :i].numpy().T @ xs[b, :i].numpy())[1][:, -1]
            assert abs(directions[b, i] @ top) == pytest.approx(1.0, abs=1e-10)
    np.testing.assert_allclose(np.linalg.norm(directions, axis=-1), 1.0, rtol=1e-13)
    assert (directions.sum(-1) >= 0).all()  # the sign convention: non-negative overlap with 1


def test_power_method_does_not_peek():
    """directions[:, :i+1] must not change when xs[:, i:] changes (it uses points < i only)."""
    xs = prompt(3, 9, 4)[0]
    reference = PowerMethod(4).directions(xs)
    assert PowerMethod(4).predict(xs, None).shape == xs.shape
    generator = torch.Generator().manual_seed(1234)
    for i in range(xs.shape[1]):
        changed = xs.clone()
        changed[:, i:] = 10 * torch.randn(xs[:, i:].shape, generator=generator, dtype=torch.float64)
        torch.testing.assert_close(PowerMethod(4).directions(changed)[:, : i + 1], reference[:, : i + 1],
                                   rtol=0, atol=1e-12)


# ---- constructor and dimension errors ----------------------------------------------------------
# The predictor contract (no peeking, float64, bad shapes) and the generic constructor errors (NaN, inf,
# strings, negative or non-integer counts, 1-d tensors) are tests/test_contracts.py's, for every baseline.

@pytest.mark.parametrize("make, name", [
    (lambda: PreconditionedGD(1, 0.1, torch.ones(2, 3)), "preconditioner"),
    (lambda: PreconditionedGD(1, 0.1, [[1.0]]), "preconditioner"),
    (lambda: StepwisePreconditionedGD(torch.eye(2)), "preconditioners"),
    (lambda: StepwisePreconditionedGD(torch.ones(2, 2, 3)), "preconditioners"),
    (lambda: StepwiseGDPlusPlus([0.1, 0.2], [0.1]), "corrections"),
    (lambda: Newton(2, 0.0), "scale"), (lambda: Newton(2, 2.5), "scale"),
    (lambda: Ridge.bayes_optimal(0.0, 1.0), "noise"), (lambda: Ridge.bayes_optimal(-1.0, 1.0), "noise"),
    (lambda: Ridge.bayes_optimal(1.0, 0.0), "prior_scale"), (lambda: Ridge.bayes_optimal(1.0, -2.0), "prior_scale"),
    (lambda: RecursiveLeastSquares(0.0), "lam"),
    (lambda: DiscreteMMSE(torch.ones(0, 2), 0.1), "pool"), (lambda: DiscreteMMSE(torch.ones(3, 2), 0.0), "noise"),
])
def test_bad_parameters_name_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize("baseline, name", [
    (PreconditionedGD(1, 0.1, torch.eye(3)), "preconditioner"),
    (StepwisePreconditionedGD(torch.eye(3)[None]), "preconditioners"), (DiscreteMMSE(torch.ones(2, 3), 0.1), "pool")])
def test_dimension_mismatch_names_the_parameter(baseline, name):
    with pytest.raises(ValueError, match=name):
        baseline.predict(*prompt(2, 5, 4))

