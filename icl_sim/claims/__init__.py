"""Theoretical claims, each with a derivation and a numerical check: ``CLAIMS[name]``.

The formulas and their sympy derivations live in ``icl_sim.theory.formulas``; a claim adds the
check against numbers, which samples tasks or trains models and so sits above them.
"""
from __future__ import annotations

from icl_sim.claims import algorithms, comparison_metrics, large_prompt_softmax, one_layer_optimum, risk_curves
from icl_sim.claims.base import Claim

CLAIMS: dict[str, Claim] = {
    claim.name: claim
    for module in (one_layer_optimum, algorithms, risk_curves, comparison_metrics, large_prompt_softmax)
    for claim in module.CLAIMS
}

__all__ = ["CLAIMS", "Claim"]
