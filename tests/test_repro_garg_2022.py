"""The closed forms garg-2022's checks rely on, against numpy Monte Carlo; its noisy task; the figure's y range."""
import math

import numpy as np
import pytest
import torch
from scipy import stats

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


def test_the_kink_margin_is_half_least_squares_error_one_example_before_d():
    """At k = d − 1 least squares' error / d is 1/d (numpy Monte Carlo), at k = d it is 0: the margin is 1/(2d)."""
    before, error = _monte_carlo(D - 1, 1.0, 0.0, "ols", seed=30)
    assert abs(before - 1 / D) <= 4 * error
    assert garg_2022.kink_margin(D) == pytest.approx(1 / (2 * D))


def test_bands_are_the_authors_5th_to_95th_percentiles_of_bootstrap_means():
    """The authors' aggregate_metrics: 1000 bootstrap means over prompts, sorted, the 50th and 950th."""
    from icl_sim.evaluation import bootstrap_interval

    rng = np.random.default_rng(40)
    values = rng.exponential(size=(500, 1))
    _, low, high = bootstrap_interval(torch.tensor(values), confidence=garg_2022.BAND_CONFIDENCE)
    means = np.sort(values[rng.integers(0, 500, size=(1000, 500)), 0].mean(axis=1))
    standard_error = values.std() / math.sqrt(500)
    assert abs(float(low[0]) - means[50]) <= 0.25 * standard_error
    assert abs(float(high[0]) - means[950]) <= 0.25 * standard_error
    assert garg_2022.Z_BAND == pytest.approx(float(stats.norm.ppf(0.95)), abs=1e-6)


def _rows(condition: str, predictor: str, means, seed=None) -> list[dict]:
    return [{"condition": condition, "seed": seed, "predictor": predictor, "position": k, "mean": mean,
             "ci_low": mean, "ci_high": mean} for k, mean in enumerate(means)]


def test_claim_checks_take_one_value_per_seed_from_that_seeds_curve():
    settings = garg_2022.SCALES["smoke"]
    d, last = settings.dim, settings.points - 1
    noisy = settings.noisy_task
    ols = [float(ols_risk_per_dim(k, d)) for k in range(last + 1)]
    averaging = [float(averaging_risk_per_dim(max(k, 1), d)) for k in range(last + 1)]
    noisy_ols = [float(ols_risk_per_dim(k, d, noisy.prior_scale, noisy.noise)) if k != d else 1e3
                 for k in range(last + 1)]
    rising = [1.0] * (last + 1)
    rising[d] = 2.0  # seed 0: a peak at k = d, twice its error at k = d − 2; seed 1: flat
    kinked = [0.05] * (last + 1)
    kinked[d] = 0.2  # seed 0: a mean gap of 0.075 over k = d … 2d, but 0.2 at k = d itself
    rows = (_rows("noiseless", "Least squares", ols) + _rows("noiseless", "Averaging", averaging)
            + _rows("noisy", "Least squares", noisy_ols)
            + _rows("noiseless", "Transformer, seed 0", kinked, 0)
            + _rows("noiseless", "Transformer, seed 1", [0.3] * (last + 1), 1)
            + _rows("noisy", "Transformer, seed 0", rising, 0)
            + _rows("noisy", "Transformer, seed 1", [1.0] * (last + 1), 1))
    checks = garg_2022.checks({"rows": rows}, settings)
    assert all(check.passed for check in checks if check.kind == "sanity")
    kink, gap = [check for check in checks if check.claim == "follows-least-squares"]
    assert kink.per_seed == pytest.approx((0.2, 0.3)) and kink.expected == pytest.approx(1 / (2 * d))
    late = last + 1 - d
    assert gap.per_seed == pytest.approx(((0.2 + 0.05 * (late - 1)) / late, 0.3))  # least squares: 0 for k ≥ d
    assert not kink.holds_for(kink.per_seed[0]) and gap.holds_for(gap.per_seed[0])  # the mean hides the kink
    fraction = next(check for check in checks if check.claim == "far-below-averaging")
    late_averaging = sum((d + 1) / k for k in range(d, last + 1)) / late
    assert fraction.per_seed == pytest.approx((gap.per_seed[0] / late_averaging, 0.3 / late_averaging))
    peak = [check for check in checks if check.claim == "noisy-peak"]
    assert [check.per_seed for check in peak] == [kink.per_seed, gap.per_seed, pytest.approx((2.0, 1.0))]
    assert [check.claim for check in checks if check.kind == "claim"] == [
        "follows-least-squares", "follows-least-squares", "far-below-averaging", "noisy-peak", "noisy-peak",
        "noisy-peak"]
