"""Claims of the risk curves (OLS, averaging, Bayes ridge, finite-pool dMMSE), by Monte Carlo.

The formulas and derivations are ``icl_sim.theory.formulas.risk_curves``; here the baselines run
on prompts of the linear-regression task and their squared errors are compared with them.
Inequality claims are one-sided checks (``at_least`` 0 by a margin of 3 standard errors).
"""
from __future__ import annotations

import math

import torch

from icl_sim.checks import Check, monte_carlo, two_sample
from icl_sim.claims.base import Claim
from icl_sim.seeding import make_generator
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.theory.algorithms import DiscreteMMSE
from icl_sim.theory.baselines import OLS, Averaging, Ridge
from icl_sim.theory.formulas.risk_curves import (averaging_risk, derive_averaging, derive_finite_pool, derive_ols,
                                                 derive_ridge_bayes, ols_risk, ridge_bayes_risk_mp,
                                                 ridge_bayes_risk_samples, sigma)
from icl_sim.theory.symbolic import torch_function


def exceeds(quantity: str, bound: float, samples: torch.Tensor) -> Check:
    """The claim mean(samples) > bound, established at 3 standard errors."""
    return monte_carlo(quantity, bound, samples, relation="at_least")


def _prompts(task: LinearRegression, batch: int, seed: int, index: int = 0):
    return task.sample(batch, make_generator(seed, "eval", index), dtype=torch.float64)


def _squared_errors(predictor, prompt) -> torch.Tensor:
    """(pred − y)² at every position, (B, N): column n is the error after n examples."""
    return (predictor.predict(prompt.xs, prompt.ys) - prompt.ys) ** 2


# =========================================================================================
# 1. OLS (min-norm least squares) risk curve
# =========================================================================================
def _verify_ols(seed: int) -> list[Check]:
    dim, batch = 10, 1500
    comparisons = []
    for index, (noise, counts) in enumerate(((0.0, (3, 6, 14, 20)), (0.5, (3, 7, 14, 24)))):
        task = LinearRegression(dim=dim, points=max(counts) + 1, noise=noise, prior_scale=1.0)
        errors = _squared_errors(OLS(), _prompts(task, batch, seed, index))
        for points in counts:
            formula = float(ols_risk(points, dim, 1.0, noise))
            label = f"OLS risk, d={dim}, n={points}, σ={noise}"
            # noiseless n ≥ d: exact interpolation, the error is round-off: a floor of 1e-12
            comparisons.append(monte_carlo(label, formula, errors[:, points], floor=1e-12))
    return comparisons


OLS_RISK_CURVE = Claim(
    name="ols-risk-curve",
    source="Hastie, Montanari, Rosset & Tibshirani (2022), Surprises in high-dimensional ridgeless least "
           "squares interpolation, Ann. Statist. 50(2), isotropic case (Sec. 2-3, finite-n Wishart form); "
           "Breiman & Freedman (1983) for n > d + 1",
    summary="min-norm OLS after n examples: s²(d − min(n,d)) + σ² min(n,d)/(|n − d| − 1) + σ² "
            "(infinite at |n − d| ≤ 1 for σ > 0): the double-descent peak at n = d",
    derive=derive_ols, verify=_verify_ols)


# =========================================================================================
# 2. Averaging risk curve
# =========================================================================================
def _verify_averaging(seed: int) -> list[Check]:
    dim, batch = 8, 6000
    comparisons = []
    for index, (noise, scale) in enumerate(((0.0, 1.0), (0.5, 0.7))):
        task = LinearRegression(dim=dim, points=41, noise=noise, prior_scale=scale)
        errors = _squared_errors(Averaging(), _prompts(task, batch, seed, index))
        for points in (0, 1, 4, 16, 40):
            comparisons.append(monte_carlo(f"Averaging risk, d={dim}, n={points}, σ={noise}, s={scale}",
                                           float(averaging_risk(points, dim, scale, noise)),
                                           errors[:, points]))
    return comparisons


AVERAGING_RISK_CURVE = Claim(
    name="averaging-risk-curve",
    source="Garg, Tsipras, Liang & Valiant (2022), What can transformers learn in-context?, Sec. 3 "
           "(averaging baseline); risk by Gaussian fourth moments (Isserlis)",
    summary="Averaging w = (1/n) Σ y_j x_j: risk (s² d(d + 1) + σ² d)/n + σ², decaying like 1/n "
            "with a d² constant (never consistent faster than 1/n)",
    derive=derive_averaging, verify=_verify_averaging)


# =========================================================================================
# 3. Ridge(σ²/s²) attains the Bayes risk
# =========================================================================================
def _verify_ridge_bayes(seed: int) -> list[Check]:
    dim, batch, scale, noise = 8, 4000, 1.0, 0.5
    lam = noise**2 / scale**2
    task = LinearRegression(dim=dim, points=17, noise=noise, prior_scale=scale)
    prompt = _prompts(task, batch, seed)
    optimal = _squared_errors(Ridge(lam), prompt)
    comparisons = []
    for points in (2, 8, 16):
        formula = ridge_bayes_risk_samples(points, dim, scale, noise, samples=20000, seed=seed + 1)
        comparisons.append(two_sample(f"Ridge(σ²/s²) risk = Bayes risk (MC over X), d={dim}, n={points}",
                                      formula, optimal[:, points]))
    optimal_weights = Ridge(lam).weights(prompt.xs, prompt.ys)
    for factor in (0.3, 3.0):
        other_ridge = Ridge(factor * lam)
        other = _squared_errors(other_ridge, prompt)
        gap = ((other_ridge.weights(prompt.xs, prompt.ys) - optimal_weights) ** 2).sum(-1)
        for points in (8, 12):
            difference = other[:, points] - optimal[:, points]
            comparisons.append(exceeds(
                f"[inequality] risk(Ridge({factor}·σ²/s²)) − risk(Ridge(σ²/s²)) > 0, paired, n={points}",
                0.0, difference))
            # Pythagoras for the posterior mean: excess risk = E‖ŵ_λ − ŵ_Bayes‖² (same prompts)
            paired = difference - gap[:, points]
            se = float(paired.std() / math.sqrt(batch))
            comparisons.append(Check(
                f"excess risk of Ridge({factor}·σ²/s²) = E‖ŵ_λ − ŵ_Bayes‖² (Pythagoras), n={points}",
                float(gap[:, points].mean()), float(difference.mean()), 3 * se, standard_error=se))
    # Marchenko–Pastur limit against the exact expectation at a larger size (stated floor: 2 %)
    big_d, big_n = 60, 120
    exact_draws = ridge_bayes_risk_samples(big_n, big_d, scale, noise, samples=400, seed=seed + 2)
    approx = float(ridge_bayes_risk_mp(big_n, big_d, scale, noise))
    comparisons.append(monte_carlo(f"Marchenko–Pastur limit vs finite-n Bayes risk, d={big_d}, n={big_n} "
                                   "(floor 2 %)", approx, exact_draws, floor=0.02 * approx))
    return comparisons


RIDGE_BAYES_RISK = Claim(
    name="ridge-bayes-risk",
    source="Bayes-optimal ridge under a Gaussian prior (e.g. Akyürek et al. 2023, Sec. 2; Raventós et al. "
           "2023, Sec. 2 'Ridge'); Marchenko–Pastur limit as in Dobriban & Wager (2018), Ann. Statist., "
           "and Hastie et al. (2022), Thm 5",
    summary="Ridge(σ²/s²) is the posterior mean; its risk is the Bayes risk s² E tr (I + (s²/σ²) XᵀX)⁻¹ + σ², "
            "and any other λ (×0.3, ×3) is strictly worse",
    derive=derive_ridge_bayes, verify=_verify_ridge_bayes)


# =========================================================================================
# 4. Finite task pool: the dMMSE posterior mean (Raventós et al. 2023)
# =========================================================================================
def _dmmse_errors(prompt, pool, noise, points) -> torch.Tensor:
    """Query squared error of dMMSE after ``points`` examples: position ``points`` of ``prompt``."""
    return _squared_errors(DiscreteMMSE(pool, noise), prompt)[:, points]


def _verify_finite_pool(seed: int) -> list[Check]:
    dim, noise, scale, points, batch = 3, 0.5, 1.0, 6, 3000
    lam = noise**2 / scale**2
    comparisons = []
    # (a) in distribution (pool of 16): dMMSE beats Bayes ridge, strictly (inequality)
    pooled = LinearRegression(dim=dim, points=points + 1, noise=noise, prior_scale=scale, pool_size=16,
                              pool_seed=seed)
    prompt = _prompts(pooled, batch, seed, 0)
    ridge_errors = _squared_errors(Ridge(lam), prompt)[:, points]
    comparisons.append(exceeds(f"[inequality] risk(Ridge(σ²/s²)) − risk(dMMSE) > 0 on pool prompts, M=16, "
                               f"d={dim}, n={points}", 0.0,
                               ridge_errors - _dmmse_errors(prompt, pooled.weight_pool(), noise, points)))
    # (b) Gaussian-prior prompts: the risk falls with M towards the Bayes (ridge) risk
    gaussian = LinearRegression(dim=dim, points=points + 1, noise=noise, prior_scale=scale)
    prompt = _prompts(gaussian, batch, seed, 1)
    ridge_errors = _squared_errors(Ridge(lam), prompt)[:, points]
    sizes = (1, 4, 64, 4096)
    errors = {}
    for size in sizes:
        pool = scale * torch.randn(size, dim, generator=make_generator(seed, "pool", size), dtype=torch.float64)
        errors[size] = _dmmse_errors(prompt, pool, noise, points)
    for small, large in zip(sizes, sizes[1:]):
        comparisons.append(exceeds(f"[inequality] risk(dMMSE, M={small}) − risk(dMMSE, M={large}) > 0 on "
                                   f"Gaussian-prior prompts, d={dim}, n={points}", 0.0,
                                   errors[small] - errors[large]))
    comparisons.append(exceeds("[inequality] risk(dMMSE, M=64) − risk(Ridge(σ²/s²)) > 0 on Gaussian-prior "
                               "prompts (ridge is Bayes there)", 0.0, errors[64] - ridge_errors))
    bayes = ridge_bayes_risk_samples(points, dim, scale, noise, samples=20000, seed=seed + 1)
    largest = errors[sizes[-1]]
    se = math.sqrt(float(largest.var() / batch + bayes.var() / bayes.numel()))
    comparisons.append(Check(
        f"risk(dMMSE, M={sizes[-1]}) ≈ Bayes ridge risk (MC over X), d={dim}, n={points} (floor 10 %)",
        float(bayes.mean()), float(largest.mean()), max(0.10 * float(bayes.mean()), 3 * se), standard_error=se))
    # (c) M = 1 on pool prompts: exactly the query noise
    single = LinearRegression(dim=dim, points=points + 1, noise=noise, prior_scale=scale, pool_size=1,
                              pool_seed=seed)
    prompt = _prompts(single, batch, seed, 2)
    formula = float(torch_function(derive_finite_pool()[-1].expression.rhs, [sigma])(noise))
    comparisons.append(monte_carlo("risk(dMMSE, M=1) on pool prompts = σ²", formula,
                                   _dmmse_errors(prompt, single.weight_pool(), noise, points)))
    return comparisons


FINITE_POOL_BAYES = Claim(
    name="finite-pool-bayes",
    source="Raventós, Paul, Chen & Ganguli (2023), Pretraining task diversity and the emergence of "
           "non-Bayesian in-context learning for regression, NeurIPS, Sec. 2 (dMMSE and ridge estimators)",
    summary="dMMSE (posterior mean over a uniform pool of M tasks) beats Bayes ridge in distribution, "
            "approaches it from above on Gaussian-prior prompts as M grows (1, 4, 64, 4096), and has "
            "risk exactly σ² for M = 1",
    derive=derive_finite_pool, verify=_verify_finite_pool)


CLAIMS = [OLS_RISK_CURVE, AVERAGING_RISK_CURVE, RIDGE_BAYES_RISK, FINITE_POOL_BAYES]
