"""Akyürek, Schuurmans, Andreas, Ma & Zhou (ICLR 2023), "What learning algorithm is in-context learning?".

Setting (§4): linear regression in context, x ~ N(0, I_d), w ~ N(0, I_d), y = wᵀx + ε with
ε ~ N(0, σ²); decoder-only transformers (x and y as separate tokens, pre-LayerNorm; icl-sim
model ``gpt``; at quick scale the linear-attention ``lsa``, see Scales) of several depths.  Each
trained model is compared at the final query of held-out prompts with three learning algorithms run on
the same context: one step of gradient descent from 0 (at the risk-optimal step η* of
``formulas.optimal_step``), ridge regression with the Bayes λ = σ²/s² (``Ridge.bayes_optimal``)
and min-norm least squares, by the paper's two behavioural metrics (§4.1): the squared
prediction difference SPD = E(ŷ_model − ŷ_alg)² and the implicit linear weight difference
ILWD = E‖ŵ_model − ŵ_alg‖², the implicit weights fitted to each predictor's outputs on 2d probe
queries that share the prompt's context (``icl_sim.probe_metrics``).  Probes (§5, Fig. 4):
MLP probes, the paper's, and linear ones beside them, from each layer's hidden state at the final
query to Xᵀy/n and to w (``icl_sim.latent_probes.probe_latent``, with a permuted control).

Claims (``CLAIMS``), each a claim check per training seed (one value from each seed's models):

* ``depth-gd-to-least-squares`` (§4.3, Fig. 3): which algorithm is closest moves with depth: the
  shallowest noiseless model is closer to one GD step than to least squares, the deepest closer to
  least squares than to one GD step, by SPD and by ILWD.  The threshold 1 (a ratio of the two
  distances) is the contrast itself.  The two ends are one claim: a model predicting ≈ 0, as an
  untrained one does, is closer to the shrunk one-GD-step predictor than to least squares at every
  depth, so the shallow end alone holds for it and only the pair tells a move.
* ``noise-bayes-ridge`` (§4.2): under noise the deepest model is closest to Bayes ridge, not to OLS
  or one GD step (SPD); the threshold 1 is again the contrast.
* ``probes-xty-before-w`` (§5, Fig. 4): probes decode Xᵀy before w: at the middle layer of the probed
  GPT the paper's (MLP) probe decodes Xᵀy (held-out R² ≥ 0.5) and R²(Xᵀy) ≥ R²(w).  The 0.5 is this
  reproduction's threshold for "decoded", set when it was written (the paper states no number; without
  it "Xᵀy before w" would hold vacuously at R² ≈ 0); the 0 of the difference is the contrast.

Sanity checks, the library's own metrics and closed forms: (i) the metrics' identities: for two
linear predictors ILWD = ‖w₁ − w₂‖² exactly, and SPD = ‖w₁ − w₂‖² in expectation over x ~ N(0, I)
(§4.1; OLS against one GD step on the test prompts; per prompt (δᵀx_q)²/‖δ‖² ~ χ²₁, mean 1); (ii) the
fact behind the noise claim, in closed form / Monte Carlo: the Bayes-ridge risk (``ridge_bayes_risk``)
is below the OLS risk (``ols_risk``) and the one-step-GD risk (``one_step_gd_risk``), and the ridge
baseline's test error equals its Bayes risk.

Scales.  ``full`` follows the authors' code (google-research/incontext: pre-LN decoder of hidden
size 512 with 8 heads, Adam β = (0.9, 0.98), ε = 1e-9, lr 1e-4 with warm-up over the first fifth and
cosine decay, batch 64, 5001 × 100 steps, 40 exemplars) with d = 8 and depths 1 to 12 (their
default 12 the deepest, whose layers are probed) at σ = 0 and σ = 0.5.  ``quick`` fits 5 CPU
minutes: d = 4 (the paper's probing problem, Fig. 4) with 2d = 8 exemplars, σ ∈ {0, 0.5}.  Its
depth × noise sweep (1, 2 and 4 layers) uses the linear-attention member of the family (icl-sim
``lsa``, 2000 steps of batch 256 at lr 3e-3, cosine, gradients clipped at norm 1: at lr 1e-2 the
4-layer LSA ended worse than the trivial predictor), not the GPT: measured on this machine, a
width-64 GPT of depth 2 trained for 1500 steps of batch 64 had not yet left the plateau
(final-query error 3.98 against the trivial 4.0), and six GPT runs long enough to learn do not
fit 5 minutes.
The LSA is the model in which §3's and von Oswald et al.'s constructions make one layer one GD
step, so the sweep asks the paper's question (which learner does a depth-L attention model
trained on this data match?) of the cheapest attention model that can answer it.  The probes
need a hidden state wider than the LSA's d + 1 token, so one GPT (depth 4, width 64, 2 heads,
the paper's optimiser, 3000 steps of batch 64 at lr 1e-3) is trained for them.  Its weights start
at N(0, 0.1²) (``GPTConfig.init_std``; residual projections 0.1/√(2L)), not GPT-2's 0.02: the
authors' code initialises every kernel uniformly with variance 1/(3 fan_in) (``uniform_scaling`` in
google-research/incontext transformer_lib_flax.py; std 0.072 for a width-64 layer, 0.26 for the
read-in from the d + 1 input coordinates) and positions from N(0, 1), and at GPT-2's 0.02 the
width-64 GPT stayed on the plateau of the trivial predictor for all 3000 steps (training loss 3.7
against 4.0).  At full width 512 that rule gives 0.026, so ``full`` keeps 0.02.  ``smoke`` trains
5 steps to test the pipeline.

Probes.  The paper (§5 and App. E) decodes Xᵀy and w_OLS (here w itself: noiseless, n = 2d ≥ d)
from each layer with a probe that averages the layer's hidden states over positions with learned,
input-independent softmax weights (after a projection to 512) and applies FF, "either a linear layer
or a 2-layer MLP (hidden size=512) with a GeLU", trained with Adam at lr 1e-3 on the squared error
and scored by its held-out error; Fig. 4 (d = 4, a 16-layer model) draws both, and §5 reads it: "a
2-layer MLP probe outperforms a linear probe, meaning that these targets are encoded nonlinearly",
Xᵀy predictable around layer 7, w around layer 12 (the abstract: late layers "non-linearly
encode" them).  The authors' released code has only the linear variant (incontext/probe_flax.py,
``ProbeModel``: one Dense layer per model layer on the last token's state, target the true w;
probe_trainer.py: AdamW at lr 1e-3, cosine with a fifth warm-up, 20 × 100 batches of 64 freshly
drawn prompts).  So the checks read the paper's probe, an MLP with one hidden layer
(``probe_latent(probes=("mlp", ...))``: ReLU, not GeLU, on standardised features), and the linear
probe is drawn beside it.  Differences: our probe reads one token, the final query's x (it sees
the whole context, as do the y tokens the paper's probe attends to: y_n, or for n ≥ d all y_i with
i ≥ d, Fig. 4 right), and is fitted full batch (Adam, lr 1e-2, 300 steps) on a fixed set of fit
prompts rather than on fresh batches.  On 2048 fit prompts an MLP of 64 hidden units memorised
(layer 2: fit R² 0.72, held-out 0.42, the permuted control's fit R² 0.31), so ``quick`` fits on
8192, where fit and held-out R² differ by ≤ 0.06, with 32 hidden units (64 gave R² within 0.012 at
twice the CPU time); ``full`` keeps the paper's 512 units and lr 1e-3, with 65 536 fit prompts and
2000 steps (the authors' 20 × 100).  The score is the held-out R² = 1 − MSE / Var, the paper's
error rescaled so that our 0.5 threshold has no units; the control is a permutation of the targets
across prompts (Hewitt & Liang), drawn dashed, the paper's a model trained on the fixed w = 1
(Fig. 4).  The check reads the plain held-out R², which is at most the selectivity whenever the
control's R² is ≤ 0.

Measured at quick scale (3.9 CPU minutes on one thread: 235 s user, 8.4 minutes of wall time on the
loaded shared machine): the identities hold (ILWD to 3e-16, E[SPD/ILWD] = 0.999 ± 0.03);
SPD(model, GD)/SPD(model, OLS) is 0.0004 at depth 1 (the one-layer LSA is one GD step) and
SPD(model, OLS)/SPD(model, GD) 0.17 at depth 4 (ILWD 0.18); under σ = 0.5 the 4-layer model's SPD
to Bayes ridge is 0.45 of its SPD to OLS and 0.13 of its SPD to one GD step; the Bayes-ridge risk
0.520 is below OLS's 0.583 and one GD step's 1.835 (d = 4, n = 8).  The probe GPT's training loss
is 1.27 over all positions (trivial 4.0, Bayes-optimal 10/9 = 1.11).  Held-out R² by layer 1-4,
MLP probe: Xᵀy/n 0.14/0.56/0.56/0.52, w 0.11/0.48/0.55/0.55 (permuted controls −0.06 to −0.01);
linear probe: Xᵀy/n 0.03/0.43/0.40/0.36, w 0.02/0.38/0.37/0.34.  So at layer 2 the MLP decodes
Xᵀy (0.56 ≥ 0.5) ahead of w (by 0.078), w draws level at layer 3 and passes it at layer 4 (the
paper's order: Xᵀy first, w later), and the MLP beats the linear probe at every layer, as in Fig. 4;
the linear probe alone stays below 0.5 everywhere.  How the probe GPT was chosen (seed 0, 2 heads,
Adam (0.9, 0.98), warm-up 1/5, cosine; linear-probe R²(Xᵀy) at layers 1-4 on 2048 fit prompts):
init 0.02, 600 or 3000 steps: plateau, R² ≤ 0.01; init 0.1, 1500 steps: loss 1.63,
0.06/0.23/0.24/0.23; init 0.2, 1500: 2.06, −0.03/0.43/0.50/0.54; init 0.2, 3000: 1.48,
−0.02/0.34/0.54/0.64 (R²(w) above R²(Xᵀy) at layers 3-4); init 0.07, 3000: 1.40,
0.03/0.28/0.22/0.22; init 0.1 with 4 heads: 1.37, 0.03/0.25/0.32/0.34; init 0.1 at lr 2e-3: 1.35,
0.01/0.14/0.15/0.15; init 0.1, 3000 (kept): 1.27, 0.01/0.41/0.38/0.34; init 0.1, 4000 steps (over
the 5-minute budget): 1.23, 0.01/0.44/0.38/0.33.
Caveat (measured 2026-12-01 on the quick 4-layer σ = 0 LSA, 200 000 fresh prompts): a depth-L LSA
predicts with a polynomial of degree 2L + 1 in the prompt, so its squared error at the final query is
heavy-tailed: median 0.020, 99th percentile 3.0, 99.99th 6.5e4, largest 7e19 (mean 3.5e14, of which
the ten largest prompts are all but 8.8e3).  The SPD and ILWD means over the 2048 test prompts therefore
describe typical prompts, not the population mean, and the training log's 100-step mean losses of the
4-layer runs read 1e5-1e31 (with the loss-growth warning) while the typical prompt is fitted.  The
paper's pre-LN GPTs have no such tails; the GPT family at ``full`` scale avoids it.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

from icl_sim.checks import Check, claim_check, exact, monte_carlo, two_sample
from icl_sim.config import TrainConfig
from icl_sim.evaluation import prompt_errors
from icl_sim.latent_probes import probe_latent
from icl_sim.plots import Panel, Target, seed_curve
from icl_sim.probe_metrics import behaviours, compare, last
from icl_sim.tasks import LinearRegression
from icl_sim.theory import GD, OLS, Ridge
from icl_sim.theory.formulas import ols_risk, one_step_gd_risk, optimal_step, ridge_bayes_risk_samples

from .runner import HELD_OUT_STREAMS
from .spec import Claim, Paper, Reproduction

PAPER = Paper("E. Akyürek, D. Schuurmans, J. Andreas, T. Ma, D. Zhou",
              "What learning algorithm is in-context learning? Investigations with linear models", "ICLR 2023",
              "2211.15661")
METRICS_SOURCE = "Akyürek et al. 2023, §4.1 (SPD, ILWD)"
DEPTH_SOURCE = "Akyürek et al. 2023, §4.3 / Fig. 3 (small models ≈ GD, larger ≈ least squares)"
NOISE_SOURCE = "Akyürek et al. 2023, §4.2 (under noise the model matches Bayes ridge)"
PROBE_SOURCE = "Akyürek et al. 2023, §5 / Fig. 4 (Xᵀy decoded in earlier layers than w)"
#: the authors' Adam (google-research/incontext model_trainer.py: b1 0.9, b2 0.98, eps 1e-9)
ADAM_BETAS, ADAM_EPS = (0.9, 0.98), 1e-9
ALGORITHMS = ("one GD step", "Bayes ridge", "least squares")
METRIC_NAMES = {"squared_prediction_difference": "SPD", "weight_difference": "ILWD"}
#: a probe R² from which a latent counts as decoded (without it, "Xᵀy before w" holds vacuously at R² ≈ 0)
DECODED_R2 = 0.5
#: the checks read the paper's probe (§5, App. E: an MLP with one hidden layer, which beats a linear one);
#: the linear probe is drawn beside it
PAPER_PROBE = "mlp"
PROBE_KINDS = {"mlp": "MLP", "linear": "linear"}
#: Monte Carlo draws of the Bayes-ridge risk (over designs X only)
RIDGE_RISK_SAMPLES = 20_000

CLAIMS = (
    Claim("depth-gd-to-least-squares", "Which algorithm a trained model matches moves with depth: the shallowest is "
          "closer to one GD step than to least squares, the deepest closer to least squares than to one GD step "
          "(SPD and ILWD)", DEPTH_SOURCE),
    Claim("noise-bayes-ridge", "Under label noise the deepest model is closest to Bayes ridge, not to least squares "
          "or one GD step (SPD)", NOISE_SOURCE),
    Claim("probes-xty-before-w", "Probes decode Xᵀy before w: at the middle layer the paper's MLP probe decodes Xᵀy "
          "(R² ≥ 0.5) at least as well as w", PROBE_SOURCE),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale: the depth × noise sweep (``family``), the GPT whose layers are probed, its probes."""

    dim: int
    exemplars: int
    depths: tuple[int, ...]
    noises: tuple[float, ...]
    family: str
    width: int
    heads: int
    steps: int
    batch_size: int
    lr: float
    probe_depth: int
    probe_steps: int
    probe_batch_size: int
    probe_lr: float
    init_std: float
    test_prompts: int
    probe_fit_prompts: int
    mlp_probe_hidden: int
    mlp_probe_fit_steps: int
    mlp_probe_lr: float
    log_every: int

    def task(self, noise: float) -> LinearRegression:
        return LinearRegression(dim=self.dim, points=self.exemplars + 1, noise=noise)


SCALES = {
    "smoke": Settings(dim=4, exemplars=8, depths=(1, 2), noises=(0.0, 0.5), family="lsa", width=16, heads=2, steps=5,
                      batch_size=16, lr=1e-2, probe_depth=2, probe_steps=5, probe_batch_size=16, probe_lr=1e-3,
                      init_std=0.1, test_prompts=64, probe_fit_prompts=64, mlp_probe_hidden=8, mlp_probe_fit_steps=5,
                      mlp_probe_lr=1e-2, log_every=5),
    "quick": Settings(dim=4, exemplars=8, depths=(1, 2, 4), noises=(0.0, 0.5), family="lsa", width=64, heads=2,
                      steps=2000, batch_size=256, lr=3e-3, probe_depth=4, probe_steps=3000, probe_batch_size=64,
                      probe_lr=1e-3, init_std=0.1, test_prompts=2048, probe_fit_prompts=8192, mlp_probe_hidden=32,
                      mlp_probe_fit_steps=300, mlp_probe_lr=1e-2, log_every=100),
    "full": Settings(dim=8, exemplars=40, depths=(1, 2, 4, 8, 12), noises=(0.0, 0.5), family="gpt", width=512,
                     heads=8, steps=500_100, batch_size=64, lr=1e-4, probe_depth=12, probe_steps=500_100,
                     probe_batch_size=64, probe_lr=1e-4, init_std=0.02, test_prompts=4096, probe_fit_prompts=65_536,
                     mlp_probe_hidden=512, mlp_probe_fit_steps=2000, mlp_probe_lr=1e-3, log_every=1000),
}
PROBE_RUN = "gpt-probe"


def run_name(depth: int, noise: float) -> str:
    return f"L{depth}-sigma{noise:g}"


def _gpt(settings: Settings, task: LinearRegression, depth: int, steps: int, batch_size: int,
         lr: float) -> TrainConfig:
    """The paper's model and optimiser: pre-LN GPT, Adam (0.9, 0.98, 1e-9), warm-up over a fifth, cosine."""
    return TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="gpt",
                       model_params={"n_embd": settings.width, "n_layer": depth, "n_head": settings.heads,
                                     "init_std": settings.init_std},
                       steps=steps, batch_size=batch_size, lr=lr,
                       betas=ADAM_BETAS, adam_eps=ADAM_EPS, warmup_steps=steps // 5, lr_schedule="cosine",
                       loss_on="all", log_every=settings.log_every, checkpoint_every=max(steps // 5, 1))


def runs(settings: Settings) -> dict[str, TrainConfig]:
    configs = {}
    for noise in settings.noises:
        task = settings.task(noise)
        for depth in settings.depths:
            if settings.family == "gpt":
                configs[run_name(depth, noise)] = _gpt(settings, task, depth, settings.steps, settings.batch_size,
                                                       settings.lr)
            else:
                configs[run_name(depth, noise)] = TrainConfig(
                    task=task.name, task_params=dataclasses.asdict(task), model="lsa", model_params={"layers": depth},
                    steps=settings.steps, batch_size=settings.batch_size, lr=settings.lr, lr_schedule="cosine",
                    grad_clip=1.0, loss_on="last", log_every=settings.log_every,
                    checkpoint_every=max(settings.steps // 5, 1))
    if settings.family != "gpt" or settings.probe_depth not in settings.depths:
        configs[PROBE_RUN] = _gpt(settings, settings.task(0.0), settings.probe_depth, settings.probe_steps,
                                  settings.probe_batch_size, settings.probe_lr)
    return configs


def probe_run(settings: Settings) -> str:
    """The GPT whose layers are probed: the sweep's own at full scale, a separate one where the sweep is LSA."""
    return PROBE_RUN if PROBE_RUN in runs(settings) else run_name(settings.probe_depth, 0.0)


def middle_layer(settings: Settings) -> int:
    """The layer whose probes are checked: the middle of the probed GPT (the paper's Xᵀy: layer 7 of 16)."""
    return math.ceil(settings.probe_depth / 2)


def algorithms(settings: Settings, noise: float) -> dict:
    """The three learners at the final query (n = exemplars context points); ridge needs σ > 0."""
    n = settings.exemplars
    learners = {"one GD step": GD(1, optimal_step(settings.dim, n, noise)), "least squares": OLS()}
    if noise > 0:
        learners["Bayes ridge"] = Ridge.bayes_optimal(noise, 1.0)
    return learners


def measure(measurement) -> dict:
    settings = measurement.settings
    rows, identities, probes = [], {}, []
    for noise in settings.noises:
        task = settings.task(noise)
        test = measurement.prompts(task, "test", settings.test_prompts)
        target = last(test.target)
        learners = algorithms(settings, noise)
        reference = {name: behaviours(learner.query_predictor, test, True)[-1] for name, learner in learners.items()}
        for name, learner in learners.items():
            rows.append({"noise": noise, "depth": 0, "seed": 0, "predictor": name, "against": "target",
                         "metric": "mse", "value": float((reference[name].prediction - target).square().mean())})
        for depth in settings.depths:
            for seed, model in enumerate(measurement.models[run_name(depth, noise)]):
                model = copy.deepcopy(model).double().eval()
                (own,) = behaviours(model.query_predictor, test, True)[-1:]
                rows.append({"noise": noise, "depth": depth, "seed": seed, "predictor": "model", "against": "target",
                             "metric": "mse", "value": float((own.prediction - target).square().mean())})
                for name, behaviour in reference.items():
                    for metric, value in compare(own, behaviour, target).items():
                        if metric in METRIC_NAMES:
                            rows.append({"noise": noise, "depth": depth, "seed": seed, "predictor": "model",
                                         "against": name, "metric": METRIC_NAMES[metric], "value": value})
        if noise > 0:
            identities = _identities(settings, test, learners, reference, noise)
    for seed, model in enumerate(measurement.models[probe_run(settings)]):
        for target in ("xty", "w"):
            records = probe_latent(model, settings.task(0.0), target, probes=tuple(PROBE_KINDS),
                                   num_fit=settings.probe_fit_prompts, num_prompts=settings.test_prompts,
                                   mlp_hidden=settings.mlp_probe_hidden, mlp_steps=settings.mlp_probe_fit_steps,
                                   mlp_lr=settings.mlp_probe_lr, seed=HELD_OUT_STREAMS["probe"],
                                   device=measurement.device)
            probes += [{"seed": seed, **record} for record in records]
    return {"rows": rows, "identities": identities, "probes": probes}


def _identities(settings: Settings, test, learners: dict, reference: dict, noise: float) -> dict:
    """Per-prompt quantities of the metric identities and of the risks, on the noisy test prompts."""
    n, d = settings.exemplars, settings.dim
    weights = {name: learners[name].weights(test.xs, test.ys)[:, -1] for name in ("least squares", "one GD step")}
    delta = weights["least squares"] - weights["one GD step"]
    ols, gd = reference["least squares"], reference["one GD step"]
    ridge_errors = prompt_errors(learners["Bayes ridge"], test, "squared_error")[:, -1] * d
    return {
        "ilwd_probes": compare(ols, gd, last(test.target))["weight_difference"],
        "weight_distance": float(delta.square().sum(-1).mean()),
        "spd_over_distance": (ols.prediction - gd.prediction).square() / delta.square().sum(-1),
        "ridge_risk_samples": ridge_bayes_risk_samples(n, d, 1.0, noise, samples=RIDGE_RISK_SAMPLES),
        "ridge_test_errors": ridge_errors,
        "ols_risk": float(ols_risk(n, d, 1.0, noise)),
        "gd_risk": one_step_gd_risk(d, n, noise, 1.0),
    }


def _by_seed(rows, **match) -> list[float]:
    """The value of the rows that match, one per seed, in seed order."""
    found = {row["seed"]: row["value"] for row in rows if all(row[key] == value for key, value in match.items())}
    if not found:
        raise ValueError(f"no rows match {match}")
    return [found[seed] for seed in sorted(found)]


def _values(results: dict, noise: float, depth: int, against: str, metric: str) -> list[float]:
    """A model's metric against ``against``, per seed."""
    return _by_seed(results["rows"], noise=noise, depth=depth, against=against, metric=metric, predictor="model")


def _ratios(results: dict, noise: float, depth: int, metric: str, numerator: str, denominator: str) -> list[float]:
    """Per seed, metric(model, numerator) / metric(model, denominator), both of that seed's model."""
    return [top / bottom for top, bottom in zip(_values(results, noise, depth, numerator, metric),
                                                _values(results, noise, depth, denominator, metric))]


def _probe_r2(results: dict, target: str, layer: int, probe: str = PAPER_PROBE, metric: str = "r2") -> list[float]:
    """The probe's held-out R² (or ``metric``) per seed of the probed GPT."""
    return _by_seed(results["probes"], target=target, layer=layer, metric=metric, probe=probe)


def checks(results: dict, settings: Settings) -> list[Check]:
    ident = results["identities"]
    shallow, deep = min(settings.depths), max(settings.depths)
    noisy = max(settings.noises)
    ilwd_gap = (ident["ilwd_probes"] - ident["weight_distance"]) / ident["weight_distance"]
    out = [dataclasses.replace(check, source=METRICS_SOURCE) for check in (
        exact("ILWD(least squares, one GD step) from probe queries − mean ‖w_OLS − w_GD‖² (relative)", 0.0,
              ilwd_gap, tolerance=1e-8),
        monte_carlo("E[(ŷ_OLS − ŷ_GD)² / ‖w_OLS − w_GD‖²] at x_q ~ N(0, I) (SPD = ILWD)", 1.0,
                    ident["spd_over_distance"]))]
    depth = "depth-gd-to-least-squares"
    for metric in ("SPD", "ILWD"):
        out.append(claim_check(depth,
                               f"noiseless, depth {shallow}: {metric}(model, GD) / {metric}(model, least squares)", 1.0,
                               _ratios(results, 0.0, shallow, metric, "one GD step", "least squares"),
                               relation="at_most", source=DEPTH_SOURCE))
        out.append(claim_check(depth, f"noiseless, depth {deep}: {metric}(model, least squares) / {metric}(model, GD)",
                               1.0, _ratios(results, 0.0, deep, metric, "least squares", "one GD step"),
                               relation="at_most", source=DEPTH_SOURCE))
    for other in ("least squares", "one GD step"):
        out.append(claim_check("noise-bayes-ridge", f"σ = {noisy:g}, depth {deep}: SPD(model, Bayes ridge) / "
                               f"SPD(model, {other})", 1.0, _ratios(results, noisy, deep, "SPD", "Bayes ridge", other),
                               relation="at_most", source=NOISE_SOURCE))
    samples = ident["ridge_risk_samples"]
    for name, risk in (("least squares", ident["ols_risk"]), ("one GD step at η*", ident["gd_risk"])):
        out.append(monte_carlo(f"σ = {noisy:g}, n = {settings.exemplars}: Bayes-ridge risk vs {name} risk {risk:.4g}",
                               risk, samples, relation="at_most",
                               source="ridge_bayes_risk vs ols_risk / one_step_gd_risk (closed forms)"))
    out.append(two_sample(f"σ = {noisy:g}: ridge baseline's test error = Bayes risk", samples,
                          ident["ridge_test_errors"], source="ridge_bayes_risk (Monte Carlo over X)"))
    middle = middle_layer(settings)
    probe = f"GPT of depth {settings.probe_depth}, layer {middle}, MLP probe"
    xty, w = _probe_r2(results, "xty", middle), _probe_r2(results, "w", middle)
    out.append(claim_check("probes-xty-before-w", f"{probe}: R²(Xᵀy) (decoded)", DECODED_R2, xty, relation="at_least",
                           source=f"{PROBE_SOURCE}; R² ≥ {DECODED_R2} our threshold for 'decoded'"))
    out.append(claim_check("probes-xty-before-w", f"{probe}: R²(Xᵀy) − R²(w)", 0.0,
                           [a - b for a, b in zip(xty, w)], relation="at_least", source=PROBE_SOURCE))
    return out


def figure(results: dict, settings: Settings) -> list[Panel]:
    """SPD to each algorithm against depth, noiseless and noisy (log scales), and the probes' R² by layer."""
    panels = []
    depths = list(settings.depths)
    for noise in settings.noises:
        curves = [seed_curve(f"SPD(model, {name})", depths,
                             _by_depth([_values(results, noise, depth, name, "SPD") for depth in depths]),
                             continuous=False)
                  for name in ALGORITHMS if noise > 0 or name != "Bayes ridge"]
        curves.append(seed_curve("model's squared error (vs y)", depths,
                                 _by_depth([_values(results, noise, depth, "target", "mse") for depth in depths]),
                                 baseline=True, continuous=False))
        panels.append(Panel("layers", "squared prediction difference (final query)", curves,
                            title=f"σ = {noise:g}, d = {settings.dim}, n = {settings.exemplars}",
                            yscale="log"))
    layers = list(range(1, settings.probe_depth + 1))
    latents = (("xty", "Xᵀy / n"), ("w", "w"))
    probe_curves = [seed_curve(f"{label}, {kind} probe", layers,
                               _by_depth([_probe_r2(results, target, layer, probe) for layer in layers]),
                               continuous=False)
                    for probe, kind in PROBE_KINDS.items() for target, label in latents]
    probe_curves += [seed_curve(f"{label}, MLP probe, permuted control", layers,
                                _by_depth([_probe_r2(results, target, layer, metric="control_r2") for layer in layers]),
                                baseline=True, continuous=False)
                     for target, label in latents]
    middle = middle_layer(settings)
    required = Target(f"required at layer {middle}: R²(Xᵀy) ≥ {DECODED_R2}, MLP probe", DECODED_R2,
                      DECODED_R2, 1.0, where=(middle - 0.25, middle + 0.25))
    panels.append(Panel("layer", "probe R² (held out)", probe_curves, [required],
                        title=f"MLP and linear probes, GPT of depth {settings.probe_depth}, σ = 0"))
    return panels


def _by_depth(per_x: list[list[float]]) -> list[list[float]]:
    """Per-x lists of per-seed values turned into per-seed curves over x."""
    return [list(curve) for curve in zip(*per_x)]


REPRODUCTION = Reproduction(
    name="akyurek-2023",
    paper=PAPER,
    summary="Trained transformers' in-context predictions move from one step of gradient descent towards least "
          "squares as depth grows and match Bayes ridge under label noise; probes decode Xᵀy before w.",
    caption="Fig. 3-4 of the paper: SPD of attention models of depth 1-4 to one GD step, Bayes ridge and least "
            "squares (noiseless and σ = 0.5), and MLP and linear probes for Xᵀy and w by layer of a GPT",
    scales=SCALES,
    runs=runs,
    measure=measure,
    claims=CLAIMS,
    checks=checks,
    figure=figure,
    quick_minutes=4.0,
)
