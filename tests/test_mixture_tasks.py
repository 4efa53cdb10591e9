"""The function families of Yadlowsky et al. 2023 (``sinusoid``, ``relu-network``, ``mixture``) and the ``Lasso``
baseline, against independent references: the labels recomputed in numpy from the prompt's latent, the mixture's
family frequencies against its weights (a binomial Monte Carlo bound), each family's prompts against its own law,
and Lasso against cvxpy's solution of the same ℓ1-penalised problem."""
import math

import cvxpy as cp
import numpy as np
import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory import Lasso


def test_sinusoid_labels_are_the_convex_combination_of_their_latents():
    task = make_task("sinusoid", dim=3, points=7, frequency_low=0.5, frequency_high=4.0, amplitude=1.5,
                     linear_weight=0.3)
    prompt = task.sample(64, make_generator(0, "eval"), dtype=torch.float64)
    xs, latent = prompt.xs.numpy(), {key: value.numpy() for key, value in prompt.latent.items()}
    projection = np.einsum("bnd,bd->bn", xs, latent["direction"])
    wave = 1.5 * np.sin(latent["frequency"][:, None] * projection + latent["phase"][:, None])
    expected = 0.3 * np.einsum("bnd,bd->bn", xs, latent["w"]) + 0.7 * wave
    np.testing.assert_allclose(prompt.ys.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(latent["direction"], axis=1), 1.0, rtol=1e-12)
    assert latent["frequency"].min() >= 0.5 and latent["frequency"].max() <= 4.0
    assert latent["phase"].min() >= 0 and latent["phase"].max() < 2 * math.pi


def test_relu_network_labels_are_garg_et_al_s_two_layer_network():
    task = make_task("relu-network", dim=4, points=6, hidden=7)
    prompt = task.sample(16, make_generator(1, "eval"), dtype=torch.float64)
    xs, weights, readout = prompt.xs.numpy(), prompt.latent["W"].numpy(), prompt.latent["a"].numpy()
    hidden = np.maximum(np.einsum("bnd,bhd->bnh", xs, weights), 0)
    np.testing.assert_allclose(prompt.ys.numpy(), np.sqrt(2 / 7) * np.einsum("bnh,bh->bn", hidden, readout),
                               rtol=1e-12, atol=1e-12)


def test_mixture_draws_each_family_by_its_weight_and_from_its_own_law():
    task = make_task("mixture", dim=1, points=6, families=("linear-regression", "sinusoid:amplitude=0.5"),
                     weights=(1.0, 3.0))
    count = 20000
    prompt = task.sample(count, make_generator(2, "eval"), dtype=torch.float64)
    family = prompt.latent["family"]
    share = float((family == 1).float().mean())
    assert abs(share - 0.75) <= 5 * math.sqrt(0.75 * 0.25 / count)  # binomial, 5 standard errors
    linear, wave = family == 0, family == 1
    # a linear prompt in d = 1 is y = w x: one slope per prompt
    slopes = prompt.ys[linear] / prompt.xs[linear][..., 0]
    torch.testing.assert_close(slopes, slopes[:, :1].expand_as(slopes), rtol=1e-9, atol=1e-9)
    assert float(prompt.ys[wave].abs().max()) <= 0.5  # the sinusoids' amplitude
    slices = task.slices(prompt)
    assert torch.equal(slices["family=sinusoid:amplitude=0.5"], wave)
    assert task.trivial_error() == pytest.approx(0.25 * 1.0 + 0.75 * 0.125)


def test_mixture_refuses_components_that_set_the_shared_sizes_or_are_unknown():
    with pytest.raises(ValueError, match="families"):
        make_task("mixture", families=("linear-regression:dim=3", "sinusoid"))
    with pytest.raises(ValueError, match="families"):
        make_task("mixture", families=("boolean", "sinusoid"))
    with pytest.raises(ValueError, match="weights"):
        make_task("mixture", families=("linear-regression", "sinusoid"), weights=(1.0,))


def test_lasso_matches_cvxpy_on_every_prefix():
    generator = torch.Generator().manual_seed(3)
    xs = torch.randn(2, 9, 5, generator=generator, dtype=torch.float64)
    w = torch.zeros(2, 5, dtype=torch.float64)
    w[:, :2] = torch.randn(2, 2, generator=generator, dtype=torch.float64)
    ys = (xs * w[:, None]).sum(-1) + 0.1 * torch.randn(2, 9, generator=generator, dtype=torch.float64)
    lam = 0.1
    weights = Lasso(lam, steps=3000).weights(xs, ys)
    assert torch.equal(weights[:, 0], torch.zeros(2, 5, dtype=torch.float64))
    for b in range(2):
        for i in range(1, 9):
            design, labels, solution = xs[b, :i].numpy(), ys[b, :i].numpy(), cp.Variable(5)
            cp.Problem(cp.Minimize(cp.sum_squares(design @ solution - labels) / (2 * i)
                                   + lam * cp.norm1(solution))).solve()
            np.testing.assert_allclose(weights[b, i].numpy(), solution.value, atol=1e-6)
    preds = Lasso(lam, steps=3000).predict(xs, ys)
    torch.testing.assert_close(preds, (xs * weights).sum(-1))
