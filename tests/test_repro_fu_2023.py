"""What fu-2023's checks rely on, against independent numpy references: Newton–Schulz's residual recursion and
its step counts; the authors' two algorithms as their models.py runs them (a loop over prompts and positions:
Newton with α = 1/‖SSᵀ‖_F, GD at a fixed lr on the summed loss); their per-prompt SimE; the per-layer
least-squares read-outs; and the probe's explicit step counts (GD matched on a log scale)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.paper_repro import fu_2023
from icl_sim.probing import probe
from icl_sim.tasks import LinearRegression
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.theory import Newton
from icl_sim.theory.formulas import fu_alpha, gd_steps_to_tolerance, newton_iterates, newton_steps_to_tolerance


def _prompts(count=5, dim=3, points=7):
    return LinearRegression(dim=dim, points=points).sample(count, make_generator(7, "eval", 0), dtype=torch.float64)


def _their_predictions(xs, ys, weights_of):
    """Their models.py __call__: 0 at i = 0, then for every prompt and position i the weights from the first i
    points, applied to x_i."""
    batch, points, _ = xs.shape
    preds = np.zeros((batch, points))
    for b in range(batch):
        for i in range(1, points):
            preds[b, i] = xs[b, i] @ weights_of(xs[b, :i], ys[b, :i])
    return preds


def test_summed_loss_gd_is_their_gradient_descent_loop():
    """LeastSquaresModelGradientDescent: w ← w − lr (XᵀX w − Xᵀy) from 0, a fixed lr at every position."""
    prompt = _prompts()
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    for steps in (1, 7, 64):
        def weights_of(x, y):
            w = np.zeros(x.shape[1])
            for _ in range(steps):
                w = w - fu_2023.GD_LR * (x.T @ x @ w - x.T @ y)
            return w
        np.testing.assert_allclose(fu_2023.summed_loss_gd(prompt.xs, prompt.ys, steps).numpy(),
                                   _their_predictions(xs, ys, weights_of), rtol=1e-9, atol=1e-12)


def test_newton_at_their_scale_is_their_newton_loop():
    """LeastSquaresModelNewtonMethod.newton_inv at HEAD: M_0 = Aᵀ/‖AAᵀ‖_F for A = XᵀX, M ← M (2I − A M)."""
    prompt = _prompts()
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    for steps in (1, 3, 10):
        def weights_of(x, y):
            a = x.T @ x
            inv = a.T / np.linalg.norm(a @ a.T)
            for _ in range(steps):
                inv = inv @ (2 * np.eye(a.shape[0]) - a @ inv)
            return inv @ (x.T @ y)
        predicted = Newton(steps, scale=fu_2023.NEWTON_SCALE).predict(prompt.xs, prompt.ys).numpy()
        np.testing.assert_allclose(predicted, _their_predictions(xs, ys, weights_of), rtol=1e-8, atol=1e-10)


def test_per_prompt_similarity_is_the_mean_over_prompts_of_each_prompts_cosine():
    """Their get_average_resid_similarity: sklearn's cosine of one prompt's residuals across positions, averaged."""
    generator = torch.Generator().manual_seed(0)
    model = torch.randn(2, 6, 9, generator=generator, dtype=torch.float64)
    algorithm = torch.randn(3, 6, 9, generator=generator, dtype=torch.float64)
    got = fu_2023.per_prompt_similarity(model, algorithm).numpy()
    a, b = model.numpy(), algorithm.numpy()
    for layer in range(2):
        for step in range(3):
            cosines = [a[layer, k] @ b[step, k] / np.linalg.norm(a[layer, k]) / np.linalg.norm(b[step, k])
                       for k in range(6)]
            assert got[layer, step] == pytest.approx(np.mean(cosines), rel=1e-12)


def test_layer_readouts_are_numpys_least_squares_over_every_position():
    task = LinearRegression(dim=3, points=7)
    torch.manual_seed(0)
    model = build_model("gpt", 3, 7, n_layer=2, n_embd=16, n_head=2).double().eval()
    tuning = _prompts(count=64)
    readouts = fu_2023.layer_readouts(model, tuning)
    with torch.no_grad():
        features = model.layer_features(tuning.xs, tuning.ys)
    for feature, weights in zip(features, readouts):
        design = np.c_[feature.flatten(0, 1).numpy(), np.ones(64 * 7)]
        expected = np.linalg.lstsq(design, tuning.ys.flatten().numpy(), rcond=None)[0]
        np.testing.assert_allclose(design @ weights.squeeze(-1).numpy(), design @ expected, rtol=1e-6, atol=1e-8)
    predictions = fu_2023.layer_predictions(model, readouts, Prompt(tuning.xs[:4], tuning.ys[:4]))
    assert predictions.shape == (2, 4, task.points)


def test_newton_schulz_residual_is_a_power_of_the_first_one_numpy():
    """numpy's own Newton–Schulz loop: I − M_k S = (I − αS²)^(2^k) with α = 2/‖SSᵀ‖_F (Fu et al.'s code)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 6))
    s = x.T @ x
    alpha = 2 / np.linalg.norm(s @ s.T)
    assert alpha == pytest.approx(float(fu_alpha(torch.from_numpy(s))), rel=1e-14)
    m, eye = alpha * s, np.eye(6)
    library = newton_iterates(torch.from_numpy(s), 6, alpha)
    for k in range(7):
        expected = np.linalg.matrix_power(eye - alpha * s @ s, 2 ** k)
        np.testing.assert_allclose(eye - m @ s, expected, atol=1e-12)
        np.testing.assert_allclose(library[k].numpy(), m, atol=1e-12)
        m = 2 * m - m @ s @ m


@pytest.mark.parametrize("kappa", [1.2, 4.0, 50.0, 700.0])
def test_steps_to_tolerance_match_the_scalar_recursions(kappa):
    """On the extreme eigenvalues 1 and κ (where the worst case sits), iterate the scalar maps by hand."""
    eps = 1e-6
    alpha = 2 / (1 + kappa ** 2)
    residual, newton = max(abs(1 - alpha), abs(1 - alpha * kappa ** 2)), 0
    while residual > eps:
        residual, newton = residual ** 2, newton + 1
    eta = 2 / (1 + kappa)
    rate, gd = max(abs(1 - eta), abs(1 - eta * kappa)), 0
    while rate ** gd > eps:
        gd += 1
    assert newton_steps_to_tolerance(kappa, eps) == newton
    assert gd_steps_to_tolerance(kappa, eps) == gd
    assert fu_2023.counted_steps(kappa) == (newton, gd)


def test_newton_needs_logarithmically_many_steps_gd_linearly_many():
    """The paper's Sec. 2 rates: Newton's count grows like 2 log₂ κ (log r_N ≈ −2/κ²), GD's like κ."""
    small, large = 10.0, 1000.0
    assert newton_steps_to_tolerance(large, 1e-6) - newton_steps_to_tolerance(small, 1e-6) <= 2 * math.log2(100) + 1
    assert gd_steps_to_tolerance(large, 1e-6) / gd_steps_to_tolerance(small, 1e-6) == pytest.approx(100, rel=0.1)


def test_probe_step_counts_equal_the_plain_steps_they_name():
    task = LinearRegression(dim=3, points=7)
    torch.manual_seed(0)
    model = build_model("gpt", 3, 7, n_layer=2, n_embd=16, n_head=2)
    plain = probe(model, task, "gd", steps=4, num_prompts=64)
    counted = probe(model, task, "gd", step_counts=[1, 2, 3, 4], num_prompts=64)
    assert plain["records"] == counted["records"] and plain["best"] == counted["best"]
    sparse = probe(model, task, "gd", step_counts=[1, 4, 16], num_prompts=64)
    assert sorted({record["step"] for record in sparse["records"]}) == [1, 4, 16]


@pytest.mark.parametrize("options", [dict(step_counts=[2, 2]), dict(step_counts=[]), dict(step_counts=[1, 2], steps=2),
                                     dict(step_counts=[1, 2], step_params="per-step")])
def test_probe_rejects_bad_step_counts(options):
    task = LinearRegression(dim=3, points=7)
    model = build_model("gpt", 3, 7, n_layer=1, n_embd=16, n_head=2)
    with pytest.raises(ValueError, match="step_counts"):
        probe(model, task, "gd", num_prompts=32, **options)


def test_claim_checks_take_one_value_per_seed():
    """Each seed's own error ratio, Newton slope and GD growth 2^(its log₂ slope), not 2^(mean slope)."""
    rows = [{"part": "exact", "design": design, "quantity": "newton_residual_gap", "step": 0, "value": 0.0}
            for design in ("isotropic", "ill-conditioned")]
    for algorithm in ("newton", "gd"):
        rows += [{"part": "exact", "kappa": 2.0, "quantity": f"{algorithm}_steps_{kind}", "value": 5}
                 for kind in ("counted", "formula")]
    for seed, (error, slope, log2_slope) in enumerate([(0.05, 2.0, 1.0), (0.2, 4.0, 3.0)]):
        rows += [{"part": "trained", "seed": seed, "quantity": quantity, "value": value} for quantity, value in
                 (("relative_error", error), ("newton_slope", slope), ("gd_log2_slope", log2_slope))]
    checks = fu_2023.checks({"rows": rows}, fu_2023.SCALES["smoke"])
    claims = {check.claim: check for check in checks if check.kind == "claim"}
    assert set(claims) == {claim.id for claim in fu_2023.CLAIMS}
    assert claims["learns-in-context"].per_seed == (0.05, 0.2)
    assert claims["newton-linear"].per_seed == (2.0, 4.0) and claims["newton-linear"].measured == 3.0
    assert claims["gd-exponential"].per_seed == (2.0, 8.0) and claims["gd-exponential"].measured == 5.0
    assert all(check.passed for check in checks if check.kind == "sanity")
