# %% [markdown]
# # Verify a formula against Monte Carlo
#
# One gradient-descent step from w = 0 on the context, ŷ = η x_qᵀ (1/n) Σ_j y_j x_j, is risk-optimal at
# η* = n / (n + d + 1 + σ²/s²) (Mahankali, Hashimoto & Ma 2023, Thm 1).  icl-sim derives the formula with sympy
# (`icl_sim.theory.formulas`); here we check it on sampled prompts, as `icl-sim theory verify` does.
#
# Set `ICL_SIM_EXAMPLE_SMALL=1` to run it in seconds (the test suite does).

# %%
import os

import torch

from icl_sim.claims import CLAIMS
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory.formulas.one_layer_optimum import one_step_gd_risk, optimal_step

SMALL = os.environ.get("ICL_SIM_EXAMPLE_SMALL") == "1"
dim, points, noise = 5, 10, 0.5

# %% [markdown]
# ## The derivation
# Each step of the sympy derivation, the last being the formula.

# %%
claim = CLAIMS["one-step-gd-optimal-step"]
for step in claim.derive():
    print(step)

# %% [markdown]
# ## Monte Carlo
# Prompts with n context points and one query (the task's last point); the risk of ŷ = η p, p = x_qᵀ h, is
# quadratic in η, so its minimiser is E[p y_q] / E[p²], estimated on the prompts.

# %%
task = make_task("linear-regression", dim=dim, points=points + 1, noise=noise)
prompt = task.sample(20_000 if SMALL else 400_000, make_generator(0, "eval"), dtype=torch.float64)
xs, ys = prompt.xs[:, :-1], prompt.ys[:, :-1]
p = (prompt.xs[:, -1] * torch.einsum("bn,bnd->bd", ys, xs) / points).sum(-1)
measured = float((p * prompt.ys[:, -1]).mean() / (p * p).mean())
print(f"η* formula {optimal_step(dim, points, noise):.4f}, Monte Carlo {measured:.4f}")
risk = float(((optimal_step(dim, points, noise) * p - prompt.ys[:, -1]) ** 2).mean())
print(f"risk at η*: formula {one_step_gd_risk(dim, points, noise):.4f}, Monte Carlo {risk:.4f}")

# %% [markdown]
# ## The library's own check
# `verify(seed)` returns the checks with their tolerances (a number of standard errors of the estimate).

# %%
for check in claim.verify(0):
    print(check.passed, check.quantity, f"{check.measured:.4f} vs {check.expected:.4f}")
