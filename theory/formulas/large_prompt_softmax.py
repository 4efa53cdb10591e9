"""Softmax attention in the large-prompt limit: the linear operator it concentrates on, and how fast.

Boursier & Boyer (2025), "Softmax as linear attention in the large-prompt regime: a measure-based
perspective", arXiv:2512.11784 (ICML 2026).  One attention head maps the law μ of the prompt's tokens
x ∈ R^d and a query z ∈ R^q to

    T[μ](z) = E_μ[V x e^{⟨Kx, Qz⟩}] / E_μ[e^{⟨Kx, Qz⟩}],   ⟨Kx, Qz⟩ = xᵀUz,  U = KᵀQ  (§2),

and a prompt of N i.i.d. tokens is its empirical law μ̂_N: T[μ̂_N](z) = Σ_i softmax_i(x_iᵀUz) V x_i,
the softmax head of icl-sim's ``softmax-attention`` model (score z_jᵀ Q z_t with merged Q = U, value P = V,
no 1/√d: the authors' code scales the score by 1/√d, which is U's scale here).

* Lemma 2.1: for μ = N(m, Γ), with a = Uz, the normaliser E e^{aᵀx} = exp(aᵀm + ½ aᵀΓa) cancels in the
  ratio and T[μ](z) = V m + V Γ U z: softmax attention on a Gaussian prompt is *linear* attention.
* Gradients (Prop. 3.4 concerns ∇_U T and ∇_V T): ∂T[μ̂_N]/∂U_ij = (V Ĉ)_{·i} z_j with Ĉ the
  softmax-weighted covariance of the tokens, and ∂T/∂V_kl = δ_k· x̄_l with x̄ their weighted mean; the
  limits are (V Γ)_{·i} z_j and δ_k· (m + ΓUz)_l.
* Rate (Prop. 3.1 and 3.4 bound E‖T[μ̂_N] − T[μ]‖²_{L²(ν)} by c₁σ⁶ ln N / N^{c₂/σ²} for σ-sub-Gaussian
  tokens, with unstated constants): for Gaussian tokens the delta method gives the sharp rate
  N · E‖T[μ̂_N](z) − T[μ](z)‖² → κ(z) = E[w²‖V(x − T)‖²]/(E w)², w = e^{aᵀx}, in closed form
  κ(z) = e^{aᵀΓa}(tr VΓVᵀ + ‖VΓa‖²) (the tilt by 2a moves the mean of x − T to Γa); for ∂T/∂U,
  κ_U(z) = ‖z‖² e^{aᵀΓa} E‖V(yyᵀ − Γ)‖²_F with y ~ N(Γa, Γ), by Isserlis
  (bᵀBb + tr BΓ)(bᵀb + tr Γ) + tr BΓ² + 2 bᵀBΓb, b = Γa, B = VᵀV.  So the root-mean-square deviation
  falls as N^{-1/2}; averaged over queries z ~ ν = N(0, I) the constant is
  κ_ν = det(I − 2A)^{-1/2} (tr VΓVᵀ + tr(UᵀΓVᵀVΓU (I − 2A)⁻¹)), A = UᵀΓU, finite iff 2A < I (beyond that
  the ν-average decays slower than 1/N, the regime of the paper's σ-dependent exponent c₂/σ²).

``derive()`` computes these with sympy (one-dimensional Gaussian integrals, the softmax derivative on three
tokens); the torch functions below are their matrix forms, and ``icl_sim.claims.large_prompt_softmax``
checks them against Monte Carlo over prompt lengths.
"""
from __future__ import annotations

import functools

import sympy as sp
import torch

from icl_sim.theory.symbolic import Step

# ----------------------------------------------------------------------------------------
# derivation

x, m, a, b, u, v, z = sp.symbols("x m a b u v z", real=True)
gamma = sp.Symbol("gamma", positive=True)
rho = sp.Symbol("rho", positive=True)  # 1 − 2α > 0 for the query average
c, beta = sp.symbols("c beta", positive=True)


@functools.cache
def _normaliser() -> sp.Expr:
    """Z(b) = E e^{bx} for x ~ N(m, γ), by sympy's integral."""
    density = sp.exp(-(x - m) ** 2 / (2 * gamma)) / sp.sqrt(2 * sp.pi * gamma)
    return sp.simplify(sp.integrate(sp.exp(b * x) * density, (x, -sp.oo, sp.oo)))


def _tilted(polynomial: sp.Expr, tilt: sp.Expr) -> sp.Expr:
    """E[p(x) e^{tilt·x}] for a polynomial p, x ~ N(m, γ): each x^k is the k-th derivative of Z at the tilt."""
    terms = sp.Poly(sp.expand(polynomial), x).terms()
    return sp.simplify(sum(coefficient * sp.diff(_normaliser(), b, power).subs(b, tilt)
                           for (power,), coefficient in terms))


@functools.cache
def _derivation() -> tuple[Step, ...]:
    steps = []
    normaliser = _normaliser().subs(b, a)
    steps.append(Step("d = 1, x ~ N(m, γ), a = U z: the normaliser Z = E e^{ax} (cancels in the softmax ratio)",
                      sp.Eq(sp.Symbol("Z"), normaliser)))
    limit = sp.simplify(_tilted(x, a) / normaliser)
    steps.append(Step("E[x e^{ax}] / E[e^{ax}] = Z'(a)/Z(a): the tilted mean, affine in a (Lemma 2.1)",
                      sp.Eq(sp.Symbol("T"), limit)))
    value, cov, score = (sp.MatrixSymbol(name, 3, 3) for name in ("V", "Gamma", "U"))
    mean, query = sp.MatrixSymbol("m", 3, 1), sp.MatrixSymbol("z", 3, 1)
    steps.append(Step("in R^d (x = m + Γ^{1/2} g, the same completion of the square): softmax attention on "
                      "N(m, Γ) is the linear operator T(z) = V m + V Γ U z",
                      sp.Eq(sp.MatrixSymbol("T", 3, 1), value * mean + value * cov * score * query, evaluate=False)))
    tokens = sp.symbols("x_1:4", real=True)
    weights = [sp.exp(u * token * z) for token in tokens]
    total = sum(weights)
    output = v * sum(w * token for w, token in zip(weights, tokens)) / total
    weighted_mean = sum(w * token for w, token in zip(weights, tokens)) / total
    weighted_cov = sum(w * (token - weighted_mean) ** 2 for w, token in zip(weights, tokens)) / total
    residual = sp.simplify(sp.diff(output, u) - v * z * weighted_cov)
    steps.append(Step("finite prompt (three tokens, d = 1): dT/dU − V z Ĉ, Ĉ the softmax-weighted variance "
                      "(so ∂T/∂U_ij = (V Ĉ)_i z_j, whose Gaussian limit is (V Γ)_i z_j)", residual))
    variance = sp.factor(_tilted((x - limit) ** 2, 2 * a) / normaliser**2)
    steps.append(Step("delta method: N E(T̂ − T)² → E[w²(x − T)²]/(E w)², w = e^{ax} (V = 1)",
                      sp.Eq(sp.Symbol("kappa"), variance)))
    score_variance = sp.factor(sp.expand(_tilted(((x - limit) ** 2 - gamma) ** 2, 2 * a) / normaliser**2))
    steps.append(Step("the same for the weighted variance behind dT/dU: N E(Ĉ − γ)² → (V = z = 1)",
                      sp.Eq(sp.Symbol("kappa_U"), score_variance)))
    alpha = (1 - rho) / 2  # the query's exponent a²γ = α z², written through ρ = 1 − 2α > 0
    density = sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi)
    averaged = sp.simplify(sp.integrate(sp.exp(alpha * z**2) * (c + beta * z**2) * density, (z, -sp.oo, sp.oo)))
    steps.append(Step("query average, z ~ N(0, 1), κ(z) = e^{αz²}(c + βz²), ρ = 1 − 2α > 0; in R^q: "
                      "det(I − 2A)^{-1/2}(tr VΓVᵀ + tr(UᵀΓVᵀVΓU(I − 2A)⁻¹)), A = UᵀΓU",
                      sp.Eq(sp.Symbol("kappa_nu"), averaged)))
    return tuple(steps)


def derive() -> list[Step]:
    """The Gaussian limit, the gradient identity and the rate constants, step by step."""
    return list(_derivation())


# ----------------------------------------------------------------------------------------
# matrix forms (float64 torch, batched over queries z of shape (B, q))

def _check(covariance, value, *, score=None, queries=None, mean=None):
    """One-line errors for inconsistent shapes: Γ (d, d), U (d, q), V (out, d), z (B, q), m (d,)."""
    d = covariance.shape[-1]
    if covariance.shape != (d, d):
        raise ValueError(f"covariance must be a square (d, d) matrix, got {tuple(covariance.shape)}")
    if value.ndim != 2 or value.shape[1] != d:
        raise ValueError(f"value must be (out, d) = (out, {d}), got {tuple(value.shape)}")
    if score is not None and (score.ndim != 2 or score.shape[0] != d):
        raise ValueError(f"score must be (d, q) = ({d}, q), got {tuple(score.shape)}")
    width = score.shape[1] if score is not None else None
    if queries is not None and (queries.ndim != 2 or queries.shape[1] != (width or queries.shape[1])):
        raise ValueError(f"queries must be (B, q) = (B, {width}), got {tuple(queries.shape)}")
    if mean is not None and mean.shape != (d,):
        raise ValueError(f"mean must be a (d,) = ({d},) vector, got {tuple(mean.shape)}")


def attention_limit(mean: torch.Tensor, covariance: torch.Tensor, score: torch.Tensor, value: torch.Tensor,
                    queries: torch.Tensor) -> torch.Tensor:
    """T[N(m, Γ)](z) = V m + V Γ U z for each query (Lemma 2.1): (B, out)."""
    _check(covariance, value, score=score, queries=queries, mean=mean)
    return (mean + queries @ score.T @ covariance) @ value.T


def score_gradient_limit(covariance: torch.Tensor, value: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """∂T[N(m, Γ)](z)/∂U_ij = (V Γ)_{ki} z_j: (B, out, d, q)."""
    _check(covariance, value, queries=queries)
    return torch.einsum("ki,bj->bkij", value @ covariance, queries)


def output_constant(covariance: torch.Tensor, score: torch.Tensor, value: torch.Tensor,
                    queries: torch.Tensor) -> torch.Tensor:
    """κ(z) = lim N E‖T[μ̂_N](z) − T[μ](z)‖² = e^{aᵀΓa}(tr VΓVᵀ + ‖VΓa‖²), a = Uz: (B,)."""
    _check(covariance, value, score=score, queries=queries)
    tilt = queries @ score.T  # a = U z, (B, d)
    shift = tilt @ covariance  # Γ a
    energy = (shift * tilt).sum(-1)  # aᵀΓa
    return torch.exp(energy) * (torch.trace(value @ covariance @ value.T) + ((shift @ value.T) ** 2).sum(-1))


def score_gradient_constant(covariance: torch.Tensor, score: torch.Tensor, value: torch.Tensor,
                            queries: torch.Tensor) -> torch.Tensor:
    """κ_U(z) = lim N E‖∂_U T[μ̂_N](z) − ∂_U T[μ](z)‖²_F = ‖z‖² e^{aᵀΓa} E‖V(yyᵀ − Γ)‖²_F, y ~ N(Γa, Γ),
    = ‖z‖² e^{aᵀΓa} ((bᵀBb + tr BΓ)(bᵀb + tr Γ) + tr BΓ² + 2 bᵀBΓb), b = Γa, B = VᵀV: (B,)."""
    _check(covariance, value, score=score, queries=queries)
    gram = value.T @ value
    tilt = queries @ score.T
    shift = tilt @ covariance  # b = Γ a
    energy = (shift * tilt).sum(-1)
    quadratic = ((shift @ gram) * shift).sum(-1)  # bᵀBb
    moments = ((quadratic + torch.trace(gram @ covariance)) * ((shift**2).sum(-1) + torch.trace(covariance))
               + torch.trace(gram @ covariance @ covariance) + 2 * ((shift @ gram @ covariance) * shift).sum(-1))
    return (queries**2).sum(-1) * torch.exp(energy) * moments


def query_averaged_output_constant(covariance: torch.Tensor, score: torch.Tensor, value: torch.Tensor) -> float:
    """κ_ν = E_{z~N(0,I)} κ(z) = det(I − 2A)^{-1/2}(tr VΓVᵀ + tr(UᵀΓVᵀVΓU (I − 2A)⁻¹)), A = UᵀΓU."""
    _check(covariance, value, score=score)
    energy = score.T @ covariance @ score  # A
    identity = torch.eye(energy.shape[0], dtype=energy.dtype)
    if float(torch.linalg.eigvalsh(energy).max()) >= 0.5:
        raise ValueError("score must satisfy 2 UᵀΓU < I (covariance-weighted): E_ν κ(z) is infinite otherwise")
    resolvent = torch.linalg.inv(identity - 2 * energy)
    linear = score.T @ covariance @ value.T @ value @ covariance @ score
    return float(torch.linalg.det(identity - 2 * energy) ** -0.5
                 * (torch.trace(value @ covariance @ value.T) + torch.trace(linear @ resolvent)))
