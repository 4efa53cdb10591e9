"""Measures shared by the one-layer-optimum reproductions (Mahankali et al.; Ahn et al.; Zhang, Frei & Bartlett).

Each is a thin composition of the library's own pieces: a predictor's squared error at one query
position (``Predictor.predict``), its Monte Carlo check against a closed-form risk
(``icl_sim.checks``), and the per-layer effective preconditioners of a trained LSA read through
``icl_sim.weight_comparison.effective_layer_maps`` (invariant to the P → cP, Q → Q/c rescaling).
"""
from __future__ import annotations


import torch

from icl_sim.checks import Check, claim_check
from icl_sim.prompt import Prompt
from icl_sim.weight_comparison import effective_layer_maps, similarity

#: standard errors a Monte Carlo risk may stray from its closed form, on top of the stated slack
RISK_SIGMAS = 3.0


def squared_errors(predictor, prompt: Prompt) -> torch.Tensor:
    """(ŷ − y)² at every position, (B, N) float64: position M predicts from the first M points (y noisy)."""
    with torch.no_grad():
        preds = predictor.predict(prompt.xs, prompt.ys)
    return (preds.to(torch.float64) - prompt.ys.to(torch.float64)).square()


def query_squared_errors(predictor, prompt: Prompt, position: int = -1) -> torch.Tensor:
    """(ŷ − y)² at one query ``position`` of every prompt, (B,) float64."""
    return squared_errors(predictor, prompt)[:, position]



def risk_tolerance(expected: float, standard_errors, slack: float) -> float:
    """How far Monte Carlo risks may stray from a closed form ``expected``: 3 s.e. of a seed's estimate (their mean
    over seeds) plus ``slack`` (relative) of the closed form."""
    errors = list(standard_errors)
    return RISK_SIGMAS * sum(errors) / len(errors) + slack * abs(expected)


def risk_claim_check(claim: str, quantity: str, expected: float, per_seed, standard_errors, *, slack: float,
                     source: str) -> Check:
    """Trained models' Monte Carlo risks, one per seed, against a closed form (claim ``claim``): the interval of the
    seeds' mean must lie within :func:`risk_tolerance` of it."""
    return claim_check(claim, quantity, expected, per_seed, relation="close",
                       tolerance=risk_tolerance(expected, standard_errors, slack), source=source)


def risk_sanity_check(quantity: str, expected: float, per_seed, standard_errors, *, slack: float,
                      source: str) -> Check:
    """The seeds' mean Monte Carlo risk against a closed form, within :func:`risk_tolerance`: a sanity check, for a
    risk that follows in closed form from weights another check has shown."""
    values = list(per_seed)
    return Check(f"{quantity} (mean over seeds)", expected, sum(values) / len(values),
                 risk_tolerance(expected, standard_errors, slack), source=source)


def layer_preconditioners(model) -> list[torch.Tensor]:
    """Each layer's effective preconditioner B_ℓ (d, d): its label update's x_qᵀ B_ℓ h term, float64."""
    return [layer["preconditioner"] for layer in effective_layer_maps(model)]


def scaled_distance(matrix: torch.Tensor, target: torch.Tensor) -> tuple[float, float]:
    """(‖M − cT‖_F / ‖M‖_F at the best c, c): the shape error of M against T after optimal scaling, and c."""
    fit = similarity(matrix, target)
    return fit["relative_residual"], fit["scale"]


def relative_error(matrix: torch.Tensor, target: torch.Tensor) -> float:
    """‖M − T‖_F / ‖T‖_F, no rescaling."""
    return float((matrix - target).norm() / target.norm())


def least_squares_slope(xs, ys) -> float:
    """The least-squares slope of ``ys`` on ``xs`` (a line fitted with an intercept), in float64."""
    x, y = torch.tensor(list(xs), dtype=torch.float64), torch.tensor(list(ys), dtype=torch.float64)
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / x.square().sum())


def seed_values(rows, quantity: str, **match) -> list[float]:
    """``quantity``'s value per seed, in seed order, from a tidy table of {seed, quantity, value, ...} rows whose
    other columns equal ``match`` (e.g. ``run="lsa"``): what a claim check takes as ``per_seed``."""
    found = {row["seed"]: row["value"] for row in rows if row["quantity"] == quantity
             and all(row.get(key) == value for key, value in match.items())}
    if not found:
        raise ValueError(f"no {quantity!r} rows match {match}")
    return [found[seed] for seed in sorted(found)]


def run_mean(results: dict, run: str, quantity: str) -> float:
    """The mean over seeds of ``quantity`` for ``run`` in a results table of {run, seed, quantity, value} rows."""
    values = [row["value"] for row in results["rows"] if row["run"] == run and row["quantity"] == quantity]
    return sum(values) / len(values)
