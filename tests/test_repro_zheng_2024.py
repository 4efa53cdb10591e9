"""zheng-2024: the closed forms of one GD step on the rotation-block AR process (Monte Carlo over the
task's own prompts), and the diagonal causal LSA being exactly that GD step."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from icl_sim.models import build_model
from icl_sim.paper_repro import zheng_2024
from icl_sim.seeding import make_generator
from icl_sim.tasks import Autoregressive
from icl_sim.theory.formulas.autoregressive import (best_limit_floor, best_step, block_moments, limit_floor,
                                                    one_step_gd_risk)
from icl_sim.theory.sequence_baselines import OneStepGD

Z = 5.0
CASES = [("ones", 2.0), ("sparse", 1.3), ("gaussian", 0.7)]


def _block_norms(task, count, seed):
    x0 = task.sample(count, make_generator(seed, "eval"), points=1, dtype=torch.float64).xs[:, 0]
    return x0.reshape(count, -1, 2).square().sum(-1)  # (B, D) block norms m_k


@pytest.mark.parametrize("initial, scale", CASES)
def test_block_moments_match_the_tasks_initial_tokens(initial, scale):
    m = _block_norms(Autoregressive(dim=6, initial=initial, initial_scale=scale), 200_000, 1)
    moments = block_moments(initial, 6, scale)
    cross = (m.sum(-1, keepdim=True) - m) * m.square()  # Σ_{l≠k} m_l m_k² per k
    for name, samples in (("a", m.square().sum(-1)), ("b", m.pow(3).sum(-1)), ("c", cross.sum(-1)),
                          ("y", m.sum(-1))):
        expected = getattr(moments, name)
        assert abs(float(samples.mean()) - expected) <= Z * float(samples.std()) / math.sqrt(len(samples)) + 1e-12, name


@pytest.mark.parametrize("initial, scale", CASES)
def test_one_step_gd_risk_matches_monte_carlo_at_every_position(initial, scale):
    task = Autoregressive(dim=4, points=12, initial=initial, initial_scale=scale)
    moments = block_moments(initial, 4, scale)
    step = 1.7 * moments.a / moments.b
    prompt = task.sample(40_000, make_generator(5, "eval"), dtype=torch.float64)
    errors = (OneStepGD(step).predict(prompt.xs, prompt.ys) - prompt.ys).square().sum(-1)
    for n in (1, 2, 5, 11):
        samples = errors[:, n]
        standard_error = float(samples.std()) / math.sqrt(len(samples))
        assert abs(float(samples.mean()) - float(one_step_gd_risk(step, n, moments))) <= Z * standard_error, n


@pytest.mark.parametrize("initial, scale", CASES)
def test_best_step_minimises_the_summed_risk(initial, scale):
    moments = block_moments(initial, 4, scale)
    positions = np.arange(1, 40)
    numeric = minimize_scalar(lambda c: one_step_gd_risk(c, positions, moments).sum(), bracket=(0.0, 1.0),
                              options={"xtol": 1e-12})
    assert best_step(positions, moments) == pytest.approx(numeric.x, rel=1e-7)
    with pytest.raises(ValueError, match="positions"):
        best_step([0, 1], moments)


def test_limit_floor_is_zero_only_for_constant_block_norms():
    assert best_limit_floor(block_moments("ones", 10, 1.0)) == pytest.approx(0.0, abs=1e-12)
    assert best_limit_floor(block_moments("sparse", 10, 2.0)) == pytest.approx(0.0, abs=1e-12)
    assert best_limit_floor(block_moments("gaussian", 10, 0.5)) == pytest.approx(1 / 3, rel=1e-12)
    moments = block_moments("ones", 4, math.sqrt(2))  # m = 1: the step 2 = 2/m recovers W
    assert limit_floor(2.0, moments) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="dim"):
        block_moments("ones", 5, 1.0)


def test_one_gd_step_tends_to_half_w_times_the_block_norms():
    """(1/n) Σ x_{j+1} x_jᵀ → ½ W diag(m_k I₂) for rotation blocks with distinct angles."""
    task = Autoregressive(dim=4, points=20_000, initial="gaussian")
    prompt = task.sample(8, make_generator(3, "eval"), dtype=torch.float64)
    estimate = prompt.ys.mT @ prompt.xs / prompt.xs.shape[1]
    m = prompt.xs[:, 0].reshape(8, 2, 2).square().sum(-1)
    limit = 0.5 * prompt.latent["W"] @ torch.diag_embed(m.repeat_interleave(2, dim=-1))
    theta = torch.atan2(prompt.latent["W"][:, 1, 0], prompt.latent["W"][:, 0, 0])
    other = torch.atan2(prompt.latent["W"][:, 3, 2], prompt.latent["W"][:, 2, 2])
    generic = ((theta - other).remainder(2 * math.pi) - math.pi).abs() < math.pi - 0.2  # angles 0.2 apart
    generic &= (theta.remainder(math.pi) - math.pi / 2).abs() < math.pi / 2 - 0.2  # 2θ away from 0 (mod 2π)
    generic &= (other.remainder(math.pi) - math.pi / 2).abs() < math.pi / 2 - 0.2
    assert generic.sum() >= 2
    error = (estimate - limit)[generic].norm(dim=(-2, -1)) / limit[generic].norm(dim=(-2, -1))
    assert error.max() < 0.01


def test_the_diagonal_causal_lsa_is_one_gd_step_with_step_minus_py_qx():
    model = build_model("lsa", 4, 9, 4, layers=1, causal=True, parameterisation="diagonal").double()
    with torch.no_grad():
        model.value_scales.copy_(torch.tensor([[[0.3, -1.5]]], dtype=torch.float64))  # (p_x, p_y)
        model.key_query_scales.copy_(torch.tensor([[[0.8, 0.4]]], dtype=torch.float64))  # (q_x, q_y)
    prompt = Autoregressive(dim=4, points=9).sample(5, make_generator(0, "eval"), dtype=torch.float64)
    torch.testing.assert_close(model(prompt.xs, prompt.ys), OneStepGD(1.5 * 0.8).predict(prompt.xs, prompt.ys),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("initial", zheng_2024.LAWS)
def test_every_initial_law_has_unit_mean_block_norm_on_its_active_blocks(initial):
    scale = zheng_2024.initial_scale(initial, 4)
    m = _block_norms(Autoregressive(dim=4, initial=initial, initial_scale=scale), 50_000, 2)
    active = m[m > 0]
    assert abs(float(active.mean()) - 1.0) <= Z * float(active.std()) / math.sqrt(len(active)) + 1e-12


def test_claim_checks_take_one_value_per_seed_and_the_seeds_mean_standard_error():
    settings = zheng_2024.SCALES["smoke"]
    (n,) = settings.lengths
    rows = []
    for law in zheng_2024.LAWS:
        for seed, step in enumerate((0.8, 0.9)):
            values = {"learned_step": step, "best_step": 1.0, "gd_distance": 0.01 * (seed + 1), "train_risk": 1.0,
                      "train_risk_se": 0.01 * (seed + 1), "train_risk_formula": 1.0, "long_error": 0.5,
                      "long_error_se": 0.02, "long_error_formula": 0.5, "best_limit_floor": 1 / 3,
                      "recovery": step / 2, "recovery_formula": 0.5}
            rows += [{"run": f"{law}-N{n}", "law": law, "length": n, "seed": seed, "quantity": key, "value": value}
                     for key, value in values.items()]
    checks = zheng_2024.checks({"rows": rows}, settings)
    assert all(check.kind == "claim" for check in checks)
    assert {check.claim for check in checks} == {claim.id for claim in zheng_2024.CLAIMS}
    step = next(check for check in checks if check.quantity.startswith("ones") and "learned step" in check.quantity)
    assert step.per_seed == (0.8, 0.9) and step.measured == pytest.approx(0.85) and not step.passed
    risk = next(check for check in checks
                if check.quantity.startswith("ones") and "trained positions" in check.quantity)
    assert risk.tolerance == pytest.approx(3 * 0.015 + zheng_2024.RISK_SLACK * 1.0)
    floor = next(check for check in checks if "min_c" in check.quantity)
    assert floor.claim == "limit-recovery" and floor.tolerance == pytest.approx(0.06) and floor.passed
