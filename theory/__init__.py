"""Closed-form baselines, iterative in-context algorithms, LSA constructions and theoretical predictions."""
from .algorithms import (DiscreteMMSE, GDPlusPlus, GDPlusPlusSchedule, Newton, PowerMethod, PreconditionedGD,
                         PreconditionedGDSchedule, RecursiveLeastSquares)
from .baselines import GD, KNN, OLS, Averaging, Baseline, GDSchedule, LinearBaseline, Ridge, Zero
from .constructions import constructed_lsa, gd_lsa_weights
from .predictions.one_layer_optimum import optimal_preconditioner, optimal_step

__all__ = ["Averaging", "Baseline", "DiscreteMMSE", "GD", "GDPlusPlus", "GDPlusPlusSchedule", "GDSchedule", "KNN",
           "LinearBaseline", "Newton", "OLS", "PowerMethod", "PreconditionedGD", "PreconditionedGDSchedule",
           "RecursiveLeastSquares", "Ridge", "Zero", "constructed_lsa",
           "gd_lsa_weights", "optimal_preconditioner", "optimal_step"]
