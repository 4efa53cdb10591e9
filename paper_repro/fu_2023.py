"""Fu, Chen, Jia & Sharan (NeurIPS 2024), "Transformers learn higher-order optimization methods for in-context
learning: a study with linear models", Sec. 2–4 and Fig. 3 (layer × algorithm-step heatmaps).

Setting (the authors' src/conf/base.yaml and linear_regression.yaml, DeqingFu/transformers-icl-higher-order):
a GPT-2 transformer (12 layers, 8 heads, width 256: Garg et al.'s "standard" size) trained on in-context
linear regression, x ~ N(0, I_20), w ~ N(0, I_20), noiseless y = wᵀx, prompts of 41 points, Adam at lr 1e-4,
batch 64, 500k steps with Garg et al.'s curriculum (dimensions 5 → 20 by 1 every 2000 steps, points 11 → 41
by 2 every 2000).

The similarity, as their src/eval_similarity.py computes it (HEAD, 52376dd):

* each layer ℓ is read out by a linear map of its hidden state at the x tokens (their probing.py trains one
  per layer on the loss over all positions, the transformer frozen; here its closed form, least squares with
  an intercept on every position of 320 tuning prompts: ``layer_readouts``);
* the algorithms run at every position i on the first i points, predicting 0 at i = 0 (their models.py):
  iterative Newton (Newton–Schulz, M_0 = αS, M_{k+1} = 2M_k − M_k S M_k, S = XᵀX, with their α = 1/‖SSᵀ‖_F:
  ``theory.Newton(k, scale=1)``; the first commit, 32b1021, had 2/‖SSᵀ‖_F) for k = 1..23, and GD from 0 on the
  summed loss ½Σ(wᵀx_j − y_j)² at their fixed lr = 0.01 (``summed_loss_gd``; icl-sim's ``GD`` steps on the
  mean loss) for 2⁰..2¹² steps, their log grid;
* SimE(ℓ, k) is the cosine of the residual vectors ŷ − y of one prompt across its positions, averaged over
  the prompts (320, their 5 batches of 64: ``per_prompt_similarity``); the best-matching step of a layer is
  the argmax over k.

Claims (``CLAIMS``), each a claim check with one value per training seed, from that seed's model alone:

* ``learns-in-context`` (Fig. 2): the trained transformer solves in-context linear regression, its error at
  the last query (n = 2d, where least squares is exact) at most 10 % of the trivial error E[y²].  The paper
  states no number; the 10 % was set when this reproduction was first written, and lies well on the least-
  squares side of the contrast with the one-GD-step optimum (its risk (d + 1)/(n + d + 1) of E[y²], 0.38 at
  the quick scale's d = 4, n = 8; 0.34 at full).  Without learning the step matches below are vacuous.
  **Decided at long** (measured below): every quick seed learns (errors 0.04-0.09 of E[y²]), but seeds
  100-102's interval reaches 0.12.
* ``newton-linear`` (abstract, Fig. 3): the best-matching Newton step grows linearly with the layer, "each
  middle layer roughly computing 3 iterations".  Threshold: the slope of the best step against the layer
  (least squares over all layers) within 3 ± 1: the paper's 3, closer to it than to one iteration per layer
  (what a layer-per-step construction gives); the band was fixed before this measure was run (it was ± 1.5,
  of our own, with the earlier across-prompts measure).
* ``gd-exponential`` (abstract, Fig. 3, Sec. 2): GD needs exponentially more steps per additional layer,
  because Newton's residual on an eigenvalue λ is (1 − αλ²)^(2^k) and GD's (1 − ηλ)^t (Sec. 2): one Newton
  step is worth doubling the GD steps.  Threshold: the growth factor of the best-matching GD step,
  2^(slope of log₂ step against the layer), at least 2, from that closed form (with 3 Newton steps per layer
  the paper's reading is a factor 8).  The growth factors are per seed (their mean, not 2^(mean slope)).

Both step-match claims were held at quick until 2026-12-04, when a referee's reading found they could not fail
there: with d = 4 Newton converges in about 9 steps, so a 4-layer model's first layer (best step 1) and last
(saturated at 9-10) fix the least-squares slope between 2.4 and 3.6 whatever the middle layers do, and the GD
growth likewise.  They are deferred to ``full`` (the paper's 12 layers at d = 20) with that reason and one
development run: a model deep enough for the slope to fail, d = 8 with 8 layers on quick's recipe (std 0.1,
lr 2e-3, 3000 steps, seed 7777), stayed on the trivial plateau (training loss 7.98 against E[y²] = 8; 373 CPU
seconds, 0.124 s per step): five seeds of 10 000 steps would take 103 CPU minutes, past the hour, so they wait
for the GPU.  ``learns-in-context`` is decided at ``long``: quick's model and recipe over 3000 steps, five seeds.

Sanity checks (the library's own Newton and GD and their closed forms, float64, ``icl_sim.theory.formulas``):
the Newton residual I − M_k S equals (I − αS²)^(2^k) for S = XᵀX of a prompt in their setting (d = 20,
n = 40), isotropic and ill-conditioned (κ(Σ) = 100); the steps to a residual ε = 1e-6 counted by running
Newton and GD with their optimal scalings equal ``newton_steps_to_tolerance`` (O(log κ)) and
``gd_steps_to_tolerance`` (O(κ)) over κ from 1.5 to 1000.

Quick scale (what was shrunk): a 4-layer, width-64, 4-head GPT on d = 4 with 9-point prompts (n/d = 2 as
theirs), 1500 steps of Adam at 2e-3 (200 warm-up steps, cosine decay), batch 64, no curriculum: depth
12 → 4, width 256 → 64, d 20 → 4 and 500k → 1500 steps; the algorithms' grids and lr are theirs.
**Quick scale departs from GPT-2's initialisation**: weights are drawn with std 0.1 instead of GPT-2's 0.02
(``GPTConfig.init_std``; residual projections still shrunk by 1/√(2·layers)); ``full`` keeps the authors'
0.02 (HF GPT2Model, initializer_range).  How it was chosen, honestly: after a failure, on one seed (0), by the
training loss.  With std 0.02 this model sits on the trivial predictor's plateau for the whole CPU budget
(loss 3.98 at step 1500 against E[y²] = 4, error at the last query 0.99 E[y²], every layer matching Newton
step 1 and GD step 1; a 5-layer variant at lr 1e-3, a d = 2 variant and the same model for 6000 steps did not
leave it either); with std 0.1 the loss leaves it by step 300 (std 0.3 was slower: loss 2.4 at step 1050).
So the quick scale's learning is conditional on that choice, made by the quantity ``learns-in-context``
measures (and that claim is deferred all the same, below); the step-match measures played no part in it
(std 0.1 was fixed before the per-prompt SimE existed), and seeds 100-102, never used for a choice, give the
step-match claims the same verdicts.

Measured at quick scale (seeds 0, 1, 2; seeds 100, 101, 102 in brackets): error at the last query 0.063,
0.057, 0.041 of E[y²] [0.091, 0.052, 0.049]; best-matching Newton steps per layer 1, 4, 8, 9 / 1, 4, 8, 9 /
1, 4, 9, 10 [1, 4, 7, 8 / 1, 5, 8, 9 / 1, 4, 7, 9], slopes 2.8, 2.8, 3.2, mean 2.93, CI [2.36, 3.51]
[2.4, 2.7, 2.7, mean 2.6, CI [2.17, 3.03]]: within the band (deferred since 2026-12-04, above); best GD steps 1, 64, 128, 256 / 1, 64, 256, 256 /
1, 32, 256, 256 [1, 64, 128, 128 / 1, 64, 256, 256 / 1, 64, 128, 256], growth 5.7, 6.1, 6.5 per layer
[4.6, 6.1, 5.7]: above 2 (deferred likewise).  The SimE peaks reach 0.91 (Newton, layers 3-4; GD at 256 steps, layer 4); the last
layer saturates (its best Newton step is about one more than layer 3's) as d = 4 lets Newton converge in
about 10 steps, so the quick slope reads mostly layers 1-3.  The untrained
control fails all three claims (error 1.06-1.22 E[y²], every layer's best step 1: slope 0, growth 1).
CPU: 211 s user + 6 s sys with 3 seeds (12.8 min of wall time at a load of 7-9 on the 2-core machine;
seeds 100-102: 218 s + 5 s, 15.6 min).
At long (seeds 0-4, never run before; 2026-12-04, 8.1 CPU minutes with the quick re-measurement and both
controls): ``learns-in-context`` HOLDS, errors at the last query 0.0155, 0.0293, 0.0149, 0.0191, 0.0327 of E[y²]
(95 % CI [0.012, 0.032] ≤ 0.1); the 4-layer step matches, which decide nothing here, read slopes 3.2-3.8 and
growth 7.5-8.0; the untrained control fails all three claims (errors 1.06-1.30 of E[y²], slope 0, growth 1).
``full`` is the authors' setting (rehearsed: 9.5M parameters per run, 4.3e17 FLOP, ~18 min on one H200 for
the three seeds); ``smoke`` trains 5 steps.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact, mean_and_standard_error
from icl_sim.config import Curriculum, TrainConfig
from icl_sim.plots import Curve, Heatmap, Panel, seed_curve
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory import Newton
from icl_sim.theory.baselines import in_eigenbasis
from icl_sim.theory.formulas import fu_alpha, gd_steps_to_tolerance, newton_iterates, newton_steps_to_tolerance
from icl_sim.theory.prefix import as_float64, label_moments, outer_products, prefix_sum

from .measures import least_squares_slope, query_squared_errors, seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("D. Fu, T.-Q. Chen, R. Jia, V. Sharan", "Transformers learn higher-order optimization methods for "
              "in-context learning: a study with linear models", "NeurIPS 2024", "2310.17086")
FIGURE_3 = "Fu et al. 2023, Fig. 3 and abstract"
SEC_2 = "Fu et al. 2023, Sec. 2 (iterative Newton, M_{k+1} = 2M_k − M_k S M_k); Pan & Schreiber 1991"
#: their eval_similarity.py: Newton steps 1..23; GD at lr 0.01 on the summed loss, steps 2^0..2^12 (log grid)
NEWTON_STEPS = 23
GD_STEP_COUNTS = tuple(2 ** k for k in range(13))
GD_LR = 0.01
#: their models.py (HEAD, 52376dd) newton_inv: M_0 = αS with α = 1/‖SSᵀ‖_F (the first commit, 32b1021, had 2/‖SSᵀ‖_F)
NEWTON_SCALE = 1.0
#: their eval_similarity.py: 5 training batches of 64 prompts
SIMILARITY_PROMPTS = 320
#: held-out prompts of the error at the last query
TEST_PROMPTS = 1024
#: the exact part: prompts of their setting (d = 20, n = 40) and the κ grid of the step counts
EXACT_DIM, EXACT_POINTS, EXACT_NEWTON_STEPS, EXACT_TOLERANCE = 20, 40, 14, 1e-9
ILL_CONDITIONED_KAPPA = 100.0
KAPPAS = (1.5, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
EPS = 1e-6
#: the trained-model checks: Newton steps per layer (abstract: "roughly 3"; ± 1: closer to 3 than to one step
#: per layer), GD growth per layer (one Newton step ≙ a doubling of GD's, Sec. 2)
NEWTON_SLOPE, NEWTON_SLOPE_BAND, GD_GROWTH = 3.0, 1.0, 2.0
#: the precondition: the model has learned in context, its error at the last query (n = 2d, where least
#: squares is exact) at most this fraction of the trivial error E[y²] (Fu et al. Fig. 2: it matches OLS)
LEARNED_FRACTION = 0.1

#: why the step-match claims wait for the full scale (a referee's reading, 2026-12-04, and one development run)
ENDPOINTS = ("at quick (d = 4, 4 layers) Newton converges in about 9 steps, so layer 1's best step (1) and layer 4's "
             "(9-10, saturated) fix the fitted slope at 2.4-3.6 for any monotone middle, and the GD growth likewise: "
             "held on seeds 0-2 and 100-102 (slopes 2.4-3.2), but no converged model could fail it; a model deep "
             "enough for the slope to fail did not learn in CPU time (d = 8, 8 layers, quick's recipe, 3000 steps, "
             "development seed 7777: training loss 7.98 against E[y²] = 8 after 373 CPU s, 0.124 s per step); five "
             "seeds of 10 000 steps, the least a curriculum-free model of that size could plausibly need to leave the "
             "plateau, would take 103 CPU minutes at that cost, past the hour")
CLAIMS = (
    Claim("learns-in-context", "The trained transformer solves in-context linear regression: at n = 2d its error at "
          "the query is near least squares' (0, noiseless)", "Fu et al. 2023, Fig. 2", decided_at="long",
          reason="at quick scale (1500 steps) the error at the last query is 0.063, 0.057, 0.041 of E[y²] for seeds "
                 "0-2 (95 % CI [0.025, 0.082], within 10 %) but 0.091, 0.052, 0.049 for seeds 100-102 (CI [0.005, "
                 "0.12], not within it): every seed learns, three seeds of 1500 steps cannot say whether 10 % is "
                 "reached"),
    Claim("newton-linear", "The best-matching iterative Newton step grows linearly with the layer, each middle layer "
          "computing roughly 3 iterations", FIGURE_3, decided_at="full", reason=ENDPOINTS),
    Claim("gd-exponential", "The best-matching GD step grows exponentially with the layer: GD needs exponentially "
          "more steps than Newton, one Newton step being worth a doubling of GD's", FIGURE_3 + "; Sec. 2",
          decided_at="full", reason=ENDPOINTS),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale."""

    dim: int
    points: int
    layers: int
    width: int
    heads: int
    steps: int
    batch_size: int
    lr: float
    warmup_steps: int
    lr_schedule: str
    probe_prompts: int
    curriculum: bool = False
    init_std: float = 0.02  # GPT-2's (the authors' HF GPT2Model, initializer_range 0.02)
    kappas: tuple[float, ...] = KAPPAS
    newton_steps: int = NEWTON_STEPS
    gd_step_counts: tuple[int, ...] = GD_STEP_COUNTS

    @property
    def task(self) -> LinearRegression:
        return LinearRegression(dim=self.dim, points=self.points)


SCALES = {
    "smoke": Settings(dim=3, points=7, layers=2, width=16, heads=2, steps=5, batch_size=16, lr=1e-3, warmup_steps=0,
                      lr_schedule="constant", probe_prompts=64, kappas=(1.5, 10.0, 100.0), newton_steps=4,
                      gd_step_counts=(1, 4, 16)),
    "quick": Settings(dim=4, points=9, layers=4, width=64, heads=4, steps=1500, batch_size=64, lr=2e-3,
                      warmup_steps=200, lr_schedule="cosine", probe_prompts=SIMILARITY_PROMPTS, init_std=0.1),
    # quick's model and recipe over twice the steps (the cosine stretched alike), five seeds: learns-in-context
    "long": Settings(dim=4, points=9, layers=4, width=64, heads=4, steps=3000, batch_size=64, lr=2e-3,
                     warmup_steps=200, lr_schedule="cosine", probe_prompts=SIMILARITY_PROMPTS, init_std=0.1),
    # the authors' src/conf: GPT-2 12 layers, 8 heads, width 256, d = 20, 41 points, Adam 1e-4, batch 64, 500k steps
    "full": Settings(dim=20, points=41, layers=12, width=256, heads=8, steps=500_001, batch_size=64, lr=1e-4,
                     warmup_steps=0, lr_schedule="constant", probe_prompts=SIMILARITY_PROMPTS, curriculum=True),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    task = settings.task
    curriculum = {}
    if settings.curriculum:  # their base.yaml / linear_regression.yaml
        curriculum = {"curriculum_dims": Curriculum(5, 1, 2000), "curriculum_points": Curriculum(11, 2, 2000)}
    return {"gpt": TrainConfig(
        task=task.name, task_params=dataclasses.asdict(task), model="gpt",
        model_params={"n_embd": settings.width, "n_layer": settings.layers, "n_head": settings.heads,
                      "init_std": settings.init_std},
        steps=settings.steps, batch_size=settings.batch_size, lr=settings.lr, warmup_steps=settings.warmup_steps,
        lr_schedule=settings.lr_schedule, loss_on="all", log_every=max(settings.steps // 20, 1),
        checkpoint_every=max(settings.steps // 4, 1), **curriculum)}


# -- the exact part -------------------------------------------------------------------------------

def _design(kappa: float, generator: torch.Generator) -> torch.Tensor:
    """S = XᵀX for one prompt of their setting (n = 40 points in d = 20), x ~ N(0, Σ), κ(Σ) = ``kappa``."""
    task = LinearRegression(dim=EXACT_DIM, points=EXACT_POINTS, condition_number=kappa,
                            rotation="per-prompt") if kappa > 1 else LinearRegression(dim=EXACT_DIM,
                                                                                     points=EXACT_POINTS)
    xs = task.sample(1, generator, dtype=torch.float64).xs[0]
    return xs.T @ xs


def newton_residual_gaps(seed: int = 0) -> dict[str, list[float]]:
    """max over k ≤ 8 of ‖(I − M_k S) − (I − αS²)^(2^k)‖₂, α = 2/‖SSᵀ‖_F, and the residual norms ‖I − M_k S‖₂."""
    out = {}
    for name, kappa in (("isotropic", 1.0), ("ill-conditioned", ILL_CONDITIONED_KAPPA)):
        matrix = _design(kappa, torch.Generator().manual_seed(seed))
        alpha = fu_alpha(matrix)
        eye = torch.eye(EXACT_DIM, dtype=torch.float64)
        base = eye - alpha * matrix @ matrix
        gaps, norms = [], []
        for k, iterate in enumerate(newton_iterates(matrix, EXACT_NEWTON_STEPS, alpha)):
            residual = eye - iterate @ matrix
            gaps.append(float(torch.linalg.matrix_norm(residual - torch.linalg.matrix_power(base, 2 ** k), ord=2)))
            norms.append(float(torch.linalg.matrix_norm(residual, ord=2)))
        out[name] = {"gaps": gaps, "norms": norms}
    return out


def counted_steps(kappa: float, seed: int = 0) -> tuple[int, int]:
    """(Newton, GD) steps until ‖residual‖₂ ≤ ε, counted by running both with their optimal scalings on a
    planted S (eigenvalues 1..κ, random basis, d = 20)."""
    generator = torch.Generator().manual_seed(seed)
    eigenvalues = torch.cat([torch.tensor([1.0, kappa], dtype=torch.float64),
                             1 + (kappa - 1) * torch.rand(EXACT_DIM - 2, generator=generator, dtype=torch.float64)])
    basis, _ = torch.linalg.qr(torch.randn(EXACT_DIM, EXACT_DIM, generator=generator, dtype=torch.float64))
    matrix = basis @ torch.diag(eigenvalues) @ basis.T
    eye = torch.eye(EXACT_DIM, dtype=torch.float64)
    alpha = 2 / float(eigenvalues.min() ** 2 + eigenvalues.max() ** 2)
    newton = next(k for k, m in enumerate(newton_iterates(matrix, 60, alpha))
                  if float(torch.linalg.matrix_norm(eye - m @ matrix, ord=2)) <= EPS)
    step = eye - 2 / float(eigenvalues.min() + eigenvalues.max()) * matrix
    power, gd = eye.clone(), 0
    while float(torch.linalg.matrix_norm(power, ord=2)) > EPS:
        power, gd = step @ power, gd + 1
    return newton, gd


# -- the trained part: their eval_similarity.py ---------------------------------------------------

def layer_readouts(model, tuning: Prompt) -> list[torch.Tensor]:
    """Per-layer linear read-outs (with an intercept) of the residual stream at the x tokens, fitted by least
    squares to y over every position of the tuning prompts: the closed form of their probing.py, which trains
    a linear read-out of each layer's hidden state on the loss over all positions, the transformer frozen."""
    with torch.no_grad():
        features = model.layer_features(tuning.xs, tuning.ys)
    return [torch.linalg.lstsq(_with_intercept(feature).flatten(0, 1), tuning.ys.flatten()[:, None]).solution
            for feature in features]


def layer_predictions(model, readouts: list[torch.Tensor], prompt: Prompt) -> torch.Tensor:
    """Each layer's read-out at every position of ``prompt``: (L, B, N)."""
    with torch.no_grad():
        features = model.layer_features(prompt.xs, prompt.ys)
    return torch.stack([(_with_intercept(feature) @ weights).squeeze(-1)
                        for feature, weights in zip(features, readouts)])


def _with_intercept(features: torch.Tensor) -> torch.Tensor:
    return torch.cat([features, torch.ones_like(features[..., :1])], dim=-1)


def summed_loss_gd(xs: torch.Tensor, ys: torch.Tensor, steps: int, lr: float = GD_LR) -> torch.Tensor:
    """Their LeastSquaresModelGradientDescent at every position: ``steps`` steps of w ← w − lr (G_i w − b_i) from
    w = 0 on the summed loss ½ Σ_{j<i} (wᵀx_j − y_j)², G_i = Σ_{j<i} x_j x_jᵀ, b_i = Σ_{j<i} y_j x_j, a fixed lr
    at every i (icl-sim's ``GD`` steps on the mean loss, lr/i), in closed form in G_i's eigenbasis:
    w = V f(Λ) Vᵀ b_i, f(λ) = (1 − (1 − lr λ)^steps)/λ.  Predictions (B, N), 0 at i = 0 as theirs."""
    xs, ys = as_float64(xs, ys)
    gram, moment = prefix_sum(outer_products(xs)), prefix_sum(label_moments(xs, ys))
    weights = in_eigenbasis(_gd_spectral, gram, moment, steps, lr)
    return (xs * weights).sum(dim=-1)


def _gd_spectral(eigenvalues: torch.Tensor, moment: torch.Tensor, steps: int, lr: float) -> torch.Tensor:
    """f(λ) b̃ with f(λ) = (1 − (1 − lr λ)^steps)/λ, = steps·lr at λ = 0 (no cancellation for small lr λ)."""
    step = lr * eigenvalues.clamp(min=0.0)
    small = step < 0.5
    from_log = -torch.expm1(steps * torch.log1p(-torch.where(small, step, 0.0)))
    gain = torch.where(small, from_log, 1 - (1 - step) ** steps)
    f = torch.where(step > 1e-300, lr * gain / torch.where(step > 1e-300, step, 1.0), steps * lr)
    return f * moment


def per_prompt_similarity(model_residuals: torch.Tensor, algorithm_residuals: torch.Tensor) -> torch.Tensor:
    """Their SimE: the cosine of two residual vectors ŷ − y of one prompt across its positions, averaged over
    prompts; (L, B, N) × (K, B, N) → (L, K)."""
    def unit(residuals):
        return residuals / residuals.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(residuals.dtype).tiny)
    return torch.einsum("lbn,kbn->lk", unit(model_residuals), unit(algorithm_residuals)) / model_residuals.shape[1]


def algorithm_residuals(prompt: Prompt, settings: "Settings") -> dict[str, torch.Tensor]:
    """ŷ − y at every position of every prompt, per step: Newton steps 1..K (their α = 1/‖SSᵀ‖_F) and GD at
    their lr on their step grid, (K, B, N) each."""
    newton = [Newton(k, scale=NEWTON_SCALE).predict(prompt.xs, prompt.ys) for k in newton_steps(settings)]
    gd = [summed_loss_gd(prompt.xs, prompt.ys, k) for k in settings.gd_step_counts]
    return {name: torch.stack(preds) - prompt.ys for name, preds in (("newton", newton), ("gd", gd))}


def newton_steps(settings: "Settings") -> range:
    return range(1, settings.newton_steps + 1)


def similarity_heatmaps(model, tuning: Prompt, probes: Prompt, algorithms: dict) -> dict[str, torch.Tensor]:
    """Layer × step SimE against each algorithm, (L, K), the model read out at every layer in float64."""
    model = copy.deepcopy(model).to(dtype=torch.float64).eval()
    residuals = layer_predictions(model, layer_readouts(model, tuning), probes) - probes.ys
    return {name: per_prompt_similarity(residuals, steps) for name, steps in algorithms.items()}


def _exact_rows(settings: "Settings") -> list[dict]:
    rows = []
    for name, result in newton_residual_gaps().items():
        for k, (gap, norm) in enumerate(zip(result["gaps"], result["norms"])):
            rows.append({"part": "exact", "design": name, "quantity": "newton_residual_gap", "step": k, "value": gap})
            rows.append({"part": "exact", "design": name, "quantity": "newton_residual_norm", "step": k,
                         "value": norm})
    for kappa in settings.kappas:
        newton, gd = counted_steps(kappa)
        rows += [{"part": "exact", "kappa": kappa, "quantity": "newton_steps_counted", "value": newton},
                 {"part": "exact", "kappa": kappa, "quantity": "newton_steps_formula",
                  "value": newton_steps_to_tolerance(kappa, EPS)},
                 {"part": "exact", "kappa": kappa, "quantity": "gd_steps_counted", "value": gd},
                 {"part": "exact", "kappa": kappa, "quantity": "gd_steps_formula",
                  "value": gd_steps_to_tolerance(kappa, EPS)}]
    return rows


def measure(measurement) -> dict:
    settings = measurement.settings
    task = settings.task
    rows = _exact_rows(settings)
    tuning = measurement.prompts(task, "tuning", settings.probe_prompts)
    probes = measurement.prompts(task, "probe", settings.probe_prompts)
    test = measurement.prompts(task, "test", TEST_PROMPTS)
    algorithms = algorithm_residuals(probes, settings)
    labels = {"newton": list(newton_steps(settings)), "gd": list(settings.gd_step_counts)}
    for seed, model in enumerate(measurement.models["gpt"]):
        heatmaps = similarity_heatmaps(model, tuning, probes, algorithms)
        best = {}
        for algorithm, heatmap in heatmaps.items():
            steps = labels[algorithm]
            best[algorithm] = [steps[index] for index in heatmap.argmax(dim=1).tolist()]
            rows += [{"part": "trained", "seed": seed, "algorithm": algorithm, "layer": layer, "step": step,
                      "quantity": "similarity", "value": float(heatmap[layer - 1, column])}
                     for layer in range(1, heatmap.shape[0] + 1) for column, step in enumerate(steps)]
            rows += [{"part": "trained", "seed": seed, "algorithm": algorithm, "layer": layer, "step": step,
                      "quantity": "best_step", "value": step} for layer, step in enumerate(best[algorithm], start=1)]
        layers = list(range(1, len(best["newton"]) + 1))
        error, error_se = mean_and_standard_error(query_squared_errors(model, test))
        fit = {"newton_slope": least_squares_slope(layers, best["newton"]),
               "gd_log2_slope": least_squares_slope(layers, [math.log2(step) for step in best["gd"]]),
               "relative_error": error / (task.trivial_error() * task.dim),
               "relative_error_se": error_se / (task.trivial_error() * task.dim)}
        rows += [{"part": "trained", "seed": seed, "quantity": key, "value": value} for key, value in fit.items()]
    return {"rows": rows}


def _values(results: dict, quantity: str, **match) -> list:
    return [row["value"] for row in results["rows"] if row["quantity"] == quantity
            and all(row.get(key) == value for key, value in match.items())]


def checks(results: dict, settings: Settings) -> list[Check]:
    out = []
    for design in ("isotropic", "ill-conditioned"):
        out.append(exact(f"max_k≤{EXACT_NEWTON_STEPS} ‖(I − M_k S) − (I − αS²)^(2^k)‖₂, {design} "
                         f"(d = {EXACT_DIM}, n = {EXACT_POINTS})", 0.0,
                         max(_values(results, "newton_residual_gap", design=design)), tolerance=EXACT_TOLERANCE))
    for algorithm in ("newton", "gd"):
        counted = _values(results, f"{algorithm}_steps_counted")
        formula = _values(results, f"{algorithm}_steps_formula")
        out.append(exact(f"{algorithm} steps to ε = {EPS:g}: max |counted − formula| over κ ∈ "
                         f"{list(settings.kappas)}", 0.0, max(abs(a - b) for a, b in zip(counted, formula)),
                         tolerance=0.0))
    rows = results["rows"]
    out.append(claim_check("learns-in-context", "precondition, the model learned in context: its error at the last "
                           "query / E[y²]", LEARNED_FRACTION, seed_values(rows, "relative_error", part="trained"),
                           relation="at_most",
                           source="Fu et al. 2023, Fig. 2: the transformer matches least squares (error 0 at n = 2d)"))
    out.append(claim_check("newton-linear",
                           "slope of the best-matching Newton step against the layer (steps per layer)", NEWTON_SLOPE,
                           seed_values(rows, "newton_slope", part="trained"), tolerance=NEWTON_SLOPE_BAND,
                           source=FIGURE_3 + ": ~3 Newton iterations per layer, closer to 3 than to 1"))
    out.append(claim_check("gd-exponential", "growth factor per layer of the best-matching GD step, "
                           "2^(slope of log₂ step)", GD_GROWTH,
                           [2 ** slope for slope in seed_values(rows, "gd_log2_slope", part="trained")],
                           relation="at_least", source=SEC_2 + ": a Newton step ≙ doubling GD's steps"))
    return out


def _mean_heatmap(results: dict, algorithm: str) -> tuple[list, list, list[list[float]]]:
    """(steps, layers, values[step][layer]): the SimE heatmap averaged over seeds, steps down, layers across."""
    rows = [row for row in results["rows"] if row["quantity"] == "similarity" and row["algorithm"] == algorithm]
    layers = sorted({row["layer"] for row in rows})
    steps = sorted({row["step"] for row in rows})
    cells: dict[tuple, list[float]] = {}
    for row in rows:
        cells.setdefault((row["step"], row["layer"]), []).append(row["value"])
    return steps, layers, [[sum(cells[step, layer]) / len(cells[step, layer]) for layer in layers] for step in steps]


def _best_curve(results: dict, algorithm: str, label: str) -> Curve:
    """The best-matching step per layer: the mean over seeds with its 95 % interval (layers are a few values)."""
    layers = sorted(set(row["layer"] for row in results["rows"] if row["quantity"] == "best_step"
                        and row["algorithm"] == algorithm))
    per_layer = [seed_values(results["rows"], "best_step", algorithm=algorithm, layer=layer) for layer in layers]
    return seed_curve(label, layers, list(zip(*per_layer)), continuous=False)


def _heatmap_panel(results: dict, algorithm: str, title: str) -> Panel:
    steps, layers, values = _mean_heatmap(results, algorithm)
    return Panel("layer", f"{title} steps", [], title=f"SimE: layers vs {title} (mean over seeds)",
                 heatmap=Heatmap(values, steps, layers, "residual cosine per prompt (SimE)"))


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 3: SimE heatmaps of the layers against Newton steps and GD steps (their log grid), the best step
    per layer, and the exact steps-to-ε against κ (Newton O(log κ), GD O(κ))."""
    kappas = list(settings.kappas)
    layers = sorted(set(row["layer"] for row in results["rows"] if row["quantity"] == "best_step"))
    newton_best = _best_curve(results, "newton", "Newton (best step)")
    gd_best = _best_curve(results, "gd", f"GD, lr {GD_LR:g} (best step)")
    linear = Curve(f"{NEWTON_SLOPE:g} Newton steps per layer (paper)", layers,
                   [newton_best.y[0] + NEWTON_SLOPE * (layer - layers[0]) for layer in layers], baseline=True,
                   continuous=False)
    doubling = Curve(f"GD ×{GD_GROWTH:g} per layer (required at least)", layers,
                     [gd_best.y[0] * GD_GROWTH ** (layer - layers[0]) for layer in layers], baseline=True,
                     continuous=False)
    return [
        _heatmap_panel(results, "newton", "Newton"),
        _heatmap_panel(results, "gd", "GD"),
        Panel("layer", "best-matching step", [newton_best, gd_best, linear, doubling], yscale="log",
              title="best-matching step per layer"),
        Panel("condition number κ", f"steps to residual ε = {EPS:g}",
              [Curve("Newton (counted)", kappas, _values(results, "newton_steps_counted")),
               Curve("GD (counted)", kappas, _values(results, "gd_steps_counted")),
               Curve("⌈log₂(log ε / log r_N)⌉", kappas, _values(results, "newton_steps_formula"), baseline=True),
               Curve("⌈log ε / log r_G⌉", kappas, _values(results, "gd_steps_formula"), baseline=True)],
              xscale="log", yscale="log", title="Newton O(log κ) vs GD O(κ)"),
    ]


REPRODUCTION = Reproduction(
    name="fu-2023",
    paper=PAPER,
    summary="Transformer layers match iterative Newton steps linearly (about 3 Newton iterations per layer) but "
          "gradient-descent steps only exponentially, as Newton's quadratic convergence predicts.",
    caption="Fig. 3 of the paper: SimE heatmaps (residual cosine per prompt across positions) of each GPT layer "
            "against iterative Newton steps and GD steps (lr 0.01, log grid), the best-matching step per layer, "
            "and exact steps to ε against κ",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=3.6,  # CPU minutes (user + sys) of `repro run --scale quick`, 3 seeds
    long_minutes=8.5,  # CPU minutes (user + sys) of the gallery's long run with the quick re-measurement (2026-12-04)
)
