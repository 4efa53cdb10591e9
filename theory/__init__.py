"""Closed-form baselines, iterative in-context algorithms, LSA weight constructions and closed-form formulas."""
from .algorithms import (DiscreteMMSE, GDPlusPlus, StepwiseGDPlusPlus, Newton, PowerMethod, PreconditionedGD,
                         StepwisePreconditionedGD, RecursiveLeastSquares)
from .baselines import GD, KNN, OLS, Averaging, Baseline, StepwiseGD, LinearBaseline, Ridge, Zero
from .constructions import gd_lsa_weights, gd_plus_plus_lsa_weights
from .formulas import optimal_preconditioner, optimal_step
from .lasso import Lasso
from .network_gd import NetworkGD
from .random_features import RandomFeatureAttention, RandomFeatureNetwork, fit_ridge, ridge_path

__all__ = ["Averaging", "Baseline", "DiscreteMMSE", "GD", "GDPlusPlus", "StepwiseGDPlusPlus", "StepwiseGD", "KNN",
           "Lasso", "LinearBaseline", "NetworkGD", "Newton", "OLS", "PowerMethod", "PreconditionedGD",
           "RandomFeatureAttention", "RandomFeatureNetwork",
           "StepwisePreconditionedGD", "RecursiveLeastSquares", "Ridge", "Zero", "fit_ridge", "gd_lsa_weights",
           "gd_plus_plus_lsa_weights", "optimal_preconditioner", "optimal_step", "ridge_path"]
