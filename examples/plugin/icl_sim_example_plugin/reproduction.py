"""An example reproduction, declared as a plugin: Mahankali, Hashimoto & Ma (2023), Thm 1, on this package's model.

One preconditioned GD step from w = 0, ŷ = x_qᵀ Γ (1/n) Σ_j y_j x_j (``preconditioned-steps`` with one step), trained
on isotropic noiseless linear regression (x, w ~ N(0, I_d), n context points, the loss at the query), converges to
Γ* = η* I with η* = n / (n + d + 1) (their Thm 1; ``icl_sim.theory.formulas.one_layer_optimum.optimal_step``).

Claim ``optimal-step``: per training seed, ‖Γ − η* I‖_F / ‖η* I‖_F ≤ 0.1 (a margin fixed before running).  The
wrong mechanism, the plain average of y_j x_j (Γ = I, the estimator's step 1), is (d + 1)/n = 0.6 away at d = 5,
n = 10, and the untrained model (Γ ≈ 0.1 I) 0.84.  Measured at quick (2000 Adam steps) on two seed blocks never
run before: seeds 1000-1002 0.0173, 0.0129, 0.0144 and 1100-1102 0.0223, 0.0149, 0.0176 (held); the untrained
control 0.83-0.86 on each seed (failed).

It is the pattern of a reproduction in a few dozen lines: settings per scale, the runs, the measure, the checks
and the figure, declared in ``pyproject.toml`` under the entry-point group ``icl_sim.reproductions``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from icl_sim.checks import claim_check
from icl_sim.config import TrainConfig
from icl_sim.paper_repro.measures import seed_values
from icl_sim.paper_repro.spec import Claim, Paper, Reproduction
from icl_sim.plots import Curve, Panel, Target
from icl_sim.theory.formulas.one_layer_optimum import optimal_step

THEOREM_1 = "Mahankali, Hashimoto & Ma 2023, Thm 1 (one step of GD, η* = n/(n + d + 1))"
#: the largest relative distance of a trained Γ from η* I that counts as converged there, fixed before running
MARGIN = 0.1


@dataclass(frozen=True)
class Settings:
    dim: int
    context: int
    steps: int
    batch_size: int = 256
    lr: float = 1e-2


SCALES = {"smoke": Settings(dim=3, context=6, steps=5), "quick": Settings(dim=5, context=10, steps=2000),
          "full": Settings(dim=5, context=10, steps=20_000)}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    return {"one-step": TrainConfig(
        task="linear-regression", task_params={"dim": settings.dim, "points": settings.context + 1},
        model="preconditioned-steps", model_params={"steps": 1}, loss_on="last", steps=settings.steps,
        batch_size=settings.batch_size, lr=settings.lr, lr_schedule="cosine", log_every=max(settings.steps // 20, 1))}


def measure(measurement) -> dict:
    settings: Settings = measurement.settings
    target = optimal_step(settings.dim, settings.context) * torch.eye(settings.dim, dtype=torch.float64)
    rows = []
    for seed, model in enumerate(measurement.models["one-step"]):
        gamma = model.preconditioners.detach()[0].double().cpu()
        rows.append({"seed": seed, "quantity": "distance", "diagonal": gamma.diagonal().mean().item(),
                     "value": (torch.linalg.norm(gamma - target) / torch.linalg.norm(target)).item()})
    return {"rows": rows}


def checks(results: dict, settings: Settings):
    return [claim_check("optimal-step", "‖Γ − η* I‖_F / ‖η* I‖_F of the trained step", MARGIN,
                        seed_values(results["rows"], "distance"), relation="at_most",
                        source=f"{THEOREM_1}; the margin {MARGIN:g} fixed before running")]


def figure(results: dict, settings: Settings) -> list[Panel]:
    rows = results["rows"]
    step = optimal_step(settings.dim, settings.context)
    return [Panel("training seed", "mean diagonal of the trained Γ",
                  [Curve("trained step", [row["seed"] for row in rows], [row["diagonal"] for row in rows],
                         continuous=False, joined=False)],
                  targets=[Target(f"η* = n/(n + d + 1) = {step:.3f}", step, step * (1 - MARGIN), step * (1 + MARGIN))],
                  title=f"d = {settings.dim}, n = {settings.context}")]


REPRODUCTION = Reproduction(
    name="one-step-optimum",
    paper=Paper("A. Mahankali, T. B. Hashimoto, T. Ma", "One step of gradient descent is provably the optimal "
                "in-context learner with one layer of linear self-attention", "ICLR 2024", "2307.03576"),
    summary="One trained preconditioned GD step converges to the optimal step η* = n/(n + d + 1) (an example plugin).",
    caption="The trained step's preconditioner against Thm 1's η* I, per seed",
    claims=(Claim("optimal-step", "Trained on isotropic linear regression, one preconditioned GD step converges to "
                  "η* I, η* = n/(n + d + 1)", THEOREM_1),),
    scales=SCALES, runs=runs, measure=measure, checks=checks, figure=figure,
    quick_minutes=0.3,
)
