"""The closed forms garg-2022's checks rely on, against numpy Monte Carlo; its noisy task; the figure's y range."""
import math

import numpy as np
import pytest

from icl_sim.paper_repro import garg_2022
from icl_sim.plots import Curve, Panel, draw_figure
from icl_sim.theory.formulas import averaging_risk_per_dim, ols_risk_per_dim

D = 5
PROMPTS = 20_000


def _monte_carlo(k: int, prior_scale: float, noise: float, learner: str, seed: int = 0) -> tuple[float, float]:
    """Mean and standard error of (ŷ − y_q)²/d after k examples, numpy only (pinv / averaging)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((PROMPTS, k + 1, D))
    w = prior_scale * rng.standard_normal((PROMPTS, D))
    y = np.einsum("bnd,bd->bn", x, w) + noise * rng.standard_normal((PROMPTS, k + 1))
    if learner == "ols":
        fitted = (np.linalg.pinv(x[:, :k]) @ y[:, :k, None])[..., 0]  # min-norm least squares, batched
    else:
        fitted = np.einsum("bnd,bn->bd", x[:, :k], y[:, :k]) / k
    errors = (np.einsum("bd,bd->b", x[:, k], fitted) - y[:, k]) ** 2 / D
    return errors.mean(), errors.std() / math.sqrt(PROMPTS)


@pytest.mark.parametrize("k", [1, 3, 5, 8])
def test_noiseless_least_squares_is_d_minus_k_over_d(k):
    mean, error = _monte_carlo(k, 1.0, 0.0, "ols", seed=k)
    assert float(ols_risk_per_dim(k, D)) == pytest.approx(max(D - k, 0) / D)
    assert abs(mean - max(D - k, 0) / D) <= 4 * error + 1e-12


@pytest.mark.parametrize("k", [1, 5, 10])
def test_averaging_is_d_plus_one_over_k(k):
    mean, error = _monte_carlo(k, 1.0, 0.0, "averaging", seed=10 + k)
    assert float(averaging_risk_per_dim(k, D)) == pytest.approx((D + 1) / k)
    assert abs(mean - (D + 1) / k) <= 4 * error


@pytest.mark.parametrize("k", [1, 10])
def test_noisy_least_squares_away_from_the_peak(k):
    scale = math.sqrt(D / (D + 1))
    mean, error = _monte_carlo(k, scale, scale, "ols", seed=20 + k)
    assert abs(mean - float(ols_risk_per_dim(k, D, scale, scale))) <= 4 * error


def test_noisy_outputs_keep_the_label_variance_d_as_the_authors_rescaling_does():
    task = garg_2022.SCALES["quick"].noisy_task
    assert task.trivial_error() == pytest.approx(1.0)  # E[y²]/d = (s² d + σ²)/d with s² = σ² = d/(d + 1)
    assert task.noise == task.prior_scale == pytest.approx(math.sqrt(D / (D + 1)))


def test_a_panel_shows_its_y_range(tmp_path):
    panel = Panel("x", "y", [Curve("c", [0, 1], [0.0, 10.0])], ylim=(0.0, 1.5))
    (png, _) = draw_figure(tmp_path / "figure", [panel], "caption")
    assert png.stat().st_size > 1000
