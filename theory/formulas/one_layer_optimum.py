"""The optimum of one linear self-attention layer: one (preconditioned) GD step and its risk.

Convention (icl-sim's LSA, ``icl_sim.models.lsa``): a prompt has n context points
(x_j, y_j), j = 1..n, and a query x_q; the query is *excluded* from the keys and the
attention is normalised by n, so one layer with P = −e_{d+1}e_{d+1}ᵀ and
Q = [[Γ, 0], [0, 0]] predicts

    ŷ = x_qᵀ Γ h,    h = (1/n) Σ_{j≤n} y_j x_j,

i.e. one step of preconditioned GD from w = 0 on (1/2n) Σ_j (wᵀx_j − y_j)²
(Γ = η I: plain GD with step η, ``icl_sim.theory.GD(1, η)``).  Data: x ~ N(0, Σ),
w ~ N(0, s² I_d) (s = ``prior_scale``), y = wᵀx + ε with ε ~ N(0, σ²) on every
point, *including the query*: every risk below is E(ŷ − y_q)² with a noisy y_q, so
it contains the irreducible σ².  A task with ``points = n + 1`` samples exactly this
(the last point is the query).

Key identity (Gaussian fourth moments, Isserlis), in the eigenbasis of Σ with
eigenvalues μ_j and T = tr Σ:

    E[h_j²] = s² ((n+1)/n μ_j² + (T + σ²/s²)/n μ_j),   E[h_j w_j] = s² μ_j,
    E[h_j h_k] = E[h_j w_k] = 0 (j ≠ k),

so the risk of any Γ is R(Γ) = σ² + s²[(1+1/n) tr(ΓΣ²ΓᵀΣ) + (T+σ²/s²)/n tr(ΓΣΓᵀΣ)
− 2 tr(ΓΣ²) + T], a quadratic in Γ whose minimiser is

    Γ* = ((1 + 1/n) Σ + (tr Σ + σ²/s²)/n · I)⁻¹.

Sources and their conventions:

* Mahankali, Hashimoto & Ma (2023), "One step of gradient descent is provably the
  optimal in-context learner with one layer of linear self-attention",
  arXiv:2307.03576 (ICLR 2024): Theorem 1 (x ~ N(0, I): the global minimiser of the
  pre-training loss is one GD step) and Theorem 2 (non-isotropic x: one step of
  preconditioned GD).
* Ahn, Cheng, Daneshmand & Sra (2023), "Transformers learn to implement
  preconditioned gradient descent for in-context learning", NeurIPS 2023,
  Theorem 1 (one layer, x ~ N(0, Σ), w ~ N(0, I), noiseless, 1/n normalisation):
  the optimal preconditioner is ((1 + 1/n)Σ + tr(Σ)/n · I)⁻¹.
* Zhang, Frei & Bartlett (2024), "Trained transformers learn linear models
  in-context", JMLR 25(49), arXiv:2306.09927: Theorem 4.1 (gradient flow on prompts
  of length N converges to the global minimum, whose prediction is
  ŷ = x_qᵀ Γ⁻¹ (1/M) Σ_{i≤M} y_i x_i with Γ = (1 + 1/N)Λ + tr(Λ)/N · I, and its
  risk on prompts of length M), §4.2 "Covariate shifts" (test x ~ N(0, Ω)).
  ZFB embed the query in the attention's key matrix E Eᵀ/N, but the trained
  value/key-query matrices are zero in the blocks where the query's x enters, so
  the prediction is the query-excluded, 1/N-normalised form used here; ZFB are
  noiseless with w ~ N(0, I) (σ = 0, s = 1), which is the default below.  With
  σ > 0 we use the population minimiser Γ* above (the point gradient flow is
  shown to reach only in the noiseless case).

Two more closed forms follow from the same moments: with the inverse-covariance prior
w ~ N(0, s² Σ⁻¹) (Mahankali et al., Thm 2) whitening gives the isotropic problem, so
Γ* = η* Σ⁻¹ with the isotropic η* and risk (``inverse_covariance_prior_preconditioner``); and the
ZFB optimum trained on Λ = I and tested on x ~ N(0, c I) has risk
R_M(c) = d c [(cγ − 1)² + (d + 1) c² γ²/M], γ = N/(N + d + 1), with the limit R∞(c) = d c (cγ − 1)²
as M → ∞ (``covariate_shift_risk``; ZFB §4.2).

Each formula is *computed* by sympy in ``_derivation`` from the moment identities
(expectation by substitution, ``sympy.solve`` of the stationarity condition), and
the numeric functions are ``torch_function`` of those expressions.  The claims
``one-step-gd-optimal-step``, ``preconditioned-gd-optimal`` and ``lsa-global-optimum-risk``
(``icl_sim.claims.one_layer_optimum``) check them against Monte Carlo.
"""
from __future__ import annotations

import functools

import sympy
import torch

from icl_sim.theory.symbolic import torch_function
from icl_sim.validation import check_float, check_int

from icl_sim.theory.symbolic import Step

# ----------------------------------------------------------------------------------------
# symbols
n, d, s, sigma, eta, g = sympy.symbols("n d s sigma eta g", positive=True)
mu, mu_i, mu_j, T = sympy.symbols("mu mu_i mu_j T", positive=True)
w_j, w_k, Q = sympy.symbols("w_j w_k Q", real=True)  # coordinates of w, Q = wᵀΣw
G_ij = sympy.Symbol("Gamma_ij", real=True)
t1, t2, t3 = sympy.symbols("t_1 t_2 t_3", real=True)  # trace invariants of (Γ, Σ_test)


def _moments(m, mu_a, trace):
    """E[h_a²], E[h_a w_a] and the cross moments for m context points, in Σ's eigenbasis.

    Returns (steps, E[h_a²], E[h_a w_a]) — all computed by sympy from Isserlis.
    """
    steps = []
    # Isserlis: E[x_k² x_a²] = μ_k μ_a (1 + 2δ_ka); E[x_k x_l x_a²] = 0 for k ≠ l.
    # E[(wᵀx)² x_a² | w] = Σ_k w_k² E[x_k² x_a²] = 3 μ_a² w_a² + μ_a Σ_{k≠a} μ_k w_k²
    #                    = 3 μ_a² w_a² + μ_a (Q − μ_a w_a²),   Q = wᵀΣw
    fourth = sympy.expand(3 * mu_a**2 * w_j**2 + mu_a * (Q - mu_a * w_j**2))
    steps.append(Step("Isserlis: E[(wᵀx)² x_j² | w] (eigenbasis of Σ, Q = wᵀΣw)",
                      sympy.Eq(sympy.Symbol("E[(w^T x)^2 x_j^2|w]"), fourth)))
    y2x2 = fourth + sigma**2 * mu_a  # + E[ε²] E[x_a²]
    yx = mu_a * w_j  # E[y x_a | w]
    # h = (1/m) Σ_j y_j x_j: m diagonal terms and m(m−1) independent cross terms
    h2_given_w = sympy.expand(y2x2 / m + (m - 1) / m * yx**2)
    steps.append(Step("E[h_j² | w] = (1/m) E[y² x_j²|w] + (1 − 1/m) E[y x_j|w]²",
                      sympy.Eq(sympy.Symbol("E[h_j^2|w]"), h2_given_w)))
    # prior average: E[w_a²] = s², E[Q] = s² tr Σ
    h2 = sympy.factor(h2_given_w.subs({w_j**2: s**2, Q: s**2 * trace}))
    hw = sympy.expand((yx * w_j).subs(w_j**2, s**2))
    steps.append(Step("average over w ~ N(0, s² I): E[h_j²]", sympy.Eq(sympy.Symbol("E[h_j^2]"), h2)))
    steps.append(Step("E[h_j w_j]", sympy.Eq(sympy.Symbol("E[h_j w_j]"), hw)))
    # cross moment j ≠ k: E[(wᵀx)² x_j x_k|w] = 2 μ_j μ_k w_j w_k, E[y x_j|w] E[y x_k|w] = μ_j μ_k w_j w_k
    cross_given_w = sympy.expand(2 * mu_a * mu_i * w_j * w_k / m + (m - 1) / m * mu_a * mu_i * w_j * w_k)
    cross = cross_given_w.subs(w_j * w_k, 0)  # E[w_j w_k] = 0 for j ≠ k
    steps.append(Step("cross moments vanish: E[h_j h_k] (j ≠ k)", sympy.Eq(sympy.Symbol("E[h_j h_k]"), cross)))
    return steps, h2, hw


@functools.cache
def _derivation():
    """All three derivations, computed once: {name: (steps, {key: expression})}."""
    out = {}

    # -- 1. one GD step, isotropic -----------------------------------------------------
    steps, h2, hw = _moments(n, sympy.Integer(1), d)
    # R(η) = E‖η h − w‖² + σ² = Σ_j (η² E[h_j²] − 2η E[h_j w_j] + s²) + σ²  (Σ = I)
    risk_eta = sympy.expand(d * (eta**2 * h2 - 2 * eta * hw + s**2) + sigma**2)
    steps.append(Step("risk of ŷ = η x_qᵀh (noisy y_q): quadratic in η", sympy.Eq(sympy.Symbol("R(eta)"), risk_eta)))
    (eta_star,) = sympy.solve(sympy.diff(risk_eta, eta), eta)
    eta_star = sympy.simplify(eta_star)
    steps.append(Step("dR/dη = 0: optimal step η*", sympy.Eq(sympy.Symbol("eta^*"), eta_star)))
    risk_star = sympy.factor(sympy.simplify(risk_eta.subs(eta, eta_star)))
    steps.append(Step("risk at η*: R(η*)", risk_star))
    out["one-step"] = (steps, {"risk_eta": risk_eta, "eta_star": eta_star, "risk_star": risk_star})

    # -- 2. preconditioned GD: entries of Γ in Σ's eigenbasis ------------------------------
    steps, h2, hw = _moments(n, mu, T)
    # R(Γ) = σ² + Σ_i μ_i E[((Γh)_i − w_i)²] = σ² + Σ_i μ_i (Σ_j Γ_ij² E[h_j²] − 2Γ_ii E[h_i w_i] + s²)
    off_diagonal = mu_i * G_ij**2 * h2  # entry (i, j), i ≠ j: eigenvalue μ_j of h_j
    (g_off,) = sympy.solve(sympy.diff(off_diagonal, G_ij), G_ij)
    steps.append(Step("off-diagonal entry Γ_ij (i≠j) enters as μ_i Γ_ij² E[h_j²]: minimiser", sympy.Eq(G_ij, g_off)))
    direction = sympy.expand(mu * (g**2 * h2 - 2 * g * hw + s**2))
    steps.append(Step("risk of eigendirection μ with Γ's eigenvalue g", sympy.Eq(sympy.Symbol("r(g)"), direction)))
    (g_star,) = sympy.solve(sympy.diff(direction, g), g)
    g_star = sympy.factor(g_star)
    steps.append(Step("Γ* = g*(Σ): eigenvalue of the optimal preconditioner on eigenvalue μ of Σ",
                      sympy.Eq(sympy.Symbol("g^*"), g_star)))
    r_star = sympy.factor(sympy.simplify(direction.subs(g, g_star)))
    steps.append(Step("risk per eigendirection at Γ*; R(Γ*) = σ² + Σ_i r*(μ_i), T = tr Σ", r_star))
    out["preconditioned"] = (steps, {"g_star": g_star, "r_star": r_star, "g_off": g_off})

    # -- 3. any Γ on M test points with test covariance Σ' (eigenvalues μ, trace T) ---------
    m = sympy.Symbol("M", positive=True)
    steps, h2, hw = _moments(m, mu_j, T)
    # entry (i, j) of Γ in Σ' eigenbasis contributes μ_i Γ_ij² E_M[h_j²]; diagonal also −2 μ_i Γ_ii E[h_i w_i]
    quadratic = sympy.expand(mu_i * G_ij**2 * h2 / (G_ij**2 * mu_i))
    c3, c2 = quadratic.coeff(mu_j, 2), quadratic.coeff(mu_j, 1)
    c1 = sympy.expand(-2 * mu_j * G_ij * hw / (G_ij * mu_j**2))
    steps.append(Step("coefficients of Σ_ij Γ_ij² μ_i μ_j² = tr(ΓΣ'²ΓᵀΣ') =: t_3, "
                      "Σ_ij Γ_ij² μ_i μ_j = tr(ΓΣ'ΓᵀΣ') =: t_2, Σ_i Γ_ii μ_i² = tr(ΓΣ'²) =: t_1",
                      sympy.Tuple(c3, c2, c1)))
    risk_general = sigma**2 + s**2 * T + c3 * t3 + c2 * t2 + c1 * t1
    steps.append(Step("risk of any Γ on M points, x ~ N(0, Σ'), T = tr Σ' "
                      "(at the trained Γ = Γ*_N(Σ) for the ZFB optimum)", risk_general))
    out["general"] = (steps, {"risk": risk_general, "M": m})

    # -- 4. the inverse-covariance prior w ~ N(0, s² Σ⁻¹) (Mahankali et al., Thm 2) ----------
    steps = [Step("whiten: z = Σ^(-1/2) x ~ N(0, I), v = Σ^(1/2) w ~ N(0, s² I), wᵀx = vᵀz, h = Σ^(1/2) h_z, "
                  "so x_qᵀ Γ h = z_qᵀ Γ' h_z with Γ' = Σ^(1/2) Γ Σ^(1/2): the isotropic problem in Γ'",
                  sympy.Eq(sympy.Symbol("Gamma'"), sympy.Symbol("Sigma^(1/2) Gamma Sigma^(1/2)")))]
    moment_steps, h2, hw = _moments(n, sympy.Integer(1), d)
    steps += moment_steps
    (g_off,) = sympy.solve(sympy.diff(G_ij**2 * h2, G_ij), G_ij)
    steps.append(Step("off-diagonal entry Γ'_ij enters as Γ'_ij² E[h_j²]: minimiser", sympy.Eq(G_ij, g_off)))
    direction = sympy.expand(g**2 * h2 - 2 * g * hw + s**2)
    (g_white,) = sympy.solve(sympy.diff(direction, g), g)
    g_white = sympy.factor(g_white)
    steps.append(Step("diagonal of Γ' (every direction alike): Γ' = g* I, g* = η* of one GD step",
                      sympy.Eq(sympy.Symbol("g^*"), g_white)))
    steps.append(Step("back to x: Γ* = Σ^(-1/2) Γ' Σ^(-1/2) = g* Σ⁻¹ (Σ⁻¹-preconditioned GD with the step η*)",
                      sympy.Eq(sympy.Symbol("Gamma^*"), g_white * sympy.Symbol("Sigma^-1"))))
    risk_white = sympy.factor(sympy.simplify(sigma**2 + d * direction.subs(g, g_white)))
    steps.append(Step("risk at Γ*: σ² + d r(g*), the risk of one GD step at η* on isotropic data", risk_white))
    out["inverse-covariance"] = (steps, {"g_star": g_white, "risk_star": risk_white})

    # -- 5. covariate shift of the ZFB optimum (Zhang, Frei & Bartlett, §4.2) ------------------
    # trained on N points with Λ = I (σ = 0, s = 1): Γ*_N = γ I, γ = g*(μ = 1, T = d); tested on
    # x ~ N(0, c I) with M points: t1 = tr(ΓΩ²) = γc²d, t2 = tr(ΓΩΓΩ) = γ²c²d, t3 = tr(ΓΩ²ΓΩ) = γ²c³d, T = cd
    c, big_n = sympy.symbols("c N", positive=True)
    gamma_n = sympy.factor(out["preconditioned"][1]["g_star"].subs({mu: 1, T: d, sigma: 0, s: 1, n: big_n}))
    steps = [Step("trained on Λ = I with N points: Γ*_N = γ I", sympy.Eq(sympy.Symbol("gamma"), gamma_n))]
    gamma_symbol = sympy.Symbol("gamma", positive=True)
    shifted = risk_general.subs({t1: gamma_symbol * c**2 * d, t2: gamma_symbol**2 * c**2 * d,
                                 t3: gamma_symbol**2 * c**3 * d, T: c * d, sigma: 0, s: 1})
    shifted = sympy.factor(sympy.expand(shifted))
    steps.append(Step("risk on M test points with x ~ N(0, c I)", sympy.Eq(sympy.Symbol("R_M(c)"), shifted)))
    limit = sympy.factor(sympy.limit(shifted, m, sympy.oo))
    steps.append(Step("M → ∞: R∞(c) = d c (c γ − 1)², zero only at c = 1/γ (ZFB §4.2: brittle to covariate shift)",
                      sympy.Eq(sympy.Symbol("R_inf(c)"), limit)))
    out["covariate-shift"] = (steps, {"risk": shifted.subs(gamma_symbol, gamma_n),
                                      "limit": limit.subs(gamma_symbol, gamma_n), "M": m, "c": c, "N": big_n})
    return out


def derive(key: str) -> list[Step]:
    """The derivation ``key`` ("one-step", "preconditioned", "general", "inverse-covariance" or
    "covariate-shift"), step by step."""
    return list(_derivation()[key][0])


# ----------------------------------------------------------------------------------------
# numeric functions (float64 torch, from the sympy expressions)

@functools.cache
def _functions():
    one = _derivation()["one-step"][1]
    pre = _derivation()["preconditioned"][1]
    gen = _derivation()["general"][1]
    inverse = _derivation()["inverse-covariance"][1]
    shift = _derivation()["covariate-shift"][1]
    return {
        "g_inverse_prior": torch_function(inverse["g_star"], [d, n, sigma, s]),
        "shift_risk": torch_function(shift["risk"], [shift["c"], d, shift["N"], shift["M"]]),
        "shift_limit": torch_function(shift["limit"], [shift["c"], d, shift["N"]]),
        "eta_star": torch_function(one["eta_star"], [d, n, sigma, s]),
        "risk_eta": torch_function(one["risk_eta"], [eta, d, n, sigma, s]),
        "risk_star": torch_function(one["risk_star"], [d, n, sigma, s]),
        "g_star": torch_function(pre["g_star"], [mu, T, n, sigma, s]),
        "r_star": torch_function(pre["r_star"], [mu, T, n, sigma, s]),
        "general": torch_function(gen["risk"], [t1, t2, t3, T, gen["M"], sigma, s]),
    }


def _check_common(points, noise, prior_scale, points_name="points"):
    check_int(points_name, points, 1)
    check_float("noise", noise, 0.0)
    check_float("prior_scale", prior_scale, 0.0, strict=True)


def optimal_step(dim: int, points: int, noise: float = 0.0, prior_scale: float = 1.0) -> float:
    """η* = n / (n + d + 1 + σ²/s²): the risk-optimal step of one GD step from 0 (isotropic x)."""
    check_int("dim", dim, 1)
    _check_common(points, noise, prior_scale)
    return float(_functions()["eta_star"](dim, points, noise, prior_scale))


def one_step_gd_risk(dim: int, points: int, noise: float = 0.0, prior_scale: float = 1.0,
                     step: float | None = None) -> float:
    """E(η x_qᵀh − y_q)² (noisy y_q) for isotropic x; at η* when ``step`` is None.

    R(η) = d s² [η² (n + d + 1 + σ²/s²)/n − 2η + 1] + σ²,
    R(η*) = d s² (d + 1 + σ²/s²) / (n + d + 1 + σ²/s²) + σ².
    """
    check_int("dim", dim, 1)
    _check_common(points, noise, prior_scale)
    if step is None:
        return float(_functions()["risk_star"](dim, points, noise, prior_scale))
    check_float("step", step)
    return float(_functions()["risk_eta"](step, dim, points, noise, prior_scale))


def _check_covariance(name: str, covariance: torch.Tensor) -> torch.Tensor:
    if not torch.is_tensor(covariance) or covariance.ndim < 2 or covariance.shape[-1] != covariance.shape[-2]:
        raise ValueError(f"{name} must be a (..., d, d) tensor, got {getattr(covariance, 'shape', covariance)!r}")
    covariance = covariance.to(torch.float64)
    if not torch.allclose(covariance, covariance.transpose(-1, -2), rtol=1e-10, atol=1e-12):
        raise ValueError(f"{name} must be symmetric")
    if not bool(torch.isfinite(covariance).all()) or bool((torch.linalg.eigvalsh(covariance) <= 0).any()):
        raise ValueError(f"{name} must be finite and positive definite")
    return covariance


def optimal_preconditioner(covariance: torch.Tensor, n: int, noise: float = 0.0,
                           prior_scale: float = 1.0) -> torch.Tensor:
    """Γ* = ((1 + 1/n) Σ + (tr Σ + σ²/s²)/n · I)⁻¹ in float64, for ŷ = x_qᵀ Γ (1/n) Σ_j y_j x_j.

    The minimiser of E(ŷ − y_q)² over Γ with x ~ N(0, Σ), w ~ N(0, s² I), noise σ
    (Ahn et al. 2023 Thm 1; Mahankali et al. 2023 Thm 2).  ``covariance`` (d, d) or
    batched (..., d, d); computed spectrally from the sympy-derived eigenvalue map
    g*(μ) = n / ((n + 1) μ + tr Σ + σ²/s²).
    """
    covariance = _check_covariance("covariance", covariance)
    _check_common(n, noise, prior_scale, "n")
    eigenvalues, vectors = torch.linalg.eigh(covariance)
    trace = eigenvalues.sum(-1, keepdim=True)
    values = _functions()["g_star"](eigenvalues, trace, n, noise, prior_scale)
    return (vectors * values.unsqueeze(-2)) @ vectors.transpose(-1, -2)


def preconditioner_risk(preconditioner: torch.Tensor, covariance: torch.Tensor, points: int,
                        noise: float = 0.0, prior_scale: float = 1.0) -> torch.Tensor:
    """E(x_qᵀ Γ h − y_q)² for any Γ (d, d), M = ``points`` context points, x ~ N(0, Σ).

    R = σ² + s²[(1 + 1/M) tr(ΓΣ²ΓᵀΣ) + (tr Σ + σ²/s²)/M tr(ΓΣΓᵀΣ) − 2 tr(ΓΣ²) + tr Σ].
    """
    covariance = _check_covariance("covariance", covariance)
    _check_common(points, noise, prior_scale)
    gamma = preconditioner.to(torch.float64)
    if gamma.shape[-2:] != covariance.shape[-2:]:
        raise ValueError(f"preconditioner must be (..., d, d) like covariance, got {tuple(gamma.shape)}")
    sigma2, transposed = covariance @ covariance, gamma.transpose(-1, -2)

    def trace(a):
        return torch.diagonal(a, dim1=-2, dim2=-1).sum(-1)

    invariants = (trace(gamma @ sigma2), trace(gamma @ covariance @ transposed @ covariance),
                  trace(gamma @ sigma2 @ transposed @ covariance))
    return _functions()["general"](*invariants, trace(covariance), points, noise, prior_scale)


def preconditioned_gd_risk(covariance: torch.Tensor, n: int, noise: float = 0.0,
                           prior_scale: float = 1.0) -> torch.Tensor:
    """R(Γ*) = σ² + s² Σ_i μ_i (μ_i + T + σ²/s²) / ((n + 1) μ_i + T + σ²/s²), μ = eig Σ, T = tr Σ."""
    covariance = _check_covariance("covariance", covariance)
    _check_common(n, noise, prior_scale, "n")
    eigenvalues = torch.linalg.eigvalsh(covariance)
    trace = eigenvalues.sum(-1, keepdim=True)
    return noise**2 + _functions()["r_star"](eigenvalues, trace, n, noise, prior_scale).sum(-1)


def lsa_optimum_risk(train_covariance: torch.Tensor, train_points: int, test_points: int,
                     test_covariance: torch.Tensor | None = None, noise: float = 0.0,
                     prior_scale: float = 1.0) -> torch.Tensor:
    """Risk of the global optimum of one LSA layer trained on N = ``train_points`` context points.

    Zhang, Frei & Bartlett (2024) Thm 4.1 / §4.2: trained on x ~ N(0, Σ), the layer predicts
    ŷ = x_qᵀ Γ*_N (1/M) Σ_{i≤M} y_i x_i with Γ*_N = ((1 + 1/N)Σ + (tr Σ + σ²/s²)/N · I)⁻¹;
    on M test points with x ~ N(0, Σ') (default Σ' = Σ) its risk is ``preconditioner_risk``.
    """
    check_int("train_points", train_points, 1)
    gamma = optimal_preconditioner(train_covariance, train_points, noise, prior_scale)
    test = train_covariance if test_covariance is None else test_covariance
    return preconditioner_risk(gamma, test, test_points, noise, prior_scale)


def inverse_covariance_prior_preconditioner(covariance: torch.Tensor, n: int, noise: float = 0.0,
                                            prior_scale: float = 1.0) -> torch.Tensor:
    """Γ* = η* Σ⁻¹, η* = n / (n + d + 1 + σ²/s²): the optimal one-layer Γ when w ~ N(0, s² Σ⁻¹).

    Mahankali, Hashimoto & Ma (2023), Thm 2 (x ~ N(0, Σ), w ~ N(0, Σ⁻¹)), in icl-sim's convention
    (ŷ = x_qᵀ Γ (1/n) Σ_j y_j x_j, query excluded, noisy y_q).  Whitening turns the problem into the
    isotropic one, so Γ* is one step of Σ⁻¹-preconditioned GD with the isotropic optimal step
    (sympy: ``derive("inverse-covariance")``) and its risk is ``one_step_gd_risk(d, n, σ, s)``.
    Unlike ``optimal_preconditioner`` (isotropic prior) it does not depend on tr Σ.
    ``covariance`` (d, d) or batched (..., d, d).
    """
    covariance = _check_covariance("covariance", covariance)
    _check_common(n, noise, prior_scale, "n")
    step = _functions()["g_inverse_prior"](covariance.shape[-1], n, noise, prior_scale)
    return step * torch.linalg.inv(covariance)


def covariate_shift_risk(dim: int, train_points: int, scale, test_points: int | None = None) -> torch.Tensor:
    """Risk of the ZFB optimum trained on x ~ N(0, I_d), N = ``train_points``, tested on x ~ N(0, c I).

    Zhang, Frei & Bartlett (2024), §4.2 "Covariate shifts" (noiseless, w ~ N(0, I)): with
    γ = N / (N + d + 1) (Γ*_N = γ I) and c = ``scale`` (a float or a tensor of them),

        R_M(c) = d c [(cγ − 1)² + (d + 1) c² γ² / M],     R∞(c) = d c (cγ − 1)²  (``test_points`` None),

    so the error at M → ∞ vanishes only at c = 1/γ and grows like d γ² c³: the trained layer does
    not adapt to the test covariance.  Derived by sympy from the general risk
    (``derive("covariate-shift")``); R_M equals ``lsa_optimum_risk(I, N, M, c I)``.
    """
    check_int("dim", dim, 1)
    check_int("train_points", train_points, 1)
    scale = torch.as_tensor(scale, dtype=torch.float64)
    if not bool(torch.isfinite(scale).all()) or bool((scale <= 0).any()):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    if test_points is None:
        return _functions()["shift_limit"](scale, dim, train_points)
    check_int("test_points", test_points, 1)
    return _functions()["shift_risk"](scale, dim, train_points, test_points)
