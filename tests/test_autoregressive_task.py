"""Tests for the autoregressive (linear dynamical system) task and its baselines.

References are independent numpy computations; Monte Carlo checks allow ``Z = 5``
standard errors (derived next to each check) and use fixed seeds.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny_runs import train_and_evaluate
from icl_sim.tasks import TASKS, Autoregressive, make_task
from icl_sim.theory.sequence_baselines import OneStepGD, VectorOLS

from icl_sim.seeding import make_generator

Z = 5.0


def draw(task, batch, seed=0, **options):
    options.setdefault("dtype", torch.float64)
    prompt = task.sample(batch, make_generator(seed, "eval"), **options)
    return prompt.xs.numpy(), prompt.ys.numpy(), prompt.latent["W"].numpy()


# -- the recurrence ----------------------------------------------------------------------
@pytest.mark.parametrize("transition", ["orthogonal", "diagonal-unitary", "contractive"])
@pytest.mark.parametrize("initial", ["gaussian", "sparse", "ones"])
def test_noiseless_recurrence(transition, initial):
    task = Autoregressive(dim=5, points=12, transition=transition, initial=initial)
    xs, ys, w = draw(task, 6)
    assert xs.shape == (6, 12, 5) and ys.shape == (6, 12, 5) and w.shape == (6, 5, 5)
    # the next state is the next query, bit for bit
    np.testing.assert_array_equal(xs[:, 1:], ys[:, :-1])
    # ys[:, t] = W x_t: numpy matmul per prompt and step (rounding-level agreement)
    reference = np.stack([[w[b] @ xs[b, t] for t in range(12)] for b in range(6)])
    np.testing.assert_allclose(ys, reference, rtol=0, atol=1e-12 * max(1.0, np.abs(xs).max()))
    # float32 sampling satisfies the same recurrence in float32
    prompt = task.sample(6, make_generator(0, "eval"))
    assert prompt.xs.dtype == torch.float32 and prompt.ys.dtype == torch.float32
    assert torch.equal(prompt.xs[:, 1:], prompt.ys[:, :-1])
    ref32 = torch.einsum("bij,btj->bti", prompt.latent["W"].double(), prompt.xs.double())
    torch.testing.assert_close(prompt.ys.double(), ref32, rtol=1e-5, atol=1e-5)


def test_transition_noise_has_the_stated_standard_deviation():
    sigma, dim = 0.2, 4
    task = Autoregressive(dim=dim, points=50, noise=sigma, transition="orthogonal")
    xs, ys, w = draw(task, 200, seed=1)
    np.testing.assert_array_equal(xs[:, 1:], ys[:, :-1])
    residual = ys - np.einsum("bij,btj->bti", w, xs)  # 40 000 iid N(0, σ²) values
    n = residual.size
    assert abs(residual.mean()) <= Z * sigma / math.sqrt(n)
    # SE of mean(r²) is σ²·√(2/n)
    assert abs((residual**2).mean() - sigma**2) <= Z * sigma**2 * math.sqrt(2 / n)
    # ε_t is independent of the current state x_t: correlation per coordinate ~ N(0, 1/n') with
    # n' = B·N pairs; normalise by the state's rms
    corr = (residual * xs).reshape(-1, dim).mean(0) / (sigma * np.sqrt((xs**2).reshape(-1, dim).mean(0)))
    assert np.all(np.abs(corr) <= Z / math.sqrt(200 * 50))


# -- laws of W ---------------------------------------------------------------------------
def test_orthogonal_transition_is_haar():
    dim, batch = 4, 3000
    _, _, w = draw(Autoregressive(dim=dim, points=1, transition="orthogonal"), batch, seed=2)
    eye = np.broadcast_to(np.eye(dim), w.shape)
    np.testing.assert_allclose(w @ np.swapaxes(w, 1, 2), eye, atol=1e-12)
    # Haar on O(d): entries have mean 0 and variance 1/d; the trace has mean 0 and E tr² = 1
    assert np.all(np.abs(w.mean(0)) <= Z * math.sqrt(1 / (dim * batch)))
    # E w_ij⁴ = 3/(d(d+2)) for Haar, so var(w_ij²) = 3/(d(d+2)) − 1/d²
    se = math.sqrt((3 / (dim * (dim + 2)) - 1 / dim**2) / batch)
    assert np.all(np.abs((w**2).mean(0) - 1 / dim) <= Z * se)
    traces = np.trace(w, axis1=1, axis2=2)
    assert abs(traces.mean()) <= Z / math.sqrt(batch)


@pytest.mark.parametrize("dim", [4, 5])
def test_diagonal_unitary_is_rotation_blocks_with_uniform_angles(dim):
    batch = 4000
    _, _, w = draw(Autoregressive(dim=dim, points=1, transition="diagonal-unitary"), batch, seed=3)
    blocks = dim // 2
    mask = np.zeros((dim, dim), dtype=bool)
    for k in range(blocks):
        mask[2 * k:2 * k + 2, 2 * k:2 * k + 2] = True
    if dim % 2:
        mask[-1, -1] = True
    assert np.all(w[:, ~mask] == 0)  # block diagonal
    angles = []
    for k in range(blocks):
        block = w[:, 2 * k:2 * k + 2, 2 * k:2 * k + 2]
        c, s = block[:, 0, 0], block[:, 1, 0]
        np.testing.assert_array_equal(block[:, 1, 1], c)
        np.testing.assert_array_equal(block[:, 0, 1], -s)
        np.testing.assert_allclose(c**2 + s**2, 1.0, atol=1e-14)
        angles.append(np.mod(np.arctan2(s, c), 2 * np.pi))
    # every eigenvalue on the unit circle (numpy's general eigen-solver)
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(w)), 1.0, atol=1e-10)
    # angles uniform on [0, 2π): Kolmogorov-Smirnov, 0.1% critical value 1.95/√n
    values = np.sort(np.concatenate(angles)) / (2 * np.pi)
    m = values.size
    ks = max(np.max(np.arange(1, m + 1) / m - values), np.max(values - np.arange(m) / m))
    assert ks <= 1.95 / math.sqrt(m)
    if dim % 2:
        last = w[:, -1, -1]
        assert set(np.unique(last)) == {-1.0, 1.0}
        # Binomial(B, 1/2) count of +1: SE √B/2
        assert abs((last > 0).sum() - batch / 2) <= Z * math.sqrt(batch) / 2


def test_contractive_spectral_radius():
    rho = 0.7
    task = Autoregressive(dim=6, points=30, transition="contractive", spectral_radius=rho)
    xs, _, w = draw(task, 50, seed=4)
    radius = np.abs(np.linalg.eigvals(w)).max(axis=1)
    np.testing.assert_allclose(radius, rho, rtol=1e-10)
    assert not np.allclose(w[0], w[1])
    # the states decay: ‖x_t‖ is far below ‖x_0‖ after 30 steps on average
    norms = np.linalg.norm(xs, axis=-1)
    assert np.median(norms[:, -1] / norms[:, 0]) < 0.5


# -- laws of x_0 -------------------------------------------------------------------------
def test_initial_token_laws():
    dim, batch, s = 5, 5000, 1.5
    x0 = draw(Autoregressive(dim=dim, points=1, initial="gaussian", initial_scale=s), batch, seed=5)[0][:, 0]
    n = x0.size  # 25 000 iid N(0, s²) values
    assert abs(x0.mean()) <= Z * s / math.sqrt(n)
    assert abs((x0**2).mean() - s**2) <= Z * s**2 * math.sqrt(2 / n)

    x0 = draw(Autoregressive(dim=dim, points=1, initial="sparse", initial_scale=s), batch, seed=6)[0][:, 0]
    assert np.all(np.count_nonzero(x0, axis=1) == 1)
    np.testing.assert_array_equal(np.abs(x0).sum(1), s)  # magnitude exactly s
    # support index uniform over d: chi-square with d−1 = 4 dof, 0.1% critical value 18.47
    counts = np.count_nonzero(x0, axis=0)
    expected = batch / dim
    assert ((counts - expected) ** 2 / expected).sum() <= 18.47
    # random sign: Binomial(B, 1/2), SE √B/2
    assert abs((x0.sum(1) > 0).sum() - batch / 2) <= Z * math.sqrt(batch) / 2

    x0 = draw(Autoregressive(dim=dim, points=1, initial="ones", initial_scale=s), 3, seed=7)[0][:, 0]
    np.testing.assert_allclose(x0, s / math.sqrt(dim), rtol=1e-15)


def test_trivial_error_closed_forms():
    # against Monte Carlo (orthogonal W, gaussian x_0 at scale 0.8): tests/test_contracts.py
    assert Autoregressive(dim=4, initial="sparse").trivial_error() == pytest.approx(0.25)
    assert Autoregressive(dim=4, noise=0.1).trivial_error() is None
    assert Autoregressive(dim=4, transition="contractive").trivial_error() is None


# -- baselines ---------------------------------------------------------------------------
def numpy_one_step_gd(xs, ys, lr):
    batch, n, _ = xs.shape
    out = np.zeros_like(ys)
    for b in range(batch):
        for t in range(1, n):
            w_hat = lr / t * sum(np.outer(ys[b, j], xs[b, j]) for j in range(t))
            out[b, t] = w_hat @ xs[b, t]
    return out


def numpy_ols(xs, ys):
    batch, n, _ = xs.shape
    out = np.zeros_like(ys)
    for b in range(batch):
        for t in range(1, n):
            coef = np.linalg.lstsq(xs[b, :t], ys[b, :t], rcond=None)[0]  # (d, k) = Ŵᵀ, min-norm
            out[b, t] = xs[b, t] @ coef
    return out


def test_one_step_gd_matches_numpy_loop():
    task = Autoregressive(dim=3, points=9, noise=0.1, transition="orthogonal")
    prompt = task.sample(4, make_generator(9, "eval"), dtype=torch.float64)
    for lr in (1.0, 0.37):
        preds = OneStepGD(lr).predict(prompt.xs, prompt.ys)
        assert preds.dtype == torch.float64 and preds.shape == (4, 9, 3)
        np.testing.assert_allclose(preds.numpy(), numpy_one_step_gd(prompt.xs.numpy(), prompt.ys.numpy(), lr),
                                   rtol=1e-12, atol=1e-13)
    # the task's baseline uses gd_step
    baseline = Autoregressive(dim=3, gd_step=0.37).baselines()["one-step GD"]
    assert baseline.lr == 0.37


def test_vector_ols_matches_numpy_lstsq_per_prefix():
    task = Autoregressive(dim=4, points=10, noise=0.3, transition="contractive")
    prompt = task.sample(5, make_generator(10, "eval"), dtype=torch.float64)
    preds = VectorOLS().predict(prompt.xs, prompt.ys).numpy()
    np.testing.assert_allclose(preds, numpy_ols(prompt.xs.numpy(), prompt.ys.numpy()), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("transition", ["orthogonal", "diagonal-unitary", "contractive"])
def test_ols_recovers_w_after_d_transitions(transition):
    dim = 4
    task = Autoregressive(dim=dim, points=10, transition=transition, initial="gaussian")
    prompt = task.sample(16, make_generator(11, "eval"), dtype=torch.float64)
    preds = VectorOLS().predict(prompt.xs, prompt.ys)
    w, xs = prompt.latent["W"], prompt.xs
    exact = torch.einsum("bij,btj->bti", w, xs)  # == ys without noise
    scale = torch.linalg.vector_norm(exact, dim=-1, keepdim=True)
    # from position d on, the d context states span R^d (Krylov space of a generic x_0), so Ŵ = W
    torch.testing.assert_close(preds[:, dim:] / scale[:, dim:], exact[:, dim:] / scale[:, dim:],
                               rtol=0, atol=1e-7)
    # before that, OLS only knows W on a proper subspace: at position 1 it is generally wrong
    assert (torch.linalg.vector_norm(preds[:, 1] - exact[:, 1], dim=-1) / scale[:, 1, 0]).min() > 1e-3


def test_sparse_initial_token_confines_rotation_blocks():
    # a one-hot x_0 under rotation blocks stays in its 2-D block: OLS cannot recover W, only that block
    task = Autoregressive(dim=4, points=10, transition="diagonal-unitary", initial="sparse")
    prompt = task.sample(8, make_generator(12, "eval"), dtype=torch.float64)
    active = (prompt.xs != 0).any(dim=1).sum(-1)
    assert torch.all(active <= 2)
    preds = VectorOLS().predict(prompt.xs, prompt.ys)
    torch.testing.assert_close(preds[:, 2:], prompt.ys[:, 2:], rtol=0, atol=1e-9)  # on the orbit it is exact


def test_baselines_and_zero_is_zero():
    # no peeking: tests/test_contracts.py
    task = Autoregressive(dim=3, points=7, noise=0.1)
    prompt = task.sample(3, make_generator(13, "eval"), dtype=torch.float64)
    baselines = task.baselines()
    assert set(baselines) == {"one-step GD", "OLS", "Zero"}
    assert torch.all(baselines["Zero"].predict(prompt.xs, prompt.ys) == 0)
    with pytest.raises(ValueError, match="ys"):
        OneStepGD().predict(prompt.xs, prompt.ys[..., 0])


# -- overrides, validation, scale --------------------------------------------------------
def test_active_dims_and_points_overrides():
    task = Autoregressive(dim=6, points=5, transition="orthogonal")
    xs, ys, w = draw(task, 3, points=8, active_dims=2)
    assert xs.shape == (3, 8, 6) and ys.shape == (3, 8, 6)
    assert np.all(xs[..., 2:] == 0) and np.all(ys[..., 2:] == 0) and np.all(w[:, 2:] == 0) and np.all(w[:, :, 2:] == 0)
    np.testing.assert_allclose(w[:, :2, :2] @ np.swapaxes(w[:, :2, :2], 1, 2), np.broadcast_to(np.eye(2), (3, 2, 2)),
                               atol=1e-12)
    np.testing.assert_allclose(ys, np.einsum("bij,btj->bti", w, xs), atol=1e-12)


# NaN, inf, unknown choices, non-integer sizes, bad sample arguments: tests/test_contracts.py, for every task
@pytest.mark.parametrize("params, name", [
    (dict(dim=0), "dim"), (dict(points=0), "points"), (dict(noise=-0.1), "noise"),
    (dict(spectral_radius=1.0), "spectral_radius"), (dict(spectral_radius=0.0), "spectral_radius"),
    (dict(spectral_radius=1.5), "spectral_radius"), (dict(initial_scale=0.0), "initial_scale"),
])
def test_invalid_parameters_name_themselves(params, name):
    with pytest.raises(ValueError, match=name):
        Autoregressive(**params)
    with pytest.raises(ValueError, match=name):
        make_task("autoregressive", **params)


@pytest.mark.parametrize("transition", ["orthogonal", "diagonal-unitary", "contractive"])
def test_large_dimension_sampling(transition):
    task = Autoregressive(dim=512, points=4, transition=transition, noise=0.01)
    prompt = task.sample(2, make_generator(0, "eval"))
    assert prompt.xs.shape == (2, 4, 512) and prompt.latent["W"].shape == (2, 512, 512)
    assert torch.isfinite(prompt.xs).all() and torch.isfinite(prompt.ys).all()
    assert task.target_dim == 512 and TASKS["autoregressive"] is Autoregressive


def test_tiny_gpt_trains_and_evaluates(tmp_path):
    params = {"dim": 3, "points": 12, "transition": "orthogonal"}
    records = train_and_evaluate(tmp_path / "run", "autoregressive", params, steps=200)
    final = {r["predictor"]: r["mean"] for r in records if r["position"] == params["points"] - 1}
    assert set(final) == {"gpt (trained)", "one-step GD", "OLS", "Zero"}
    assert all(math.isfinite(v) and v >= 0 for v in final.values())
    # noiseless: OLS is exact at the last position (11 ≥ d transitions); Zero scores E‖x‖²/d = 1
    assert final["OLS"] < 1e-10
    assert final["Zero"] == pytest.approx(1.0, rel=0.3)
    # 200 steps of a one-layer GPT: it should at least do better than predicting 0
    assert final["gpt (trained)"] < final["Zero"]
