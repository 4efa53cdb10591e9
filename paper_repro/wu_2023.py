"""Wu, Zou, Chen, Braverman, Gu & Bartlett (ICLR 2024), "How many pretraining tasks are needed for in-context
learning of linear regression?", Sec. 3-5 (Thm 4.1 and the comparison with the Bayes-optimal ridge).

Setting (Sec. 3): x ~ N(0, H) with H = I_d here, a task w ~ N(0, s² I_d) drawn afresh for every prompt,
y = wᵀx + ε with ε ~ N(0, σ²); a prompt holds N context pairs and a query.  The model is the linearly
parameterised single linear-attention layer ŷ = x_qᵀ Γ (1/N) Σ_j y_j x_j (our LSA with
``parameterisation="preconditioner"``: Γ is its only parameter).  Pretraining is one-pass SGD from Γ₀ = 0
on T independent prompts, each with its own task, so "the number of pretraining tasks" is T, with the
geometrically decaying step size of their Sec. 4 (constant for T/log T steps, then halved every
(T − T/log T)/log T steps; our ``lr_schedule="geometric"`` with log₂).

Claims (``CLAIMS``):

1. ``excess-risk-rate`` (Thm 4.1): the excess ICL risk R(Γ_T) − min_Γ R(Γ) of the SGD output decays like
   Õ(1/T) (dimension-free up to the effective dimension and log factors).  We train a sweep of T, compute the
   excess risk of each trained Γ_T *exactly* from the closed form ``preconditioner_risk`` (no test-set noise)
   minus the optimum ``preconditioned_gd_risk`` (Γ* = ((1 + 1/N) H + (tr H + σ²/s²)/N · I)⁻¹; Ahn et al. 2023
   Thm 1), average over the module's replicate runs (``Settings.seeds``) and fit the log-log slope over the
   variance-dominated end of the sweep, one slope per training seed.  Expected −1 (the theorem's rate) with a
   tolerance of 0.25, set when this reproduction was written: the Õ hides a log T factor (T/log T effective
   tasks shifts the local slope by 1/ln T ≈ 0.1-0.15 over 2^9-2^14) and seed-to-seed noise of the SGD output.
2. ``few-tasks-suffice`` (Thm 4.1; the abstract's "effective pretraining only requires a small number of
   independent tasks"): after the sweep's largest T the trained layer's risk (exact, from its Γ) is R(Γ*)
   within 5 % at each trained SNR, per training seed; the 5 % is this reproduction's, set when it was written.
3. Sec. 5 (sanity checks, not a claim: no trained model enters them): the optimal one-layer model is nearly
   Bayes optimal (risk ratio to the optimally tuned ridge λ = σ²/s² near 1) when the signal-to-noise ratio SNR
   = s² tr H / σ² is bounded, and far from it when the SNR is large.  Closed forms (derived here, isotropic H,
   n = N context points, λ = σ²/s²):
   R(Γ*) = σ² + s² d (d + 1 + λ)/(n + d + 1 + λ) (``one_step_gd_risk``); the Bayes risk
   R_B = σ² + s² E tr(I + XᵀX/λ)⁻¹ (``ridge_bayes_risk``, Monte Carlo over X only).  Jensen
   (E tr A⁻¹ ≥ tr (E A)⁻¹) gives R_B ≥ σ² + s² d λ/(λ + n), so R(Γ*)/R_B is at most
   [σ² + s² d (d + 1 + λ)/(n + d + 1 + λ)] / [σ² + s² d λ/(λ + n)], which tends to 1 as the SNR falls;
   and OLS bounds the Bayes risk from above, R_B ≤ σ² (1 + d/(n − d − 1)) (Hastie et al. 2022; n ≥ d + 2),
   so the ratio is at least R(Γ*)/[σ² (1 + d/(n − d − 1))], which grows like 1/σ² as the SNR rises.
   Checks: the measured ratio at SNR = 1 is below its Jensen bound (≈ 1.14 at d = 5, N = 10) and at SNR = 64
   above its OLS bound (≈ 11); as σ → 0 the OLS bound becomes tight (ridge → OLS), so the high-SNR check is
   taken where the Monte Carlo error (≈ 0.3 %) is well below the gap between the two.  Both thresholds are
   closed-form bounds.  That the trained layer reaches R(Γ*) (claim 2) carries them over to it.

Seeds.  The runner repeats every run over its block of training seeds; a replicate k of the sweep
("tasks-T-seed-k") is trained with seed k + the runner's seed, so at quick scale (4 replicates) runner
seeds 0 and 1 share three of their four replicate seeds and their per-seed slopes are not independent.
An untrained layer (Γ₀ = 0) fails both claims: its excess risk is the same for every T (slope 0) and its
risk is E y²'s.

Scales.  The paper is theoretical (no experiment table): ``full`` runs its exact protocol (batch 1: one
prompt, one task per SGD step) at d = 8, N = 16 over T = 2^8 … 2^17 with 8 seeds.  ``quick`` keeps the
protocol but takes minibatches of 16 prompts per SGD step (still one pass, every prompt a new task; the
Õ(1/T) rate is that of one-pass SGD on a least-squares problem in Γ, unchanged by a batch ≪ T) at d = 5,
N = 10, T = 2^7 … 2^14, 4 seeds, so that it fits in CPU minutes.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, seed_curve
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import one_step_gd_risk, preconditioned_gd_risk, preconditioner_risk, ridge_bayes_risk

from .spec import Claim, Paper, Reproduction

PAPER = Paper("J. Wu, D. Zou, Z. Chen, V. Braverman, Q. Gu, P. L. Bartlett",
              "How many pretraining tasks are needed for in-context learning of linear regression?", "ICLR 2024",
              "2310.08391")
THEOREM_4_1 = "Wu et al. 2024, Thm 4.1 (excess ICL risk of one-pass SGD = Õ(1/T))"
SECTION_5 = "Wu et al. 2024, Sec. 5 (pretrained attention vs Bayes-optimal ridge); bounds derived in the docstring"
PRIOR_SCALE = 1.0

CLAIMS = (
    Claim("excess-risk-rate", "The excess ICL risk of one-pass SGD on T independent tasks decays like Õ(1/T)",
          "Wu et al. 2024, Thm 4.1"),
    Claim("few-tasks-suffice", "A moderate number of pretraining tasks brings the layer to the optimal risk R(Γ*) "
          "at every SNR", "Wu et al. 2024, Thm 4.1 and abstract"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale: the problem, the sweep of pretraining tasks T, SGD, and the SNR comparison."""

    dim: int
    context: int  # N context points (the prompt has N + 1 points, the last the query)
    noise: float  # σ of the sweep over T
    tasks: tuple[int, ...]  # T: prompts = tasks seen in one pass
    fit_from: int  # the slope is fitted over T >= fit_from (variance-dominated end)
    batch_size: int
    lr: float
    seeds: int
    snrs: tuple[float, ...]  # SNR = s² d / σ² of the ratio curve (closed form)
    trained_snrs: tuple[float, ...]  # SNRs at which a model is trained on the largest T
    bayes_samples: int
    bounded_snr: float = 1.0
    high_snr: float = 64.0

    def task(self, noise: float) -> LinearRegression:
        return LinearRegression(dim=self.dim, points=self.context + 1, noise=noise, prior_scale=PRIOR_SCALE)

    def noise_at(self, snr: float) -> float:
        return math.sqrt(PRIOR_SCALE**2 * self.dim / snr)


SCALES = {
    "smoke": Settings(dim=3, context=6, noise=0.5, tasks=(32, 64, 128), fit_from=32, batch_size=16, lr=0.02,
                      seeds=1, snrs=(1.0, 64.0), trained_snrs=(1.0,), bayes_samples=500),
    "quick": Settings(dim=5, context=10, noise=0.5, tasks=tuple(2**k for k in range(7, 15)), fit_from=2**9,
                      batch_size=16, lr=0.02, seeds=4, snrs=(0.25, 1.0, 4.0, 16.0, 64.0, 500.0, 2000.0),
                      trained_snrs=(1.0, 16.0, 64.0, 500.0), bayes_samples=20_000),
    "full": Settings(dim=8, context=16, noise=0.5, tasks=tuple(2**k for k in range(8, 18)), fit_from=2**11,
                     batch_size=1, lr=0.002, seeds=8, snrs=(0.25, 1.0, 4.0, 16.0, 64.0, 500.0, 2000.0),
                     trained_snrs=(1.0, 500.0), bayes_samples=100_000),
}


def _config(settings: Settings, tasks: int, noise: float, seed: int) -> TrainConfig:
    steps = max(tasks // settings.batch_size, 1)
    return TrainConfig(task="linear-regression", task_params=dataclasses.asdict(settings.task(noise)), model="lsa",
                       model_params={"layers": 1, "parameterisation": "preconditioner", "init_scale": 0.0},
                       steps=steps, batch_size=settings.batch_size, optimizer="sgd", lr=settings.lr,
                       lr_schedule="geometric", loss_on="last", seed=seed, log_every=steps, checkpoint_every=steps)


def runs(settings: Settings) -> dict[str, TrainConfig]:
    sweep = {f"tasks-{t}-seed-{k}": _config(settings, t, settings.noise, k)
             for t in settings.tasks for k in range(settings.seeds)}
    trained = {f"snr-{snr:g}": _config(settings, settings.tasks[-1], settings.noise_at(snr), 0)
               for snr in settings.trained_snrs}
    return {**sweep, **trained}


def _risk(model, settings: Settings, noise: float) -> float:
    """Exact ICL risk of a trained layer from its Γ: ``preconditioner_risk`` with H = I."""
    gamma = model.preconditioner.detach().to("cpu", torch.float64)[0, 0]
    identity = torch.eye(settings.dim, dtype=torch.float64)
    return float(preconditioner_risk(gamma, identity, settings.context, noise, PRIOR_SCALE))


def _optimum(settings: Settings, noise: float) -> float:
    identity = torch.eye(settings.dim, dtype=torch.float64)
    return float(preconditioned_gd_risk(identity, settings.context, noise, PRIOR_SCALE))


def ratio_bounds(dim: int, context: int, noise: float, prior_scale: float = PRIOR_SCALE) -> tuple[float, float]:
    """(OLS lower bound, Jensen upper bound) on R(Γ*)/R_Bayes, isotropic x (see the module docstring)."""
    lam, s2 = noise**2 / prior_scale**2, prior_scale**2
    optimum = one_step_gd_risk(dim, context, noise, prior_scale)
    bayes_low = noise**2 + s2 * dim * lam / (lam + context)
    bayes_high = noise**2 * (1 + dim / (context - dim - 1)) if context >= dim + 2 else math.inf
    return optimum / bayes_high, optimum / bayes_low


def measure(measurement) -> dict:
    settings: Settings = measurement.settings
    models = measurement.models
    rows = []
    optimum = _optimum(settings, settings.noise)
    for t in settings.tasks:
        for k in range(settings.seeds):
            for seed, model in enumerate(models[f"tasks-{t}-seed-{k}"]):
                risk = _risk(model, settings, settings.noise)
                rows.append({"kind": "sweep", "tasks": t, "seed": seed, "replicate": k, "risk": risk,
                             "optimal_risk": optimum, "excess_risk": risk - optimum})
    for snr in sorted(set(settings.snrs) | set(settings.trained_snrs)):
        noise = settings.noise_at(snr)
        bayes, bayes_se = ridge_bayes_risk(settings.context, settings.dim, PRIOR_SCALE, noise,
                                           samples=settings.bayes_samples)
        optimal = one_step_gd_risk(settings.dim, settings.context, noise, PRIOR_SCALE)
        low, high = ratio_bounds(settings.dim, settings.context, noise)
        rows.append({"kind": "snr", "snr": snr, "noise": noise, "bayes_risk": bayes, "bayes_risk_se": bayes_se,
                     "optimal_risk": optimal, "ratio": optimal / bayes,
                     "ratio_low": optimal / (bayes + 1.96 * bayes_se),
                     "ratio_high": optimal / (bayes - 1.96 * bayes_se),
                     "ols_lower_bound": low, "jensen_upper_bound": high})
        for seed, model in enumerate(models.get(f"snr-{snr:g}", [])):
            trained = _risk(model, settings, noise)
            rows.append({"kind": "trained", "snr": snr, "seed": seed, "trained_risk": trained,
                         "optimal_risk": optimal, "trained_ratio": trained / bayes})
    return {"rows": rows}


def excess_by_tasks(results: dict, seed: int | None = None) -> dict[int, list[float]]:
    """The excess risks of the sweep by T (of training seed ``seed`` alone, or of all)."""
    by_tasks: dict[int, list[float]] = {}
    for row in results["rows"]:
        if row["kind"] == "sweep" and (seed is None or row["seed"] == seed):
            by_tasks.setdefault(row["tasks"], []).append(row["excess_risk"])
    return by_tasks


def sweep_seeds(results: dict) -> list[int]:
    """The training seeds of the sweep, in order."""
    return sorted({row["seed"] for row in results["rows"] if row["kind"] == "sweep"})


def fitted_slope(results: dict, fit_from: int, seed: int | None = None) -> float:
    """Least-squares slope of log(mean excess risk) against log T over T >= ``fit_from`` (the mean over the
    replicates of training seed ``seed``, or over all rows)."""
    points = [(math.log(t), math.log(sum(v) / len(v))) for t, v in sorted(excess_by_tasks(results, seed).items())
              if t >= fit_from and sum(v) > 0]
    if len(points) < 2:
        return math.nan
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def _snr_row(results: dict, snr: float) -> dict:
    return next(row for row in results["rows"] if row["kind"] == "snr" and row["snr"] == snr)


def _trained(results: dict, snr: float, key: str) -> list[float]:
    """``key`` of the layer trained at ``snr``, one value per training seed, in seed order."""
    rows = sorted((row for row in results["rows"] if row["kind"] == "trained" and row["snr"] == snr),
                  key=lambda row: row["seed"])
    return [row[key] for row in rows]


def checks(results: dict, settings: Settings) -> list[Check]:
    bounded, high = _snr_row(results, settings.bounded_snr), _snr_row(results, settings.high_snr)
    slopes = [fitted_slope(results, settings.fit_from, seed) for seed in sweep_seeds(results)]
    found = [
        claim_check("excess-risk-rate", f"log-log slope of the excess ICL risk against T (T ≥ {settings.fit_from})",
                    -1.0, slopes, tolerance=0.25, source=THEOREM_4_1),
        Check(f"R(Γ*)/R_Bayes at SNR = {settings.bounded_snr:g} (Jensen upper bound)", bounded["jensen_upper_bound"],
              bounded["ratio_high"], relation="at_most", source=SECTION_5),
        Check(f"R(Γ*)/R_Bayes at SNR = {settings.high_snr:g} (OLS lower bound)", high["ols_lower_bound"],
              high["ratio_low"], relation="at_least", source=SECTION_5),
    ]
    for snr in settings.trained_snrs:
        ratios = [risk / optimal for risk, optimal in zip(_trained(results, snr, "trained_risk"),
                                                          _trained(results, snr, "optimal_risk"))]
        found.append(claim_check("few-tasks-suffice", f"trained layer's risk / R(Γ*) at SNR = {snr:g}, "
                                 f"T = {settings.tasks[-1]}", 1.0, ratios, tolerance=0.05,
                                 source="Wu et al. 2024, Thm 4.1; R(Γ*) = one_step_gd_risk (Mahankali et al. 2023 "
                                        "Thm 1)"))
    return found


def figure(results: dict, settings: Settings) -> list[Panel]:
    ts = sorted(excess_by_tasks(results))
    seeds = sweep_seeds(results)
    per_seed = [[sum(v) / len(v) for _, v in sorted(excess_by_tasks(results, seed).items())] for seed in seeds]
    means = [sum(v) / len(v) for _, v in sorted(excess_by_tasks(results).items())]
    slopes = [fitted_slope(results, settings.fit_from, seed) for seed in seeds]
    slope = sum(slopes) / len(slopes)
    anchor = next((m for t, m in zip(ts, means) if t >= settings.fit_from), means[-1])
    start = next((t for t in ts if t >= settings.fit_from), ts[-1])
    reference = Curve("∝ 1/T (Thm 4.1)", ts, [anchor * start / t for t in ts], baseline=True)
    sweep = Panel("pretraining tasks T", "excess ICL risk R(Γ_T) − R(Γ*)",
                  [seed_curve(f"trained layer (slope {slope:.2f})", ts, per_seed), reference],
                  title=f"d = {settings.dim}, N = {settings.context}, σ = {settings.noise:g}", xscale="log",
                  yscale="log")
    snr_rows = sorted((r for r in results["rows"] if r["kind"] == "snr"), key=lambda r: r["snr"])
    snrs = [r["snr"] for r in snr_rows]
    trained_snrs = sorted(settings.trained_snrs)
    trained = [list(values) for values in zip(*(_trained(results, snr, "trained_ratio") for snr in trained_snrs))]
    ratio = Panel("SNR = s² tr H / σ²", "risk / Bayes (ridge λ = σ²/s²) risk", [
        Curve("optimal one-layer R(Γ*) / R_Bayes", snrs, [r["ratio"] for r in snr_rows],
              [r["ratio_low"] for r in snr_rows], [r["ratio_high"] for r in snr_rows]),
        seed_curve("trained layer (T max)", trained_snrs, trained, continuous=False),
        Curve("Jensen upper bound", snrs, [r["jensen_upper_bound"] for r in snr_rows], baseline=True),
        Curve("OLS lower bound", snrs, [r["ols_lower_bound"] for r in snr_rows], baseline=True),
    ], xscale="log", yscale="log")
    return [sweep, ratio]


REPRODUCTION = Reproduction(
    name="wu-2023",
    paper=PAPER,
    summary="One-pass SGD on T independent tasks brings a single linear-attention layer to its optimum with excess "
          "risk Õ(1/T), and that optimum is nearly Bayes optimal at bounded SNR but not at high SNR.",
    caption="Thm 4.1 and Sec. 5 of the paper: excess ICL risk against the number of pretraining tasks, and the "
            "risk ratio of the one-layer optimum to the Bayes ridge against SNR",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=0.5,  # `repro run --all --scale quick`, one thread on the 2-core machine
)
