"""Closed forms of in-context learning theory, each derived with sympy and evaluated in float64 torch.

One module per family: ``one_layer_optimum`` (optimal step, preconditioner and risks of one LSA
layer), ``risk_curves`` (OLS, averaging and Bayes-ridge risks), ``algorithms`` (Newton vs GD rates,
GD++, Saxe et al.'s learning curve, the LSA-GD construction) and ``comparison_metrics`` (Akyürek
et al.'s SPD and ILWD).  ``icl_sim.claims`` checks each against numbers.
"""
from .algorithms import (fu_alpha, gd_plus_plus_condition, gd_plus_plus_gamma, gd_plus_plus_map, gd_plus_plus_two_step,
                         gd_steps_to_tolerance, newton_iterates, newton_steps_to_tolerance, saxe_half_learning_time,
                         saxe_mode_strength)
from .comparison_metrics import ilwd, implicit_weights, spd, spd_linear
from .one_layer_optimum import (covariate_shift_risk, inverse_covariance_prior_preconditioner, lsa_optimum_risk,
                                one_step_gd_risk, optimal_preconditioner, optimal_step, preconditioned_gd_risk,
                                preconditioner_risk)
from .risk_curves import (averaging_risk, averaging_risk_per_dim, ols_risk, ols_risk_per_dim, ridge_bayes_risk,
                          ridge_bayes_risk_mp, ridge_bayes_risk_samples)

__all__ = ["averaging_risk", "averaging_risk_per_dim", "covariate_shift_risk", "fu_alpha", "gd_plus_plus_condition",
           "gd_plus_plus_gamma", "gd_plus_plus_map", "gd_plus_plus_two_step", "gd_steps_to_tolerance", "ilwd",
           "implicit_weights", "inverse_covariance_prior_preconditioner", "lsa_optimum_risk", "newton_iterates",
           "newton_steps_to_tolerance", "ols_risk", "ols_risk_per_dim", "one_step_gd_risk", "optimal_preconditioner",
           "optimal_step", "preconditioned_gd_risk", "preconditioner_risk", "ridge_bayes_risk", "ridge_bayes_risk_mp",
           "ridge_bayes_risk_samples", "saxe_half_learning_time", "saxe_mode_strength", "spd", "spd_linear"]
