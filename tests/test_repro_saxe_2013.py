"""saxe-2013: the half-learning and rise times, the time constant of icl-sim's loop, the Euler part of the rise
bound, the linear-map task and the deep-linear model's two starts (references: the ODE solver, autograd, the exact
discrete dynamics of one mode, Monte Carlo)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from icl_sim.models import build_model
from icl_sim.paper_repro import saxe_2013
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearMap, make_task
from icl_sim.theory.formulas import saxe_half_learning_time, saxe_mode_strength
from icl_sim.training import task_loss

Z = 5.0


@pytest.mark.parametrize("s, u0, tau", [(3.0, 1e-3, 300.0), (0.75, 1e-3, 300.0), (2.0, 0.1, 7.0)])
def test_half_learning_time_is_where_the_ode_solution_crosses_half_strength(s, u0, tau):
    half = float(saxe_half_learning_time(s, u0, tau))
    assert saxe_mode_strength(half, s, u0, tau) == pytest.approx(s / 2, rel=1e-12)
    crossing = lambda _, u: u[0] - s / 2  # noqa: E731
    crossing.terminal = True
    solution = solve_ivp(lambda _, u: 2 * u * (s - u) / tau, (0, 10 * half), [u0], events=crossing, rtol=1e-11,
                         atol=1e-14)
    assert solution.t_events[0][0] == pytest.approx(half, rel=1e-7)


def test_the_training_loss_is_two_over_k_times_saxes_loss():
    """One SGD step of the loop on its loss is a step of 2·lr/k on L_S = ½ mean‖y − W2W1x‖²: τ = k/(2 lr)."""
    settings = saxe_2013.SCALES["quick"]
    task = settings.task
    config = saxe_2013.runs(settings)["decoupled"]
    torch.manual_seed(0)
    model = build_model("deep-linear", task.dim, task.points, task.target_dim, **config.model_params).double()
    prompt = task.sample(64, make_generator(0, "train"), dtype=torch.float64)
    loop = torch.autograd.grad(task_loss(model, prompt, task, config.loss_on, 0), list(model.parameters()))
    preds = prompt.xs @ model.product().T
    saxe = 0.5 * (prompt.ys - preds).square().sum(-1).mean()
    reference = torch.autograd.grad(saxe, list(model.parameters()))
    for ours, theirs in zip(loop, reference):
        # the loop casts its predictions to float32
        torch.testing.assert_close(ours, 2 / task.target_dim * theirs, rtol=1e-6, atol=1e-9)
    assert settings.tau == task.target_dim / (2 * config.lr)


@pytest.mark.parametrize("width, target_dim", [(0, 3), (5, 3)])
def test_deep_linear_starts_balanced_with_every_mode_at_sigma_squared(width, target_dim):
    torch.manual_seed(1)
    model = build_model("deep-linear", 3, 4, target_dim, width=width, init_scale=0.1).double()
    w1, w2 = model.input_layer.detach(), model.output_layer.detach()
    torch.testing.assert_close(model.product().detach(), 0.01 * torch.eye(3, dtype=torch.float64))
    torch.testing.assert_close(w1 @ w1.T, w2.T @ w2)  # balanced: W1 W1ᵀ = W2ᵀ W2
    xs = torch.randn(2, 4, 3, dtype=torch.float64)
    torch.testing.assert_close(model(xs, torch.zeros(2, 4, 3, dtype=torch.float64)), 0.01 * xs)


@pytest.mark.parametrize("s, u0, tau", [(3.0, 1e-4, 300.0), (0.75, 0.02, 300.0)])
def test_the_rise_from_a_quarter_to_three_quarters_takes_tau_over_2s_ln_9_whatever_u0(s, u0, tau):
    settings = saxe_2013.Settings(singular_values=(s,), steps=1, lr=0.5 / tau, batch_size=1, points=1, log_every=1)
    assert settings.tau == pytest.approx(tau)
    events = []
    for level in saxe_2013.RISE:
        event = lambda _, u, level=level: u[0] - level * s  # noqa: E731
        events.append(event)
    solution = solve_ivp(lambda _, u: 2 * u * (s - u) / tau, (0, 100 * tau), [u0], events=events, rtol=1e-11,
                         atol=1e-14)
    start, end = solution.t_events[0][0], solution.t_events[1][0]
    assert end - start == pytest.approx(settings.rise_time(s), rel=1e-7)


@pytest.mark.parametrize("s", [3.0, 0.75])
def test_the_euler_step_delays_the_rise_by_at_most_lr_s_over_k(s):
    """One decoupled balanced mode a = √u under the loop's SGD step η = 2·lr/k on L_S: a ← a + η(s − a²)a; its rise
    time departs from (τ/2s) ln 9 by less than the bound's Euler term lr·s/k (and by a fair part of it)."""
    settings = saxe_2013.SCALES["quick"]
    k, eta = settings.task.target_dim, 2 * settings.lr / settings.task.target_dim
    a, strengths = math.sqrt(1e-4), [1e-4]
    while strengths[-1] < 0.9 * s:
        a += eta * (s - a * a) * a
        strengths.append(a * a)
    steps = np.arange(len(strengths), dtype=np.float64)
    start, end = (saxe_2013.crossing(steps, np.array(strengths), level * s) for level in saxe_2013.RISE)
    error = abs((end - start) / settings.rise_time(s) - 1)
    assert 0.2 * settings.lr * s / k < error <= settings.lr * s / k


def test_the_rise_bound_adds_euler_coupling_and_noise_terms():
    settings = saxe_2013.SCALES["quick"]
    s, k, points = 1.5, settings.task.target_dim, settings.batch_size * settings.points
    noise = 3 * math.sqrt(k / (points * settings.rise_time(s)))
    assert saxe_2013.rise_bound(settings, s, np.zeros(2)) == pytest.approx(settings.lr * s / k + noise)
    assert saxe_2013.rise_bound(settings, s, np.array([0.15, 0.0])) == pytest.approx(
        settings.lr * s / k + noise + 32 / 3 * 0.01)


def test_the_random_start_draws_independent_entries_of_scale_sigma():
    torch.manual_seed(3)
    model = build_model("deep-linear", 40, 4, 40, width=50, init_scale=0.1, init="random").double()
    for weights in (model.input_layer.detach(), model.output_layer.detach()):
        n = weights.numel()
        assert abs(weights.mean()) <= Z * 0.1 / math.sqrt(n)
        # the sample variance of n Gaussians has relative standard error √(2/n)
        assert weights.var() == pytest.approx(0.01, rel=Z * math.sqrt(2 / n))
    w1, w2 = model.input_layer.detach(), model.output_layer.detach()
    assert (w1 @ w1.T - w2.T @ w2).abs().max() > 0.05  # not balanced
    with pytest.raises(ValueError, match="init"):
        build_model("deep-linear", 3, 4, init="identity")
    with pytest.raises(ValueError, match="depth"):
        build_model("deep-linear", 3, 4, depth=1)


def test_a_deeper_decoupled_start_is_balanced_with_its_product_at_sigma_squared():
    """L = 4 weight layers, h = 5 > d = 3: every layer a = σ^{2/L} times R, RRᵀ or ERᵀ (built in float32)."""
    torch.manual_seed(4)
    model = build_model("deep-linear", 3, 4, 3, width=5, init_scale=0.1, depth=4).double()
    layers = [model.input_layer, *model.hidden_layers, model.output_layer]
    assert len(layers) == 4
    torch.testing.assert_close(model.product().detach(), 0.01 * torch.eye(3, dtype=torch.float64), atol=1e-8, rtol=0)
    for lower, upper in zip(layers, layers[1:]):  # balanced: W_l W_lᵀ = W_{l+1}ᵀ W_{l+1}
        torch.testing.assert_close((lower @ lower.T).detach(), (upper.T @ upper).detach(), atol=1e-6, rtol=0)


@pytest.mark.parametrize("width", [0, 6])
def test_the_orthogonal_start_draws_every_layer_orthogonal(width):
    """Each layer σ·(orthonormal columns or rows); for h = d = k the product's singular values are all σ^L."""
    torch.manual_seed(5)
    model = build_model("deep-linear", 4, 3, 4, width=width, init_scale=1.0, depth=5, init="orthogonal").double()
    h = width or 4
    for layer in [model.input_layer, *model.hidden_layers]:
        torch.testing.assert_close((layer.T @ layer).detach(), torch.eye(layer.shape[1], dtype=torch.float64),
                                   atol=1e-6, rtol=0)
    torch.testing.assert_close((model.output_layer @ model.output_layer.T).detach(),
                               torch.eye(4, dtype=torch.float64), atol=1e-6, rtol=0)
    singular_values = torch.linalg.svdvals(model.product().detach())
    if h == 4:
        torch.testing.assert_close(singular_values, torch.ones(4, dtype=torch.float64), atol=1e-5, rtol=0)
    else:  # a 4 × 4 corner of an orthogonal map contracts
        assert singular_values.max() <= 1 + 1e-5


def test_the_orthogonal_layers_are_haar_distributed():
    """Haar on O(3): E tr Q = 0 and E (tr Q)² = 1 (the number of fixed points of a random permutation's analogue);
    QR without its sign correction is biased (E tr Q ≈ 1.1).  Monte Carlo over 4000 draws, 5 standard errors."""
    torch.manual_seed(6)
    traces = torch.tensor([float(torch.trace(build_model("deep-linear", 3, 1, 3, init_scale=1.0, init="orthogonal")
                                            .input_layer.detach())) for _ in range(4000)], dtype=torch.float64)
    n = len(traces)
    assert abs(traces.mean()) <= Z * traces.std() / math.sqrt(n)
    squares = traces.square()
    assert squares.mean() == pytest.approx(1.0, abs=Z * float(squares.std()) / math.sqrt(n))


def test_the_learning_time_is_the_first_logged_step_under_the_criterion_or_the_run_length():
    settings = saxe_2013.SCALES["quick"]
    history = [{"step": 10, "relative_loss": 0.5}, {"step": 20, "relative_loss": 0.009},
               {"step": 30, "relative_loss": 0.02}]
    assert saxe_2013.learning_time(settings, history) == 20.0
    assert saxe_2013.learning_time(settings, history[:1]) == settings.deep_steps
    assert saxe_2013.learning_time(settings, []) == settings.deep_steps


def test_deep_linear_rejects_a_narrow_hidden_layer():
    with pytest.raises(ValueError, match="width"):
        build_model("deep-linear", 4, 3, width=2)


def test_linear_map_inputs_are_whitened_and_labels_follow_the_fixed_map():
    task = LinearMap(dim=3, points=50, singular_values=(3.0, 1.5, 0.75), teacher_seed=1)
    teacher, modes = task.teacher(), task.modes()
    torch.testing.assert_close(modes.T @ modes, torch.eye(3, dtype=torch.float64))
    torch.testing.assert_close(modes.T @ teacher @ modes, torch.diag(torch.tensor([3.0, 1.5, 0.75],
                                                                                   dtype=torch.float64)))
    prompt = task.sample(400, make_generator(2, "eval"), dtype=torch.float64)
    xs, ys = prompt.xs.reshape(-1, 3), prompt.ys.reshape(-1, 3)
    n = xs.shape[0]
    torch.testing.assert_close(ys, xs @ teacher.T)
    # Σ11 = E[xxᵀ] = I: each entry's standard error is at most √2/√n
    assert (xs.T @ xs / n - torch.eye(3, dtype=torch.float64)).abs().max() <= Z * math.sqrt(2 / n)
    assert torch.equal(prompt.latent["M"][0], teacher.to(prompt.xs.dtype))
    assert task.trivial_error() == pytest.approx((9 + 2.25 + 0.5625) / 3)


def test_linear_map_default_rotation_is_the_identity_and_bad_values_are_named():
    assert torch.equal(LinearMap(dim=2, singular_values=(1.0,)).modes(), torch.eye(2, dtype=torch.float64))
    for bad in [(1.0, 2.0, 3.0), (), (-1.0,), (math.nan,)]:
        with pytest.raises(ValueError, match="singular_values"):
            make_task("linear-map", dim=2, singular_values=bad)


def test_crossing_interpolates_between_logged_steps():
    steps = np.array([0.0, 10.0, 20.0])
    assert saxe_2013.crossing(steps, np.array([0.0, 1.0, 3.0]), 2.0) == pytest.approx(15.0)
    assert math.isnan(saxe_2013.crossing(steps, np.array([0.0, 0.5, 1.0]), 2.0))


def test_an_untrained_model_fails_every_claim_by_a_finite_value(tmp_path):
    """The untrained control (empty histories): no mode moves, so every rise is censored at the run's end: a rise
    error of 1 over its bound, and half-learning times all equal (depth fraction 0); no deep network learns, so the
    learning times are the run's length at every depth (growth 0: the orthogonal check passes, the Gaussian contrast
    fails); each claim fails by that."""
    from icl_sim.paper_repro import REPRODUCTIONS, run_reproduction
    from icl_sim.paper_repro.evidence import claim_verdicts

    reproduction = REPRODUCTIONS["saxe-2013"]
    checks = run_reproduction("saxe-2013", "smoke", tmp_path, seeds=2, control="untrained", device="cpu",
                              progress=False)
    settings = saxe_2013.SCALES["smoke"]
    claims = [check for check in checks if check.kind == "claim"]
    assert len(claims) == len(settings.singular_values) + 3
    for check, s in zip(claims, settings.singular_values):
        bound = saxe_2013.rise_bound(settings, s, np.zeros(len(settings.singular_values) - 1))
        assert check.per_seed == pytest.approx([1 / bound] * 2)
    assert [check.per_seed for check in claims[-3:]] == [(0.0, 0.0)] * 3
    assert [entry.verdict for entry in claim_verdicts(reproduction, checks)] == ["failed"] * 3
    half_times = [check for check in checks if check.kind == "sanity" and "t½" in check.quantity]
    assert [check.expected for check in half_times] == pytest.approx(
        [float(saxe_half_learning_time(s, settings.u0, settings.tau)) for s in settings.singular_values])


def test_the_depth_fraction_is_0_for_equal_half_times_and_1_at_the_two_layer_limit():
    """One-layer network: every mode at one rate, equal t½ (0); two-layer, u0 → 0: t½ ∝ 1/s (1); eq. (7) at u0 = 1e-4
    in between, by its closed form."""
    singular_values = (3.0, 1.5, 0.75)
    assert saxe_2013.depth_fraction([100.0, 100.0, 100.0], singular_values) == 0.0
    assert saxe_2013.depth_fraction([1 / s for s in singular_values], singular_values) == pytest.approx(1.0)
    halves = [float(saxe_half_learning_time(s, 1e-4, 300.0)) for s in singular_values]
    expected = min((math.log(b / 1e-4 - 1) * a / b / math.log(a / 1e-4 - 1) - 1) / (a / b - 1)
                   for a, b in zip(singular_values, singular_values[1:]))
    assert saxe_2013.depth_fraction(halves, singular_values) == pytest.approx(expected, rel=1e-12)
    assert 0.5 < expected < 1

