"""The measures wu-zhang-cao-2026's checks rely on: the unnormalised power iterate and the no-LN fixed-scale floor."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icl_sim.paper_repro.wu_zhang_cao_2026 import fixed_scale_floor, unnormalised_power_iterate
from icl_sim.seeding import make_generator
from icl_sim.tasks import PCA
from icl_sim.theory import PowerMethod


def prompts(count: int, seed: int = 0, dim: int = 4, points: int = 12):
    return PCA(dim=dim, points=points).sample(count, make_generator(seed, "eval"), dtype=torch.float64)


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_power_iterate_is_the_power_method_before_normalisation(steps):
    prompt = prompts(64)
    iterate = unnormalised_power_iterate(prompt.xs, steps)
    # numpy reference: (1/(N − 1)) Σ_{j<N−1} x_j x_jᵀ raised to the power k, times 1/√d
    xs = prompt.xs[:, :-1].numpy()
    gram = np.einsum("bnd,bne->bde", xs, xs) / xs.shape[1]
    start = np.full(prompt.dim, prompt.dim ** -0.5)
    expected = np.einsum("bde,e->bd", np.linalg.matrix_power(gram, steps), start)
    np.testing.assert_allclose(iterate.numpy(), expected, rtol=1e-12, atol=1e-14)
    direction = PowerMethod(steps).predict(prompt.xs, prompt.ys)[:, -1]
    torch.testing.assert_close(iterate / iterate.norm(dim=-1, keepdim=True), direction)


def test_fixed_scale_floor_is_the_least_error_over_one_shared_scale():
    prompt = prompts(2000)
    iterate, target = unnormalised_power_iterate(prompt.xs, 2), prompt.target[:, -1]
    result = fixed_scale_floor(iterate, target)
    # brute force: the mean squared error / d of c·v over a fine grid of c
    scales = np.linspace(0.0, 2 * result["scale"], 4001)
    v, u = iterate.numpy(), target.numpy()
    errors = [((c * v - u) ** 2).sum(axis=1).mean() / prompt.dim for c in scales]
    best = int(np.argmin(errors))
    assert result["scale"] == pytest.approx(scales[best], abs=2 * (scales[1] - scales[0]))
    assert result["floor"] == pytest.approx(errors[best], rel=1e-8)
    assert result["floor"] <= min(errors) + 1e-15
    assert result["floor"] < 1 / prompt.dim


def test_floor_standard_error_matches_the_spread_over_independent_samples():
    """Delta-method s.e. against the standard deviation of 40 independent Monte Carlo floors (within 35 %)."""
    floors, errors = [], []
    for seed in range(40):
        prompt = prompts(500, seed=seed + 100)
        result = fixed_scale_floor(unnormalised_power_iterate(prompt.xs, 3), prompt.target[:, -1])
        floors.append(result["floor"])
        errors.append(result["standard_error"])
    spread = float(np.std(floors, ddof=1))
    assert float(np.mean(errors)) == pytest.approx(spread, rel=0.35)
