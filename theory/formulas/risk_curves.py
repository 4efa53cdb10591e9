"""Risk curves of in-context regression baselines, and the Bayes risks they are measured against.

Setting (the linear-regression task with an isotropic Gaussian x law): x ~ N(0, I_d),
w ~ N(0, s² I_d) (``prior_scale`` s), y = wᵀx + ε with ε ~ N(0, σ²) (``noise`` σ).
"Risk after n examples" is E[(ŷ(x_q) − y_q)²] at a fresh query (x_q, y_q) predicted
from n context points, which is what ``icl_sim.evaluation`` measures at position n
(``preds[:, n]`` uses points j < n).  **The query label is noisy**, so every risk
below includes the irreducible + σ² unless ``query_noise=False``; icl-sim's curves
divide by d (``*_per_dim``).

Each risk is derived with sympy (``derive_*``) and checked numerically by the claim of the
same name in ``icl_sim.claims.risk_curves``:

* ``ols-risk-curve``: min-norm least squares (Hastie, Montanari, Rosset & Tibshirani
  2022, "Surprises in high-dimensional ridgeless least squares interpolation", Ann.
  Statist.; finite-sample isotropic Gaussian case of their Sec. 2-3, the Wishart
  identities of e.g. Muirhead 1982, Thm 3.2.12 / Breiman & Freedman 1983):
  R(n) = s²·(d − min(n, d)) + σ²·min(n, d)/(|n − d| − 1) + σ²  for |n − d| ≥ 2,
  infinite for σ > 0 and |n − d| ≤ 1 (the interpolation peak); for σ = 0 the
  variance term vanishes and R(n) = s²·max(d − n, 0) everywhere.
* ``averaging-risk-curve``: w = (1/n) Σ y_j x_j (Garg et al. 2022, Sec. 3 "averaging"
  baseline): R(n) = (s²·d(d + 1) + σ²·d)/n + σ² for n ≥ 1, R(0) = s²·d + σ².
* ``ridge-bayes-risk``: Ridge(σ²/s²) is the posterior mean, with risk
  R(n) = s²·E tr((I + (s²/σ²) XᵀX)⁻¹) + σ² (Bayes risk).  No elementary finite-n form
  exists; the expectation is taken by Monte Carlo over X only (eigenvalues of XᵀX),
  and the Marchenko–Pastur limit is given as ``ridge_bayes_risk_mp``.
* ``finite-pool-bayes`` (Raventós, Paul, Chen & Ganguli 2023, "Pretraining task
  diversity and the emergence of non-Bayesian in-context learning for regression",
  Sec. 2 "dMMSE"): the posterior mean under a uniform prior on a pool of M tasks,
  ``icl_sim.theory.DiscreteMMSE``; claims (a), (b) are inequalities, (c) is exact.
"""
from __future__ import annotations

import functools
from typing import Callable

import sympy as sp
import torch
from sympy.stats import E as expectation
from sympy.stats import Normal

from icl_sim.checks import mean_and_standard_error
from icl_sim.seeding import make_generator
from icl_sim.theory.symbolic import torch_function
from icl_sim.validation import check_float, check_int

from icl_sim.theory.symbolic import Step

n, d = sp.symbols("n d", positive=True, integer=True)
s, sigma = sp.symbols("s sigma", positive=True)
mu = sp.Symbol("mu", nonnegative=True)  # an eigenvalue of XᵀX
risk = sp.Symbol("R")


def derive_ols() -> list[Step]:
    k, x = sp.Symbol("k", positive=True), sp.Symbol("x", positive=True)
    p, m = sp.symbols("p m", positive=True, integer=True)
    steps = [Step("error decomposition: ŵ − w = −(I − P)w + X⁺ε, P = X⁺X the row-space projection; "
                  "E_x,ε_q (x_qᵀ(ŵ − w) − ε_q)² = ‖ŵ − w‖² + σ², cross terms vanish (E ε = 0)",
                  sp.Eq(risk, s**2 * sp.Symbol("E_tr_I_minus_P") + sigma**2 * sp.Symbol("E_tr_pinvG")
                        + sigma**2))]
    # bias: rank(P) = min(n, d) a.s.; by rotation invariance E[I − P] = (1 − min(n,d)/d) I
    bias = sp.simplify(s**2 * sp.trace((1 - sp.Min(n, d) / d) * sp.eye(1)) * d)
    steps.append(Step("bias: E‖(I − P)w‖² = s² tr E[I − P] = s² (d − rank X), rank X = min(n, d)", sp.Eq(
        sp.Symbol("bias"), bias)))
    # variance: E tr (XᵀX)⁺ = E tr W⁻¹ for the p×p Wishart W ~ W_p(I, m), p = min(n,d), m = max(n,d);
    # (W⁻¹)_ii ~ 1/χ²_{m−p+1}, and E[1/χ²_k] = ∫ x⁻¹ χ²_k(x) dx = 1/(k − 2)
    chi2_density = x ** (k / 2 - 1) * sp.exp(-x / 2) / (2 ** (k / 2) * sp.gamma(k / 2))
    inverse_chi2_mean = sp.gammasimp(sp.integrate(chi2_density / x, (x, 0, sp.oo), conds="none"))
    steps.append(Step("E[1/χ²_k] by integration against the χ² density (k > 2)",
                      sp.Eq(sp.Symbol("E_inv_chi2_k"), inverse_chi2_mean)))
    trace_inverse = sp.simplify(p * inverse_chi2_mean.subs(k, m - p + 1))
    steps.append(Step("Wishart: (W⁻¹)_ii ~ 1/χ²_{m−p+1}, so E tr W⁻¹ = p/(m − p − 1) (m > p + 1)",
                      sp.Eq(sp.Symbol("E_tr_inv_W"), trace_inverse)))
    variance = trace_inverse.subs({p: sp.Min(n, d), m: sp.Max(n, d)})
    variance = variance.subs(sp.Max(n, d) - sp.Min(n, d), sp.Abs(n - d))
    steps.append(Step("variance: tr (XᵀX)⁺ = tr (XXᵀ)⁻¹ for n < d (W_n(I, d)), tr (XᵀX)⁻¹ for n > d "
                      "(W_d(I, n)): p = min(n, d), m − p = |n − d|", sp.Eq(sp.Symbol("E_tr_pinvG"), variance)))
    steps.append(Step("underparametrised n ≥ d + 2: classical σ² d/(n − d − 1)",
                      sp.Eq(risk, sp.simplify((bias + sigma**2 * d / (n - d - 1) + sigma**2)
                                              .subs(sp.Min(n, d), d)))))
    steps.append(Step("overparametrised n ≤ d − 2: s²(d − n) + σ² n/(d − n − 1)",
                      sp.Eq(risk, (s**2 * (d - n) + sigma**2 * n / (d - n - 1) + sigma**2))))
    final = bias + sigma**2 * variance + sigma**2
    steps.append(Step("final (|n − d| ≥ 2; infinite for σ > 0, |n − d| ≤ 1; σ = 0: s² max(d − n, 0)); "
                      "includes the query noise σ²; divide by d for icl-sim's error/d", sp.Eq(risk, final)))
    return steps


@functools.cache
def _final_risk(derive) -> Callable:
    """The final formula of ``derive()`` as a torch function of (n, d, s, σ), derived once, on first use."""
    return torch_function(derive()[-1].expression.rhs, [n, d, s, sigma])


def _curve_points(points, dim: int, prior_scale: float, noise: float) -> torch.Tensor:
    """A risk curve's arguments checked, and ``points`` (numbers of examples) as a float64 tensor."""
    check_int("dim", dim, 1)
    check_float("prior_scale", prior_scale, 0.0)
    check_float("noise", noise, 0.0)
    points = torch.as_tensor(points, dtype=torch.float64)
    if bool((points < 0).any()):
        raise ValueError(f"points must be >= 0, got {points}")
    return points


def ols_risk(points, dim: int, prior_scale: float = 1.0, noise: float = 0.0, *,
             query_noise: bool = True) -> torch.Tensor:
    """Risk of min-norm OLS after ``points`` examples (tensor or number; float64, broadcasting).

    s²·(d − min(n, d)) + σ²·min(n, d)/(|n − d| − 1) [+ σ²]; inf at |n − d| ≤ 1 when σ > 0;
    the variance term is 0 when σ = 0 or n = 0.
    """
    points = _curve_points(points, dim, prior_scale, noise)
    dims = torch.full_like(points, float(dim))
    bias = prior_scale**2 * (dims - torch.minimum(points, dims))
    gap = (points - dims).abs()
    if noise == 0:
        variance = torch.zeros_like(points)
    else:
        closed = _final_risk(derive_ols)(points, dims, prior_scale, noise) - bias - noise**2
        variance = torch.where(gap >= 2, closed, torch.full_like(points, torch.inf))
        variance = torch.where(points == 0, torch.zeros_like(points), variance)
    return bias + variance + (noise**2 if query_noise else 0.0)


def ols_risk_per_dim(points, dim: int, prior_scale: float = 1.0, noise: float = 0.0, *,
                     query_noise: bool = True) -> torch.Tensor:
    """``ols_risk`` / d: icl-sim's squared error / d curve (Garg et al.'s normalisation)."""
    return ols_risk(points, dim, prior_scale, noise, query_noise=query_noise) / dim


def derive_averaging() -> list[Step]:
    z1, z2 = Normal("z1", 0, 1), Normal("z2", 0, 1)
    fourth, cross, odd = expectation(z1**4), expectation(z1**2 * z2**2), expectation(z1**3 * z2)
    steps = [Step("Gaussian moments: E z⁴, E z₁²z₂², E z₁³z₂",
                  sp.ImmutableMatrix([fourth, cross, odd]))]
    # E[‖x‖² x xᵀ] = diag: E x₁⁴ + (d − 1) E x₁²x₂²; off-diagonal: E x₁³x₂ terms = 0
    diag = sp.expand(fourth + (d - 1) * cross)
    steps.append(Step("E[‖x‖² x xᵀ] = (E z⁴ + (d − 1) E z₁²z₂²) I", sp.Eq(sp.Symbol("c4"), diag)))
    # ŵ − w = (1/n) Σ_j [(x_j x_jᵀ − I) w + ε_j x_j]: independent zero-mean terms
    per_term = sp.expand(diag - 2 + 1)  # E (xxᵀ − I)² = E‖x‖²xxᵀ − 2 E xxᵀ + I
    steps.append(Step("E (xxᵀ − I)² = c4 − 2 + 1 (times I)", sp.Eq(sp.Symbol("c"), per_term)))
    error = (per_term * s**2 * d + sigma**2 * d) / n
    steps.append(Step("E‖ŵ − w‖² = (1/n)(E wᵀ(xxᵀ − I)²w + σ² E‖x‖²), E‖w‖² = s² d",
                      sp.Eq(sp.Symbol("E_err_w"), sp.factor(error))))
    final = error + sigma**2
    steps.append(Step("final (n ≥ 1; R(0) = s² d + σ²), with query noise σ²; divide by d for error/d",
                      sp.Eq(risk, final)))
    return steps


def averaging_risk(points, dim: int, prior_scale: float = 1.0, noise: float = 0.0, *,
                   query_noise: bool = True) -> torch.Tensor:
    """Risk of Averaging after ``points`` examples: (s² d(d + 1) + σ² d)/n [+ σ²]; s² d [+ σ²] at n = 0."""
    points = _curve_points(points, dim, prior_scale, noise)
    closed = _final_risk(derive_averaging)(points.clamp(min=1), dim, prior_scale, noise) - noise**2
    value = torch.where(points == 0, torch.full_like(points, prior_scale**2 * dim), closed)
    return value + (noise**2 if query_noise else 0.0)


def averaging_risk_per_dim(points, dim: int, prior_scale: float = 1.0, noise: float = 0.0, *,
                           query_noise: bool = True) -> torch.Tensor:
    """``averaging_risk`` / d."""
    return averaging_risk(points, dim, prior_scale, noise, query_noise=query_noise) / dim


def derive_ridge_bayes() -> list[Step]:
    gamma, lam, m = sp.symbols("gamma lambda m", positive=True)
    precision = mu / sigma**2 + 1 / s**2
    steps = [Step("posterior of w given (X, y): Gaussian, precision XᵀX/σ² + I/s² (per eigen-direction μ); "
                  "its mean is Ridge with λ = σ²/s²", sp.Eq(sp.Symbol("lambda_bayes"),
                                                            sp.simplify(sigma**2 * (1 / s**2))))]
    variance = sp.simplify(1 / precision)
    steps.append(Step("posterior variance along an eigenvector of XᵀX with eigenvalue μ",
                      sp.Eq(sp.Symbol("v"), variance)))
    steps.append(Step("= s² / (1 + (s²/σ²) μ): the trace is s² tr (I + (s²/σ²) XᵀX)⁻¹",
                      sp.Eq(sp.Symbol("v"), sp.simplify(s**2 / (1 + s**2 * mu / sigma**2)))))
    # Marchenko–Pastur: m(−λ) solves γλ m² + (1 − γ + λ) m − 1 = 0, γ = d/n
    roots = sp.solve(sp.Eq(gamma * lam * m**2 + (1 - gamma + lam) * m - 1, 0), m)
    positive = [r for r in roots if r.subs({gamma: sp.Rational(1, 2), lam: 1}).evalf() > 0][0]
    steps.append(Step("Marchenko–Pastur Stieltjes transform at −λ (ratio γ = d/n)",
                      sp.Eq(sp.Symbol("m_MP"), positive)))
    mp = s**2 * d * lam * positive + sigma**2
    mp = mp.subs({lam: sigma**2 / (s**2 * n), gamma: d / n})
    steps.append(Step("proportional limit d, n → ∞, d/n fixed: R ≈ s² d λ m(−λ) + σ², λ = σ²/(s² n)",
                      sp.Eq(risk, mp)))
    steps.append(Step("final (exact, finite n): R = E_X[Σ_{i ≤ d} r(μ_i)] + σ² over eigenvalues μ_i of XᵀX "
                      "(no elementary closed form; evaluated by Monte Carlo over X only)",
                      sp.Eq(sp.Symbol("r"), sp.simplify(variance))))
    return steps


@functools.cache
def _ridge_functions():
    """(per-eigenvalue Bayes-risk term of (μ, s, σ), Marchenko–Pastur limit of (n, d, s, σ)), derived on first use."""
    steps = derive_ridge_bayes()
    return (torch_function(steps[-1].expression.rhs, [mu, s, sigma]),
            torch_function(steps[-2].expression.rhs, [n, d, s, sigma]))


def ridge_bayes_conditional_risk(xs: torch.Tensor, prior_scale: float, noise: float, *,
                                 query_noise: bool = True) -> torch.Tensor:
    """s² tr (I + (s²/σ²) XᵀX)⁻¹ [+ σ²] for each design ``xs`` (B, n, d): the Bayes risk given X."""
    check_float("prior_scale", prior_scale, 0.0, strict=True)
    check_float("noise", noise, 0.0, strict=True)
    xs = xs.to(torch.float64)
    eigenvalues = torch.linalg.eigvalsh(xs.mT @ xs).clamp(min=0)
    return _ridge_functions()[0](eigenvalues, prior_scale, noise).sum(-1) + (noise**2 if query_noise else 0.0)


def ridge_bayes_risk_samples(points: int, dim: int, prior_scale: float, noise: float, *,
                             samples: int = 20000, seed: int = 0, query_noise: bool = True) -> torch.Tensor:
    """Draws of the Bayes risk given X over ``samples`` Gaussian designs (n, d): their mean is the risk.

    Monte Carlo over X only (labels and w are integrated exactly); stream "eval", index 1000.
    """
    check_int("points", points, 0)
    check_int("samples", samples, 2)
    xs = torch.randn(samples, points, dim, generator=make_generator(seed, "eval", 1000), dtype=torch.float64)
    return ridge_bayes_conditional_risk(xs, prior_scale, noise, query_noise=query_noise)


def ridge_bayes_risk(points: int, dim: int, prior_scale: float, noise: float, *, samples: int = 20000,
                     seed: int = 0, query_noise: bool = True) -> tuple[float, float]:
    """The Bayes risk after ``points`` examples, (mean, standard error) by Monte Carlo over X only."""
    return mean_and_standard_error(ridge_bayes_risk_samples(points, dim, prior_scale, noise, samples=samples,
                                                            seed=seed, query_noise=query_noise))


def ridge_bayes_risk_mp(points, dim, prior_scale: float, noise: float) -> torch.Tensor:
    """Marchenko–Pastur (d, n → ∞, d/n fixed) approximation of the Bayes risk, with query noise."""
    return _ridge_functions()[1](points, dim, prior_scale, noise)


def derive_finite_pool() -> list[Step]:
    y, r1, r2 = sp.symbols("y r_1 r_2", real=True)
    likelihood = lambda r: (2 * sp.pi * sigma**2) ** (-n / 2) * sp.exp(-r / (2 * sigma**2))  # noqa: E731
    steps = [Step("Gaussian likelihood of the context given task m, r_m = ‖y − X w_m‖²",
                  sp.Eq(sp.Symbol("p_m"), likelihood(r1)))]
    ratio = sp.simplify(likelihood(r1) / (likelihood(r1) + likelihood(r2)))
    steps.append(Step("uniform prior: posterior of task 1 in a two-task pool (the normaliser cancels): "
                      "softmax of −r_m/(2σ²)", sp.Eq(sp.Symbol("pi_1"), ratio)))
    steps.append(Step("dMMSE: ŵ = Σ_m w_m softmax_m(−r_m/(2σ²)); for M = 1 the posterior is δ_{w_1}",
                      sp.Eq(sp.Symbol("w_hat"), sp.Symbol("w_1"))))
    eps = Normal("epsilon", 0, sigma)
    m1 = sp.simplify(expectation(eps**2))
    steps.append(Step("[inequality, in distribution] R_dMMSE ≤ R_ridge: the posterior mean minimises the "
                      "risk under its own prior; [inequality, Gaussian prior] R_ridge ≤ R_dMMSE(M), "
                      "with R_dMMSE(M) → R_ridge as M → ∞ (the pool's empirical prior → N(0, s² I))",
                      sp.Le(sp.Symbol("R_dMMSE"), sp.Symbol("R_ridge"))))
    steps.append(Step("final, exact for M = 1 on pool prompts: y_q − w_1ᵀx_q = ε_q, R = E ε² "
                      "(the Gaussian-prior side is the Bayes risk of ridge-bayes-risk)", sp.Eq(risk, m1)))
    return steps
