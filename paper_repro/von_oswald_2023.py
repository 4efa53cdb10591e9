"""von Oswald et al. (ICML 2023), "Transformers learn in-context by gradient descent", Fig. 2 / Sec. 3.

Setting: one linear self-attention layer trained on linear regression, d = 10 with N = 10
context points, x ~ U(-0.5, 0.5)^d (their code's ``input_range = 1``) and w ~ N(0, I), with the
authors' Adam (β = (0.9, 0.98), ε = 1e-9) and initial weight scale 0.002.

Claim: the trained layer implements one step of gradient descent with the best step size η*.
Measured on held-out prompts: both losses (½·MSE, their convention), the prediction difference
(mean |ŷ_LSA − ŷ_GD|, and the relative L2 distance), the cosine of the input sensitivities
∂ŷ/∂x_query, and the trained weights against the GD construction (Prop. 1) through the
effective map P·(·)·Q, which is invariant to the rescaling P → cP, Q → Q/c.  Out of
distribution (Fig. 2, right), the inputs of the test prompts are scaled by α (x ~ U(−α/2, α/2)):
the trained layer and GD at the same η* must keep agreeing, both losses growing together.

GD++ (Sec. 4, Fig. 13 / App. A.10): a recurrent two-layer LSA (one layer's weights applied twice,
their code's ``deq``) trained with N ∈ {10, 25, 50, 100} context points learns GD++, whose layers
also transform the inputs, x ← (I − γĜ)x.  The trained γ is read off the weights (the best scalar fit
of the layer's effective map by the GD++ construction with γ = 1 and η = 0, which touches only the
feature update) and compared with the risk-optimal γ: GD++ with one (η, γ) for both steps, tuned on
held-out prompts (``tune_steps(..., shared=True)``; the authors train GD++'s parameters, the same
optimum).  Both normalise Ĝ by the number of context points, so γ is per point; the paper's
un-normalised XXᵀ has γ/N.  GD++ must beat two steps of GD with the best shared step.

Softmax ablation (Sec. 3): one softmax self-attention layer with one head cannot match one GD step;
with two heads it nearly does (two heads can cancel softmax's normalisation to first order).  The
margin is one number, 10 % of GD's loss: two heads within it, one head outside it.

Scales: ``full`` is the authors' src/config.py (Adam lr 1e-3, batch 512, 10k steps); ``quick``
reaches the same optima on a CPU in 1000 steps (2000 for the recurrent and softmax runs) with a
larger lr and cosine decay (the optimiser's schedule, not the problem, is shrunk); ``smoke`` runs
10 steps to test the pipeline.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass

import torch

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.evaluation import eval_prompts
from icl_sim.models import InContextModel
from icl_sim.plots import Curve, Panel, Target
from icl_sim.probe_metrics import last_predictions
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory import GD, GDPlusPlus, gd_lsa_weights, gd_plus_plus_lsa_weights
from icl_sim.theory.step_tuning import tune_steps
from icl_sim.weight_comparison import compare_to_construction

from .runner import held_out_prompts
from .spec import Paper, Reproduction

PAPER = Paper("J. von Oswald, E. Niklasson, E. Randazzo, J. Sacramento, A. Mordvintsev, A. Zhmoginov, "
              "M. Vladymyrov", "Transformers learn in-context by gradient descent", "ICML 2023", "2212.07677")
FIGURE_2 = "von Oswald et al. 2023, Fig. 2 / Sec. 3"
TASK = LinearRegression(dim=10, points=11, x_distribution="uniform", x_bound=0.5, prior_scale=1.0)
#: the authors' Adam (src/config.py: b1 0.9, b2 0.98, eps 1e-9), at every scale
ADAM_BETAS, ADAM_EPS = (0.9, 0.98), 1e-9
#: prompts of the empirical η* (a property of the task, the same at every scale)
STEP_SIZE_PROMPTS = 50_000
#: input scales α of the out-of-distribution test (α = 1 is the training distribution)
INPUT_SCALES = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
#: context sizes N of the recurrent two-layer (GD++) runs, Fig. 13
GD_PLUS_PLUS_POINTS = (10, 25, 50, 100)
#: softmax ablation: attention heads, and the one margin on the relative loss gap to one GD step
SOFTMAX_HEADS, SOFTMAX_MARGIN = (1, 2), 0.1
GD_PLUS_PLUS = "von Oswald et al. 2023, Sec. 4 and Fig. 13 (App. A.10)"
SOFTMAX = "von Oswald et al. 2023, Sec. 3: softmax attention ablation"


@dataclass(frozen=True)
class Settings:
    """Training and measurement sizes of one scale."""

    steps: int
    batch_size: int
    lr: float
    lr_schedule: str
    log_every: int
    test_prompts: int
    probe_prompts: int
    ablation_steps: int  # the recurrent (GD++) and softmax runs
    ablation_lr: float
    tuning_prompts: int  # prompts GD++'s and GD's shared steps are tuned on
    init_scale: float = 0.002


SCALES = {
    "smoke": Settings(steps=10, batch_size=32, lr=1e-2, lr_schedule="constant", log_every=5, test_prompts=256,
                      probe_prompts=64, ablation_steps=10, ablation_lr=1e-2, tuning_prompts=256),
    "quick": Settings(steps=1000, batch_size=1024, lr=1e-2, lr_schedule="cosine", log_every=50,
                      test_prompts=10_000, probe_prompts=1024, ablation_steps=2000, ablation_lr=5e-2,
                      tuning_prompts=20_000),
    "full": Settings(steps=10_000, batch_size=512, lr=1e-3, lr_schedule="constant", log_every=100,
                     test_prompts=10_000, probe_prompts=2048, ablation_steps=10_000, ablation_lr=1e-3,
                     tuning_prompts=20_000),
}


def gd_plus_plus_task(points: int) -> LinearRegression:
    """Fig. 2's task with ``points`` context points (and the query)."""
    return dataclasses.replace(TASK, points=points + 1)


def runs(settings: Settings) -> dict[str, TrainConfig]:
    def run(task, model, model_params, steps, lr) -> TrainConfig:
        return TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model=model,
                           model_params={**model_params, "init_scale": settings.init_scale}, steps=steps,
                           batch_size=settings.batch_size, lr=lr, betas=ADAM_BETAS, adam_eps=ADAM_EPS,
                           lr_schedule=settings.lr_schedule, loss_on="last", log_every=settings.log_every,
                           checkpoint_every=max(steps // 5, 1))

    ablation = settings.ablation_steps, settings.ablation_lr
    return {"lsa": run(TASK, "lsa", {"layers": 1}, settings.steps, settings.lr),
            **{f"recurrent-lsa-n{points}": run(gd_plus_plus_task(points), "lsa", {"layers": 2, "recurrent": True},
                                               *ablation) for points in GD_PLUS_PLUS_POINTS},
            **{f"softmax-{heads}-heads": run(TASK, "softmax-attention", {"layers": 1, "heads": heads}, *ablation)
               for heads in SOFTMAX_HEADS}}


@functools.lru_cache(maxsize=None)
def best_gd_step_size(device: str = "cpu") -> float:
    """η* minimising the one-step-GD risk at the query: the exact minimiser of the empirical quadratic.

    One GD step predicts η·s with s = (1/n) Σ_j y_j x_jᵀ x_q, so the risk E(ηs − y)² is minimised
    by η* = E[s y] / E[s²] (``STEP_SIZE_PROMPTS`` prompts); the authors tune η by training, the
    same optimum.
    """
    unit_step = GD(steps=1, lr=1.0)
    numerator = denominator = 0.0
    for prompt in eval_prompts(TASK, num_prompts=STEP_SIZE_PROMPTS, seed=1, device=device):
        s = unit_step.predict(prompt.xs, prompt.ys)[:, -1]
        numerator += float((s * prompt.ys[:, -1]).sum())
        denominator += float((s * s).sum())
    return numerator / denominator


def monitor(settings: Settings, device):
    """Fig. 2's curves over training: the model's alignment with GD at η* on the probe prompts."""
    gd = GD(steps=1, lr=best_gd_step_size(str(device)))
    probe = held_out_prompts(TASK, "probe", settings.probe_prompts, device)
    return lambda model: alignment(model, gd, probe)


def alignment(model: InContextModel, gd: GD, prompt: Prompt) -> dict[str, float]:
    """Loss of model and GD, their prediction differences, and the sensitivity cosine."""
    model_64 = copy.deepcopy(model).double().eval()
    y = prompt.ys[:, -1]
    model_pred, model_grad = query_predictions_and_sensitivities(model_64, prompt)
    gd_pred = gd.predict(prompt.xs, prompt.ys)[:, -1]
    gd_grad = gd.lr * (prompt.ys[:, :-1, None] * prompt.xs[:, :-1]).mean(dim=1)  # ∂ŷ/∂x_q of one GD step from 0
    cosine = torch.nn.functional.cosine_similarity(model_grad, gd_grad, dim=-1)
    return {
        "loss_model": 0.5 * float((model_pred - y).square().mean()),
        "loss_gd": 0.5 * float((gd_pred - y).square().mean()),
        "mean_absolute_prediction_difference": float((model_pred - gd_pred).abs().mean()),
        "relative_prediction_distance": float((model_pred - gd_pred).norm() / gd_pred.norm()),
        "sensitivity_cosine": float(cosine.mean()),
    }


def query_predictions_and_sensitivities(model: InContextModel, prompt: Prompt) -> tuple[torch.Tensor, torch.Tensor]:
    """The prediction at the final query and its gradient with respect to that query, per prompt."""
    query = prompt.xs[:, -1].detach().clone().requires_grad_(True)
    xs = torch.cat([prompt.xs[:, :-1], query.unsqueeze(1)], dim=1)
    with torch.enable_grad():
        preds = model(xs, prompt.ys)[:, -1]
        (gradient,) = torch.autograd.grad(preds.sum(), query)
    return preds.detach(), gradient


def measure(measurement) -> dict:
    eta = best_gd_step_size(str(measurement.device))
    gd = GD(steps=1, lr=eta)
    count = measurement.settings.test_prompts
    test = measurement.prompts(TASK, "test", count)
    scaled = {alpha: measurement.prompts(dataclasses.replace(TASK, x_bound=TASK.x_bound * alpha), "test", count,
                                         index=index + 1) for index, alpha in enumerate(INPUT_SCALES)}
    rows = []
    for seed, model in enumerate(measurement.models["lsa"]):
        (weights,) = compare_to_construction(model, gd_lsa_weights(TASK.dim, 1, eta), maps=("full",))
        final = {"gd_step_size": eta, **alignment(model, gd, test), "weight_cosine": weights["cosine"],
                 "weight_scale": weights["scale"]}
        rows += [{"seed": seed, "alpha": 1.0, "quantity": key, "value": value} for key, value in final.items()]
        for alpha, prompt in scaled.items():
            rows += [{"seed": seed, "alpha": alpha, "quantity": f"ood_{key}", "value": value}
                     for key, value in alignment(model, gd, prompt).items()]
    rows += gd_plus_plus_rows(measurement) + softmax_rows(measurement, gd, test)
    histories = {name: measurement.histories[name] for name in ("lsa", *softmax_runs().values())}
    return {"rows": rows, "histories": histories}


def softmax_runs() -> dict[int, str]:
    return {heads: f"softmax-{heads}-heads" for heads in SOFTMAX_HEADS}


def squared_error(predictor, prompt: Prompt) -> float:
    """½ · mean squared error at the final query (the paper's loss), from the context's statistics alone."""
    prediction = last_predictions(predictor.query_predictor, prompt)[-1]
    return 0.5 * float((prediction - prompt.ys[:, -1]).square().mean())


def gd_plus_plus_rows(measurement) -> list[dict]:
    """Per N: the risk-optimal shared (η, γ) of two GD++ steps, the trained recurrent LSA's (η, γ) read off its
    weights, and the losses of both and of two GD steps with the best shared step."""
    rows = []
    for points in GD_PLUS_PLUS_POINTS:
        task = gd_plus_plus_task(points)
        tuning = measurement.prompts(task, "tuning", measurement.settings.tuning_prompts)
        test = measurement.prompts(task, "test", measurement.settings.test_prompts)
        best = {family: tune_steps(family, tuning.xs, tuning.ys, 2, shared=True)[0]
                for family in ("gd", "gd-plus-plus")}
        eta, gamma = (float(best["gd-plus-plus"].parameters[name][0]) for name in ("step_sizes", "corrections"))
        optimal = {"gamma_optimal": gamma, "eta_optimal": eta,
                   "loss_gd_plus_plus": squared_error(GDPlusPlus(2, eta, gamma), test),
                   "loss_gd_two_steps": squared_error(best["gd"].run()[-1], test)}
        for seed, model in enumerate(measurement.models[f"recurrent-lsa-n{points}"]):
            model_64 = copy.deepcopy(model).double().eval()
            fitted = {name: compare_to_construction(model_64, gd_plus_plus_lsa_weights(TASK.dim, 2, lr, correction),
                                                    maps=("full",))[0]
                      for name, lr, correction in (("gamma", 0.0, 1.0), ("eta", 1.0, 0.0), ("cosine", eta, gamma))}
            trained = {"gamma_trained": fitted["gamma"]["scale"], "eta_trained": fitted["eta"]["scale"],
                       "gd_plus_plus_weight_cosine": fitted["cosine"]["cosine"],
                       "loss_recurrent_lsa": squared_error(model_64, test)}
            rows += [{"seed": seed, "alpha": 1.0, "points": points, "quantity": key, "value": value}
                     for key, value in {**optimal, **trained}.items()]
    return rows


def softmax_rows(measurement, gd: GD, test: Prompt) -> list[dict]:
    """The relative loss gap to one GD step at η* of the trained softmax layers, per number of heads."""
    loss_gd = squared_error(gd, test)
    return [{"seed": seed, "alpha": 1.0, "heads": heads, "quantity": "softmax_loss_gap",
             "value": squared_error(copy.deepcopy(model).double().eval(), test) / loss_gd - 1}
            for heads, name in softmax_runs().items() for seed, model in enumerate(measurement.models[name])]


def _mean(results: dict, quantity: str, alpha: float = 1.0, **where) -> float:
    """The mean over seeds of ``quantity`` (at input scale ``alpha``, and where the rows' ``where`` fields match)."""
    values = [row["value"] for row in results["rows"] if row["quantity"] == quantity and row["alpha"] == alpha
              and all(row.get(key) == value for key, value in where.items())]
    return sum(values) / len(values)


def _ood_gap(results: dict, alpha: float) -> float:
    return abs(_mean(results, "ood_loss_model", alpha) / _mean(results, "ood_loss_gd", alpha) - 1)


def checks(results: dict, settings: Settings) -> list[Check]:
    gap = abs(_mean(results, "loss_model") - _mean(results, "loss_gd")) / _mean(results, "loss_gd")
    return [
        Check("relative loss gap |L_LSA − L_GD| / L_GD", 0.05, gap, relation="at_most", source=FIGURE_2),
        Check("relative L2 distance of predictions", 0.1, _mean(results, "relative_prediction_distance"),
              relation="at_most", source=FIGURE_2),
        Check("cosine of sensitivities dŷ/dx_query", 0.99, _mean(results, "sensitivity_cosine"), relation="at_least",
              source=FIGURE_2),
        Check("cosine of the trained weights with the GD construction at η*", 0.98, _mean(results, "weight_cosine"),
              relation="at_least", source="von Oswald et al. 2023, Prop. 1 and Fig. 2"),
        Check(f"out of distribution, largest relative loss gap over α ∈ {list(INPUT_SCALES)}", 0.05,
              max(_ood_gap(results, alpha) for alpha in INPUT_SCALES), relation="at_most",
              source="von Oswald et al. 2023, Fig. 2 (right): the curves overlay for every α"),
        Check("out of distribution, largest relative L2 distance of predictions over α", 0.1,
              max(_mean(results, "ood_relative_prediction_distance", alpha) for alpha in INPUT_SCALES),
              relation="at_most", source="von Oswald et al. 2023, Fig. 2 (right)"),
        *(check for points in GD_PLUS_PLUS_POINTS for check in gd_plus_plus_checks(results, points)),
        Check("softmax, 2 heads: relative loss gap to one GD step", SOFTMAX_MARGIN,
              _mean(results, "softmax_loss_gap", heads=2), relation="at_most",
              source=SOFTMAX + " (2 heads nearly match)"),
        Check("softmax, 1 head: relative loss gap to one GD step", SOFTMAX_MARGIN,
              _mean(results, "softmax_loss_gap", heads=1), relation="at_least", source=SOFTMAX + " (1 head cannot)"),
    ]


def gd_plus_plus_checks(results: dict, points: int) -> list[Check]:
    """Trained γ within 5 % of the risk-optimal γ, and GD++ (trained) below two GD steps, at N = ``points``."""
    optimal = _mean(results, "gamma_optimal", points=points)
    return [
        Check(f"recurrent 2-layer LSA, N = {points}: trained γ", optimal,
              _mean(results, "gamma_trained", points=points),
              tolerance=0.05 * optimal, source=GD_PLUS_PLUS + "; the risk-optimal shared GD++ γ, ±5 %"),
        Check(f"recurrent 2-layer LSA, N = {points}: loss, below two GD steps' (best shared η)",
              _mean(results, "loss_gd_two_steps", points=points), _mean(results, "loss_recurrent_lsa", points=points),
              relation="at_most", source=GD_PLUS_PLUS + ": GD++ beats GD at equal depth"),
    ]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 2: loss, prediction difference and sensitivity cosine over training (one curve per seed), out of
    distribution; Fig. 13: the recurrent LSA's γ against N; the softmax ablation's losses over training."""
    def curves(key: str, label: str, run: str = "lsa") -> list[Curve]:
        histories = results["histories"][run]
        return [Curve(label if len(histories) == 1 else f"{label}, seed {seed}", [r["step"] for r in history],
                      [r[key] for r in history]) for seed, history in enumerate(histories)]

    eta = _mean(results, "gd_step_size")

    def gd_loss(run: str) -> Curve:
        """One GD step's loss at η* on the probe prompts, across ``run``'s training steps."""
        first, last = results["histories"][run][0][0], results["histories"][run][0][-1]
        return Curve(f"GD, η* = {eta:.2f}", [first["step"], last["step"]], [last["loss_gd"]] * 2, baseline=True)

    points = list(GD_PLUS_PLUS_POINTS)
    optimal = [_mean(results, "gamma_optimal", points=n) for n in points]
    return [
        Panel("training step", "loss (½·MSE)", [*curves("loss_model", "trained LSA"), gd_loss("lsa")], yscale="log"),
        Panel("training step", "mean |ŷ_LSA − ŷ_GD|",
              curves("mean_absolute_prediction_difference", "prediction difference"), yscale="log"),
        Panel("training step", "cos(∂ŷ_LSA/∂x_q, ∂ŷ_GD/∂x_q)", curves("sensitivity_cosine", "sensitivity cosine"),
              targets=[Target("required ≥ 0.99", 0.99, 0.99, 1.0)]),
        Panel("input scale α at test (trained at α = 1)", "loss (½·MSE)", [
            Curve("trained LSA", list(INPUT_SCALES), [_mean(results, "ood_loss_model", a) for a in INPUT_SCALES]),
            Curve(f"GD, η* = {eta:.2f}", list(INPUT_SCALES), [_mean(results, "ood_loss_gd", a) for a in INPUT_SCALES],
                  baseline=True)], xscale="log", yscale="log"),
        Panel("context points N", "curvature correction γ (per point)", [
            Curve("recurrent 2-layer LSA, trained", points,
                  [_mean(results, "gamma_trained", points=n) for n in points]),
            Curve("GD++, risk-optimal (±5 %)", points, optimal, low=[0.95 * g for g in optimal],
                  high=[1.05 * g for g in optimal], baseline=True)], xscale="log"),
        Panel("training step", "loss (½·MSE)", [
            *(curve for heads, run in softmax_runs().items()
              for curve in curves("loss_model", f"softmax, {heads} head{'s' * (heads > 1)}", run)),
            gd_loss(softmax_runs()[1])],
            yscale="log"),
    ]


REPRODUCTION = Reproduction(
    name="von-oswald-2023",
    paper=PAPER,
    claim="A single trained linear self-attention layer implements one step of gradient descent with the "
          "risk-optimal step size.",
    caption="Fig. 2 of the paper: one LSA layer trained on d = 10, N = 10, x ~ U(−0.5, 0.5) against one GD step, "
            "over training and out of distribution; Fig. 13: a recurrent two-layer LSA's γ against GD++'s risk-optimal "
            "γ for N = 10 … 100; the softmax ablation (1 and 2 heads) against one GD step",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=4.7,
    monitor=monitor,
)
