"""Closed-form baselines and theoretical predictions."""
from .baselines import GD, KNN, OLS, Averaging, Baseline, LinearBaseline, Ridge, Zero

__all__ = ["Averaging", "Baseline", "GD", "KNN", "LinearBaseline", "OLS", "Ridge", "Zero"]
