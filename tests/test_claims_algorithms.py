"""Algorithm predictions: verify passes, closed forms vs independent references, derive() vs numerics."""
import math

import numpy as np
import pytest
import sympy
import torch
from scipy.integrate import solve_ivp

from icl_sim.theory import GD
from icl_sim.claims.algorithms import CLAIMS
from icl_sim.theory.formulas.algorithms import (
    fu_alpha, gd_plus_plus_condition, gd_plus_plus_gamma, gd_plus_plus_two_step, gd_steps_to_tolerance,
    lsa_prediction_symbols, newton_iterates, newton_steps_to_tolerance, saxe_mode_strength)
from icl_sim.claims import Claim
from icl_sim.theory.symbolic import Step
from icl_sim.theory.symbolic import torch_function

BY_NAME = {prediction.name: prediction for prediction in CLAIMS}


def test_names():
    assert list(BY_NAME) == ["lsa-gd-construction", "newton-vs-gd-convergence", "gd-plus-plus-spectral-map",
                             "saxe-learning-curve"]
    assert all(isinstance(p, Claim) and p.source and p.summary for p in CLAIMS)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_verify_passes(name, seed):
    comparisons = BY_NAME[name].verify(seed)
    assert comparisons
    failed = [c.as_dict() for c in comparisons if not c.passed]
    assert not failed, failed


@pytest.fixture(scope="module")
def derivations():
    steps = {name: prediction.derive() for name, prediction in BY_NAME.items()}
    for derivation in steps.values():
        assert derivation and all(isinstance(step, Step) for step in derivation)
    return steps


def test_lsa_derivation_zero_steps_and_final_formula(derivations):
    steps = derivations["lsa-gd-construction"]
    assert sympy.expand(steps[3].expression) == 0  # query slot = −x_qᵀ w_1
    assert all(sympy.expand(e) == 0 for e in steps[4].expression)  # context slots are residuals
    formula = torch_function(steps[-1].expression, lsa_prediction_symbols())
    generator = torch.Generator().manual_seed(5)
    xs = torch.randn(4, 2, generator=generator, dtype=torch.float64)
    ys = torch.randn(4, generator=generator, dtype=torch.float64)
    value = formula(*xs[:3].flatten(), *ys[:3], *xs[3], 0.6, 1.0, 0.0, 1.0)
    assert float(value) == pytest.approx(float(GD(1, 0.6).predict(xs[None], ys[None])[0, 3]), abs=1e-12)
    # a non-identity symmetric preconditioner A: η x_qᵀ A (1/n) Σ y_j x_j
    a = torch.tensor([[1.3, 0.4], [0.4, 0.7]], dtype=torch.float64)
    expected = 0.6 * xs[3] @ a @ (ys[:3, None] * xs[:3]).mean(0)
    assert float(formula(*xs[:3].flatten(), *ys[:3], *xs[3], 0.6, 1.3, 0.4, 0.7)) == pytest.approx(float(expected))


def brute_steps(rate_of_k, eps, limit=100_000):
    """Smallest k with rate_of_k(k) <= eps, by counting."""
    return next(k for k in range(limit) if rate_of_k(k) <= eps)


@pytest.mark.parametrize("kappa", [1.5, 3.0, 10.0, 47.3, 300.0])
@pytest.mark.parametrize("eps", [1e-2, 1e-6, 1e-10])
def test_steps_to_tolerance_against_counting(kappa, eps):
    grid = np.linspace(1.0, kappa, 1001)  # the spectrum [1, κ]; the worst case sits at its ends
    alpha, eta = 2 / (1 + kappa ** 2), 2 / (1 + kappa)
    newton = brute_steps(lambda k: np.abs(1 - alpha * grid ** 2).max() ** (2 ** k), eps)
    gd = brute_steps(lambda k: np.abs(1 - eta * grid).max() ** k, eps)
    assert newton_steps_to_tolerance(kappa, eps) == newton
    assert gd_steps_to_tolerance(kappa, eps) == gd


def test_steps_asymptotics():
    """Newton O(log κ + log log 1/ε), GD O(κ log 1/ε)."""
    for kappa in (1e2, 1e3, 1e4):
        assert gd_steps_to_tolerance(kappa, 1e-8) == pytest.approx(kappa / 2 * math.log(1e8), rel=0.01)
        assert abs(newton_steps_to_tolerance(kappa, 1e-8) - math.log2(kappa ** 2 / 2 * math.log(1e8))) <= 1


def test_newton_derivation_final_step_matches(derivations):
    steps = derivations["newton-vs-gd-convergence"]
    kappa, eps = sympy.Symbol("kappa", positive=True), sympy.Symbol("epsilon", positive=True)
    newton = torch_function(steps[-1].expression, [kappa, eps])
    gd = torch_function(steps[-2].expression, [kappa, eps])
    for k_value in (3.0, 20.0, 250.0):
        for e_value in (1e-3, 1e-9):
            assert math.ceil(float(newton(k_value, e_value))) == newton_steps_to_tolerance(k_value, e_value)
            assert math.ceil(float(gd(k_value, e_value))) == gd_steps_to_tolerance(k_value, e_value)


def test_newton_iterates_converge_to_pseudo_inverse():
    generator = torch.Generator().manual_seed(0)
    rows, _ = torch.linalg.qr(torch.randn(5, 3, generator=generator, dtype=torch.float64))
    xs = torch.diag(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)) @ rows.T  # rank 3 < d = 5, κ(S) = 9
    s = xs.T @ xs
    # 20 steps: r^(2^20) is ~0 here, while rounding in the null space of S doubles every step
    # (Newton–Schulz on a singular S is unstable: 2^k · 1e-16), so 40+ steps would lose digits
    m = newton_iterates(s, 20, fu_alpha(s))[-1]
    torch.testing.assert_close(m, torch.linalg.pinv(s), atol=1e-9, rtol=1e-9)


def test_gd_plus_plus_against_grid():
    for lmin, lmax in ((1.0, 4.0), (0.3, 30.0), (2.0, 500.0)):
        grid = np.linspace(lmin, lmax, 2001)
        gammas = np.linspace(1e-3, 1.0, 2001) / lmax
        f = grid[None, :] * (1 - gammas[:, None] * grid[None, :]) ** 2
        conditions = np.where(f.min(1) > 0, f.max(1) / np.maximum(f.min(1), 1e-300), np.inf)
        best = conditions.argmin()
        kappa = lmax / lmin
        assert gd_plus_plus_condition(kappa) == pytest.approx(conditions[best], rel=2e-3)  # grid resolution
        assert gd_plus_plus_gamma(lmin, lmax) == pytest.approx(gammas[best], abs=2 * (gammas[1] - gammas[0]))
        eta, gamma, residual = gd_plus_plus_two_step(lmin, lmax)
        mapped = grid * (1 - gamma * grid) ** 2
        assert np.abs(1 - eta * mapped).max() == pytest.approx(residual, rel=1e-7)
        assert gd_plus_plus_condition(kappa) < kappa


def test_gd_plus_plus_derivation_final_step_matches(derivations):
    steps = derivations["gd-plus-plus-spectral-map"]
    condition = torch_function(steps[-1].expression, [sympy.Symbol("kappa", positive=True)])
    for kappa in (1.0, 2.5, 40.0, 1e4):
        assert float(condition(kappa)) == pytest.approx(gd_plus_plus_condition(kappa), rel=1e-12)
    gamma_step = steps[3].expression.rhs
    s, t = sympy.symbols("s t", positive=True)
    assert float(gamma_step.subs({s: 1, t: 3})) == pytest.approx(gd_plus_plus_gamma(1.0, 9.0), rel=1e-12)


def test_saxe_formula_against_ode_solver(derivations):
    s, u0, tau = 2.3, 1e-3, 50.0
    times = np.linspace(0, 200, 41)
    solution = solve_ivp(lambda _, u: 2 * u * (s - u) / tau, (0, 200), [u0], t_eval=times, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(saxe_mode_strength(times, s, u0, tau), solution.y[0], rtol=1e-7)
    symbols = sympy.symbols("t s u_0 tau", positive=True)
    formula = torch_function(derivations["saxe-learning-curve"][-1].expression, symbols)
    np.testing.assert_allclose(formula(torch.tensor(times), s, u0, tau).numpy(), saxe_mode_strength(times, s, u0, tau),
                               rtol=1e-12)
    assert sympy.simplify(derivations["saxe-learning-curve"][-2].expression) == 0


@pytest.mark.parametrize("kwargs", [dict(kappa=0.5, eps=0.1), dict(kappa=2.0, eps=0.0), dict(kappa=2.0, eps=1.0),
                                    dict(kappa=float("inf"), eps=0.1)])
def test_steps_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        newton_steps_to_tolerance(**kwargs)
    with pytest.raises(ValueError):
        gd_steps_to_tolerance(**kwargs)
