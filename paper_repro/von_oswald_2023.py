"""von Oswald et al. (ICML 2023), "Transformers learn in-context by gradient descent".

Claim reproduced (their Fig. 2): a single linear self-attention layer trained on
linear regression, d = 10 with N = 10 context points, x ~ U(-0.5, 0.5)^d (their
code's ``input_range = 1``) and w ~ N(0, I), implements one step of gradient
descent with the best step size η*.  Measured on held-out prompts: both losses
(½·MSE, their convention), the prediction difference (mean |ŷ_LSA − ŷ_GD|, and the
relative L2 distance), the cosine of the input sensitivities ∂ŷ/∂x_query, and the trained
weights against the GD construction (Prop. 1), through the effective map P·(·)·Q that is
invariant to the rescaling P → cP, Q → Q/c.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.evaluation import eval_prompts
from icl_sim.models import InContextModel
from icl_sim.paper_repro.runs import train_or_reuse
from icl_sim.plots import line_panels
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory import GD, gd_lsa_weights
from icl_sim.weight_comparison import compare_to_construction

NAME = "von-oswald-2023"
TITLE = "von Oswald et al. 2023: one trained linear self-attention layer = one step of GD"
SOURCE = "von Oswald et al., ICML 2023, Fig. 2 / Sec. 3"
TASK = LinearRegression(dim=10, points=11, x_distribution="uniform", x_bound=0.5, prior_scale=1.0)


@dataclass(frozen=True)
class Settings:
    """Training and measurement sizes of one scale."""
    steps: int
    batch_size: int
    lr: float
    lr_schedule: str
    init_scale: float
    log_every: int
    test_prompts: int
    probe_prompts: int


#: the authors' Adam (src/config.py: b1 0.9, b2 0.98, eps 1e-9), at both scales
ADAM_BETAS, ADAM_EPS = (0.9, 0.98), 1e-9

SCALES = {
    # CPU minutes: a larger step and cosine decay reach the optimum in fewer steps.
    "quick": Settings(steps=1000, batch_size=1024, lr=1e-2, lr_schedule="cosine", init_scale=0.002, log_every=50,
                      test_prompts=10_000, probe_prompts=1024),
    # The authors' src/config.py: Adam lr 1e-3, batch 512, 10k steps, init scale 0.002.
    "full": Settings(steps=10_000, batch_size=512, lr=1e-3, lr_schedule="constant", init_scale=0.002, log_every=100,
                     test_prompts=10_000, probe_prompts=2048),
}


def best_gd_step_size(task: LinearRegression, num_prompts: int, seed: int, device) -> float:
    """η* minimising the one-step-GD risk at the query: the exact minimiser of the empirical quadratic.

    One GD step predicts η·s with s = (1/n) Σ_j y_j x_jᵀ x_q, so the risk E(ηs − y)²
    is minimised by η* = E[s y] / E[s²]; the authors tune η by training, the same optimum.
    """
    unit_step = GD(steps=1, lr=1.0)
    numerator = denominator = 0.0
    for prompt in eval_prompts(task, num_prompts=num_prompts, seed=seed, device=device):
        s = unit_step.predict(prompt.xs, prompt.ys)[:, -1]
        numerator += float((s * prompt.ys[:, -1]).sum())
        denominator += float((s * s).sum())
    return numerator / denominator


def query_predictions_and_sensitivities(predictor, prompt: Prompt) -> tuple[torch.Tensor, torch.Tensor]:
    """The prediction at the final query and its gradient with respect to that query, per prompt."""
    query = prompt.xs[:, -1].detach().clone().requires_grad_(True)
    xs = torch.cat([prompt.xs[:, :-1], query.unsqueeze(1)], dim=1)
    with torch.enable_grad():
        forward = predictor if isinstance(predictor, InContextModel) else predictor.predict
        preds = forward(xs, prompt.ys)[:, -1]
        (gradient,) = torch.autograd.grad(preds.sum(), query)
    return preds.detach(), gradient


def alignment(model: InContextModel, gd: GD, prompt: Prompt) -> dict[str, float]:
    """Loss of model and GD, their prediction differences, and the sensitivity cosine."""
    model_64 = _float64_copy(model)
    y = prompt.ys[:, -1]
    model_pred, model_grad = query_predictions_and_sensitivities(model_64, prompt)
    gd_pred = gd.predict(prompt.xs, prompt.ys)[:, -1]
    gd_grad = _one_step_gd_sensitivity(gd, prompt)
    cosine = torch.nn.functional.cosine_similarity(model_grad, gd_grad, dim=-1)
    return {
        "loss_model": 0.5 * float((model_pred - y).square().mean()),
        "loss_gd": 0.5 * float((gd_pred - y).square().mean()),
        "mean_absolute_prediction_difference": float((model_pred - gd_pred).abs().mean()),
        "relative_prediction_distance": float((model_pred - gd_pred).norm() / gd_pred.norm()),
        "sensitivity_cosine": float(cosine.mean()),
    }


def _one_step_gd_sensitivity(gd: GD, prompt: Prompt) -> torch.Tensor:
    """∂ŷ/∂x_q of one GD step from 0: η·(1/n) Σ_j y_j x_j, exact."""
    context_xs, context_ys = prompt.xs[:, :-1], prompt.ys[:, :-1]
    return gd.lr * (context_ys.unsqueeze(-1) * context_xs).mean(dim=1)


def _float64_copy(model: InContextModel) -> InContextModel:
    return copy.deepcopy(model).double().eval()


def run(scale: str, out_dir: Path, *, device, progress: bool) -> tuple[list[Check], list[dict]]:
    """Train (or reuse) the LSA run, measure its alignment with GD, draw the figure."""
    settings = SCALES[scale]
    eta = best_gd_step_size(TASK, 50_000, seed=1, device=device)
    gd = GD(steps=1, lr=eta)
    probe = next(eval_prompts(TASK, num_prompts=settings.probe_prompts, batch_size=settings.probe_prompts, seed=2,
                              device=device))
    config = TrainConfig(task=TASK.name, task_params=_task_params(), model="lsa",
                         model_params={"layers": 1, "init_scale": settings.init_scale}, steps=settings.steps,
                         batch_size=settings.batch_size, lr=settings.lr, betas=ADAM_BETAS, adam_eps=ADAM_EPS,
                         lr_schedule=settings.lr_schedule, loss_on="last",
                         seed=0, device=str(device), log_every=settings.log_every,
                         checkpoint_every=settings.steps // 5)
    model, history = train_or_reuse(config, out_dir / "run", progress=progress,
                                    log_extra=lambda m: alignment(m, gd, probe))
    test = next(eval_prompts(TASK, num_prompts=settings.test_prompts, batch_size=settings.test_prompts, seed=3,
                             device=device))
    (weights,) = compare_to_construction(model, gd_lsa_weights(TASK.dim, 1, eta), maps=("full",))
    final = {"gd_step_size": eta, **alignment(model, gd, test), "weight_cosine": weights["cosine"],
             "weight_scale": weights["scale"]}
    _plot(history, final, out_dir / "figure.png")
    checks = [
        Check("relative loss gap |L_LSA − L_GD| / L_GD", 0.05,
              abs(final["loss_model"] - final["loss_gd"]) / final["loss_gd"], relation="at_most", source=SOURCE),
        Check("relative L2 distance of predictions", 0.1, final["relative_prediction_distance"], relation="at_most",
              source=SOURCE),
        Check("cosine of sensitivities dŷ/dx_query", 0.99, final["sensitivity_cosine"], relation="at_least",
              source=SOURCE),
        Check("cosine of the trained weights with the GD construction at η*", 0.98, final["weight_cosine"],
              relation="at_least", source="von Oswald et al., ICML 2023, Prop. 1 and Fig. 2"),
    ]
    rows = [{"quantity": key, "value": value} for key, value in final.items()]
    return checks, rows


def _task_params() -> dict:
    return {f.name: getattr(TASK, f.name) for f in dataclasses.fields(TASK)}


def _plot(history: list[dict], final: dict, path: Path) -> None:
    """Fig. 2 of the paper: loss, prediction difference and sensitivity cosine over training."""
    steps = [record["step"] for record in history]
    line_panels(
        path,
        steps,
        panels=[
            ("loss (½·MSE)", {"trained LSA": [r["loss_model"] for r in history]},
             {"GD, best η": history[-1]["loss_gd"]}),
            ("prediction difference",
             {"|ŷ_LSA − ŷ_GD|": [r["mean_absolute_prediction_difference"] for r in history]}, {}),
            ("sensitivity cosine", {"cos(∂ŷ_LSA, ∂ŷ_GD)": [r["sensitivity_cosine"] for r in history]}, {}),
        ],
        xlabel="training step",
        title=f"{TITLE} (η* = {final['gd_step_size']:.3f})",
    )


