"""The unit-sphere and heavy-tailed (√Gamma-scaled) covariates of Ahn et al. 2024 (Sec. 4.1).

The authors (chengxiang/LinearTransformer, ``linear_transformer.py``, ``generate_data``) draw a gaussian,
divide it by its norm ('sphere'), and for 'gamma' multiply it by √G with G ~ Gamma(shape 0.1, scale
(10/0.1)^½ = 10) per point.  So ‖x‖ = √G: P(‖x‖ ≤ r) = P(G ≤ r²), the law the KS tests below check
against (scipy.stats.gamma), and the direction x/‖x‖ is uniform, so that u₁² ~ Beta(½, (d−1)/2).

Every KS test rejects at significance 1e-3 (p < 1e-3 fails); the seeds are fixed, so the tests are
deterministic.  Moments allow Z = 5 standard errors, each derived from the law's own variance.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
import torch
from scipy import stats

from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression

SIGNIFICANCE = 1e-3
Z = 5.0
DIM = 5


def inputs(task: LinearRegression, batch: int, seed: int = 0, dtype=torch.float64) -> np.ndarray:
    """All the task's inputs x of ``batch`` prompts, as rows (batch · points, d)."""
    prompt = task.sample(batch, make_generator(seed, "eval"), dtype=dtype)
    return prompt.xs.reshape(-1, task.dim).numpy()


def assert_ks(samples: np.ndarray, cdf, what: str) -> None:
    p_value = stats.kstest(samples, cdf).pvalue
    assert p_value >= SIGNIFICANCE, f"{what}: KS p = {p_value:.2g}"


def assert_uniform_direction(x: np.ndarray) -> None:
    """u = x/‖x‖ uniform on the sphere: each u_j² ~ Beta(½, (d − 1)/2) (checked on the first coordinate)."""
    d = x.shape[1]
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert_ks(u[:, 0] ** 2, stats.beta(0.5, (d - 1) / 2).cdf, "u₁² against Beta(½, (d−1)/2)")


def test_sphere_inputs_have_unit_norm_and_a_uniform_direction():
    task = LinearRegression(dim=DIM, points=20, x_distribution="sphere")
    x = inputs(task, 500)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
    assert_uniform_direction(x)
    assert task.z_variance == pytest.approx(1 / DIM)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape, scale", [(0.1, 10.0), (0.7, 2.0)])
def test_gamma_sphere_norm_follows_the_square_root_of_a_gamma(shape, scale, dtype):
    """‖x‖ = √G with G ~ Gamma(k, θ): KS on ‖x‖ against r ↦ Gamma(k, θ).cdf(r²); the paper's (0.1, 10) first."""
    task = LinearRegression(dim=DIM, points=20, x_distribution="gamma-sphere", x_gamma_shape=shape,
                            x_gamma_scale=scale)
    x = inputs(task, 500, dtype=dtype).astype(np.float64)
    law = stats.gamma(shape, scale=scale)
    assert_ks(np.linalg.norm(x, axis=1), lambda r: law.cdf(r**2), f"‖x‖ against √Gamma({shape}, {scale})")
    assert_uniform_direction(x[np.linalg.norm(x, axis=1) > 0])  # a float32 G can underflow to 0 for k = 0.1


def test_gamma_sphere_at_half_the_dimension_and_scale_two_is_the_standard_gaussian():
    """With k = d/2, θ = 2 (the authors' comment: 'when shape_k = 5/2 and d = 5, the generated data is standard
    normal'), ‖x‖² ~ χ²_d and x ~ N(0, I): every coordinate is N(0, 1) and ‖x‖ ~ χ_d."""
    task = LinearRegression(dim=DIM, points=20, x_distribution="gamma-sphere", x_gamma_shape=DIM / 2,
                            x_gamma_scale=2.0)
    x = inputs(task, 500, seed=1)
    assert_ks(x[:, 0], stats.norm.cdf, "x₁ against N(0, 1)")
    assert_ks(np.linalg.norm(x, axis=1), stats.chi(DIM).cdf, "‖x‖ against χ_d")
    assert task.z_variance == pytest.approx(1.0)


def test_gamma_sphere_second_moments_and_trivial_error():
    """E‖x‖² = kθ (the paper's k = 0.1, θ = 10: 1), with standard error sqrt(Var G / n) = θ sqrt(k / n); the latent
    covariance is kθ/d · I; the trivial error E[y²]/d = s² kθ / d."""
    shape, scale = 0.1, 10.0
    task = LinearRegression(dim=DIM, points=50, x_distribution="gamma-sphere", prior_scale=1.5)
    prompt = task.sample(4000, make_generator(2, "eval"), dtype=torch.float64)
    squared_norms = prompt.xs.square().sum(-1).flatten().numpy()
    n = squared_norms.size
    assert abs(squared_norms.mean() - shape * scale) <= Z * scale * math.sqrt(shape / n)
    covariance = shape * scale / DIM * torch.eye(DIM, dtype=torch.float64)
    torch.testing.assert_close(prompt.latent["covariance"][0], covariance)
    assert task.trivial_error() == pytest.approx(1.5**2 * shape * scale / DIM)


def test_sphere_inputs_under_a_fixed_covariance_have_covariance_sigma_over_d():
    """x = Σ^{1/2} z with z on the sphere: E[x xᵀ] = Σ/d, the latent covariance (5 standard errors per entry)."""
    task = LinearRegression(dim=3, points=100, x_distribution="sphere", spectrum=(3.0, 1.0, 0.5), rotation="fixed")
    prompt = task.sample(2000, make_generator(4, "eval"), dtype=torch.float64)
    x = prompt.xs.reshape(-1, 3).numpy()
    products = x[:, :, None] * x[:, None, :]
    error = np.abs(products.mean(0) - prompt.latent["covariance"][0].numpy())
    assert np.all(error <= Z * products.std(0) / math.sqrt(len(x)))


def test_heavy_tailed_draws_use_only_the_explicit_generator():
    task = LinearRegression(dim=DIM, points=10, x_distribution="gamma-sphere")
    torch.manual_seed(0)
    first = task.sample(16, make_generator(5, "train")).xs
    torch.manual_seed(1)
    assert torch.equal(first, task.sample(16, make_generator(5, "train")).xs)


@pytest.mark.parametrize("name", ["x_gamma_shape", "x_gamma_scale"])
def test_bad_gamma_parameters_name_themselves(name):
    with pytest.raises(ValueError, match=name):
        LinearRegression(x_distribution="gamma-sphere", **{name: 0.0})


#: SHA-256 (first 16 hex digits) of float64 (xs, ys, w) drawn by the sampler before these laws were added
#: (make_generator(3, "train"), 8 prompts): the existing laws' samples must stay bit-identical.
PINNED = [({}, "e6b67d323645d0a9"), ({"dim": 5, "points": 21}, "6492a5ebd7866c0a"),
          ({"x_distribution": "uniform", "x_bound": 0.5, "noise": 0.3}, "5572cc6a489a5d70"),
          ({"dim": 4, "condition_number": 10.0, "rotation": "fixed"}, "43b6749b259f0a9a"),
          ({"dim": 3, "pool_size": 4, "sparsity": 2, "link": "tanh"}, "68e40242a15076f6")]


@pytest.mark.parametrize("params, digest", PINNED)
def test_existing_laws_draw_the_same_samples_as_before(params, digest):
    prompt = LinearRegression(**params).sample(8, make_generator(3, "train"), dtype=torch.float64)
    hashed = hashlib.sha256()
    for tensor in (prompt.xs, prompt.ys, prompt.latent["w"]):
        hashed.update(tensor.contiguous().numpy().tobytes())
    assert hashed.hexdigest()[:16] == digest
