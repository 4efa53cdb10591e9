"""Fu, Chen, Jia & Sharan (NeurIPS 2024), "Transformers learn higher-order optimization methods for in-context
learning: a study with linear models", Sec. 2–4 and Fig. 3 (layer × algorithm-step heatmaps).

Setting (the authors' src/conf/base.yaml and linear_regression.yaml, DeqingFu/transformers-icl-higher-order):
a GPT-2 transformer (12 layers, 8 heads, width 256: Garg et al.'s "standard" size) trained on in-context
linear regression, x ~ N(0, I_20), w ~ N(0, I_20), noiseless y = wᵀx, prompts of 41 points, Adam at lr 1e-4,
batch 64, 500k steps with Garg et al.'s curriculum (dimensions 5 → 20 by 1 every 2000 steps, points 11 → 41
by 2 every 2000).  Each layer is read out by a linear probe of its hidden state (icl-sim's ``readout="fitted"``:
a least-squares read-out per layer, fitted on separate prompts) and compared with iterative Newton
(Newton–Schulz: M_0 = αS, M_{k+1} = 2M_k − M_k S M_k, α = 2/‖SSᵀ‖_F as in their code; ``theory.Newton``) and
with GD, by the cosine of the residuals ŷ − y (their SimE; icl-sim's ``probe`` takes it across prompts at the
final query, theirs per prompt across positions).  Their eval_similarity.py matches Newton steps 1..23 and
GD steps 2⁰..2¹² (log scale).

Claims (``CLAIMS``):

* ``learns-in-context`` (Fig. 2): the trained transformer solves in-context linear regression, its error at
  n = 2d near least squares' (0 here: noiseless, n ≥ d).  Threshold: at most 10 % of the trivial error E[y²],
  set by this reproduction when it was written (the paper states no number);
* ``newton-linear`` (abstract, Fig. 3): the best-matching Newton step grows linearly with the layer, "each
  middle layer roughly computing 3 iterations".  Threshold: the abstract's 3, with a band of ± 1.5 set by this
  reproduction when it was written;
* ``gd-exponential`` (abstract, Fig. 3, Sec. 2): the best-matching GD step grows exponentially: GD needs
  exponentially more steps per additional layer, because Newton's residual on an eigenvalue λ is
  (1 − αλ²)^(2^k) and GD's (1 − ηλ)^t (Sec. 2), so one Newton step is worth doubling the GD steps.
  Threshold: a growth factor ≥ 2 per layer, from that closed form (one Newton step ≙ a doubling).

Checked here:

* exact (float64, ``icl_sim.theory.formulas``): the Newton residual I − M_k S equals (I − αS²)^(2^k) for
  S = XᵀX of a prompt in their setting (d = 20, n = 40), isotropic and ill-conditioned (κ(Σ) = 100);
  the steps to a residual ε = 1e-6 counted by running Newton and GD with their optimal scalings equal
  ``newton_steps_to_tolerance`` (O(log κ)) and ``gd_steps_to_tolerance`` (O(κ)) over κ from 1.5 to 1000;
  (sanity checks: the library's own Newton and GD and their closed forms);
* trained, precondition (claim ``learns-in-context``): the model has learned in context at all (its error at
  the last query, n = 2d, at most 10 % of E[y²]; Fig. 2: the transformer matches least squares), without
  which the step matches below are vacuous (an untrained model's residuals look alike for every small-step
  GD run);
* trained (claims ``newton-linear`` and ``gd-exponential``): the slope of the best-matching Newton step
  against the layer, expected 3 ± 1.5 (abstract: "roughly 3"; the band is ours), and the per-layer growth
  factor of the best-matching GD step, 2^(slope of log₂ step against layer), at least 2 (one Newton step ≙
  doubling the GD steps, Sec. 2; with 3 Newton steps per layer the paper's reading is a factor 8).

Each claim check holds one value per training seed, from that seed's model alone: its error ratio, its
Newton slope, and its GD growth factor 2^(its own log₂ slope) (the mean over seeds of these growth factors,
not 2 to the mean slope).

Quick scale (what was shrunk, and why): a 4-layer, width-64, 4-head GPT on d = 4 with 9-point prompts
(n/d = 2 as theirs), 1500 steps of Adam at 2e-3 (200 warm-up steps, cosine decay), batch 64, no curriculum:
depth 12 → 4, width 256 → 64, d 20 → 4 and 500k → 1500 steps.  **Quick scale departs from GPT-2's
initialisation**: its weights are drawn with std 0.1 instead of GPT-2's 0.02 (``GPTConfig.init_std``; residual
projections still shrunk by 1/√(2·layers)); ``full`` keeps the authors' 0.02 (HF GPT2Model,
initializer_range).  Why: with std 0.02 this model sits on the loss plateau of the trivial predictor for the
whole CPU budget (loss 3.98 at step 1500 against E[y²] = 4, error at the last query 0.99 E[y²], every layer
matching Newton step 1 and GD step 1; a 5-layer variant at lr 1e-3, a d = 2 variant and the same model for
6000 steps did not leave it either), so no step match could be read; with std 0.1 (one thread, same seed) the
loss leaves the plateau by step 300 and the error at the last query is 0.12/3.92 of E[y²] by step 1500
(std 0.3 was slower: 2.4/3.9 at step 1050).  Task, model family, loss and measures are unchanged; only the
initial weight scale is.  Measured (quick run, one thread): error at the last query 0.063
E[y²]; best-matching Newton steps per layer 1, 3, 5, 6 (slope 1.7 per layer, inside the paper's 3 ± 1.5),
best-matching GD steps 1, 32, 64, 128 (×4.6 per layer): Newton steps grow linearly, GD steps exponentially.
The slope sits in the lower part of the band (the paper's ~3 is for 12 layers at d = 20, 500k steps), and
the residual cosines peak at 0.55–0.6, lower than the paper's heatmaps (a far smaller, shorter-trained
model).  CPU: 145 s user + 7 s sys on one thread
(443 s of wall time under a load of ~6 on the 2-core machine; the 1024-prompt probes take about a third).
``full`` is the authors' setting; ``smoke`` trains 5 steps.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact, mean_and_standard_error
from icl_sim.config import Curriculum, TrainConfig
from icl_sim.plots import Curve, Panel, seed_curve
from icl_sim.probing import probe
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import fu_alpha, gd_steps_to_tolerance, newton_iterates, newton_steps_to_tolerance

from .measures import query_squared_errors, seed_values
from .runner import held_out_prompts
from .spec import Claim, Paper, Reproduction

PAPER = Paper("D. Fu, T.-Q. Chen, R. Jia, V. Sharan", "Transformers learn higher-order optimization methods for "
              "in-context learning: a study with linear models", "NeurIPS 2024", "2310.17086")
FIGURE_3 = "Fu et al. 2023, Fig. 3 and abstract"
SEC_2 = "Fu et al. 2023, Sec. 2 (iterative Newton, M_{k+1} = 2M_k − M_k S M_k); Pan & Schreiber 1991"
#: their eval_similarity.py: Newton steps 1..23, GD steps 2^0..2^12
NEWTON_STEPS = 23
GD_STEP_COUNTS = tuple(2 ** k for k in range(13))
#: the exact part: prompts of their setting (d = 20, n = 40) and the κ grid of the step counts
EXACT_DIM, EXACT_POINTS, EXACT_NEWTON_STEPS, EXACT_TOLERANCE = 20, 40, 14, 1e-9
ILL_CONDITIONED_KAPPA = 100.0
KAPPAS = (1.5, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
EPS = 1e-6
#: the trained-model checks: Newton steps per layer (abstract: "roughly 3"; band ours), GD growth per layer
NEWTON_SLOPE, NEWTON_SLOPE_BAND, GD_GROWTH = 3.0, 1.5, 2.0
#: the precondition: the model has learned in context, its error at the last query (n = 2d, where least
#: squares is exact) at most this fraction of the trivial error E[y²] (Fu et al. Fig. 2: it matches OLS)
LEARNED_FRACTION = 0.1

CLAIMS = (
    Claim("learns-in-context", "The trained transformer solves in-context linear regression: at n = 2d its error at "
          "the query is near least squares' (0, noiseless)", "Fu et al. 2023, Fig. 2"),
    Claim("newton-linear", "The best-matching iterative Newton step grows linearly with the layer, each middle layer "
          "computing roughly 3 iterations", FIGURE_3),
    Claim("gd-exponential", "The best-matching GD step grows exponentially with the layer: GD needs exponentially "
          "more steps than Newton, one Newton step being worth a doubling of GD's", FIGURE_3 + "; Sec. 2"),
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
                      lr_schedule="constant", probe_prompts=128, kappas=(1.5, 10.0, 100.0), newton_steps=4,
                      gd_step_counts=(1, 4, 16)),
    "quick": Settings(dim=4, points=9, layers=4, width=64, heads=4, steps=1500, batch_size=64, lr=2e-3,
                      warmup_steps=200, lr_schedule="cosine", probe_prompts=1024, init_std=0.1),
    # the authors' src/conf: GPT-2 12 layers, 8 heads, width 256, d = 20, 41 points, Adam 1e-4, batch 64, 500k steps
    "full": Settings(dim=20, points=41, layers=12, width=256, heads=8, steps=500_001, batch_size=64, lr=1e-4,
                     warmup_steps=0, lr_schedule="constant", probe_prompts=2048, curriculum=True),
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


# -- the trained part -----------------------------------------------------------------------------

def _heatmap(result: dict) -> dict[int, dict[int, float]]:
    table: dict[int, dict[int, float]] = {}
    for record in result["records"]:
        if record["metric"] == "residual_cosine":
            table.setdefault(record["layer"], {})[record["step"]] = record["value"]
    return table


def _slope(xs, ys) -> float:
    """Least-squares slope of ys on xs."""
    x, y = torch.tensor(xs, dtype=torch.float64), torch.tensor(ys, dtype=torch.float64)
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def measure(measurement) -> dict:
    settings = measurement.settings
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
    task = settings.task
    fits = []
    for seed, model in enumerate(measurement.models["gpt"]):
        common = dict(num_prompts=settings.probe_prompts, device=measurement.device, readout="fitted")
        newton = probe(model, task, "newton", steps=settings.newton_steps, **common)
        gd = probe(model, task, "gd", step_counts=settings.gd_step_counts, **common)
        for algorithm, result in (("newton", newton), ("gd", gd)):
            for layer, steps in _heatmap(result).items():
                rows += [{"part": "trained", "seed": seed, "algorithm": algorithm, "layer": layer, "step": step,
                          "quantity": "residual_cosine", "value": value} for step, value in steps.items()]
            rows += [{"part": "trained", "seed": seed, "algorithm": algorithm, "layer": layer, "step": step,
                      "quantity": "best_step", "value": step} for layer, step in result["best"].items()]
        layers = sorted(newton["best"])
        fit = {"seed": seed, "newton_slope": _slope(layers, [newton["best"][layer] for layer in layers]),
               "gd_log2_slope": _slope(layers, [math.log2(gd["best"][layer]) for layer in layers]),
               "gd_lr": gd["parameters"].get("lr")}
        test = held_out_prompts(task, "test", settings.probe_prompts, measurement.device)
        fit["relative_error"], fit["relative_error_se"] = (
            value / (task.trivial_error() * task.dim)
            for value in mean_and_standard_error(query_squared_errors(model, test)))
        fits.append(fit)
        rows += [{"part": "trained", "seed": seed, "quantity": key, "value": value} for key, value in fit.items()
                 if key != "seed"]
    return {"rows": rows, "fits": fits}


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
                           source=FIGURE_3 + ": ~3 Newton iterations per layer"))
    out.append(claim_check("gd-exponential", "growth factor per layer of the best-matching GD step, "
                           "2^(slope of log₂ step)", GD_GROWTH,
                           [2 ** slope for slope in seed_values(rows, "gd_log2_slope", part="trained")],
                           relation="at_least", source=SEC_2 + ": a Newton step ≙ doubling GD's steps"))
    return out


def _best_curve(results: dict, algorithm: str, label: str) -> Curve:
    """The best-matching step per layer: the mean over seeds with its 95 % interval (layers are a few values)."""
    layers = sorted(set(row["layer"] for row in results["rows"] if row["quantity"] == "best_step"
                        and row["algorithm"] == algorithm))
    per_layer = [seed_values(results["rows"], "best_step", algorithm=algorithm, layer=layer) for layer in layers]
    return seed_curve(label, layers, list(zip(*per_layer)), continuous=False)


def _heat_curves(results: dict, algorithm: str) -> list[Curve]:
    """The layer × step heatmap as one residual-cosine curve per layer (mean over seeds, 95 % interval)."""
    layers = sorted(set(row["layer"] for row in results["rows"] if row["quantity"] == "residual_cosine"
                        and row["algorithm"] == algorithm))
    curves = []
    for layer in layers:
        steps = sorted(set(row["step"] for row in results["rows"] if row["quantity"] == "residual_cosine"
                           and row["algorithm"] == algorithm and row["layer"] == layer))
        per_step = [seed_values(results["rows"], "residual_cosine", algorithm=algorithm, layer=layer, step=step)
                    for step in steps]
        curves.append(seed_curve(f"layer {layer}", steps, list(zip(*per_step))))
    return curves


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 3 as curves: residual cosine of each layer against Newton steps and GD steps (log), the best
    step per layer, and the exact steps-to-ε against κ (Newton O(log κ), GD O(κ))."""
    kappas = list(settings.kappas)
    layers = sorted(set(row["layer"] for row in results["rows"] if row["quantity"] == "best_step"))
    newton_best = _best_curve(results, "newton", "Newton (best step)")
    gd_best = _best_curve(results, "gd", "GD (best step)")
    linear = Curve(f"{NEWTON_SLOPE:g} steps per layer (paper)", layers,
                   [newton_best.y[0] + NEWTON_SLOPE * (layer - layers[0]) for layer in layers], baseline=True)
    doubling = Curve(f"×{GD_GROWTH:g} per layer (required at least)", layers,
                     [gd_best.y[0] * GD_GROWTH ** (layer - layers[0]) for layer in layers], baseline=True)
    return [
        Panel("Newton step k", "residual cosine (SimE)", _heat_curves(results, "newton"),
              title="trained layers vs iterative Newton"),
        Panel("GD steps", "residual cosine (SimE)", _heat_curves(results, "gd"), xscale="log",
              title="trained layers vs GD"),
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
    caption="Fig. 3 of the paper: residual cosine of each GPT layer against Newton steps and GD steps (log), "
            "the best-matching step per layer, and exact steps to ε against κ",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=2.5,  # CPU minutes (user + sys) of `repro run --scale quick`, one thread
)
