"""Closed forms of the algorithms transformers implement in context, derived with sympy: GD by
construction, iterative Newton vs GD, GD++ curvature correction, and Saxe et al.'s learning curve.

Each ``derive_*`` returns the sympy steps, the last the final formula; the claims of
``icl_sim.claims.algorithms`` check them by running the algorithms in float64.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy
import torch

from icl_sim.theory.symbolic import Step

# ---------------------------------------------------------------------------------------------
# lsa-gd-construction: one LSA layer with the GD weights is one GD step (von Oswald et al. Prop. 1)
# ---------------------------------------------------------------------------------------------

#: the symbolic prompt of :func:`derive_lsa_gd`: d = 2, n = 3 context points, query q
LSA_DIM, LSA_POINTS = 2, 3


@lru_cache(maxsize=None)
def lsa_symbols():
    """(xs (n×d matrix), ys (n), query (d), η, preconditioner A (d×d, symmetric)) as sympy objects."""
    xs = sympy.Matrix(LSA_POINTS, LSA_DIM, lambda j, k: sympy.Symbol(f"x_{j}{k}", real=True))
    ys = sympy.Matrix(LSA_POINTS, 1, lambda j, _: sympy.Symbol(f"y_{j}", real=True))
    query = sympy.Matrix(LSA_DIM, 1, lambda k, _: sympy.Symbol(f"q_{k}", real=True))
    eta = sympy.Symbol("eta", real=True)
    a = sympy.Matrix(LSA_DIM, LSA_DIM, lambda i, k: sympy.Symbol(f"a_{min(i, k)}{max(i, k)}", real=True))
    return xs, ys, query, eta, a


def lsa_prediction_symbols() -> list[sympy.Symbol]:
    """Argument order of the final formula of :func:`derive_lsa_gd`: x_jk row-major, y_j, q_k, η, a_ik."""
    xs, ys, query, eta, a = lsa_symbols()
    return [*xs, *ys, *query, eta, a[0, 0], a[0, 1], a[1, 1]]


def derive_lsa_gd() -> list[Step]:
    """One LSA layer with P = −η e_{d+1}e_{d+1}ᵀ, Q = [[A, 0], [0, 0]] (A symmetric) on a symbolic
    prompt (d = 2, n = 3): the query's y slot becomes −η x_qᵀ A (1/n) Σ_j y_j x_j and every
    context y slot becomes the residual y_j − x_jᵀ w_1 (von Oswald et al. 2023, Prop. 1)."""
    xs, ys, query, eta, a = lsa_symbols()
    d, n = LSA_DIM, LSA_POINTS
    tokens = [sympy.Matrix([*xs.row(j), ys[j]]) for j in range(n)]
    gamma = sum((z * z.T for z in tokens), sympy.zeros(d + 1, d + 1)) / n
    value = sympy.zeros(d + 1, d + 1)
    value[d, d] = -eta
    key_query = sympy.zeros(d + 1, d + 1)
    key_query[:d, :d] = a
    query_token = sympy.Matrix([*query, 0])
    new_query = query_token + value * gamma * key_query * query_token
    moment = sum((ys[j] * xs.row(j).T for j in range(n)), sympy.zeros(d, 1)) / n
    w1 = eta * a * moment  # one preconditioned GD step from w = 0
    gd_prediction = sympy.expand((query.T * w1)[0])
    residual_checks = []
    for j in range(n):
        new_token = tokens[j] + value * gamma * key_query * tokens[j]
        residual_checks.append(sympy.expand(new_token[d] - (ys[j] - (xs.row(j) * w1)[0])))
    return [
        Step("context moments Γ = (1/n) Σ_j z_j z_jᵀ, z_j = (x_j, y_j)", gamma),
        Step("query token after the layer, z_q + P Γ Q z_q (x slots unchanged)", new_query),
        Step("one GD step from 0: w_1 = η A (1/n) Σ_j y_j x_j", w1),
        Step("query y slot + x_qᵀ w_1 (= 0)", sympy.expand(new_query[d] + gd_prediction)),
        Step("context y slots − (y_j − x_jᵀ w_1) (= 0: residuals)", sympy.Matrix(residual_checks)),
        Step("prediction ŷ = −(query y slot) = η x_qᵀ A (1/n) Σ_j y_j x_j", sympy.expand(-new_query[d])),
    ]


# ---------------------------------------------------------------------------------------------
# newton-vs-gd-convergence (Fu, Chen, Jia & Sharan 2023)
# ---------------------------------------------------------------------------------------------


def fu_alpha(matrix: torch.Tensor) -> torch.Tensor:
    """α = 2/‖S Sᵀ‖ of Fu et al.'s code (``torch.linalg.norm(A @ A.T)``: the Frobenius norm).

    The paper writes ‖S Sᵀ‖₂; with the spectral norm the top eigenvalue has 1 − αλ² = −1 and the
    iteration is stuck on it (residual 1 for ever), so the Frobenius norm, strictly larger for
    rank ≥ 2, is what makes their iteration converge.
    """
    return 2 / torch.linalg.norm(matrix @ matrix.mT, dim=(-2, -1))


def newton_iterates(matrix: torch.Tensor, steps: int, alpha) -> list[torch.Tensor]:
    """M_0 = α S, M_{k+1} = 2 M_k − M_k S M_k (Newton–Schulz, Fu et al. 2023, Sec. 2): [M_0, ..., M_steps]."""
    iterate = alpha * matrix
    out = [iterate]
    for _ in range(steps):
        iterate = 2 * iterate - iterate @ matrix @ iterate
        out.append(iterate)
    return out


def _newton_rate(kappa: float) -> float:
    return (kappa ** 2 - 1) / (kappa ** 2 + 1)


def _gd_rate(kappa: float) -> float:
    return (kappa - 1) / (kappa + 1)


def _smallest(k: int, reaches) -> int:
    """Correct a closed-form step count by exact checks (guards the rounding of ceil near integers)."""
    k = max(k, 0)
    while k > 0 and reaches(k - 1):
        k -= 1
    while not reaches(k):
        k += 1
    return k


def newton_steps_to_tolerance(kappa: float, eps: float) -> int:
    """Newton–Schulz steps k until ‖Π − M_k S‖₂ ≤ eps, from M_0 = α* S with the optimal
    α* = 2/(λ_min² + λ_max²): residual r^(2^k), r = (κ² − 1)/(κ² + 1); k = ⌈log₂(log ε / log r)⌉
    = O(log κ + log log 1/ε).  ``kappa`` = λ_max/λ_min of S (≥ 1), 0 < eps < 1."""
    _check_kappa_eps(kappa, eps)
    rate = _newton_rate(kappa)
    if rate <= eps:
        return 0
    guess = math.ceil(math.log2(math.log(eps) / math.log(rate)))
    return _smallest(guess, lambda k: 2.0 ** k * math.log(rate) <= math.log(eps))


def gd_steps_to_tolerance(kappa: float, eps: float) -> int:
    """GD steps k until ‖(I − ηS)^k‖₂ on the range ≤ eps with the optimal η* = 2/(λ_min + λ_max):
    residual r^k, r = (κ − 1)/(κ + 1); k = ⌈log ε / log r⌉ = O(κ log 1/ε).  (k = 0 is the
    start w = 0, residual 1.)"""
    _check_kappa_eps(kappa, eps)
    rate = _gd_rate(kappa)
    if rate == 0:
        return 1
    guess = math.ceil(math.log(eps) / math.log(rate))
    return _smallest(guess, lambda k: k * math.log(rate) <= math.log(eps))


def _check_kappa_eps(kappa, eps):
    if not (isinstance(kappa, (int, float)) and math.isfinite(kappa) and kappa >= 1):
        raise ValueError(f"kappa must be a finite number >= 1, got {kappa!r}")
    if not (isinstance(eps, (int, float)) and 0 < eps < 1):
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")


def derive_newton() -> list[Step]:
    """Eigenvalue maps of Newton–Schulz (Fu et al. 2023, Sec. 2, iterative Newton; Pan & Schreiber
    1991) and GD, their optimal scalings, and steps to reach a residual ε as functions of κ."""
    lam, m, alpha, eta, k = sympy.symbols("lambda m alpha eta k", positive=True)
    a, b, kappa, eps = sympy.symbols("lambda_min lambda_max kappa epsilon", positive=True)
    m_next = 2 * m - m ** 2 * lam
    contraction = sympy.factor(sympy.expand(1 - m_next * lam))
    assert sympy.expand(contraction - (1 - m * lam) ** 2) == 0
    newton_residual = (1 - alpha * lam ** 2) ** (2 ** k)
    alpha_star = sympy.solve(sympy.Eq(1 - alpha * a ** 2, -(1 - alpha * b ** 2)), alpha)[0]
    eta_star = sympy.solve(sympy.Eq(1 - eta * a, -(1 - eta * b)), eta)[0]
    newton_rate = sympy.simplify((1 - alpha_star * a ** 2).subs(b, kappa * a))
    gd_rate = sympy.simplify((1 - eta_star * a).subs(b, kappa * a))
    return [
        Step("eigenvalue map of M_{k+1} = 2M_k − M_k S M_k (M_k a polynomial in S)",
             sympy.Eq(sympy.Symbol("m'"), m_next)),
        Step("error map: 1 − m'λ = (1 − mλ)²", sympy.Eq(1 - m_next * lam, contraction)),
        Step("Newton residual on the range: max_λ |1 − αλ²|^(2^k) (M_0 = αS, m_0 = αλ)", newton_residual),
        Step("GD residual (w_k − w* = (I − ηS)^k (w_0 − w*)): max_λ |1 − ηλ|^k", (1 - eta * lam) ** k),
        Step("optimal α: 1 − αλ_min² = −(1 − αλ_max²)", sympy.Eq(alpha, alpha_star)),
        Step("optimal η: 1 − ηλ_min = −(1 − ηλ_max)", sympy.Eq(eta, eta_star)),
        Step("Newton rate r_N(κ)", newton_rate),
        Step("GD rate r_G(κ)", gd_rate),
        Step("GD steps to ε: log ε / log r_G (ceil)", sympy.log(eps) / sympy.log(gd_rate)),
        Step("Newton steps to ε: log₂(log ε / log r_N) (ceil)",
             sympy.log(sympy.log(eps) / sympy.log(newton_rate)) / sympy.Float(math.log(2))),
    ]


# ---------------------------------------------------------------------------------------------
# gd-plus-plus-spectral-map (von Oswald et al. 2023, GD++)
# ---------------------------------------------------------------------------------------------


def gd_plus_plus_map(eigenvalues, gamma):
    """λ ↦ λ(1 − γλ)²: the spectrum of H after x ← (I − γH) x, H = (1/n) Σ_j x_j x_jᵀ."""
    return eigenvalues * (1 - gamma * eigenvalues) ** 2


def gd_plus_plus_gamma(lambda_min: float, lambda_max: float) -> float:
    """γ* = 1/(λ_min + √(λ_min λ_max) + λ_max): minimises the condition number after one GD++ step."""
    return 1.0 / (lambda_min + math.sqrt(lambda_min * lambda_max) + lambda_max)


def gd_plus_plus_condition(kappa: float) -> float:
    """κ' = 4(κ + √κ + 1)³ / (27 (κ + √κ)²): the best condition number after one GD++ step."""
    root = math.sqrt(kappa)
    return 4 * (kappa + root + 1) ** 3 / (27 * (kappa + root) ** 2)


def gd_plus_plus_two_step(lambda_min: float, lambda_max: float) -> tuple[float, float, float]:
    """(η*, γ*, residual) minimising max_λ |1 − η λ(1 − γλ)²| over λ ∈ [λ_min, λ_max]: a GD++ data
    step with γ* then a GD step with η* = 2/(min f + max f); residual (κ' − 1)/(κ' + 1)."""
    gamma = gd_plus_plus_gamma(lambda_min, lambda_max)
    low, high = gd_plus_plus_map(lambda_min, gamma), 4 / (27 * gamma)
    return 2 / (low + high), gamma, (high - low) / (high + low)


def derive_gd_plus_plus() -> list[Step]:
    """GD++ (von Oswald et al. 2023, Sec. 4 / App. A.10): x ← (I − γH)x maps the data covariance
    H ← (I − γH) H (I − γH), each eigenvalue λ ↦ λ(1 − γλ)²; the γ that minimises the condition
    number on [λ_min, λ_max] equalises the ends; the two-step (γ, η) pair follows.

    Normalisation: icl-sim's LSA uses H = (1/n) Σ_j x_j x_jᵀ (what one layer with P = [[−γI, 0], [0, 0]],
    Q = [[I, 0], [0, 0]] applies); with the unnormalised X Xᵀ = Σ_j x_j x_jᵀ the map is the same with
    γ_unnormalised = γ/n.  The paper's own statement of the optimal two-step pair could not be
    retrieved here; (η*, γ*) below minimise the exact worst-case residual max_λ |1 − η λ(1 − γλ)²|
    over [λ_min, λ_max] (a GD++ step then a GD step), derived in closed form and checked by numerical
    minimisation in ``verify``."""
    lam, gamma, eta = sympy.symbols("lambda gamma eta", positive=True)
    s, t, kappa = sympy.symbols("s t kappa", positive=True)  # λ_min = s², λ_max = t²
    f = lam * (1 - gamma * lam) ** 2
    critical = sympy.solve(sympy.diff(f, lam), lam)
    peak = sympy.simplify(f.subs(lam, 1 / (3 * gamma)))
    roots = sympy.solve(sympy.Eq(f.subs(lam, s ** 2), f.subs(lam, t ** 2)), gamma)
    # keep the root whose zero 1/γ lies beyond λ_max (the other puts a zero of f inside [λ_min, λ_max])
    gamma_star = [r for r in roots if sympy.simplify((1 / r - t ** 2).subs({s: 1, t: 2})) > 0][0]
    gamma_star = sympy.simplify(gamma_star)
    low = sympy.simplify(f.subs({lam: s ** 2, gamma: gamma_star}))
    high = sympy.simplify(peak.subs(gamma, gamma_star))
    kappa_new = sympy.simplify((high / low).subs({s: 1, t: sympy.sqrt(kappa)}))
    eta_star = sympy.simplify(2 / (low + high))
    return [
        Step("eigenvalue map of (I − γH) H (I − γH)", sympy.Eq(sympy.Function("f")(lam), f)),
        Step("critical points of f (peak at 1/(3γ), zero at 1/γ)", sympy.Tuple(*critical)),
        Step("peak value f(1/(3γ))", peak),
        Step("γ* from f(λ_min) = f(λ_max), λ_min = s², λ_max = t²", sympy.Eq(gamma, gamma_star)),
        Step("two-step η* = 2/(f(λ_min) + f(1/(3γ*)))", sympy.Eq(eta, eta_star)),
        Step("two-step residual (κ' − 1)/(κ' + 1) with κ' below", sympy.Symbol("(kappa' - 1)/(kappa' + 1)")),
        Step("condition number after one GD++ step, κ'(κ)", kappa_new),
    ]


# ---------------------------------------------------------------------------------------------
# saxe-learning-curve (Saxe, McClelland & Ganguli 2013)
# ---------------------------------------------------------------------------------------------


def saxe_mode_strength(t, s, u0, tau):
    """u(t) = s e^{2st/τ} / (e^{2st/τ} − 1 + s/u0) (Saxe et al. 2013, eq. (7) for one mode)."""
    growth = np.exp(2 * s * np.asarray(t, dtype=np.float64) / tau)
    return s * growth / (growth - 1 + s / u0)


def saxe_half_learning_time(s, u0, tau):
    """The time at which u(t) = s/2: t½ = (τ/2s) ln(s/u0 − 1), solving e^{2st/τ} = s/u0 − 1 in eq. (7)'s u(t)."""
    s = np.asarray(s, dtype=np.float64)
    return tau / (2 * s) * np.log(s / u0 - 1)


def derive_saxe() -> list[Step]:
    """Gradient flow of a balanced rank-one two-layer linear net on whitened inputs: with W1 = a vᵀ,
    W2 = a c, u = a², τ u' = 2u(s − u) (Saxe, McClelland & Ganguli 2013, Sec. 2, eqs. (5)-(7))."""
    t, s, u0, tau = sympy.symbols("t s u_0 tau", positive=True)
    a = sympy.symbols("a", positive=True)
    u = sympy.Function("u")
    flow_a = a * (s - a ** 2) / tau  # τ ȧ = W2ᵀ(Σ31 − W2W1) projected on the mode, balanced a = b
    flow_u = sympy.expand(2 * a * flow_a)  # u = a²
    ode = sympy.Eq(u(t).diff(t), 2 * u(t) * (s - u(t)) / tau)
    general = sympy.dsolve(ode, u(t), hint="Bernoulli").rhs  # the Bernoulli hint: 10x faster than default
    constant = sympy.Symbol("C1")
    fitted = sympy.solve(sympy.Eq(general.subs(t, 0), u0), constant)[0]
    solution = general.subs(constant, fitted)
    closed = s * sympy.exp(2 * s * t / tau) / (sympy.exp(2 * s * t / tau) - 1 + s / u0)
    check = sympy.simplify(solution - closed)
    return [
        Step("balanced mode: τ ȧ = a(s − a²)", sympy.Eq(sympy.Symbol("da/dt"), flow_a)),
        Step("mode strength u = a²: du/dt", sympy.Eq(sympy.Symbol("du/dt"), flow_u)),
        Step("ODE τ u' = 2u(s − u)", ode),
        Step("dsolve (Bernoulli)", sympy.Eq(u(t), general)),
        Step("u(0) = u0 fixes C1", sympy.Eq(u(t), solution)),
        Step("dsolve − closed form (= 0)", check),
        Step("u(t) = s e^{2st/τ} / (e^{2st/τ} − 1 + s/u0)", closed),
    ]


#: GD step size of the Saxe check; the discrete-time relative error is O(lr · s · log(s/u0))
