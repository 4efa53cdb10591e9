"""The pieces wu-2023's checks rely on, against independent references (numpy, Monte Carlo, the formulas).

* the ``preconditioner`` LSA predicts x_qᵀ Γ (1/n) Σ_j y_j x_j (Wu et al. 2024, Sec. 3) at every position;
* ``preconditioner_risk`` of a trained Γ is its Monte Carlo risk, so excess risks may be computed exactly;
* Jensen's bound on R(Γ*)/R_Bayes, with one_step_gd_risk = R(Γ*); Γ*_N's risk at M ≠ N against Monte Carlo;
* replicate seeds disjoint across runner seeds;
* SGD and the geometric step-size schedule of the paper's Sec. 4.
"""
import math

import numpy as np
import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.paper_repro import wu_2023
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import (one_step_gd_risk, optimal_preconditioner, preconditioned_gd_risk,
                                     preconditioner_risk, ridge_bayes_risk)
from icl_sim.training import learning_rate_factor, make_optimizer


def _model_with(gamma: torch.Tensor, dim: int, points: int):
    model = build_model("lsa", dim, points, parameterisation="preconditioner", init_scale=0.0).double()
    with torch.no_grad():
        model.preconditioner[0, 0] = gamma
    return model


def test_preconditioner_lsa_is_one_preconditioned_step_at_every_position():
    dim, points = 3, 6
    gamma = torch.randn(dim, dim, generator=make_generator(0, "eval", 900), dtype=torch.float64)
    prompt = LinearRegression(dim=dim, points=points, noise=0.3).sample(4, make_generator(1, "eval", 900),
                                                                         dtype=torch.float64)
    preds = _model_with(gamma, dim, points).predict(prompt.xs, prompt.ys).numpy()
    xs, ys, g = prompt.xs.numpy(), prompt.ys.numpy(), gamma.numpy()
    for b in range(4):
        for i in range(points):
            h = (ys[b, :i, None] * xs[b, :i]).sum(0) / max(i, 1)
            assert preds[b, i] == pytest.approx(xs[b, i] @ g @ h, abs=1e-10)


def test_preconditioner_risk_of_a_layer_is_its_monte_carlo_risk():
    dim, context, noise = 3, 5, 0.5
    gamma = 0.3 * torch.eye(dim, dtype=torch.float64) + 0.05 * torch.ones(dim, dim, dtype=torch.float64)
    task = LinearRegression(dim=dim, points=context + 1, noise=noise)
    prompt = task.sample(200_000, make_generator(2, "eval", 900), dtype=torch.float64)
    errors = (_model_with(gamma, dim, context + 1).predict(prompt.xs, prompt.ys)[:, -1] - prompt.ys[:, -1]) ** 2
    formula = float(preconditioner_risk(gamma, torch.eye(dim, dtype=torch.float64), context, noise, 1.0))
    assert abs(float(errors.mean()) - formula) < 5 * float(errors.std()) / math.sqrt(len(errors))


@pytest.mark.parametrize("noise", [0.1, 0.5, 2.0])
def test_the_jensen_bound_lies_above_the_monte_carlo_ratio(noise):
    dim, context = 5, 10
    identity = torch.eye(dim, dtype=torch.float64)
    optimum = one_step_gd_risk(dim, context, noise, 1.0)
    assert optimum == pytest.approx(float(preconditioned_gd_risk(identity, context, noise, 1.0)), rel=1e-12)
    bayes, se = ridge_bayes_risk(context, dim, 1.0, noise, samples=20_000)
    assert optimum / (bayes + 5 * se) <= wu_2023.jensen_ratio_bound(dim, context, noise)


def test_the_optimum_for_n_tested_at_m_is_its_monte_carlo_risk_and_worse_than_the_optimum_for_m():
    """Γ*_N on prompts of M ≠ N context points: preconditioner_risk at M is the layer's Monte Carlo risk there,
    and above the risk of Γ*_M (the fixed-context-length claim's reference curves)."""
    dim, n, m, noise = 3, 6, 24, 1.0
    identity = torch.eye(dim, dtype=torch.float64)
    gamma = optimal_preconditioner(identity, n, noise, 1.0)
    prompt = LinearRegression(dim=dim, points=m + 1, noise=noise).sample(200_000, make_generator(4, "eval", 900),
                                                                           dtype=torch.float64)
    errors = (_model_with(gamma, dim, m + 1).predict(prompt.xs, prompt.ys)[:, -1] - prompt.ys[:, -1]) ** 2
    formula = float(preconditioner_risk(gamma, identity, m, noise, 1.0))
    assert abs(float(errors.mean()) - formula) < 5 * float(errors.std()) / math.sqrt(len(errors))
    assert formula > float(preconditioned_gd_risk(identity, m, noise, 1.0)) + 0.01


def test_replicate_seeds_are_disjoint_across_runner_seeds():
    configs = wu_2023.runs(wu_2023.SCALES["quick"])
    replicates = [config.seed for name, config in configs.items() if name.startswith(f"tasks-{2**7}-")]
    blocks = [{seed + runner for seed in replicates} for runner in (0, 1, 2, 100, 101, 102)]
    assert sum(len(block) for block in blocks) == len(set().union(*blocks)) == 6 * len(replicates)


def test_geometric_schedule_and_sgd():
    config = TrainConfig(steps=256, lr_schedule="geometric", optimizer="sgd", lr=0.1)
    factor = learning_rate_factor(config)
    first = math.ceil(256 / 8)  # s / log2 s
    phase = math.ceil((256 - first) / 8)
    assert [factor(t) for t in (0, first - 1)] == [1.0, 1.0]
    assert factor(first) == 0.5 and factor(first + phase) == 0.25 and factor(255) == 0.5 ** 8
    model = build_model("lsa", 2, 3, parameterisation="preconditioner")
    assert isinstance(make_optimizer(model, config), torch.optim.SGD)


def test_fitted_slope_recovers_a_power_law():
    rows = [{"kind": "sweep", "tasks": t, "excess_risk": 3.0 * t ** -1.0} for t in (64, 128, 256, 512)]
    assert wu_2023.fitted_slope({"rows": rows}, 64) == pytest.approx(-1.0, abs=1e-12)
    assert np.isnan(wu_2023.fitted_slope({"rows": rows[:1]}, 64))


def test_fitted_slope_of_one_seed_uses_that_seed_alone():
    rows = [{"kind": "sweep", "tasks": t, "seed": seed, "replicate": k, "excess_risk": (1 + k) * t ** -power}
            for t in (64, 128, 256, 512) for seed, power in ((0, 1.0), (1, 0.5)) for k in range(2)]
    results = {"rows": rows}
    assert wu_2023.sweep_seeds(results) == [0, 1]
    assert wu_2023.fitted_slope(results, 64, seed=0) == pytest.approx(-1.0, abs=1e-12)
    assert wu_2023.fitted_slope(results, 64, seed=1) == pytest.approx(-0.5, abs=1e-12)
