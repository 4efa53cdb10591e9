"""Closed-form baselines, iterative in-context algorithms, LSA weight constructions and closed-form formulas."""
from .algorithms import (DiscreteMMSE, GDPlusPlus, StepwiseGDPlusPlus, Newton, PowerMethod, PreconditionedGD,
                         StepwisePreconditionedGD, RecursiveLeastSquares)
from .baselines import GD, KNN, OLS, Averaging, Baseline, StepwiseGD, LinearBaseline, Ridge, Zero
from .constructions import gd_lsa_weights, gd_plus_plus_lsa_weights
from .formulas import optimal_preconditioner, optimal_step
from .lasso import Lasso
from .network_gd import NetworkGD

__all__ = ["Averaging", "Baseline", "DiscreteMMSE", "GD", "GDPlusPlus", "StepwiseGDPlusPlus", "StepwiseGD", "KNN",
           "Lasso", "LinearBaseline", "NetworkGD", "Newton", "OLS", "PowerMethod", "PreconditionedGD",
           "StepwisePreconditionedGD", "RecursiveLeastSquares", "Ridge", "Zero", "gd_lsa_weights",
           "gd_plus_plus_lsa_weights", "optimal_preconditioner", "optimal_step"]
