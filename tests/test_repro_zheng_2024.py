"""zheng-2024: the complex causal linear attention layer against the authors' formula, its SGD step against
theirs (torch's complex gradients), and the closed forms of its diagonal set against Monte Carlo."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.models.complex_lsa import complex_form, real_form
from icl_sim.paper_repro import zheng_2024
from icl_sim.seeding import make_generator
from icl_sim.tasks import Autoregressive, make_task
from icl_sim.theory.formulas.autoregressive import (best_step, block_moments, complex_best_step,
                                                    complex_curvature, complex_gd_risk, one_step_gd_risk)
from icl_sim.theory.sequence_baselines import OneStepGD
from icl_sim.training import initial_model, make_optimizer, make_scheduler, optimisation_step, training_batch

Z = 5.0
LAWS = [("gaussian-real", 0.7), ("sparse", 1.3)]


def _complex_parameters(model):
    """The model's W^KQ and W^PV as complex leaf tensors (float64), for the authors' own formula."""
    return (model.key_query().detach().to(torch.complex128).requires_grad_(),
            model.projection_value().detach().to(torch.complex128).requires_grad_())


def _authors_predictions(key_query, value, states):
    """ŷ_t = W^PV E_t E_tᴴ W^KQ e_t / (t − 1) for t = 2..T, one prefix at a time: the authors' forward_train."""
    tokens = torch.cat([states, torch.nn.functional.pad(states, (0, 0, 1, 0))[:, :-1]], dim=-1).mT  # (B, 2D, T)
    return torch.stack([value @ tokens[:, :, :t] @ tokens[:, :, :t].mH @ key_query @ tokens[:, :, t - 1:t] / (t - 1)
                        for t in range(2, tokens.shape[-1] + 1)], dim=1)[..., 0]  # (B, T − 1, D)


def _authors_loss(predictions, states):
    """½ Σ_{t,k} |ŷ − x_{t+1}|² / B over the authors' positions (they predict x_3 .. x_T)."""
    return 0.5 * (predictions - states[:, 2:]).abs().square().sum() / states.shape[0]


def _noisy_model(dim, points, seed=0):
    torch.manual_seed(seed)
    return build_model("complex-lsa", dim, points, dim, init_kq=0.7, init_pv=-0.4, init_noise=0.3).double()


@pytest.mark.parametrize("dim", [4, 5])
def test_the_layer_is_the_authors_formula_with_full_complex_matrices(dim):
    model = _noisy_model(dim, 9)
    prompt = Autoregressive(dim=dim, points=9).sample(3, make_generator(0, "eval"), dtype=torch.float64)
    states = complex_form(torch.cat([prompt.xs, prompt.ys[:, -1:]], dim=1))  # x_0 .. x_N
    expected = _authors_predictions(*_complex_parameters(model), states[:, :-1])
    preds = model(prompt.xs, prompt.ys)  # an odd d: the padded coordinate's imaginary part is dropped
    torch.testing.assert_close(preds[:, 1:], real_form(expected, dim), rtol=1e-12, atol=1e-12)
    assert (preds[:, 0] == 0).all()


def test_the_real_parts_gradient_is_torchs_complex_gradient_and_the_trainer_takes_the_authors_sgd_step():
    """Our SGD on (Re, Im) with lr·N·D on the trainer's mean squared error = the authors' SGD with lr on complex
    parameters and their loss; and torch's complex gradient of |z|² is 2z (∂L/∂Re + i ∂L/∂Im)."""
    z = torch.tensor([1.0 + 2.0j], requires_grad=True)
    z.abs().square().sum().backward()
    assert torch.equal(z.grad, torch.tensor([2.0 + 4.0j]))
    task = Autoregressive(dim=4, points=9, initial="gaussian-real")
    lr = 1e-3
    config = TrainConfig(task="autoregressive", task_params=dataclasses.asdict(task), model="complex-lsa",
                         model_params={"init_kq": 0.5, "init_pv": 1.5, "init_noise": 0.2}, steps=1, batch_size=16,
                         optimizer="sgd", lr=lr * task.points * 2, loss_on="all", device="cpu")
    model = initial_model(config, torch.device("cpu")).double()
    key_query, value = _complex_parameters(model)
    prompt = training_batch(make_task(config.task, **config.task_params), config, 0, torch.device("cpu"))
    prompt = dataclasses.replace(prompt, xs=prompt.xs.double(), ys=prompt.ys.double())
    states = complex_form(torch.cat([prompt.xs, prompt.ys[:, -1:]], dim=1))
    _authors_loss(_authors_predictions(key_query, value, states[:, :-1]), states).backward()
    optimizer = make_optimizer(model, config)
    optimisation_step(model, optimizer, make_scheduler(optimizer, config), prompt, task, config, 0,
                      torch.device("cpu"))
    with torch.no_grad():  # the trainer's loss is computed in float32
        torch.testing.assert_close(model.key_query() - key_query, -lr * key_query.grad, rtol=1e-4, atol=1e-9)
        torch.testing.assert_close(model.projection_value() - value, -lr * value.grad, rtol=1e-4, atol=1e-9)


def test_on_the_diagonal_set_the_layer_is_one_complex_gd_step_and_recovers_w_from_a_sparse_token():
    task = Autoregressive(dim=4, points=12, initial="sparse", initial_scale=2.0)
    prompt = task.sample(50, make_generator(1, "eval"), dtype=torch.float64)
    model = build_model("complex-lsa", 4, 12, 4, init_kq=0.5, init_pv=0.5).double()  # ab = 1/s², exact in float32
    errors = (model(prompt.xs, prompt.ys) - prompt.ys)[:, 1:].abs().max()
    assert errors < 1e-12
    ab, off = zheng_2024.step_and_off_diagonal(model)
    assert ab == 0.25 and off == 0.0


@pytest.mark.parametrize("initial, scale", LAWS)
def test_block_moments_of_the_authors_tokens_match_monte_carlo(initial, scale):
    task = Autoregressive(dim=6, initial=initial, initial_scale=scale)
    x0 = complex_form(task.sample(200_000, make_generator(1, "eval"), points=1, dtype=torch.float64).xs[:, 0])
    m = x0.abs().square()
    moments = block_moments(initial, 6, scale)
    cross = (m.sum(-1, keepdim=True) - m) * m.square()
    for name, samples in (("a", m.square().sum(-1)), ("b", m.pow(3).sum(-1)), ("c", cross.sum(-1)),
                          ("y", m.sum(-1))):
        expected = getattr(moments, name)
        assert abs(float(samples.mean()) - expected) <= Z * float(samples.std()) / math.sqrt(len(samples)) + 1e-12


@pytest.mark.parametrize("initial, scale", LAWS)
def test_complex_gd_risk_and_ratio_match_monte_carlo(initial, scale):
    task = Autoregressive(dim=4, points=12, initial=initial, initial_scale=scale)
    moments = block_moments(initial, 4, scale)
    step = 0.25  # exact in float32, where the model's parameters are built
    model = build_model("complex-lsa", 4, 12, 4, init_kq=step, init_pv=1.0).double()
    prompt = task.sample(40_000, make_generator(5, "eval"), dtype=torch.float64)
    preds, truth = complex_form(model(prompt.xs, prompt.ys)), complex_form(prompt.ys)
    errors = (preds - truth).abs().square().sum(-1).detach()
    for n in (1, 4, 11):
        samples = errors[:, n]
        bound = Z * float(samples.std()) / math.sqrt(len(samples)) + 1e-12
        assert abs(float(samples.mean()) - float(complex_gd_risk(step, n, moments))) <= bound, n
    if initial == "gaussian-real":  # every coordinate active
        ratio = (preds[:, -1] / truth[:, -1]).real.flatten().detach()
        expected = step * moments.y / 2  # c·E m_k
        assert abs(float(ratio.mean()) - expected) <= Z * float(ratio.std()) / math.sqrt(len(ratio))


@pytest.mark.parametrize("initial, scale", LAWS)
def test_complex_best_step_minimises_the_authors_loss(initial, scale):
    moments = block_moments(initial, 4, scale)
    positions = np.arange(1, 39)
    numeric = minimize_scalar(lambda c: complex_gd_risk(c, positions, moments).sum(), bracket=(0.0, 1.0),
                              options={"xtol": 1e-12})
    assert complex_best_step(positions, moments) == pytest.approx(numeric.x, rel=1e-7)
    second = (complex_gd_risk(1.0, positions, moments).sum() - 2 * complex_gd_risk(0.0, positions, moments).sum()
              + complex_gd_risk(-1.0, positions, moments).sum()) / 2
    assert complex_curvature(positions, moments) == pytest.approx(second)  # ½ Σ R″ for a quadratic


def test_the_paper_values_of_the_closed_forms():
    """Gaussian: c* → 1/(5σ²) and the ratio → 1/5 as T grows (the authors' dashed lines); sparse: 1/σ²."""
    gaussian = block_moments("gaussian-real", 10, 2.0)
    assert complex_best_step(range(1, 10 ** 6), gaussian) == pytest.approx(1 / 20, rel=1e-4)
    assert complex_best_step(range(1, 99), block_moments("gaussian-real", 10, 1.0)) == pytest.approx(0.1919, abs=1e-4)
    assert complex_best_step(range(1, 99), block_moments("sparse", 10, 0.5)) == pytest.approx(4.0)


def test_quick_learning_rates_keep_the_papers_epoch_and_full_uses_the_papers():
    full, quick = zheng_2024.SCALES["full"], zheng_2024.SCALES["quick"]
    for law, scale in zheng_2024.PAPER_LR:
        assert full.trainer_lr(law, scale) == pytest.approx(zheng_2024.PAPER_LR[law, scale] * 99 * 5)
    paper = complex_curvature(range(1, 98 + 1), block_moments("sparse", 10, 1.0))
    ours = complex_curvature(range(1, 38 + 1), block_moments("sparse", 4, 1.0))
    assert paper / ours == pytest.approx(98 / 38)
    assert quick.trainer_lr("sparse", 1.0) == pytest.approx(1e-3 * 98 / 38 * 39 * 2)
    for config in zheng_2024.runs(full).values():
        assert config.optimizer == "sgd" and config.batch_redraw_every == config.steps == 200
        assert config.batch_size == 10_000 and config.task_params["points"] == 99


def test_claim_checks_take_one_value_per_seed_each_claim_its_own_quantity():
    settings = zheng_2024.SCALES["smoke"]
    gaussian = block_moments("gaussian-real", 4, 1.0)
    step = complex_best_step(range(1, 39), gaussian)
    risk = float(np.mean([complex_gd_risk(step, n, gaussian) for n in range(1, 39)])) / gaussian.y
    rows = []
    for law in zheng_2024.LAWS:
        for init in zheng_2024.INITS:
            name = zheng_2024.run_name(law, 1.0, init)
            for seed, (ab, ratio, error) in enumerate(((0.19, 0.2, risk + 0.001), (0.2, 0.21, risk))):
                values = {"held_out_fit": step, "held_out_fit_se": 0.001, "training_set_se": 0.004, "ab": ab,
                          "off_diagonal": 0.05, "error": error, "error_se": 0.002, "ratio": ratio, "ratio_se": 0.001}
                rows += [{"run": name, "seed": seed, "quantity": key, "value": value} for key, value in values.items()]
    checks = zheng_2024.checks({"rows": rows}, settings)
    assert {check.claim for check in checks if check.kind == "claim"} == {claim.id for claim in zheng_2024.CLAIMS}
    band = 3 * 0.004 + zheng_2024.OPTIMISATION_SLACK * step
    gaussian_checks = [check for check in checks if check.quantity.startswith("Gaussian, σ = 1, (a₀, b₀) = (0.1")]
    by_claim = {}
    for check in gaussian_checks:
        by_claim.setdefault(check.claim, []).append(check)
    ab, = by_claim["ab-converges"]
    assert ab.per_seed == (0.19, 0.2) and ab.every_seed and ab.tolerance == pytest.approx(band)
    assert ab.passed  # both within 0.1956 ± 0.014
    off, error = by_claim["one-gd-step"]
    assert off.per_seed == (0.05, 0.05) and off.passed
    assert error.expected == pytest.approx(0.4131, abs=1e-4)  # mean_n R_n(c*)/Y at D = 2, T = 40
    curvature = np.mean([gaussian.b + gaussian.c / n for n in range(1, 39)]) / gaussian.y
    assert error.tolerance == pytest.approx(band ** 2 * curvature + 3 * 0.002) and error.passed
    ratio, = by_claim["gaussian-limitation"]
    assert ratio.expected == pytest.approx(step)  # c*·E m_k, E m_k = σ² = 1
    assert ratio.tolerance == pytest.approx(band + 3 * 0.001) and ratio.passed
    assert {check.quantity.split(": ")[1] for check in checks if check.claim == "sparse-recovery"} == {
        "relative test MSE over the trained positions"}
    assert sum(check.kind == "sanity" for check in checks) == len(zheng_2024.LAWS)


@pytest.mark.parametrize("initial, scale", LAWS)
def test_the_test_error_and_ratio_of_a_diagonal_layer_match_the_closed_forms(initial, scale):
    """``test_values`` of a layer at ab = c against mean_n R_n(c)/Y and the ratio c·E m_k (Monte Carlo)."""
    task = Autoregressive(dim=4, points=12, initial=initial, initial_scale=scale)
    moments = block_moments(initial, 4, scale)
    step = 0.25
    model = build_model("complex-lsa", 4, 12, 4, init_kq=step, init_pv=1.0).double()
    prompt = task.sample(20_000, make_generator(7, "eval"), dtype=torch.float64)
    values = zheng_2024.test_values(model, prompt, moments)
    expected = float(complex_gd_risk(step, np.arange(1, 12), moments).mean()) / moments.y
    assert abs(values["error"][0] - expected) <= Z * values["error"][1] + 1e-12
    if initial == "gaussian-real":
        assert abs(values["ratio"][0] - step * moments.y / 2) <= Z * values["ratio"][1]
    else:
        assert "ratio" not in values


@pytest.mark.parametrize("initial, scale", LAWS)
def test_the_real_form_contrast_one_real_gd_step_matches_its_closed_form(initial, scale):
    """The docstring's contrast: one real-form GD step (x_jᵀx only, ``OneStepGD``) has the risk R_n(c) of
    ``one_step_gd_risk``; with a sparse token at D = 2 its best step over the trained positions leaves 0.031."""
    task = Autoregressive(dim=4, points=12, initial=initial, initial_scale=scale)
    moments = block_moments(initial, 4, scale)
    step = 1.7 * moments.a / moments.b
    prompt = task.sample(40_000, make_generator(6, "eval"), dtype=torch.float64)
    errors = (OneStepGD(step).predict(prompt.xs, prompt.ys) - prompt.ys).square().sum(-1)
    for n in (1, 5, 11):
        samples = errors[:, n]
        bound = Z * float(samples.std()) / math.sqrt(len(samples)) + 1e-12
        assert abs(float(samples.mean()) - float(one_step_gd_risk(step, n, moments))) <= bound, n
    sparse = block_moments("sparse", 4, 1.0)
    real_step = best_step(range(1, 39), sparse)
    assert real_step == pytest.approx(1.80, abs=0.005)
    assert float(one_step_gd_risk(real_step, 38, sparse)) / sparse.y == pytest.approx(0.031, abs=0.0005)
