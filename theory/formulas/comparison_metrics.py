"""Behavioural metrics that compare two in-context predictors (Akyürek et al. 2023, Sec. 4).

Akyürek, Schuurmans, Andreas, Ma & Zhou (2023), "What learning algorithm is in-context
learning? Investigations with linear models", ICLR, Sec. 4.1 (behavioural metrics):

* squared prediction difference SPD(f, g) = E_x (f(x) − g(x))², estimated on probe inputs
  (``spd``: the mean over the probe axis);
* implicit linear weight difference ILWD(f, g) = ‖ŵ_f − ŵ_g‖², where ŵ_f is the least-squares
  linear fit to f's outputs on the probe inputs (``ilwd``; min-norm when the probes do not
  span R^d).

Identities (``akyurek-metrics``): for linear predictors f = w_aᵀx, g = w_bᵀx, δ = w_a − w_b,
SPD = δᵀΣδ under x ~ N(0, Σ) (= ILWD when Σ = I); on K probes X, SPD = δᵀ(XᵀX/K)δ exactly;
ILWD = ‖δ‖² exactly when rank X = d (K ≥ d generic probes), ‖Pδ‖² (P the projection onto
the row space of X) otherwise.
"""
from __future__ import annotations

import functools

import sympy as sp
import torch
from sympy.stats import E as expectation
from sympy.stats import Normal

from icl_sim.theory.symbolic import torch_function

from icl_sim.theory.symbolic import Step


def _as_float64(*tensors):
    device = tensors[0].device
    return [t.to(device=device, dtype=torch.float64) for t in tensors]


def spd(preds_a: torch.Tensor, preds_b: torch.Tensor) -> torch.Tensor:
    """Squared prediction difference: mean over the last (probe) axis of (a − b)², float64.

    ``preds_a``, ``preds_b`` (..., K) -> (...): one SPD per batch element (Akyürek et al. Sec. 4.1).
    """
    if preds_a.shape != preds_b.shape or preds_a.ndim < 1 or preds_a.shape[-1] < 1:
        raise ValueError(f"preds_a and preds_b must have the same shape (..., K >= 1), got "
                         f"{tuple(preds_a.shape)} and {tuple(preds_b.shape)}")
    a, b = _as_float64(preds_a, preds_b)
    return ((a - b) ** 2).mean(dim=-1)


def implicit_weights(xs: torch.Tensor, preds: torch.Tensor) -> torch.Tensor:
    """ŵ = pinv(X) f(X): the min-norm least-squares linear fit to ``preds`` (B, K) on probes ``xs`` (B, K, d)."""
    _check_probes(xs, preds)
    x, p = _as_float64(xs, preds)
    return (torch.linalg.pinv(x) @ p[..., None]).squeeze(-1)


def ilwd(xs: torch.Tensor, preds_a: torch.Tensor, preds_b: torch.Tensor) -> torch.Tensor:
    """Implicit linear weight difference ‖ŵ_a − ŵ_b‖², (B,) float64 (Akyürek et al. Sec. 4.1).

    ``xs`` (B, K, d) probe inputs, ``preds_a``/``preds_b`` (B, K) the two predictors' outputs
    on them.  The fit is linear in the outputs, so ŵ_a − ŵ_b = pinv(X)(a − b), computed
    once (SVD-based pseudo-inverse: any device, min-norm when rank X < d).
    """
    _check_probes(xs, preds_a)
    _check_probes(xs, preds_b)
    x, a, b = _as_float64(xs, preds_a, preds_b)
    return ((torch.linalg.pinv(x) @ (a - b)[..., None]).squeeze(-1) ** 2).sum(-1)


def spd_linear(w_a: torch.Tensor, w_b: torch.Tensor, covariance: torch.Tensor | None = None) -> torch.Tensor:
    """δᵀΣδ (δ = w_a − w_b, (..., d)): the SPD of two linear predictors under x ~ N(0, Σ); Σ = I if None."""
    delta = (w_a - w_b).to(torch.float64)
    if covariance is None:
        return (delta**2).sum(-1)
    return (delta[..., None, :] @ covariance.to(torch.float64) @ delta[..., :, None])[..., 0, 0]


def _check_probes(xs, preds):
    if xs.ndim != 3 or preds.shape != xs.shape[:2]:
        raise ValueError(f"xs must be (B, K, d) and preds (B, K), got {tuple(xs.shape)} and {tuple(preds.shape)}")


# --- derivation ------------------------------------------------------------------------
DIM = 2  # the symbolic derivation is carried out for d = 2 (K = 3 probes); it holds for every d
delta = sp.Matrix(sp.symbols("delta1:3", real=True))
s11, s12, s22 = sp.symbols("Sigma11 Sigma12 Sigma22", real=True)


def derive() -> list[Step]:
    l11, l22 = sp.symbols("L11 L22", positive=True)
    l21 = sp.Symbol("L21", real=True)
    chol = sp.Matrix([[l11, 0], [l21, l22]])
    z = sp.Matrix([Normal("z1", 0, 1), Normal("z2", 0, 1)])
    x = chol * z  # x ~ N(0, Σ), Σ = L Lᵀ
    spd_value = sp.expand(expectation(sp.expand((delta.T * x)[0] ** 2)))
    sigma_matrix = chol * chol.T
    quadratic = sp.expand((delta.T * sigma_matrix * delta)[0])
    steps = [Step("SPD of f = w_aᵀx, g = w_bᵀx, δ = w_a − w_b, x = Lz ~ N(0, LLᵀ): E (δᵀx)² (d = 2)",
                  sp.Eq(sp.Symbol("SPD"), spd_value)),
             Step("equals δᵀΣδ with Σ = LLᵀ (difference simplifies to 0)",
                  sp.Eq(sp.simplify(spd_value - quadratic), 0))]
    probes = sp.Matrix(3, DIM, lambda i, j: sp.Symbol(f"x{i + 1}{j + 1}", real=True))
    fitted = sp.simplify((probes.T * probes).inv() * probes.T * (probes * delta))
    steps.append(Step("ILWD: least-squares fit to the linear outputs Xδ on K = 3 probes (rank X = d): "
                      "(XᵀX)⁻¹Xᵀ X δ",
                      sp.Eq(sp.MatrixSymbol("w_hat_a_minus_w_hat_b", DIM, 1), sp.ImmutableMatrix(fitted))))
    ilwd_value = sp.expand((fitted.T * fitted)[0])
    steps.append(Step("so ILWD = ‖δ‖²", sp.Eq(sp.Symbol("ILWD"), ilwd_value)))
    identity = sp.expand(quadratic.subs({l11: 1, l21: 0, l22: 1}))
    steps.append(Step("Σ = I: SPD = ILWD", sp.Eq(identity - ilwd_value, 0)))
    final = sp.expand((delta.T * sp.Matrix([[s11, s12], [s12, s22]]) * delta)[0])
    steps.append(Step("final: SPD = δᵀΣδ (written out for d = 2)", sp.Eq(sp.Symbol("SPD"), final)))
    return steps


SPD_SYMBOLS = [*delta, s11, s12, s22]


@functools.cache
def _spd_function():
    return torch_function(derive()[-1].expression.rhs, SPD_SYMBOLS)


def spd_formula_d2(*values):
    """The derived SPD = δᵀΣδ for d = 2 as a function of (δ_1, δ_2, Σ_11, Σ_12, Σ_22); derived on first use."""
    return _spd_function()(*values)
