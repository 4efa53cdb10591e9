"""Theoretical predictions, each with a derivation and a numerical check: ``PREDICTIONS[name]``."""
from __future__ import annotations

from icl_sim.theory.predictions import algorithms, comparison_metrics, one_layer_optimum, risk_curves
from icl_sim.theory.predictions.base import Comparison, Prediction, Step, exact, monte_carlo

PREDICTIONS: dict[str, Prediction] = {
    prediction.name: prediction
    for module in (one_layer_optimum, algorithms, risk_curves, comparison_metrics)
    for prediction in module.PREDICTIONS
}

__all__ = ["PREDICTIONS", "Comparison", "Prediction", "Step", "exact", "monte_carlo"]
