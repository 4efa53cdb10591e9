"""Claims about the algorithms transformers implement in context, checked by running them in float64:
GD by construction, iterative Newton vs GD, GD++ curvature correction, and Saxe et al.'s learning curve.

The formulas and derivations are ``icl_sim.theory.formulas.algorithms``.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy import optimize

from icl_sim.checks import Check, exact
from icl_sim.claims.base import Claim
from icl_sim.models import constructed_lsa
from icl_sim.theory.baselines import GD
from icl_sim.theory.formulas.algorithms import (LSA_DIM, LSA_POINTS, derive_gd_plus_plus, derive_lsa_gd, derive_newton,
                                                derive_saxe, fu_alpha, gd_plus_plus_condition, gd_plus_plus_gamma,
                                                gd_plus_plus_map, gd_plus_plus_two_step, gd_steps_to_tolerance,
                                                lsa_prediction_symbols, newton_iterates, newton_steps_to_tolerance,
                                                saxe_mode_strength)
from icl_sim.theory.symbolic import torch_function


def verify_lsa_gd(seed: int) -> list[Check]:
    """Constructed LSA (``theory.constructions``) vs a literal GD loop, layer by layer, n < d included."""
    generator = torch.Generator().manual_seed(seed)
    dim, points, lr = 4, 8, 0.35
    xs = torch.randn(8, points, dim, generator=generator, dtype=torch.float64)
    ys = torch.randn(8, points, generator=generator, dtype=torch.float64)
    root = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
    precond = root @ root.T / dim + 0.5 * torch.eye(dim, dtype=torch.float64)
    comparisons = []
    counts = torch.arange(points, dtype=torch.float64).clamp(min=1)
    mask = torch.ones(points, points, dtype=torch.float64).tril(-1)  # context j < i
    for name, matrix in (("identity", torch.eye(dim, dtype=torch.float64)), ("SPD", precond)):
        steps = 3
        with torch.no_grad():
            layers = constructed_lsa(dim, points, steps, lr, matrix).layer_predictions(xs, ys)
        w = torch.zeros(8, points, dim, dtype=torch.float64)
        for step in range(steps):  # GD on every prefix at once: residuals of the context points
            residual = torch.einsum("bjd,bid->bij", xs, w) - ys[:, None, :]  # (B, i, j)
            gradient = torch.einsum("ij,bij,bjd->bid", mask, residual, xs) / counts[:, None]
            w = w - lr * gradient @ matrix.T
            reference = (xs * w).sum(-1)
            gap = float((layers[step] - reference).abs().max())
            comparisons.append(exact(f"max |LSA layer {step + 1} − GD step {step + 1}| ({name} A)", 0.0, gap))
    gd_one = GD(1, lr).predict(xs, ys)
    with torch.no_grad():
        one_layer = constructed_lsa(dim, points, 1, lr).layer_predictions(xs, ys)[0]
    comparisons.append(exact("max |one layer − GD(1, η) baseline|", 0.0, float((one_layer - gd_one).abs().max()),
                             tolerance=1e-12))
    # the symbolic one-layer formula evaluated at a numeric prompt (d = 2, n = 3, A = I)
    formula = torch_function(derive_lsa_gd()[-1].expression, lsa_prediction_symbols())
    x2 = torch.randn(LSA_POINTS + 1, LSA_DIM, generator=generator, dtype=torch.float64)
    y2 = torch.randn(LSA_POINTS + 1, generator=generator, dtype=torch.float64)
    value = formula(*x2[:LSA_POINTS].flatten(), *y2[:LSA_POINTS], *x2[LSA_POINTS], lr, 1.0, 0.0, 1.0)
    baseline = GD(1, lr).predict(x2[None], y2[None])[0, LSA_POINTS]
    comparisons.append(exact("symbolic one-layer prediction vs GD(1, η), d=2, n=3", float(baseline), float(value)))
    return comparisons


LSA_GD_CONSTRUCTION = Claim(
    name="lsa-gd-construction",
    source="von Oswald et al. 2023, Transformers learn in-context by gradient descent, Prop. 1; "
           "Ahn et al. 2023, Transformers learn to implement preconditioned gradient descent, Lemma 1",
    summary="LSA with P = −η e_{d+1}e_{d+1}ᵀ, Q = [[A, 0], [0, 0]] per layer: layer ℓ predicts x_qᵀ w_ℓ, "
            "w_ℓ the ℓ-th iterate of w ← w − η A (1/n) Σ_j (wᵀx_j − y_j) x_j from 0",
    derive=derive_lsa_gd,
    verify=verify_lsa_gd,
)

def _planted(eigenvalues: torch.Tensor, dim: int, generator: torch.Generator):
    """S = U diag(λ, 0) Uᵀ with a random orthogonal U; returns S and the projector on its range."""
    basis, _ = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    spectrum = torch.zeros(dim, dtype=torch.float64)
    spectrum[: eigenvalues.numel()] = eigenvalues
    kept = basis[:, : eigenvalues.numel()]
    return basis @ torch.diag(spectrum) @ basis.T, kept @ kept.T


def verify_newton(seed: int) -> list[Check]:
    """Run Newton–Schulz and GD on S with a planted spectrum (d = 6, rank 4, κ ∈ [10, 300]) in float64."""
    generator = torch.Generator().manual_seed(seed)
    kappa = float(10 ** (1 + math.log10(30) * torch.rand(1, generator=generator, dtype=torch.float64)))
    scale = float(0.5 + torch.rand(1, generator=generator, dtype=torch.float64))
    inner = 1 + (kappa - 1) * torch.rand(2, generator=generator, dtype=torch.float64)
    eigenvalues = scale * torch.cat([torch.tensor([1.0, kappa], dtype=torch.float64), inner])
    matrix, projector = _planted(eigenvalues, 6, generator)
    comparisons = []

    def newton_gap(alpha, steps):
        return [float(torch.linalg.matrix_norm(projector - m @ matrix, ord=2))
                for m in newton_iterates(matrix, steps, alpha)]

    alpha_f = float(fu_alpha(matrix))
    for k, value in enumerate(newton_gap(alpha_f, 6)):
        formula = float((1 - alpha_f * eigenvalues ** 2).abs().max() ** (2 ** k))
        comparisons.append(exact(f"Newton (Fu α = 2/‖SSᵀ‖_F) residual on range, k={k}", formula, value))
    alpha_2 = 2 / float(eigenvalues.max()) ** 2  # the paper's 2/‖SSᵀ‖₂: top mode 1 − αλ² = −1, stuck
    comparisons.append(exact("Newton with α = 2/‖SSᵀ‖₂: residual after 5 steps (stuck at 1)", 1.0,
                             newton_gap(alpha_2, 5)[-1]))
    eta = 1 / float(eigenvalues.max())
    step = torch.eye(6, dtype=torch.float64) - eta * matrix
    power = projector.clone()
    for k in range(8):
        formula = float((1 - eta * eigenvalues).abs().max() ** k)
        value = float(torch.linalg.matrix_norm(power, ord=2))
        comparisons.append(exact(f"GD (η = 1/λ_max) residual on range, k={k}", formula, value))
        power = step @ power
    # steps to tolerance with the optimal scalings: run the iterations and count
    eps = 1e-6
    alpha_star = 2 / float(eigenvalues.min() ** 2 + eigenvalues.max() ** 2)
    newton_count = next(k for k, r in enumerate(newton_gap(alpha_star, 40)) if r <= eps)
    comparisons.append(exact(f"Newton steps to ε=1e-6 at κ={kappa:.1f}", newton_steps_to_tolerance(kappa, eps),
                             newton_count, tolerance=0.0))
    eta_star = 2 / float(eigenvalues.min() + eigenvalues.max())
    step = torch.eye(6, dtype=torch.float64) - eta_star * matrix
    power, gd_count = projector.clone(), 0
    while float(torch.linalg.matrix_norm(power, ord=2)) > eps:
        power, gd_count = step @ power, gd_count + 1
    comparisons.append(exact(f"GD steps to ε=1e-6 at κ={kappa:.1f}", gd_steps_to_tolerance(kappa, eps),
                             gd_count, tolerance=0.0))
    return comparisons


NEWTON_VS_GD = Claim(
    name="newton-vs-gd-convergence",
    source="Fu, Chen, Jia & Sharan 2023, Transformers learn higher-order optimization methods for "
           "in-context learning, Sec. 2 (iterative Newton's method); Pan & Schreiber 1991",
    summary="Newton–Schulz residual max_λ |1 − αλ²|^(2^k) vs GD max_λ |1 − ηλ|^k: steps to ε "
            "⌈log₂(log ε / log((κ²−1)/(κ²+1)))⌉ vs ⌈log ε / log((κ−1)/(κ+1))⌉",
    derive=derive_newton,
    verify=verify_newton,
)

def _gd_plus_plus_extremes(gamma: float, lambda_min: float, lambda_max: float) -> tuple[float, float]:
    """(min, max) of f(λ) = λ(1 − γλ)² over [λ_min, λ_max], exactly: f is extremal at the ends or at
    its critical points 1/(3γ) (peak) and 1/γ (zero)."""
    candidates = [lambda_min, lambda_max] + [c for c in (1 / (3 * gamma), 1 / gamma) if lambda_min < c < lambda_max]
    values = [float(gd_plus_plus_map(c, gamma)) for c in candidates]
    return min(values), max(values)


def verify_gd_plus_plus(seed: int) -> list[Check]:
    """Transform a planted-spectrum design (d = 5, n = 40, (1/n)XᵀX = H) literally in float64; the
    optimal γ and (η, γ) are also found by numerically minimising the exact worst case over
    [λ_min, λ_max] (scipy), independently of the closed forms."""
    generator = torch.Generator().manual_seed(seed)
    dim, points = 5, 40
    kappa = float(2 + 98 * torch.rand(1, generator=generator, dtype=torch.float64))
    lmin = float(0.2 + torch.rand(1, generator=generator, dtype=torch.float64))
    lmax = lmin * kappa
    gamma_star = gd_plus_plus_gamma(lmin, lmax)
    # plant λ_min, λ_max, the peak 1/(3γ*) of f and two random eigenvalues: the worst case is attained
    inner = lmin * (1 + (kappa - 1) * torch.rand(dim - 3, generator=generator, dtype=torch.float64))
    eigenvalues = torch.cat([torch.tensor([lmin, lmax, 1 / (3 * gamma_star)], dtype=torch.float64), inner])
    basis, _ = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    frame, _ = torch.linalg.qr(torch.randn(points, dim, generator=generator, dtype=torch.float64))
    xs = math.sqrt(points) * frame @ torch.diag(eigenvalues.sqrt()) @ basis.T  # (1/n) XᵀX = U diag(λ) Uᵀ
    covariance = xs.T @ xs / points
    eye = torch.eye(dim, dtype=torch.float64)

    def transformed_covariance(gamma):
        new_xs = xs - gamma * xs @ covariance  # x_j ← (I − γH) x_j for every row (H symmetric)
        return new_xs.T @ new_xs / points

    comparisons = []
    gamma = float(0.7 / lmax)
    spectrum = torch.linalg.eigvalsh(transformed_covariance(gamma))
    mapped = gd_plus_plus_map(eigenvalues, gamma).sort().values
    comparisons.append(exact("max |eig after x ← (I − γH)x − λ(1 − γλ)²| (γ = 0.7/λ_max)", 0.0,
                             float((spectrum - mapped).abs().max())))
    values = torch.linalg.eigvalsh(transformed_covariance(gamma_star))
    comparisons.append(exact(f"κ of the transformed design at γ*, κ={kappa:.2f}", gd_plus_plus_condition(kappa),
                             float(values.max() / values.min()), tolerance=1e-10 * kappa))

    def condition(gamma):
        low, high = _gd_plus_plus_extremes(gamma, lmin, lmax)
        return high / low if low > 0 else math.inf

    numeric = optimize.minimize_scalar(condition, bounds=(1e-9 / lmax, 1 / lmax), method="bounded",
                                       options={"xatol": 1e-12 / lmax})
    comparisons.append(exact("numerically minimised worst-case κ'(γ) vs closed form", gd_plus_plus_condition(kappa),
                             float(numeric.fun), tolerance=1e-8 * kappa))
    comparisons.append(exact("numerical argmin γ·λ_max vs closed form", gamma_star * lmax, float(numeric.x) * lmax,
                             tolerance=1e-4))

    def literal_two_step(eta, gamma):  # GD++ data step with γ, then one GD step with η, on the design
        transform = eye - gamma * covariance
        new_xs = xs @ transform.T
        # prediction at query x: η (A x)ᵀ (1/n) Σ_j y_j x̃_j, y_j = x_jᵀ w*: xᵀ [η Aᵀ X̃ᵀX / n] w*
        operator = eta * transform.T @ (new_xs.T @ xs) / points
        return float(torch.linalg.matrix_norm(eye - operator, ord=2))

    def worst_case(params):
        eta, gamma = params
        if gamma <= 0:
            return math.inf
        low, high = _gd_plus_plus_extremes(gamma, lmin, lmax)
        return max(abs(1 - eta * low), abs(1 - eta * high))

    eta_star, gamma_star, residual = gd_plus_plus_two_step(lmin, lmax)
    comparisons.append(exact("literal two-step residual at (η*, γ*)", residual,
                             literal_two_step(eta_star, gamma_star)))
    best = min((optimize.minimize(worst_case, (eta_star * e, gamma_star * g), method="Nelder-Mead",
                                  options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 4000})
                for e in (0.5, 2.0) for g in (0.5, 1.5)), key=lambda r: r.fun)
    comparisons.append(exact("numerically minimised two-step worst case vs closed form", residual, float(best.fun),
                             tolerance=1e-6))
    return comparisons


GD_PLUS_PLUS = Claim(
    name="gd-plus-plus-spectral-map",
    source="von Oswald et al. 2023, Transformers learn in-context by gradient descent, Sec. 4 and "
           "App. A.10 (GD++)",
    summary="x ← (I − γH)x maps eigenvalues λ ↦ λ(1 − γλ)²; γ* = 1/(λ_min + √(λ_min λ_max) + λ_max) "
            "gives κ' = 4(κ + √κ + 1)³/(27(κ + √κ)²); two steps: η* = 2/(f(λ_min) + 4/(27γ*)), "
            "residual (κ'−1)/(κ'+1)",
    derive=derive_gd_plus_plus,
    verify=verify_gd_plus_plus,
)

SAXE_LR = 1e-3
#: relative tolerance of the trajectory comparison (measured maximum 0.6-1% at lr = 1e-3)
SAXE_RELATIVE_TOLERANCE = 0.02


def verify_saxe(seed: int) -> list[Check]:
    """Full-batch GD (lr = 1e-3, until the formula is within 0.1% of s) on y = W2 W1 x, hidden width 3,
    exactly whitened inputs (d_in = 4, d_out = 3, n = 32), targets of rank one with singular value s;
    balanced aligned init W1 = √u0 r vᵀ, W2 = √u0 c rᵀ.  Mode strength cᵀ W2 W1 v vs u(t) with τ = 1/lr per step."""
    generator = torch.Generator().manual_seed(seed)
    d_in, d_out, hidden, points = 4, 3, 3, 32
    s = float(1.5 + torch.rand(1, generator=generator, dtype=torch.float64))
    u0 = 1e-3
    frame, _ = torch.linalg.qr(torch.randn(points, d_in, generator=generator, dtype=torch.float64))
    xs = math.sqrt(points) * frame  # (1/n) XᵀX = I exactly
    unit = lambda n: (lambda v: v / v.norm())(torch.randn(n, generator=generator, dtype=torch.float64))  # noqa: E731
    v, c, r = unit(d_in), unit(d_out), unit(hidden)
    ys = s * (xs @ v)[:, None] * c[None, :]  # Σ31 = (1/n) Yᵀ X = s c vᵀ
    w1 = (math.sqrt(u0) * torch.outer(r, v)).requires_grad_()
    w2 = (math.sqrt(u0) * torch.outer(c, r)).requires_grad_()
    # run until the formula reaches 0.999 s: 2 s lr t = log(s/u0 − 1) + log(999)
    steps = int(math.ceil((math.log(s / u0 - 1) + math.log(999)) / (2 * s * SAXE_LR)))
    strengths = [u0]
    for _ in range(steps):
        loss = 0.5 * (ys - xs @ w1.T @ w2.T).square().sum() / points
        g1, g2 = torch.autograd.grad(loss, (w1, w2))
        with torch.no_grad():
            w1 -= SAXE_LR * g1
            w2 -= SAXE_LR * g2
            strengths.append(float(c @ w2 @ w1 @ v))
    times = np.arange(steps + 1)
    formula = saxe_mode_strength(times, s, u0, 1 / SAXE_LR)
    trained = np.array(strengths)
    relative = np.abs(trained - formula) / formula
    comparisons = [exact("max relative error of u(t) along the trajectory", 0.0, float(relative.max()),
                         tolerance=SAXE_RELATIVE_TOLERANCE)]
    for fraction in (0.1, 0.5, 0.9):
        step = int(np.argmax(formula >= fraction * s))
        comparisons.append(exact(f"u at the step where the formula reaches {fraction:.0%} of s", float(formula[step]),
                                 float(trained[step]), tolerance=SAXE_RELATIVE_TOLERANCE * float(formula[step])))
    comparisons.append(exact("final u (formula at 99.9% of s) vs s", s, float(trained[-1]), tolerance=2e-3 * s))
    return comparisons


SAXE_LEARNING_CURVE = Claim(
    name="saxe-learning-curve",
    source="Saxe, McClelland & Ganguli 2013, Exact solutions to the nonlinear dynamics of learning in "
           "deep linear neural networks, Sec. 2, eq. (7)",
    summary="one mode of a two-layer linear net from a small balanced init: "
            "u(t) = s e^{2st/τ}/(e^{2st/τ} − 1 + s/u0)",
    derive=derive_saxe,
    verify=verify_saxe,
)

CLAIMS = [LSA_GD_CONSTRUCTION, NEWTON_VS_GD, GD_PLUS_PLUS, SAXE_LEARNING_CURVE]
