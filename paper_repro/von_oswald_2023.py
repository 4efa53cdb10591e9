"""von Oswald et al. (ICML 2023), "Transformers learn in-context by gradient descent", Fig. 2 / Sec. 3.

Setting: one linear self-attention layer trained on noiseless linear regression, d = 10 with N = 10
context points and w ~ N(0, I), with the authors' Adam (β = (0.9, 0.98), optax's ε = 1e-8), initial weight
scale 0.002 and gradients clipped to a global norm of 1e-3.  Their attention sums over the context where
icl-sim's LSA averages, and their loss is ½·MSE where icl-sim's is the MSE: their training is run in icl-sim's
terms by ``summed_attention_training`` (learning rate and initial scale ×√N, the clip and ε ×2/√N; exact, step
for step, tests/test_repro_von_oswald_2023.py).  One difference stays: the authors' layer has separate query,
key, value and output matrices (src/attn.py), icl-sim's the merged P = W_PV and Q = W_KQ of the paper's Sec. 2.

Inputs: x ~ U(−0.5, 0.5)^d, the authors' code, not the text.  Sec. 3 of the paper says x ~ U(−1, 1)^d;
the code draws U(−r/2, r/2) with r = ``input_range`` (src/data.py, ``create_reg_data``, whose docstring
also says U(−1, 1)), and the Fig. 2 notebook sets r = 1.  We follow the code, which made the figure,
and the paper's own numbers agree with it: the "GD loss of 0.2" (App. A.11) is one GD step's risk
½·dσ²(1 − η*σ²) = 0.206 for U(−0.5, 0.5) (0.825 for U(−1, 1)), and App. A.10's extreme eigenvalues of
XXᵀ are those of U(−0.5, 0.5) (tests/test_repro_von_oswald_2023.py).  η* depends on the choice: one GD
step's risk-optimal step size is η* = nσ²/(μ₄ + (d + n − 2)σ⁴), σ² and μ₄ the second and fourth
moments of an input coordinate (``one_step_optimal_step``): 6.06 for U(−0.5, 0.5), 1.52 for U(−1, 1).
The out-of-distribution scale α (the paper's U(−α, α)) scales the code's range alike: U(−α/2, α/2).

Claims (``CLAIMS``) and their thresholds.  The paper states no number: Fig. 2 shows the losses of the
trained layer, of GD at η* and of their interpolation overlaying, the L2 distances of the predictions
and of the sensitivities ∂ŷ/∂x_query falling towards 0 and the sensitivities' cosine towards 1.  The
bounds are this reproduction's reading of "identical loss" and "almost perfect alignment", set when it
was written, never from a run, and the same wherever they recur: a loss within 5 % of GD's, an L2
distance at most 0.1 of GD's own size, a cosine ≥ 0.99 (sensitivities) or ≥ 0.98 (weights).

* ``one-gd-step``: |L_LSA − L_GD| / L_GD ≤ 0.05; the predictions' relative L2 distance ‖ŷ_LSA − ŷ_GD‖/‖ŷ_GD‖
  ≤ 0.1; the sensitivities' cosine ≥ 0.99 and their relative L2 distance (mean ‖∂ŷ_LSA − ∂ŷ_GD‖ over
  mean ‖∂ŷ_GD‖) ≤ 0.1.  The paper's own measures, mean |ŷ_LSA − ŷ_GD| and mean ‖∂ŷ_LSA − ∂ŷ_GD‖ (Fig. 2,
  center left), are in the results and the figure.
* ``gd-weights``: the effective map P·(·)·Q against the construction of Prop. 1 at η* (invariant to the
  rescaling P → cP, Q → Q/c): cosine ≥ 0.98.

The contrast a converged model of another mechanism fails: a layer that fits the prompts otherwise (any other
linear map of the context moments: a preconditioned step, a ridge-like shrinkage, a step at another η) has other
predictions and sensitivities (distance > 0.1, cosine < 0.99) and another effective map (cosine < 0.98).

Sanity checks, consequences of ``gd-weights`` and not evidence of their own (a linear layer whose rescaled
weights are the construction predicts as GD on every input): the interpolated model of App. A.3, θ_I = (θ +
θ_GD)/2 after the trained Q is divided and P multiplied by β, the mean diagonal of Q's x block, has GD's loss
within 5 %; out of distribution (Fig. 2, outer right: inputs scaled by α ∈ {0.5, …, 2}) the trained layer's
and the interpolated model's losses stay within 5 % of GD's at the same η* for every α and seed, the
predictions within 0.1.  And η*, the minimiser of the empirical one-step risk on 50 000 prompts (the authors
line-search it on 10⁴), against the closed form.

The GD++ result of a recurrent two-layer LSA (App. A.10) and the softmax-attention ablation are the
reproduction ``von-oswald-2023-ablations`` (``von_oswald_2023_ablations``).  Fig. 2's center-right panel (the
three losses for several N = d) is not reproduced: it needs one more training run per N.

Scales: ``full`` is the authors' notebook that made Fig. 2 (google-research/self-organising-systems,
transformers_learn_icl_by_gd/constructed_token_setup.ipynb, its "Config" cell for one layer: batch 2048,
5000 steps, Adam lr 1e-3, ``grad_clip_value`` 1e-3 on the global norm, ``init_scale`` 0.002/num_layers;
β and ε from src/config.py; 10⁴ evaluation tasks, metrics every 100 steps), not src/config.py's defaults
(batch 512, 10 000 steps, no clipping).  ``quick`` shrinks the batch to 1024 and the steps to 1000 at lr
1e-2 with cosine decay (the optimiser's schedule, not the problem, is shrunk); ``smoke`` runs 10 steps.

Measured at quick scale, seeds 0–2 (100–102): loss gaps ≤ 2.1e-4 (8.7e-4), the predictions' and the
sensitivities' relative L2 distances 0.020–0.024 (0.021–0.022), sensitivity cosines 0.9998, weight cosines
≥ 0.9993, the interpolation's loss gap ≤ 2.0e-4 (3.1e-4); out of distribution the largest loss gaps 0.009–0.020
(0.005–0.016), the interpolation's 0.005–0.010 (0.003–0.008).  η* = 6.088 ± 0.029 against the closed form's
6.061.  Untrained, every claim fails (loss gap 1.02, cosines about 0, the interpolation's loss gap 42–614).

History.  Until 2026-12-04 the interpolation and out-of-distribution checks were claim evidence, the latter a
claim of its own (``out-of-distribution``, held on seeds 0–2 and 100–102 with the numbers above); a referee's
reading found that they follow from the weight check once the rescaled weights equal the construction, so they
are sanity checks now and the claims are two.  No setting changed.  Decided at quick on two seed blocks never
run before (2026-12-04): seeds 200–202 (300–302) hold both claims, every run converged (its smoothed loss fell
by at most 5 % over its last fifth): loss gaps ≤ 1.1e-3 (1.2e-3), the predictions' relative L2 distances
0.019–0.021 (0.022–0.023), the sensitivities' 0.019–0.020 (0.021–0.022), their cosines 0.9998, weight cosines
0.9996–0.9997 (0.9995); sanity: the interpolation's largest loss gap 6.5e-4 (4.4e-4), out of distribution the
largest loss gap 0.014 (0.009), the interpolation's 0.007 (0.005), the predictions' distance 0.021 (0.023).
The untrained control fails both claims by finite values on both blocks.

Later on 2026-12-04 the training became the authors' (``summed_attention_training``: their summed attention and
½·MSE, which changed the learning rate, initial scale, clip and ε in icl-sim's terms, and optax's ε 1e-8 for the
1e-9 read from a config field their optimiser never receives): a fidelity fix, no failure prompted it.  The
numbers above are the old training's.  The verdict was retaken at quick on two blocks never run before: seeds
400-402 (500-502) hold both claims: loss gaps ≤ 9.3e-4 (7.3e-4), the predictions' relative L2 distances
0.025-0.026 (0.022-0.024), the sensitivities' 0.024-0.026 (0.021-0.024), their cosines 0.9997, weight cosines
0.9987-0.9988 (0.9988-0.9991); the untrained control fails both claims by finite values on both blocks.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.evaluation import eval_prompts
from icl_sim.models import InContextModel
from icl_sim.models.lsa import LinearSelfAttention, LSAConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory import GD, gd_lsa_weights
from icl_sim.weight_comparison import compare_to_construction

from .measures import seed_values
from .runner import held_out_prompts
from .spec import Claim, Paper, Reproduction

PAPER = Paper("J. von Oswald, E. Niklasson, E. Randazzo, J. Sacramento, A. Mordvintsev, A. Zhmoginov, "
              "M. Vladymyrov", "Transformers learn in-context by gradient descent", "ICML 2023", "2212.07677")
FIGURE_2 = "von Oswald et al. 2023, Fig. 2 / Sec. 3"
INTERPOLATION = "von Oswald et al. 2023, Fig. 2 and App. A.3 (interpolated weights)"
OUT_OF_DISTRIBUTION = "von Oswald et al. 2023, Fig. 2 (outer right): the curves overlay for every α"
TASK = LinearRegression(dim=10, points=11, x_distribution="uniform", x_bound=0.5, prior_scale=1.0)
#: the authors' Adam, at every scale: src/train.py builds ``optax.adamw(lr, b1, b2, weight_decay=0)`` with
#: src/config.py's b1 0.9 and b2 0.98 and optax's default eps 1e-8 (config.adam_eps, 1e-9, is never passed)
ADAM_BETAS, ADAM_EPS = (0.9, 0.98), 1e-8
#: prompts of the empirical η* (a property of the task, the same at every scale)
STEP_SIZE_PROMPTS = 50_000
#: input scales α of the out-of-distribution test (α = 1 is the training distribution)
INPUT_SCALES = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
#: this reproduction's reading of "identical loss" and "almost perfect alignment" (see the module docstring)
LOSS_GAP, DISTANCE, SENSITIVITY_COSINE, WEIGHT_COSINE = 0.05, 0.1, 0.99, 0.98


CLAIMS = (
    Claim("one-gd-step", "A trained one-layer LSA predicts as one step of GD with the risk-optimal η*: equal loss, "
          "equal predictions, aligned input sensitivities", FIGURE_2),
    Claim("gd-weights", "Its trained weights are the GD construction of Prop. 1 at η*, up to the P → cP, Q → Q/c "
          "rescaling (so that, as Fig. 2 shows, interpolating them with the construction keeps GD's loss and out of "
          "distribution its loss grows with GD's)", "von Oswald et al. 2023, Prop. 1, Fig. 2 and App. A.3"),
)


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
    init_scale: float = 0.002
    grad_clip: float = 1e-3


SCALES = {
    "smoke": Settings(steps=10, batch_size=32, lr=1e-2, lr_schedule="constant", log_every=5, test_prompts=256,
                      probe_prompts=64),
    "quick": Settings(steps=1000, batch_size=1024, lr=1e-2, lr_schedule="cosine", log_every=50,
                      test_prompts=10_000, probe_prompts=1024),
    "full": Settings(steps=5000, batch_size=2048, lr=1e-3, lr_schedule="constant", log_every=100,
                     test_prompts=10_000, probe_prompts=2048),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    config = TrainConfig(task=TASK.name, task_params=dataclasses.asdict(TASK), model="lsa",
                         model_params={"layers": 1, "init_scale": settings.init_scale}, steps=settings.steps,
                         batch_size=settings.batch_size, lr=settings.lr, betas=ADAM_BETAS, adam_eps=ADAM_EPS,
                         lr_schedule=settings.lr_schedule, grad_clip=settings.grad_clip, loss_on="last",
                         log_every=settings.log_every, checkpoint_every=max(settings.steps // 5, 1))
    return {"lsa": summed_attention_training(config, TASK.points - 1)}


def summed_attention_training(config: TrainConfig, context_points: int) -> TrainConfig:
    """``config``, written for the authors' LSA, as the same training of icl-sim's.

    Their attention sums over the N context tokens (src/attn.py: the logits are the weights) where ours averages,
    and their loss is half the mean squared error (src/train.py, ``compute_loss``) where ours is all of it.  Their
    layer adds P_a (Σ_j z_j z_jᵀ) Q_a z, ours P ((1/N) Σ_j z_j z_jᵀ) Q z: the same function at P = √N P_a,
    Q = √N Q_a, where our gradients are 2/√N times theirs.  Adam's step does not see a gradient's scale, so from √N
    times their initial weights, at √N times their learning rate, with the global norm clipped and ε (added to √v)
    both 2/√N times theirs, (P, Q)/√N moves as their weights do, step for step.  Without this, Adam at their
    learning rate moves our weights as fast as theirs towards values √N times theirs.
    """
    root = math.sqrt(context_points)
    gradient_ratio = 2 / root
    return dataclasses.replace(
        config, model_params={**config.model_params, "init_scale": config.model_params["init_scale"] * root},
        lr=config.lr * root, grad_clip=config.grad_clip * gradient_ratio, adam_eps=config.adam_eps * gradient_ratio)


def one_step_optimal_step(dim: int, context_points: int, bound: float) -> float:
    """η* = nσ²/(μ₄ + (d + n − 2)σ⁴): the risk-optimal step of one GD step from 0, x ~ U(−b, b)^d, w ~ N(0, I).

    One step predicts ŷ = η·s, s = x_qᵀ Ĝ w (Ĝ the inputs' (1/n)-moment), so the risk E(ηs − y_q)² is
    minimised by η* = E[s y_q]/E[s²] with E[s y_q] = dσ⁴ and E[s²] = σ² E tr Ĝ² = (d/n) σ² (μ₄ + (d + n − 2)σ⁴);
    for U(−b, b), σ² = b²/3 and μ₄ = b⁴/5.
    """
    variance, fourth = bound**2 / 3, bound**4 / 5
    return context_points * variance / (fourth + (dim + context_points - 2) * variance**2)


@functools.lru_cache(maxsize=None)
def step_size_estimate(device: str = "cpu") -> tuple[float, float]:
    """η* minimising the empirical one-step risk on ``STEP_SIZE_PROMPTS`` prompts, and its standard error.

    The risk of ŷ = η·s is a quadratic in η, so its minimiser is η̂ = Σ s y / Σ s² exactly (the authors
    line-search it); the error is the ratio estimator's, from its influence (s y − η̂ s²)/mean(s²).
    """
    unit_step = GD(steps=1, lr=1.0)
    steps, targets = [], []
    for prompt in eval_prompts(TASK, num_prompts=STEP_SIZE_PROMPTS, seed=1, device=device):
        steps.append(unit_step.predict(prompt.xs, prompt.ys)[:, -1])
        targets.append(prompt.ys[:, -1])
    s, y = torch.cat(steps), torch.cat(targets)
    eta = float((s * y).sum() / (s * s).sum())
    influence = (s * y - eta * s * s) / (s * s).mean()
    return eta, float(influence.std() / math.sqrt(s.numel()))


def best_gd_step_size(device: str = "cpu") -> float:
    """η*, the empirical minimiser of one GD step's risk (``step_size_estimate``)."""
    return step_size_estimate(device)[0]


def monitor(settings: Settings, device):
    """Fig. 2's curves over training: the model's alignment with GD at η* on the probe prompts."""
    gd = GD(steps=1, lr=best_gd_step_size(str(device)))
    probe = held_out_prompts(TASK, "probe", settings.probe_prompts, device)
    return lambda model: alignment(model, gd, probe)


def query_loss(predictor, prompt: Prompt) -> float:
    """½ · mean squared error at the final query (the paper's loss) of a model or a baseline."""
    with torch.no_grad():
        prediction = predictor.predict(prompt.xs, prompt.ys)[:, -1]
    return 0.5 * float((prediction.to(prompt.ys) - prompt.ys[:, -1]).square().mean())


def alignment(model: InContextModel, gd: GD, prompt: Prompt) -> dict[str, float]:
    """Loss of model and GD, their prediction differences, and their sensitivities' cosine and L2 distance."""
    model_64 = copy.deepcopy(model).double().eval()
    y = prompt.ys[:, -1]
    model_pred, model_grad = query_predictions_and_sensitivities(model_64, prompt)
    gd_pred = gd.predict(prompt.xs, prompt.ys)[:, -1]
    gd_grad = gd.lr * (prompt.ys[:, :-1, None] * prompt.xs[:, :-1]).mean(dim=1)  # ∂ŷ/∂x_q of one GD step from 0
    cosine = torch.nn.functional.cosine_similarity(model_grad, gd_grad, dim=-1)
    sensitivity_distance = (model_grad - gd_grad).norm(dim=-1).mean()
    return {
        "loss_model": 0.5 * float((model_pred - y).square().mean()),
        "loss_gd": 0.5 * float((gd_pred - y).square().mean()),
        "mean_absolute_prediction_difference": float((model_pred - gd_pred).abs().mean()),
        "relative_prediction_distance": float((model_pred - gd_pred).norm() / gd_pred.norm()),
        "sensitivity_cosine": float(cosine.mean()),
        "sensitivity_distance": float(sensitivity_distance),
        "relative_sensitivity_distance": float(sensitivity_distance / gd_grad.norm(dim=-1).mean()),
    }


def query_predictions_and_sensitivities(model: InContextModel, prompt: Prompt) -> tuple[torch.Tensor, torch.Tensor]:
    """The prediction at the final query and its gradient with respect to that query, per prompt."""
    query = prompt.xs[:, -1].detach().clone().requires_grad_(True)
    xs = torch.cat([prompt.xs[:, :-1], query.unsqueeze(1)], dim=1)
    with torch.enable_grad():
        preds = model(xs, prompt.ys)[:, -1]
        (gradient,) = torch.autograd.grad(preds.sum(), query)
    return preds.detach(), gradient


def interpolated_lsa(model: LinearSelfAttention, construction: dict[str, torch.Tensor]) -> LinearSelfAttention:
    """App. A.3's interpolation of a trained one-layer LSA with a construction: Q ← Q/β and P ← βP, β the mean
    diagonal of Q's x block (the scaling the product P·Q leaves free), then each matrix averaged with the
    construction's; float64."""
    value, key_query = (weights.detach().to(torch.float64) for weights in model.attention_weights())
    beta = key_query[0, 0].diagonal()[:model.dim].mean()
    interpolated = LinearSelfAttention(model.dim, model.points, LSAConfig(layers=1, heads=1, init_scale=0.0)).double()
    interpolated.load_state_dict({"value": (beta * value + construction["value"].to(value)) / 2,
                                  "key_query": (key_query / beta + construction["key_query"].to(value)) / 2})
    return interpolated.to(value.device).eval()


def model_rows(model: LinearSelfAttention, gd: GD, prompt: Prompt) -> dict[str, float]:
    """``alignment`` and the loss of App. A.3's interpolation with the GD construction at ``gd.lr``."""
    construction = gd_lsa_weights(TASK.dim, 1, gd.lr)
    return {**alignment(model, gd, prompt), "loss_interpolated": query_loss(interpolated_lsa(model, construction),
                                                                            prompt)}


def measure(measurement) -> dict:
    eta, eta_error = step_size_estimate(str(measurement.device))
    gd = GD(steps=1, lr=eta)
    count = measurement.settings.test_prompts
    test = measurement.prompts(TASK, "test", count)
    scaled = {alpha: measurement.prompts(dataclasses.replace(TASK, x_bound=TASK.x_bound * alpha), "test", count,
                                         index=index + 1) for index, alpha in enumerate(INPUT_SCALES)}
    rows = []
    for seed, model in enumerate(measurement.models["lsa"]):
        (weights,) = compare_to_construction(model, gd_lsa_weights(TASK.dim, 1, eta), maps=("full",))
        final = {"gd_step_size": eta, "gd_step_size_error": eta_error, **model_rows(model, gd, test),
                 "weight_cosine": weights["cosine"], "weight_scale": weights["scale"]}
        rows += [{"seed": seed, "alpha": 1.0, "quantity": key, "value": value} for key, value in final.items()]
        for alpha, prompt in scaled.items():
            rows += [{"seed": seed, "alpha": alpha, "quantity": f"ood_{key}", "value": value}
                     for key, value in model_rows(model, gd, prompt).items()]
    return {"rows": rows, "histories": measurement.histories["lsa"]}


def _per_seed(results: dict, quantity: str, alpha: float = 1.0) -> list[float]:
    return seed_values(results["rows"], quantity, alpha=alpha)


def _mean(results: dict, quantity: str, alpha: float = 1.0) -> float:
    """The mean over seeds of ``quantity`` (at input scale ``alpha``)."""
    values = _per_seed(results, quantity, alpha)
    return sum(values) / len(values)


def _loss_gaps(results: dict, model: str, prefix: str = "", alpha: float = 1.0) -> list[float]:
    """Per seed, |L_model / L_GD − 1| of ``model`` ("model" or "interpolated") at input scale ``alpha``."""
    return [abs(loss / gd - 1) for loss, gd in zip(_per_seed(results, f"{prefix}loss_{model}", alpha),
                                                    _per_seed(results, f"{prefix}loss_gd", alpha))]


def _largest(per_alpha: list[list[float]]) -> float:
    """The largest value over the input scales and the seeds."""
    return max(max(values) for values in per_alpha)


def checks(results: dict, settings: Settings) -> list[Check]:
    eta, eta_error = _mean(results, "gd_step_size"), _mean(results, "gd_step_size_error")
    scales = list(INPUT_SCALES)
    return [
        claim_check("one-gd-step", "relative loss gap |L_LSA − L_GD| / L_GD", LOSS_GAP,
                    _loss_gaps(results, "model"), relation="at_most", source=FIGURE_2),
        claim_check("one-gd-step", "relative L2 distance of predictions", DISTANCE,
                    _per_seed(results, "relative_prediction_distance"), relation="at_most", source=FIGURE_2),
        claim_check("one-gd-step", "cosine of sensitivities dŷ/dx_query", SENSITIVITY_COSINE,
                    _per_seed(results, "sensitivity_cosine"), relation="at_least", source=FIGURE_2),
        claim_check("one-gd-step", "relative L2 distance of sensitivities dŷ/dx_query", DISTANCE,
                    _per_seed(results, "relative_sensitivity_distance"), relation="at_most", source=FIGURE_2),
        claim_check("gd-weights", "cosine of the trained weights with the GD construction at η*", WEIGHT_COSINE,
                    _per_seed(results, "weight_cosine"), relation="at_least",
                    source="von Oswald et al. 2023, Prop. 1 and Fig. 2"),
        Check("interpolated weights (App. A.3): largest relative loss gap to GD over seeds", LOSS_GAP,
              max(_loss_gaps(results, "interpolated")), relation="at_most", source=INTERPOLATION),
        Check(f"out of distribution, largest relative loss gap over α ∈ {scales} and seeds", LOSS_GAP,
              _largest([_loss_gaps(results, "model", "ood_", a) for a in scales]), relation="at_most",
              source=OUT_OF_DISTRIBUTION),
        Check("out of distribution, interpolated weights: largest relative loss gap over α and seeds", LOSS_GAP,
              _largest([_loss_gaps(results, "interpolated", "ood_", a) for a in scales]), relation="at_most",
              source=OUT_OF_DISTRIBUTION),
        Check("out of distribution, largest relative L2 distance of predictions over α and seeds", DISTANCE,
              _largest([_per_seed(results, "ood_relative_prediction_distance", a) for a in scales]),
              relation="at_most", source=OUT_OF_DISTRIBUTION),
        Check("η*: empirical minimiser of one GD step's risk against nσ²/(μ₄ + (d + n − 2)σ⁴), x ~ U(−0.5, 0.5)",
              one_step_optimal_step(TASK.dim, TASK.points - 1, TASK.x_bound), eta, 3 * eta_error,
              standard_error=eta_error, source="closed form (one_step_optimal_step); the authors' src/data.py"),
    ]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 2: loss, the L2 distances to GD (predictions, sensitivities) and the sensitivities' cosine over
    training; the losses of the trained layer, its interpolation and GD out of distribution, and their gaps."""
    histories = results["histories"]
    steps = [r["step"] for r in histories[0]]

    def over_training(key: str, label: str, **options) -> Curve:
        return seed_curve(label, steps, [[r[key] for r in history] for history in histories], **options)

    def over_scales(label: str, per_alpha: list[list[float]]) -> Curve:
        return seed_curve(label, list(INPUT_SCALES), [list(seed) for seed in zip(*per_alpha)])

    def losses(quantity: str) -> list[list[float]]:
        return [_per_seed(results, quantity, alpha) for alpha in INPUT_SCALES]

    def gaps(model: str) -> list[list[float]]:
        return [_loss_gaps(results, model, "ood_", alpha) for alpha in INPUT_SCALES]

    eta = _mean(results, "gd_step_size")
    gd_label = f"GD, η* = {eta:.2f}"
    gd_loss = Curve(gd_label, [steps[0], steps[-1]], [histories[0][-1]["loss_gd"]] * 2, baseline=True)
    return [
        Panel("training step", "loss (½·MSE)", [over_training("loss_model", "trained LSA"), gd_loss], yscale="log"),
        Panel("training step", "L2 distance to GD", [
            over_training("mean_absolute_prediction_difference", "predictions, mean |ŷ_LSA − ŷ_GD|"),
            over_training("sensitivity_distance", "sensitivities, mean ‖∂ŷ_LSA/∂x_q − ∂ŷ_GD/∂x_q‖")],
            yscale="log"),
        Panel("training step", "cos(∂ŷ_LSA/∂x_q, ∂ŷ_GD/∂x_q)",
              [over_training("sensitivity_cosine", "sensitivity cosine", bounds=(-1.0, 1.0))],
              targets=[Target(f"required ≥ {SENSITIVITY_COSINE}", SENSITIVITY_COSINE, SENSITIVITY_COSINE, 1.0)]),
        Panel("input scale α at test (trained at α = 1)", "loss (½·MSE)", [
            over_scales("trained LSA", losses("ood_loss_model")),
            over_scales("interpolated weights", losses("ood_loss_interpolated")),
            Curve(gd_label, list(INPUT_SCALES), [_mean(results, "ood_loss_gd", a) for a in INPUT_SCALES],
                  baseline=True)], xscale="log", yscale="log"),
        Panel("input scale α at test (trained at α = 1)", "|L / L_GD − 1|",
              [over_scales("trained LSA", gaps("model")), over_scales("interpolated weights", gaps("interpolated"))],
              targets=[Target(f"accepted ≤ {LOSS_GAP}", LOSS_GAP, 0.0, LOSS_GAP)], xscale="log"),
    ]


REPRODUCTION = Reproduction(
    name="von-oswald-2023",
    paper=PAPER,
    summary="A single trained linear self-attention layer implements one step of gradient descent with the "
            "risk-optimal step size.",
    claims=CLAIMS,
    caption="Fig. 2 of the paper: one LSA layer trained on d = 10, N = 10, x ~ U(−0.5, 0.5) (the authors' code; "
            "the text says U(−1, 1)) against one GD step at η*, over training, and its weights interpolated with "
            "the GD construction out of distribution",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=0.5,
    monitor=monitor,
)
