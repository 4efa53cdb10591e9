"""Closed-form baselines, iterative in-context algorithms and theoretical predictions."""
from .algorithms import DiscreteMMSE, GDPlusPlus, Newton, PowerMethod, PreconditionedGD, RecursiveLeastSquares
from .baselines import GD, KNN, OLS, Averaging, Baseline, LinearBaseline, Ridge, Zero

__all__ = ["Averaging", "Baseline", "DiscreteMMSE", "GD", "GDPlusPlus", "KNN", "LinearBaseline", "Newton",
           "OLS", "PowerMethod", "PreconditionedGD", "RecursiveLeastSquares", "Ridge", "Zero"]
