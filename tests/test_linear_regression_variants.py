"""Linear-regression variants the reproductions need: a fixed Σ, the w ~ N(0, Σ⁻¹) prior, response links
and per-prompt noise levels, each against an independent computation."""
import math

import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task


def sample(batch, seed=0, **params):
    task = make_task("linear-regression", **{"dim": 4, "points": 6, **params})
    return task, task.sample(batch, make_generator(seed, "eval", 0), dtype=torch.float64)


def test_a_fixed_covariance_is_shared_by_every_prompt_and_set_by_its_seed():
    _, first = sample(64, condition_number=8.0, rotation="fixed")
    _, other_batch = sample(64, seed=5, condition_number=8.0, rotation="fixed")
    _, other_seed = sample(8, condition_number=8.0, rotation="fixed", covariance_seed=1)
    covariance = first.latent["covariance"]
    assert torch.equal(covariance, covariance[:1].expand_as(covariance))
    assert torch.equal(covariance[0], other_batch.latent["covariance"][0])
    assert not torch.allclose(covariance[0], other_seed.latent["covariance"][0])
    eigenvalues = torch.linalg.eigvalsh(covariance[0])
    torch.testing.assert_close(eigenvalues.max() / eigenvalues.min(), torch.tensor(8.0, dtype=torch.float64))
    _, per_prompt = sample(8, condition_number=8.0)
    assert not torch.allclose(per_prompt.latent["covariance"][0], per_prompt.latent["covariance"][1])


def test_points_follow_the_fixed_covariance():
    _, prompt = sample(20_000, spectrum=(4.0, 2.0, 1.0, 0.5), rotation="fixed")
    xs = prompt.xs.reshape(-1, 4)
    empirical = xs.T @ xs / xs.shape[0]
    torch.testing.assert_close(empirical, prompt.latent["covariance"][0], atol=0.05, rtol=0.02)


def test_inverse_covariance_prior_has_covariance_s2_sigma_inverse():
    """E[w wᵀ] = s² Σ⁻¹ (Mahankali et al., Thm 2); checked entrywise within 4 standard errors."""
    _, prompt = sample(200_000, spectrum=(4.0, 2.0, 1.0, 0.5), rotation="fixed", weight_prior="inverse-covariance",
                       prior_scale=1.5)
    w = prompt.latent["w"]
    products = w[:, :, None] * w[:, None, :]
    expected = 1.5**2 * torch.linalg.inv(prompt.latent["covariance"][0])
    error = (products.mean(0) - expected).abs()
    standard_error = products.std(0) / math.sqrt(w.shape[0])
    assert bool((error <= 4 * standard_error).all()), (error / standard_error).max()
    # then wᵀΣw = s² χ²_d: mean s² d
    quadratic = torch.einsum("bi,ij,bj->b", w, prompt.latent["covariance"][0], w)
    assert float(quadratic.mean()) == pytest.approx(1.5**2 * 4, abs=4 * float(quadratic.std()) / math.sqrt(w.shape[0]))


@pytest.mark.parametrize("link, function", [("relu", lambda u: u.clamp(min=0)), ("tanh", torch.tanh),
                                            ("cubic", lambda u: u * u * u), ("identity", lambda u: u)])
def test_noiseless_labels_are_the_link_of_the_linear_response(link, function):
    _, prompt = sample(32, link=link, condition_number=3.0)
    linear = torch.einsum("bnd,bd->bn", prompt.xs, prompt.latent["w"])
    torch.testing.assert_close(prompt.ys, function(linear), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("law, levels", [("uniform", (0.5, 2.0)), ("categorical", (0.1, 1.0, 3.0))])
def test_per_prompt_noise_levels(law, levels):
    task, prompt = sample(20_000, points=64, noise_law=law, noise_levels=levels)
    sigma = prompt.latent["noise"]
    if law == "categorical":
        counts = torch.stack([(sigma == level).sum() for level in levels])
        assert int(counts.sum()) == sigma.numel() and bool((counts > 0.3 * sigma.numel()).all())
    else:
        assert float(sigma.min()) >= 0.5 and float(sigma.max()) <= 2.0
        assert float(sigma.mean()) == pytest.approx(1.25, abs=4 * 1.5 / math.sqrt(12 * sigma.numel()))
    residual = prompt.ys - torch.einsum("bnd,bd->bn", prompt.xs, prompt.latent["w"])
    ratio = residual.square().mean(1) / sigma**2  # each prompt's empirical noise variance / σ², mean 1
    assert float(ratio.mean()) == pytest.approx(1.0, abs=4 * float(ratio.std()) / math.sqrt(ratio.numel()))


@pytest.mark.parametrize("params", [
    dict(condition_number=5.0, rotation="fixed", weight_prior="inverse-covariance", noise_law="uniform",
         noise_levels=(0.0, 1.0)),
    dict(spectrum=(3.0, 1.0, 0.5, 0.1), link="relu", noise_law="categorical", noise_levels=(0.5, 2.0)),
    dict(condition_number=4.0, link="cubic"),
    dict(weight_prior="inverse-covariance", link="cubic", noise=0.3),
    dict(link="tanh", x_distribution="uniform"),
])
def test_trivial_error_of_the_variants_matches_monte_carlo(params):
    task, prompt = sample(400_000, points=2, seed=7, **params)
    squares = prompt.ys.square().flatten() / task.dim
    standard_error = float(squares.std()) / math.sqrt(squares.numel())
    assert task.trivial_error() == pytest.approx(float(squares.mean()), abs=4 * standard_error)


def test_bayes_ridge_is_offered_only_where_it_is_the_posterior_mean():
    assert "Ridge (Bayes)" in make_task("linear-regression", noise=0.5).baselines()
    assert "Ridge (Bayes)" not in make_task("linear-regression", noise=0.5, link="tanh").baselines()
    assert "Ridge (Bayes)" not in make_task("linear-regression", noise=0.5, condition_number=2.0,
                                            weight_prior="inverse-covariance").baselines()


@pytest.mark.parametrize("params, named", [
    (dict(rotation="sometimes"), "rotation"), (dict(rotation="fixed"), "rotation"),
    (dict(weight_prior="laplace"), "weight_prior"), (dict(weight_prior="inverse-covariance", pool_size=4), "pool_size"),
    (dict(link="softplus"), "link"), (dict(noise_law="gamma"), "noise_law"),
    (dict(noise_levels=(1.0,)), "noise_levels"), (dict(noise_law="uniform", noise_levels=(2.0, 1.0)), "noise_levels"),
    (dict(noise_law="categorical", noise_levels=(-1.0,)), "noise_levels"),
    (dict(noise_law="categorical", noise_levels=(1.0,), noise=0.5), "noise"),
])
def test_bad_variant_parameters_name_themselves(params, named):
    with pytest.raises(ValueError, match=named):
        make_task("linear-regression", **params)
