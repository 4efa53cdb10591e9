"""Fu, Guo, Bai & Mei (2023): the random-feature attention's features against a loop written out in numpy and against
their many-head limit (the arc-cosine kernel, and E ReLU(z + g) for the mean-I sampling), the ridge fit against
numpy's solvers, the key-average task's labels and moments against numpy, and the reproduction's measure (a fit
beats its read-out at initialisation; the control's ratios sit near 1)."""
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from icl_sim.paper_repro import fu_guo_2023 as repro
from icl_sim.paper_repro.runner import Measurement
from icl_sim.tasks.key_average import KeyAverage, relu_mean, sphere_moment
from icl_sim.theory.random_features import RandomFeatureAttention, RandomFeatureNetwork, fit_ridge, ridge_path


def _tokens(count, keys, dim, seed):
    return KeyAverage(dim=dim, keys=keys).sample(count, torch.Generator().manual_seed(seed), dtype=torch.float64).xs


def test_attention_features_match_a_loop_over_heads_and_keys():
    xs = _tokens(3, 4, 5, 0)
    model = RandomFeatureAttention.draw(6, 5, torch.Generator().manual_seed(1), mean=0.7)
    x, weights = xs.numpy(), model.weights.numpy()
    expected = np.zeros((3, 6, 6))
    for b in range(3):
        for m in range(6):
            for i in range(4):
                score = max(x[b, -1] @ weights[m] @ x[b, i] / 5, 0.0)
                expected[b, m] += score * np.append(x[b, i] / math.sqrt(5), 1.0) / (4 * math.sqrt(6))
    assert np.allclose(model.features(xs).numpy(), expected.reshape(3, -1), atol=1e-13)
    centred = RandomFeatureAttention.draw(6, 5, torch.Generator().manual_seed(1)).weights.numpy()
    assert np.allclose(weights - centred, 0.7 * math.sqrt(5) * np.eye(5))  # the same G plus the mean μ√d I
    network = RandomFeatureNetwork.draw(7, 25, torch.Generator().manual_seed(2))
    flat = x.reshape(3, -1)
    reference = np.maximum(flat @ network.weights.numpy().T / 5, 0) / math.sqrt(7)
    assert np.allclose(network.features(xs).numpy(), reference, atol=1e-13)


def test_zero_mean_features_converge_to_the_arc_cosine_kernel():
    """⟨φ(X), φ(X')⟩ over M heads → (1/N²) Σ_ij κ(ρ_ij)(⟨x_i, x'_j⟩/d + 1), κ(ρ) = (√(1−ρ²) + (π − arccos ρ)ρ)/(2π)
    the ReLU arc-cosine kernel (Cho & Saul 2009) of two unit-variance Gaussian scores with correlation
    ρ_ij = ⟨x_0, x'_0⟩⟨x_i, x'_j⟩/d²; Monte Carlo over heads within 4 standard errors."""
    xs = _tokens(2, 3, 4, 3)
    heads = 20_000
    model = RandomFeatureAttention.draw(heads, 4, torch.Generator().manual_seed(4))
    per_head = (model.features(xs) * math.sqrt(heads)).reshape(2, heads, 5)
    products = (per_head[0] * per_head[1]).sum(dim=-1)  # one i.i.d. sample per head
    x = xs.numpy()
    rho = (x[0, -1] @ x[1, -1]) * (x[0, :-1] @ x[1, :-1].T) / 16
    kappa = (np.sqrt(1 - rho ** 2) + (np.pi - np.arccos(rho)) * rho) / (2 * np.pi)
    expected = (kappa * (x[0, :-1] @ x[1, :-1].T / 4 + 1)).sum() / 9
    error = float(products.std()) / math.sqrt(heads)
    assert abs(float(products.mean()) - expected) < 4 * error and error < 0.05 * abs(expected)


def test_mean_identity_heads_carry_the_smoothed_relu_of_the_inner_product():
    """With W = √d I + G the score is z_i + g, g ~ N(0, 1), so a head's constant coordinate averages over heads to
    (1/N) Σ_i E ReLU(z_i + g) = (1/N) Σ_i (z_i Φ(z_i) + φ(z_i))."""
    xs = _tokens(2, 3, 6, 5)
    heads = 40_000
    model = RandomFeatureAttention.draw(heads, 6, torch.Generator().manual_seed(6), mean=1.0)
    constant = (model.features(xs) * math.sqrt(heads)).reshape(2, heads, 7)[..., -1]
    z = (xs[:, :-1] * xs[:, -1:]).sum(-1).numpy() / math.sqrt(6)
    expected = (z * stats.norm.cdf(z) + stats.norm.pdf(z)).mean(axis=1)
    error = constant.std(dim=1).numpy() / math.sqrt(heads)
    assert np.all(np.abs(constant.mean(dim=1).numpy() - expected) < 4 * error)


@pytest.mark.parametrize("count", [40, 12])  # primal (n ≥ P) and dual (n < P)
def test_ridge_path_solves_the_normal_equations(count):
    generator = np.random.default_rng(7)
    phi, y = generator.normal(size=(count, 20)), generator.normal(size=count)
    ridges = [1e-3, 0.5]
    path = ridge_path(torch.from_numpy(phi), torch.from_numpy(y), ridges).numpy()
    scale = (phi ** 2).sum() / (count * 20)
    for ridge, solution in zip(ridges, path):
        expected = np.linalg.solve(phi.T @ phi / count + ridge * scale * np.eye(20), phi.T @ y / count)
        assert np.allclose(solution, expected, atol=1e-10)
    if count > 20:  # a vanishing penalty gives least squares
        tiny = ridge_path(torch.from_numpy(phi), torch.from_numpy(y), [1e-12])[0].numpy()
        assert np.allclose(tiny, np.linalg.lstsq(phi, y, rcond=None)[0], atol=1e-8)
    held_out = generator.normal(size=(30, 20))
    truth = generator.normal(size=20)
    values, chosen = fit_ridge(torch.from_numpy(phi), torch.from_numpy(phi @ truth), torch.from_numpy(held_out),
                               torch.from_numpy(held_out @ truth), [10.0, 1e-9])
    assert chosen == 1e-9  # noiseless labels: the least penalty predicts best


def test_key_average_labels_and_moments():
    task = KeyAverage(dim=5, keys=3, link="cubic")
    prompt = task.sample(4, torch.Generator().manual_seed(8), dtype=torch.float64)
    x = prompt.xs.numpy()
    assert np.allclose(np.linalg.norm(x, axis=-1), math.sqrt(5)) and np.all(prompt.ys[:, :-1].numpy() == 0)
    z = np.einsum("bid,bd->bi", x[:, :-1], x[:, -1]) / math.sqrt(5)
    assert np.allclose(prompt.ys[:, -1].numpy(), ((z ** 3 - 3 * z) / math.sqrt(6)).mean(axis=1))
    # the moments of z = √d t, t a uniform unit vector's first coordinate, against numerical integration
    for dim in (3, 8):
        def density(t):
            return (1 - t * t) ** ((dim - 3) / 2)
        norm = integrate.quad(density, -1, 1)[0]
        for order in (2, 4, 6):
            value = integrate.quad(lambda t: (math.sqrt(dim) * t) ** order * density(t), -1, 1)[0] / norm
            assert math.isclose(sphere_moment(dim, order), value, rel_tol=1e-7)
        value = integrate.quad(lambda t: math.sqrt(dim) * t * density(t), 0, 1)[0] / norm
        assert math.isclose(relu_mean(dim), value, rel_tol=1e-7)
    with pytest.raises(ValueError, match="link"):
        KeyAverage(link="softmax")


#: a size between smoke (too small to learn) and quick (a minute): 224 features, 1024 prompts
SMALL = repro.Settings(samples=(1024,), heads=32, train_prompts=1024, dim=6, keys=4, tuning_prompts=256,
                       test_prompts=512)


def _measured(control, seeds=(5, 6)):
    measurement = Measurement(SMALL, torch.device("cpu"), {}, {}, {}, seeds=seeds, control=control)
    results = repro.measure(measurement)
    return results, {check.claim: check for check in repro.checks(results, SMALL) if check.kind == "claim"}


def test_the_fit_learns_and_the_control_sits_near_one():
    assert repro.runs(repro.SCALES["quick"]) == {}
    quick = repro.SCALES["quick"]
    assert quick.features == 2304 and max(quick.samples) == 4096
    results, claims = _measured(None)
    _, control = _measured("untrained")
    assert set(claims) == set(control) == {"attention-advantage", "biased-mean"}
    for seed in (5, 6):
        errors = {row["model"]: row["value"] for row in results["rows"]
                  if row["quantity"] == "relative_error" and row["seed"] == seed}
        assert errors["attention-zero-mean"] < 0.8 and errors["attention-biased"] < 0.8  # fitted: below Var y
        assert errors["attention-zero-mean"] < errors["network"]
    for check in control.values():  # read-outs at initialisation: both models near predicting 0
        assert all(0.7 < value < 1.3 for value in check.per_seed)
    assert len(repro.figure(results, SMALL)) == 2
