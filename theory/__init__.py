"""Closed-form baselines, iterative in-context algorithms, LSA weight constructions and closed-form formulas."""
from .algorithms import (DiscreteMMSE, GDPlusPlus, GDPlusPlusSchedule, Newton, PowerMethod, PreconditionedGD,
                         PreconditionedGDSchedule, RecursiveLeastSquares)
from .baselines import GD, KNN, OLS, Averaging, Baseline, GDSchedule, LinearBaseline, Ridge, Zero
from .constructions import gd_lsa_weights
from .formulas import optimal_preconditioner, optimal_step

__all__ = ["Averaging", "Baseline", "DiscreteMMSE", "GD", "GDPlusPlus", "GDPlusPlusSchedule", "GDSchedule", "KNN",
           "LinearBaseline", "Newton", "OLS", "PowerMethod", "PreconditionedGD", "PreconditionedGDSchedule",
           "RecursiveLeastSquares", "Ridge", "Zero", "gd_lsa_weights", "optimal_preconditioner", "optimal_step"]
