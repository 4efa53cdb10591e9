"""Claims of the one-layer optimum (Mahankali et al.; Ahn et al.; Zhang, Frei & Bartlett), by Monte Carlo.

The formulas and derivations are ``icl_sim.theory.formulas.one_layer_optimum``; here they are
checked against prompts of the linear-regression task.
"""
from __future__ import annotations

import functools

import torch

from icl_sim.checks import Check, monte_carlo
from icl_sim.claims.base import Claim
from icl_sim.seeding import make_generator
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.theory.formulas.one_layer_optimum import (derive, lsa_optimum_risk, one_step_gd_risk,
                                                       optimal_preconditioner, optimal_step, preconditioned_gd_risk,
                                                       preconditioner_risk)

def _prompts(dim, points, noise, prior_scale, batch, seed, index, covariance=None):
    """(context xs (B,n,d), ys (B,n), query x (B,d), y (B,)) with x ~ N(0, Σ), float64.

    Isotropic prompts come from ``LinearRegression``; for a fixed Σ = L Lᵀ the same
    draws are mapped x = L z and the labels rebuilt as wᵀx + (the task's noise).
    """
    task = LinearRegression(dim=dim, points=points + 1, noise=noise, prior_scale=prior_scale)
    prompt = task.sample(batch, make_generator(seed, "eval", index), dtype=torch.float64)
    xs, ys, w = prompt.xs, prompt.ys, prompt.latent["w"]
    if covariance is not None:
        eps = ys - torch.einsum("bnd,bd->bn", xs, w)
        xs = xs @ torch.linalg.cholesky(covariance.to(torch.float64)).T
        ys = torch.einsum("bnd,bd->bn", xs, w) + eps
    return xs[:, :-1], ys[:, :-1], xs[:, -1], ys[:, -1]


def _features(xs, ys):
    return torch.einsum("bn,bnd->bd", ys, xs) / xs.shape[1]  # h = (1/n) Σ y_j x_j


def _spectrum_covariance(eigenvalues, seed, index):
    """A fixed Σ = U diag(λ) Uᵀ with U drawn from (seed, eval, index)."""
    generator = make_generator(seed, "eval", index)
    k = len(eigenvalues)
    q, r = torch.linalg.qr(torch.randn(k, k, generator=generator, dtype=torch.float64))
    u = q * torch.sign(torch.diagonal(r))
    return (u * torch.tensor(eigenvalues, dtype=torch.float64)) @ u.T


_ONE_STEP_SETTINGS = ((5, 10, 0.0, 1.0), (3, 20, 0.5, 1.5))  # (d, n, σ, s)


def _verify_one_step(seed: int) -> list[Check]:
    out = []
    for k, (dim, points, noise, scale) in enumerate(_ONE_STEP_SETTINGS):
        label = f"d={dim}, n={points}, σ={noise}, s={scale}"
        xs, ys, xq, yq = _prompts(dim, points, noise, scale, 100_000, seed, 100 + k)
        p = (xq * _features(xs, ys)).sum(-1)  # x_qᵀ h: ŷ = η p
        step = optimal_step(dim, points, noise, scale)
        # R(η) = a η² − 2 b η + c with a = E[p²], b = E[p y_q]
        a = dim * scale**2 * (points + dim + 1 + noise**2 / scale**2) / points
        b = dim * scale**2
        out.append(monte_carlo(f"E[(x_q'h)^2] ({label})", a, p**2))
        out.append(monte_carlo(f"E[(x_q'h) y_q] ({label})", b, p * yq))
        out.append(monte_carlo(f"risk at η* ({label})", one_step_gd_risk(dim, points, noise, scale),
                               (step * p - yq) ** 2))
        # argmin of the MC risk, b̂/â, linearised about η* (delta method): η* + (p y − η* p²)/a
        out.append(monte_carlo(f"argmin of MC risk vs η* ({label})", step, step + (p * yq - step * p**2) / a))
    return out


_SPECTRUM = (2.0, 1.0, 0.5, 0.25)


def _verify_preconditioned(seed: int) -> list[Check]:
    points, noise, scale = 8, 0.5, 1.0
    covariance = _spectrum_covariance(_SPECTRUM, seed, 200)
    gamma = optimal_preconditioner(covariance, points, noise, scale)
    xs, ys, xq, yq = _prompts(len(_SPECTRUM), points, noise, scale, 100_000, seed, 201, covariance)
    h = _features(xs, ys)
    residual = (xq * (h @ gamma)).sum(-1) - yq
    out = [monte_carlo("risk at Γ*", float(preconditioned_gd_risk(covariance, points, noise, scale)), residual**2)]
    generator = make_generator(seed, "eval", 202)
    for k in range(3):
        delta = torch.randn(len(_SPECTRUM), len(_SPECTRUM), generator=generator, dtype=torch.float64)
        delta = (delta + delta.T) / 2
        delta = 0.5 * delta * gamma.norm() / delta.norm()  # a 50 % perturbation in Frobenius norm
        change = (xq * (h @ delta)).sum(-1)
        # common random numbers: the same prompts for Γ* and Γ* + Δ
        increase = float(preconditioner_risk(gamma + delta, covariance, points, noise, scale)
                         - preconditioner_risk(gamma, covariance, points, noise, scale))
        out.append(monte_carlo(f"risk increase at Γ* + Δ_{k} (> 0)", increase, (residual + change) ** 2 - residual**2))
        out.append(monte_carlo(f"directional derivative at Γ* along Δ_{k} (= 0)", 0.0, 2 * change * residual))
    return out


def _verify_lsa(seed: int) -> list[Check]:
    train_points, dim = 8, len(_SPECTRUM)
    train = _spectrum_covariance(_SPECTRUM, seed, 300)
    gamma = optimal_preconditioner(train, train_points)
    shifted = _spectrum_covariance((0.5, 3.0, 1.0, 0.2), seed, 301)  # does not commute with Σ
    out = []
    cases = [(m, train, f"M={m}, Σ_test=Σ") for m in (train_points // 2, train_points, 4 * train_points)]
    cases.append((train_points, shifted, f"M={train_points}, Σ_test shifted"))
    for k, (m, test, label) in enumerate(cases):
        xs, ys, xq, yq = _prompts(dim, m, 0.0, 1.0, 50_000, seed, 310 + k, test)
        prediction = (xq * (_features(xs, ys) @ gamma)).sum(-1)
        out.append(monte_carlo(f"ZFB optimum risk, N={train_points}, {label}",
                               float(lsa_optimum_risk(train, train_points, m, test)), (prediction - yq) ** 2))
    return out


ONE_STEP_GD_OPTIMAL_STEP = Claim(
    name="one-step-gd-optimal-step",
    source="Mahankali, Hashimoto & Ma (2023), arXiv:2307.03576, Theorem 1 (isotropic covariates); "
           "convention of icl-sim's LSA: query excluded from the keys, 1/n normalisation, noisy y_q",
    summary="x ~ N(0, I_d), w ~ N(0, s² I), noise σ, n context points: one GD step from 0, "
            "ŷ = η x_qᵀ(1/n)Σ y_j x_j, is risk-optimal at η* = n/(n + d + 1 + σ²/s²) with "
            "E(ŷ − y_q)² = d s² (d + 1 + σ²/s²)/(n + d + 1 + σ²/s²) + σ² (y_q noisy).",
    derive=functools.partial(derive, "one-step"),
    verify=_verify_one_step,
)

PRECONDITIONED_GD_OPTIMAL = Claim(
    name="preconditioned-gd-optimal",
    source="Ahn, Cheng, Daneshmand & Sra (2023), NeurIPS, Theorem 1; Mahankali et al. (2023) Theorem 2; "
           "Zhang, Frei & Bartlett (2024) Theorem 4.1 (σ = 0, s = 1); here with noise σ and prior scale s",
    summary="x ~ N(0, Σ), w ~ N(0, s² I), noise σ: the risk of ŷ = x_qᵀΓ(1/n)Σ y_j x_j is quadratic in Γ, "
            "minimised at Γ* = ((1 + 1/n)Σ + (tr Σ + σ²/s²)/n · I)⁻¹ with risk "
            "σ² + s² Σ_i μ_i(μ_i + tr Σ + σ²/s²)/((n + 1)μ_i + tr Σ + σ²/s²) over the eigenvalues μ_i of Σ.",
    derive=functools.partial(derive, "preconditioned"),
    verify=_verify_preconditioned,
)

LSA_GLOBAL_OPTIMUM_RISK = Claim(
    name="lsa-global-optimum-risk",
    source="Zhang, Frei & Bartlett (2024), JMLR 25(49), arXiv:2306.09927, Theorem 4.1 (limit of gradient "
           "flow, prediction error at prompt length M) and §4.2 'Covariate shifts'",
    summary="One LSA layer trained by gradient flow on prompts with N context points, x ~ N(0, Σ) "
            "(noiseless, w ~ N(0, I)), predicts x_qᵀΓ*_N(1/M)Σ_{i≤M} y_i x_i with "
            "Γ*_N = ((1 + 1/N)Σ + tr Σ/N · I)⁻¹; on M points with x ~ N(0, Σ') its risk is "
            "(1 + 1/M) tr(ΓΣ'²ΓΣ') + tr Σ'/M · tr(ΓΣ'ΓΣ') − 2 tr(ΓΣ'²) + tr Σ'.",
    derive=functools.partial(derive, "general"),
    verify=_verify_lsa,
)

CLAIMS = [ONE_STEP_GD_OPTIMAL_STEP, PRECONDITIONED_GD_OPTIMAL, LSA_GLOBAL_OPTIMUM_RISK]
