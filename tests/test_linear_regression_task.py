"""Tests for the linear-regression task: numbers checked against independent references.

Determinism, dtype and device, generic bad parameters and trivial error against Monte Carlo:
tests/test_contracts.py.

Monte Carlo tolerances are derived from the sample size and stated next to each check.
Unless said otherwise a check allows ``Z = 5`` standard errors: for one gaussian-ish
statistic the false-alarm probability is about 6e-7, and with the fixed seeds below
every test is deterministic anyway (the bound is there to show the margin is honest,
not tuned to a lucky seed).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icl_sim.params import parameter_table, parse_parameters
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASKS, LinearRegression, make_task
from icl_sim.tasks.linear_regression import _haar_rotation

Z = 5.0  # standard errors allowed for one Monte Carlo statistic


def draw(task: LinearRegression, batch: int, seed: int = 0, **options):
    """A float64 prompt from the eval stream, as numpy arrays (xs, ys, w, covariance)."""
    options.setdefault("dtype", torch.float64)
    prompt = task.sample(batch, make_generator(seed, "eval"), **options)
    return (prompt.xs.numpy(), prompt.ys.numpy(), prompt.latent["w"].numpy(),
            prompt.latent["covariance"].numpy())


def second_moment(x: np.ndarray) -> np.ndarray:
    """E[x xᵀ] estimated from rows of ``x`` (n, d); the mean is known to be 0, so no centring."""
    return x.T @ x / x.shape[0]


def assert_variance(samples: np.ndarray, variance: float, what: str):
    """Sample variance (mean known 0) of gaussian samples within Z standard errors.

    For n iid N(0, v) values, mean(x²) has standard error v·sqrt(2/n).
    """
    n = samples.size
    estimate = float(np.mean(samples**2))
    tolerance = Z * variance * math.sqrt(2.0 / n)
    assert abs(estimate - variance) <= tolerance, f"{what}: {estimate} vs {variance} ± {tolerance}"


def geometric_spectrum(dim: int, kappa: float) -> np.ndarray:
    """Eigenvalues κ^(-k/(d-1)), k = 0..d-1 (1 down to 1/κ), rescaled to mean 1."""
    eigs = kappa ** (-np.arange(dim) / (dim - 1))
    return eigs * dim / eigs.sum()


# -- labels ------------------------------------------------------------------------------
def test_noiseless_labels_are_exactly_linear():
    task = LinearRegression(dim=5, points=12)
    xs, ys, w, _ = draw(task, 16)
    assert xs.shape == (16, 12, 5) and ys.shape == (16, 12) and w.shape == (16, 5)
    # independent float64 reference: numpy matmul, per prompt
    reference = np.stack([xs[b] @ w[b] for b in range(16)])
    np.testing.assert_allclose(ys, reference, rtol=1e-12, atol=1e-12)
    # float32 sampling: labels are the float32 product, no noise sneaks in
    prompt = task.sample(16, make_generator(0, "eval"))
    assert prompt.ys.dtype == torch.float32
    ref32 = torch.einsum("bnd,bd->bn", prompt.xs.double(), prompt.latent["w"].double())
    torch.testing.assert_close(prompt.ys.double(), ref32, rtol=1e-5, atol=1e-5)


def test_label_noise_has_the_stated_standard_deviation():
    sigma = 0.3
    task = LinearRegression(dim=4, points=50, noise=sigma)
    xs, ys, w, _ = draw(task, 400, seed=1)
    residual = ys - np.einsum("bnd,bd->bn", xs, w)  # n = 20 000 iid N(0, σ²) values
    n = residual.size
    # mean: standard error σ/√n (≈ 0.0021), allow Z of them
    assert abs(residual.mean()) <= Z * sigma / math.sqrt(n)
    # variance: standard error of mean(r²) is σ²·√(2/n) (≈ 0.0009 at σ² = 0.09)
    assert_variance(residual, sigma**2, "noise variance")
    # noise is independent of x: correlation with each coordinate ~ N(0, 1/n)
    corr = (residual[..., None] * xs).reshape(-1, 4).mean(0) / sigma
    assert np.all(np.abs(corr) <= Z / math.sqrt(n))


# -- law of x ----------------------------------------------------------------------------
def test_gaussian_identity_covariance():
    dim = 4
    task = LinearRegression(dim=dim, points=100)
    xs, _, _, cov = draw(task, 100, seed=2)
    np.testing.assert_array_equal(cov, np.broadcast_to(np.eye(dim), (100, dim, dim)))
    x = xs.reshape(-1, dim)  # n = 10 000 iid N(0, I) rows
    n = x.shape[0]
    # entry (i, j) of mean(x xᵀ): var(x_i x_j) = 1 + δ_ij, so SE = sqrt((1 + δ_ij)/n)
    se = np.sqrt((1.0 + np.eye(dim)) / n)
    assert np.all(np.abs(second_moment(x) - np.eye(dim)) <= Z * se)
    assert np.all(np.abs(x.mean(0)) <= Z / math.sqrt(n))


def test_uniform_inputs_bounds_variance_and_law():
    a, dim = 0.5, 3
    task = LinearRegression(dim=dim, points=200, x_distribution="uniform", x_bound=a)
    xs, _, _, cov = draw(task, 100, seed=3)
    # analytic latent covariance a²/3 · I
    np.testing.assert_allclose(cov, np.broadcast_to(a**2 / 3 * np.eye(dim), cov.shape), rtol=1e-15)
    # support: inside (-a, a); torch.rand lies in [0, 1), so -a itself has probability
    # 2^-53 per float64 entry (≈ 0 here) and +a is never reached
    assert np.all(xs > -a) and np.all(xs < a)
    assert xs.max() > 0.999 * a and xs.min() < -0.999 * a  # and the whole interval is used
    x = xs.reshape(-1, dim)
    n = x.shape[0]  # 20 000 rows
    # variance a²/3: var(z²) = E z⁴ - (E z²)² = a⁴/5 - a⁴/9 = 4a⁴/45, SE = sqrt(4a⁴/45 / n)
    se = math.sqrt(4 * a**4 / 45 / n)
    assert np.all(np.abs((x**2).mean(0) - a**2 / 3) <= Z * se)
    # off-diagonal E[z_i z_j] = 0 with SE (a²/3)/√n
    off = second_moment(x)[~np.eye(dim, dtype=bool)]
    assert np.all(np.abs(off) <= Z * (a**2 / 3) / math.sqrt(n))
    # the law is uniform, not just the variance: Kolmogorov-Smirnov distance of the
    # 60 000 pooled coordinates to U(-a, a); the 0.1% critical value is 1.95/√n
    values = np.sort(xs.ravel())
    m = values.size
    cdf = (values + a) / (2 * a)
    ks = max(np.max(np.arange(1, m + 1) / m - cdf), np.max(cdf - np.arange(m) / m))
    assert ks <= 1.95 / math.sqrt(m)


# -- covariance: condition number, spectrum, rotation -----------------------------------
@pytest.mark.parametrize("kappa", [10.0, 1e4])
def test_condition_number_spectrum(kappa):
    dim = 6
    task = LinearRegression(dim=dim, points=5, condition_number=kappa)
    expected = geometric_spectrum(dim, kappa)
    # geometric: constant ratio between neighbours, mean 1, end ratio κ
    np.testing.assert_allclose(expected[1:] / expected[:-1], kappa ** (-1 / (dim - 1)), rtol=1e-12)
    np.testing.assert_allclose(task.eigenvalues.numpy(), expected, rtol=1e-12)
    _, _, _, cov = draw(task, 8, seed=4)
    np.testing.assert_allclose(cov, np.swapaxes(cov, 1, 2), atol=1e-12)  # symmetric
    for c in cov:
        eigs = np.linalg.eigvalsh(c)  # ascending
        np.testing.assert_allclose(eigs, expected[::-1], rtol=1e-9)
        assert eigs.mean() == pytest.approx(1.0, rel=1e-12)
        assert eigs[-1] / eigs[0] == pytest.approx(kappa, rel=1e-8)
    # a fresh rotation per prompt: the covariances differ
    assert not np.allclose(cov[0], cov[1])


def test_condition_number_with_uniform_inputs_scales_by_z_variance():
    a, dim, kappa = 2.0, 5, 8.0
    task = LinearRegression(dim=dim, points=5, condition_number=kappa, x_distribution="uniform", x_bound=a)
    _, _, _, cov = draw(task, 3, seed=5)
    for c in cov:
        np.testing.assert_allclose(np.linalg.eigvalsh(c), a**2 / 3 * geometric_spectrum(dim, kappa)[::-1],
                                   rtol=1e-9)


def test_haar_rotation_is_orthogonal_and_haar():
    dim, batch = 5, 4000
    generator = make_generator(6, "eval")
    rotation = _haar_rotation(batch, dim, generator, torch.float64).numpy()
    eye = np.broadcast_to(np.eye(dim), rotation.shape)
    np.testing.assert_allclose(rotation @ np.swapaxes(rotation, 1, 2), eye, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(rotation, 1, 2) @ rotation, eye, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.linalg.det(rotation)), 1.0, atol=1e-12)
    # Haar on O(d): each entry has mean 0 and variance 1/d, so SE of its mean is sqrt(1/(d·B)).
    # (Without the sign fix of R's diagonal, QR's Q has a biased diagonal and fails this.)
    assert np.all(np.abs(rotation.mean(0)) <= Z * math.sqrt(1 / (dim * batch)))
    # tr(R) for Haar O(d), d ≥ 2: mean 0, E[tr²] = 1, so SE of the mean trace is 1/√B
    traces = np.trace(rotation, axis1=1, axis2=2)
    assert abs(traces.mean()) <= Z / math.sqrt(batch)
    assert np.mean(traces**2) == pytest.approx(1.0, abs=Z * math.sqrt(2 / batch))  # var(tr²) ≤ 2 here
    # float32 request: the cast of the same float64 draw (same batch size, so same random stream)
    r32 = _haar_rotation(batch, dim, make_generator(6, "eval"), torch.float32)
    assert r32.dtype == torch.float32
    np.testing.assert_allclose(r32.numpy(), rotation, atol=1e-6)


@pytest.mark.parametrize("uniform", [False, True])
def test_points_of_one_prompt_follow_its_latent_covariance(uniform):
    dim, n = 4, 40_000
    options = dict(x_distribution="uniform", x_bound=1.5) if uniform else {}
    task = LinearRegression(dim=dim, points=n, condition_number=10.0, **options)
    xs, _, _, cov = draw(task, 1, seed=7)
    sigma = cov[0]
    empirical = second_moment(xs[0])
    # SE of mean(x_i x_j): for gaussian x, var(x_i x_j) = Σii Σjj + Σij².  For x = R Λ^½ z with
    # uniform z the fourth cumulant is negative (platykurtic), so the gaussian value is an upper bound.
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(empirical - sigma) <= Z * se), np.abs(empirical - sigma) / se


def test_explicit_spectrum_is_reproduced():
    spectrum = (0.25, 1.0, 3.0, 7.5)
    task = LinearRegression(dim=4, points=3, spectrum=spectrum)
    assert task.spectrum == spectrum
    _, _, _, cov = draw(task, 5, seed=8)
    for c in cov:
        np.testing.assert_allclose(np.linalg.eigvalsh(c), sorted(spectrum), rtol=1e-12, atol=1e-14)
        assert np.trace(c) == pytest.approx(sum(spectrum), rel=1e-13)
    # spectrum given as a list of ints is normalised to a hashable tuple of floats
    listed = LinearRegression(dim=2, spectrum=[1, 2])
    assert listed.spectrum == (1.0, 2.0) and isinstance(listed.spectrum[0], float)
    hash(listed)


# -- prior on w --------------------------------------------------------------------------
def test_prior_scale_is_the_standard_deviation_of_w():
    scale = 2.5
    task = LinearRegression(dim=5, points=1, prior_scale=scale)
    _, _, w, _ = draw(task, 4000, seed=9)  # 20 000 iid N(0, scale²) entries
    assert_variance(w, scale**2, "prior variance")
    assert abs(w.mean()) <= Z * scale / math.sqrt(w.size)
    assert np.count_nonzero(w) == w.size  # dense


def test_sparsity_gives_exactly_s_nonzeros():
    dim, s, batch, scale = 8, 3, 4000, 1.7
    task = LinearRegression(dim=dim, points=1, sparsity=s, prior_scale=scale)
    _, _, w, _ = draw(task, batch, seed=10)
    assert np.all(np.count_nonzero(w, axis=1) == s)
    # the support is uniform: coordinate k is in it with probability s/d; its count is
    # Binomial(B, s/d) with SE sqrt(B p (1-p))
    p = s / dim
    counts = np.count_nonzero(w, axis=0)
    assert np.all(np.abs(counts - batch * p) <= Z * math.sqrt(batch * p * (1 - p)))
    # the non-zero entries keep the prior scale
    assert_variance(w[w != 0], scale**2, "sparse prior variance")


# -- finite task pool --------------------------------------------------------------------
def test_pool_gives_exactly_m_distinct_weights_chosen_uniformly():
    m, dim, batch = 7, 4, 7000
    task = LinearRegression(dim=dim, points=2, pool_size=m, pool_seed=11)
    pool = task.weight_pool().numpy()
    assert pool.shape == (m, dim) and len(np.unique(pool, axis=0)) == m
    _, _, w, _ = draw(task, batch, seed=12)
    distinct, index, counts = np.unique(w, axis=0, return_inverse=True, return_counts=True)
    assert len(distinct) == m
    # every drawn w is (bit for bit) one of the pool vectors
    np.testing.assert_array_equal(np.unique(pool, axis=0), distinct)
    # Pearson chi-square of the M counts against uniform: M-1 = 6 degrees of freedom,
    # 0.1% upper critical value 22.46
    expected = batch / m
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 <= 22.46, counts
    # float32 sampling uses the float32 cast of the same pool
    prompt = task.sample(50, make_generator(12, "eval"))
    assert {tuple(v) for v in prompt.latent["w"].tolist()} <= {tuple(v) for v in pool.astype(np.float32).tolist()}


def test_pool_is_a_function_of_pool_seed_only():
    a = LinearRegression(dim=4, pool_size=5, pool_seed=3)
    b = LinearRegression(dim=4, pool_size=5, pool_seed=3, noise=0.1, points=7)  # other params
    c = LinearRegression(dim=4, pool_size=5, pool_seed=4)
    assert torch.equal(a.weight_pool(), b.weight_pool())
    assert not torch.allclose(a.weight_pool(), c.weight_pool())
    # the sampled weight sets agree for equal pool seeds, and differ otherwise
    wa = {tuple(v) for v in draw(a, 300, seed=1)[2].tolist()}
    wb = {tuple(v) for v in draw(b, 300, seed=2)[2].tolist()}
    wc = {tuple(v) for v in draw(c, 300, seed=1)[2].tolist()}
    assert wa == wb and len(wa) == 5
    assert wa.isdisjoint(wc)
    # pool_size 0 means a fresh w per prompt, hence no pool
    assert LinearRegression(dim=4).weight_pool() is None


def test_sparse_pool():
    task = LinearRegression(dim=6, pool_size=4, sparsity=2, pool_seed=1)
    pool = task.weight_pool().numpy()
    assert np.all(np.count_nonzero(pool, axis=1) == 2)


# -- points / active_dims overrides ------------------------------------------------------
@pytest.mark.parametrize("kappa", [1.0, 10.0])
def test_points_and_active_dims_overrides(kappa):
    dim, active, n = 6, 2, 25
    task = LinearRegression(dim=dim, points=10, noise=0.0, condition_number=kappa)
    xs, ys, w, cov = draw(task, 3, seed=13, points=n, active_dims=active)
    assert xs.shape == (3, n, dim) and ys.shape == (3, n) and w.shape == (3, dim) and cov.shape == (3, dim, dim)
    assert np.all(xs[..., active:] == 0.0)
    assert np.all(cov[:, active:, :] == 0.0) and np.all(cov[:, :, active:] == 0.0)
    assert np.all(xs[..., :active] != 0.0)
    assert np.all(np.linalg.eigvalsh(cov[:, :active, :active]) > 0)
    # ys uses only the active coordinates (w is still drawn in full dimension)
    assert np.count_nonzero(w[:, active:]) > 0
    np.testing.assert_allclose(ys, np.einsum("bnk,bk->bn", xs[..., :active], w[:, :active]), rtol=1e-12, atol=1e-12)
    # defaults are the task's own
    xs_default, *_ = draw(task, 2)
    assert xs_default.shape == (2, 10, dim) and np.count_nonzero(xs_default[..., active:]) > 0


def test_active_dims_identity_covariance_block():
    task = LinearRegression(dim=5)
    _, _, _, cov = draw(task, 2, active_dims=3)
    expected = np.diag([1.0, 1, 1, 0, 0])
    np.testing.assert_array_equal(cov, np.broadcast_to(expected, cov.shape))


def test_bad_sample_overrides():
    # points=0, active_dims=dim+1 and batch_size=0: tests/test_contracts.py, for every task
    with pytest.raises(ValueError, match="active_dims"):
        LinearRegression(dim=6).sample(2, make_generator(0, "eval"), active_dims=0)


# -- trivial error (against Monte Carlo: tests/test_contracts.py, with these variants) ----
def test_trivial_error_closed_forms():
    # d=4, identity, σ=0: E[y²]/d = prior² · d / d
    assert LinearRegression(dim=4, prior_scale=2.0).trivial_error() == pytest.approx(4.0)
    # uniform on (-a, a): z variance a²/3
    assert LinearRegression(dim=4, x_distribution="uniform", x_bound=0.5).trivial_error() == pytest.approx(1 / 12)
    # κ: the rescaled spectrum has mean 1, so it does not change E[y²]
    assert LinearRegression(dim=4, condition_number=50.0, noise=1.0).trivial_error() == pytest.approx(1.0 + 1 / 4)
    # sparse: only s of d coordinates of w carry variance
    assert LinearRegression(dim=10, sparsity=2).trivial_error() == pytest.approx(0.2)


# -- validation --------------------------------------------------------------------------
# NaN, inf, unknown choices, negative or non-integer counts: tests/test_contracts.py, for every field
@pytest.mark.parametrize("params, name", [
    (dict(dim=0), "dim"),
    (dict(points=0), "points"),
    (dict(noise=-1.0), "noise"),
    (dict(prior_scale=0.0), "prior_scale"),
    (dict(x_bound=0.0), "x_bound"),
    (dict(condition_number=0.5), "condition_number"),
    (dict(dim=3, spectrum=(1.0, 2.0)), "spectrum"),
    (dict(dim=3, spectrum=(1.0, 0.0, 2.0)), "spectrum"),
    (dict(dim=3, spectrum=(1.0, -2.0, 2.0)), "spectrum"),
    (dict(dim=3, spectrum=(1.0, float("nan"), 2.0)), "spectrum"),
    (dict(dim=3, spectrum=(float("nan"), 1.0, 2.0)), "spectrum"),
    (dict(dim=3, spectrum=(1.0, float("inf"), 2.0)), "spectrum"),
    (dict(dim=3, spectrum=("a", "b", "c")), "spectrum"),
    (dict(dim=3, spectrum=5), "spectrum"),
    (dict(dim=3, spectrum=(1.0, 2.0, 3.0), condition_number=2.0), "spectrum"),
    (dict(dim=4, sparsity=5), "sparsity"),
])
def test_invalid_parameters_name_themselves(params, name):
    with pytest.raises(ValueError, match=name):
        LinearRegression(**params)


def test_make_task():
    assert "linear-regression" in TASKS
    task = make_task("linear-regression", dim=3, noise=0.5)
    assert task == LinearRegression(dim=3, noise=0.5)
    with pytest.raises(ValueError, match="bogus"):
        make_task("linear-regression", bogus=1)
    with pytest.raises(ValueError, match="nope"):
        make_task("nope")
    with pytest.raises(ValueError, match="noise"):
        make_task("linear-regression", noise=-1.0)


def test_parse_parameters_types_and_errors():
    parsed = parse_parameters(LinearRegression, ["noise=0.5", "spectrum=1,2,3", "dim=3", "x-distribution=uniform",
                                                 "pool_size = 4"])
    assert parsed == {"noise": 0.5, "spectrum": (1.0, 2.0, 3.0), "dim": 3, "x_distribution": "uniform",
                      "pool_size": 4}
    assert type(parsed["noise"]) is float and type(parsed["dim"]) is int and type(parsed["pool_size"]) is int
    assert all(type(v) is float for v in parsed["spectrum"])
    task = LinearRegression(**parsed)
    assert task.spectrum == (1.0, 2.0, 3.0)
    assert parse_parameters(LinearRegression, ["spectrum=none"]) == {"spectrum": None}
    for bad, key in [("noise=abc", "noise"), ("dim=2.5", "dim"), ("spectrum=1,x", "spectrum"),
                     ("bogus=1", "bogus"), ("noise", "noise"), ("pool_size=", "pool_size")]:
        with pytest.raises(ValueError, match=key):
            parse_parameters(LinearRegression, [bad])
    table = {name: (kind, default, help_text) for name, kind, default, help_text in parameter_table(LinearRegression)}
    assert table["dim"][:2] == ("int", 20) and table["noise"][:2] == ("float", 0.0)
    assert table["spectrum"][1] is None and table["spectrum"][2]
    assert all(help_text for _, _, help_text in table.values())


def identity_prompt_the_old_way(task: LinearRegression, batch: int, seed: int, dtype: torch.dtype):
    """``sample`` for Σ = I as it was before it skipped the identity's matrix products: x = z·I, Σ = s_z² (I·1)Iᵀ,
    w = I (g / s_z) under the inverse-covariance prior, y = einsum(x, w) + σ ε; the reference for bit-identity."""
    generator, d, n = torch.Generator().manual_seed(seed), task.dim, task.points
    options = dict(generator=generator, dtype=dtype)
    if task.x_distribution == "gaussian":
        z = torch.randn(batch, n, d, **options)
    else:
        z = (2 * torch.rand(batch, n, d, **options) - 1) * task.x_bound
    eigs, rotation = torch.ones(d, dtype=dtype), torch.eye(d, dtype=dtype).expand(batch, d, d)
    covariance = task.z_variance * (rotation * eigs) @ rotation.transpose(1, 2)
    if task.weight_prior == "inverse-covariance":
        g = task.prior_scale * torch.randn(batch, d, **options)
        w = torch.einsum("bij,bj->bi", rotation, g / (task.z_variance * eigs).sqrt())
    else:
        w = task.prior_scale * torch.randn(batch, d, **options)
    ys = torch.einsum("bnd,bd->bn", z, w) + task.noise * torch.randn(batch, n, **options)
    return z, ys, w, covariance


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("params", [{}, {"x_distribution": "uniform", "x_bound": 0.5, "noise": 0.3,
                                         "weight_prior": "inverse-covariance"}])
def test_identity_covariance_prompts_are_bit_identical_to_the_old_formula(params, dtype):
    task = LinearRegression(dim=20, points=41, **params)
    prompt = task.sample(64, torch.Generator().manual_seed(3), dtype=dtype)
    xs, ys, w, covariance = identity_prompt_the_old_way(task, 64, 3, dtype)
    for ours, reference in [(prompt.xs, xs), (prompt.ys, ys), (prompt.latent["w"], w),
                            (prompt.latent["covariance"], covariance)]:
        assert ours.shape == reference.shape and torch.equal(ours, reference)


@pytest.mark.parametrize("params", [{}, {"condition_number": 10.0}, {"spectrum": (3.0, 1.0, 0.5), "rotation": "fixed"},
                                    {"pool_size": 4}, {"weight_prior": "inverse-covariance", "condition_number": 4.0}])
def test_labels_are_the_einsum_of_inputs_and_weights_bit_for_bit(params):
    """ys = xᵀw is computed by bmm, which gives exactly einsum's numbers (the formula it always had)."""
    task = LinearRegression(dim=3, points=9, **params)
    prompt = task.sample(50, torch.Generator().manual_seed(1))
    assert torch.equal(prompt.ys, torch.einsum("bnd,bd->bn", prompt.xs, prompt.latent["w"]))
