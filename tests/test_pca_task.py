"""Tests for the in-context PCA task and its baselines.

References are independent numpy computations; Monte Carlo checks allow ``Z = 5``
standard errors (derived next to each check) and use fixed seeds.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from tiny_runs import train_and_evaluate
from icl_sim.tasks import PCA, TASKS, make_task
from icl_sim.theory.algorithms import PowerMethod
from icl_sim.theory.sequence_baselines import TopEigenvector, orient

from icl_sim.seeding import make_generator

Z = 5.0


def draw(task, batch, seed=0, **options):
    options.setdefault("dtype", torch.float64)
    return task.sample(batch, make_generator(seed, "eval"), **options)


# -- the prompt --------------------------------------------------------------------------
@pytest.mark.parametrize("gap", [0.5, 3.0])
def test_direction_is_the_top_eigenvector_of_the_covariance(gap):
    dim = 5
    prompt = draw(PCA(dim=dim, points=6, eigengap=gap), 20, seed=1)
    cov, u = prompt.latent["covariance"].numpy(), prompt.latent["direction"].numpy()
    assert cov.shape == (20, dim, dim) and u.shape == (20, dim)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, atol=1e-14)
    for c, v in zip(cov, u):
        eigs, vecs = np.linalg.eigh(c)  # ascending
        np.testing.assert_allclose(eigs, [1.0] * (dim - 1) + [1.0 + gap], atol=1e-12)
        assert abs(vecs[:, -1] @ v) == pytest.approx(1.0, abs=1e-12)
        assert v.sum() >= 0  # the sign convention
    # targets: the direction at every position; labels carry nothing
    np.testing.assert_array_equal(prompt.targets.numpy(), np.broadcast_to(u[:, None], (20, 6, dim)))
    assert torch.all(prompt.ys == 0) and prompt.ys.shape == (20, 6, dim)
    assert prompt.target is prompt.targets


def test_direction_is_uniform_on_the_sphere_up_to_sign():
    dim, batch = 3, 6000
    u = draw(PCA(dim=dim, points=1), batch, seed=2).latent["direction"].numpy()
    # u uniform on the sphere (the sign flip leaves u uᵀ unchanged): E[u uᵀ] = I/d, with
    # Var(u_i²) = 2(d−1)/(d²(d+2)) and Var(u_i u_j) = 1/(d(d+2)) for i ≠ j
    second = np.einsum("bi,bj->ij", u, u) / batch
    var = np.full((dim, dim), 1 / (dim * (dim + 2)))
    np.fill_diagonal(var, 2 * (dim - 1) / (dim**2 * (dim + 2)))
    assert np.all(np.abs(second - np.eye(dim) / dim) <= Z * np.sqrt(var / batch))


def test_points_of_one_prompt_follow_the_latent_covariance():
    dim, n = 4, 40_000
    prompt = draw(PCA(dim=dim, points=n, eigengap=2.0), 1, seed=3)
    x, sigma = prompt.xs[0].numpy(), prompt.latent["covariance"][0].numpy()
    empirical = x.T @ x / n
    # Gaussian x: Var(x_i x_j) = Σii Σjj + Σij²
    se = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma**2) / n)
    assert np.all(np.abs(empirical - sigma) <= Z * se)
    assert np.all(np.abs(x.mean(0)) <= Z * np.sqrt(np.diag(sigma) / n))


def test_orient_sign_convention():
    v = torch.tensor([[1.0, -3.0, 1.0], [0.0, -1.0, 1.0], [0.0, 0.0, 0.0], [2.0, 1.0, 0.0]])
    out = orient(v)
    torch.testing.assert_close(out, torch.tensor([[-1.0, 3.0, -1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 0.0],
                                                  [2.0, 1.0, 0.0]]))


# -- baselines ---------------------------------------------------------------------------
def test_top_eigenvector_matches_numpy_per_prefix():
    dim, n = 4, 9
    prompt = draw(PCA(dim=dim, points=n), 5, seed=4)
    xs = prompt.xs.numpy()
    preds = TopEigenvector().predict(prompt.xs, prompt.ys).numpy()
    np.testing.assert_allclose(preds[:, 0], dim ** -0.5)  # empty prefix: the power method's start
    for b in range(5):
        for i in range(1, n):
            _, vecs = np.linalg.eigh(xs[b, :i].T @ xs[b, :i])
            ref = vecs[:, -1] * (1 if vecs[:, -1].sum() >= 0 else -1)
            np.testing.assert_allclose(preds[b, i], ref, atol=1e-9)


def test_top_eigenvector_converges_at_the_perturbation_rate():
    # first-order perturbation theory for the sample top eigenvector of N points from
    # I + g uuᵀ: E sin²∠ ≈ Σ_{k≥2} λ₁λ_k / (N (λ₁ − λ_k)²) = (d − 1)(1 + g)/(N g²)
    dim, gap, batch = 4, 1.0, 400
    prompt = draw(PCA(dim=dim, points=401, eigengap=gap), batch, seed=5)
    preds = TopEigenvector().predict(prompt.xs, prompt.ys)
    cos = (preds * prompt.targets).sum(-1).abs()
    sin2 = 1 - cos**2
    means = []
    for n in (25, 100, 400):
        estimate, se = sin2[:, n].mean().item(), sin2[:, n].std().item() / math.sqrt(batch)
        predicted = (dim - 1) * (1 + gap) / (n * gap**2)
        # Z standard errors plus the O(1/N²) bias of the first-order formula (≤ 15% of it at N ≥ 25)
        assert abs(estimate - predicted) <= Z * se + 0.15 * predicted, (n, estimate, predicted)
        means.append(cos[:, n].mean().item())
    assert means[0] < means[1] < means[2]
    assert means[2] > 0.99  # |cos| → 1


def test_power_method_improves_with_steps_and_reaches_the_eigenvector():
    prompt = draw(PCA(dim=6, points=200, eigengap=1.0), 300, seed=6)
    exact = (TopEigenvector().predict(prompt.xs) * prompt.targets).sum(-1).abs()[:, -1].mean().item()
    scores = [(PowerMethod(k).predict(prompt.xs, prompt.ys) * prompt.targets).sum(-1).abs()[:, -1].mean().item()
              for k in (0, 1, 2, 4, 8, 60)]
    assert all(a < b for a, b in itertools.pairwise(scores)), scores
    assert scores[-1] == pytest.approx(exact, abs=1e-3)  # 60 steps at ratio ~1/2 per step: converged


def test_trivial_level_closed_forms():
    # E|cos| of the fixed guess 1/√d against Monte Carlo: tests/test_contracts.py
    assert PCA(dim=1).trivial_error() == pytest.approx(1.0)
    assert PCA(dim=2).trivial_error() == pytest.approx(2 / math.pi)


def test_baselines():
    # no peeking and the targets' shape: tests/test_contracts.py
    baselines = PCA(dim=3, points=7).baselines()
    assert {"top eigenvector", "Zero"} <= set(baselines) and len(baselines) == 5


# -- overrides, validation, scale --------------------------------------------------------
def test_active_dims_and_points_overrides():
    task = PCA(dim=6, points=5, eigengap=2.0)
    prompt = draw(task, 4, points=9, active_dims=2)
    xs, u, cov = prompt.xs.numpy(), prompt.latent["direction"].numpy(), prompt.latent["covariance"].numpy()
    assert xs.shape == (4, 9, 6) and prompt.targets.shape == (4, 9, 6)
    assert np.all(xs[..., 2:] == 0) and np.all(u[:, 2:] == 0) and np.all(cov[:, 2:] == 0)
    np.testing.assert_allclose(np.linalg.eigvalsh(cov[:, :2, :2]), np.broadcast_to([1.0, 3.0], (4, 2)), atol=1e-12)


# NaN, non-integer sizes, bad sample arguments: tests/test_contracts.py, for every task
@pytest.mark.parametrize("params, name", [
    (dict(dim=0), "dim"), (dict(points=0), "points"), (dict(eigengap=0.0), "eigengap"),
    (dict(eigengap=-1.0), "eigengap"),
])
def test_invalid_parameters_name_themselves(params, name):
    with pytest.raises(ValueError, match=name):
        PCA(**params)
    with pytest.raises(ValueError, match=name):
        make_task("pca", **params)


def test_large_dimension_sampling():
    task = PCA(dim=512, points=16)
    prompt = task.sample(2, make_generator(0, "eval"))
    assert prompt.xs.shape == (2, 16, 512) and prompt.latent["covariance"].shape == (2, 512, 512)
    assert torch.isfinite(prompt.xs).all()
    torch.testing.assert_close(torch.linalg.vector_norm(prompt.latent["direction"], dim=-1), torch.ones(2))
    assert task.target_dim == 512 and TASKS["pca"] is PCA


def test_tiny_gpt_trains_and_evaluates(tmp_path):
    params = {"dim": 3, "points": 16, "eigengap": 3.0}
    records = train_and_evaluate(tmp_path / "run", "pca", params, steps=200)
    final = {r["predictor"]: r["mean"] for r in records if r["position"] == params["points"] - 1}
    assert "gpt (trained)" in final and "top eigenvector" in final
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in final.values())
    assert final["Zero"] == 0.0
    assert final["top eigenvector"] > 0.9  # 15 points, gap 3, d = 3: sin² ≈ 2·4/(15·9) ≈ 0.06
    assert math.isfinite(final["gpt (trained)"])
