"""Raventós, Paul, Chen & Ganguli (NeurIPS 2023), "Pretraining task diversity and the emergence of non-Bayesian
in-context learning for regression", Sec. 2-3, Fig. 2.

Setting (Sec. 2; the authors' icl/configs/example.py): x ~ N(0, I_D), y = wᵀx + ε with ε ~ N(0, σ²), σ² = 0.25
(noise_scale 0.5), D = 8, K = 16 in-context examples, every one of the K positions a query (next-token MSE over
all positions). Pretraining draws w uniformly from a pool of M tasks w⁽¹⁾ … w⁽ᴹ⁾ ~ N(0, I_D) fixed before
training (T_Pretrain), M = 2^0 … 2^20, or afresh from N(0, I_D) (M = ∞, T_True). Model: GPT-2, 8 layers,
embedding 128, 2 heads, weights at N(0, 0.02²) (icl/gpt2.py); Adam, lr 1e-3 with the triangle schedule
(icl/optim.py: linear rise to the peak over 250k steps, linear decay to 0 at 500k), batch 256.

Two Bayes estimators frame the result: on T_Pretrain the posterior mean over the pool, dMMSE
(``icl_sim.theory.DiscreteMMSE``: w ↦ Σ_m w_m softmax_m(−‖y − Xw_m‖²/2σ²)), and on T_True ridge with
λ = σ²/s² (``Ridge``).  Distance between predictors (their ΔPMT): the squared prediction difference per
dimension, averaged over the K positions and the prompts, Δ(A, B) = E[(1/K) Σ_k (f_A(S_k) − f_B(S_k))²] / D,
on pool prompts (T_Pretrain) and on Gaussian-prior prompts (T_True).  On T_True ridge is the posterior mean,
so Δ(f, Ridge) is exactly f's excess MSE/D over ridge's (tested).

Claims (``CLAIMS``), one value per training seed (seed k's ratios from seed k's PT alone):

* ``dmmse-below-threshold`` (Fig. 2 / Sec. 3): below the threshold the trained transformer (PT) behaves like
  dMMSE.  Checked at the smallest pool past M = 1 (quick: M = 4): Δ(PT, dMMSE)/Δ(PT, Ridge) ≤ 1 on both
  prompt sets (the contrast: closer to dMMSE than to ridge; there the two differ by 1.9 and 0.75 times
  ridge's MSE/D at quick scale).  M = 1 is a sanity check: one task, which any trained model learns and which
  dMMSE predicts exactly.
* ``ridge-above-threshold`` (Fig. 2 / Sec. 3): above it the PT behaves like ridge, closer to ridge than to dMMSE
  even on its own pool's prompts, where dMMSE is Bayes-optimal (the "non-Bayesian" ICL of the title), and with
  ridge's MSE on unseen tasks.  Checked at the largest finite pool where dMMSE and ridge still differ visibly
  (``checked_pools``: Δ(dMMSE, Ridge) ≥ 0.2 × ridge's MSE/D on both prompt sets, from the baselines alone,
  before any model is looked at): Δ(PT, dMMSE)/Δ(PT, Ridge) ≥ 2 on both sets (a margin fixed before
  running: twice as close to ridge as to dMMSE in squared distance; the ratio 1 alone passes by chance
  where the two nearly coincide), and the PT's MSE/D on T_True within 20 % of ridge's there and at M = ∞
  (this reproduction's band, set when it was written; Fig. 2 shows the curves meeting, the paper states no
  number).  Why 0.2: a PT inside that band is within 0.2 × ridge's MSE/D of ridge (the identity above), so a
  ratio of 2 needs the two estimators at least about that far apart.

Δ(dMMSE, Ridge) / ridge's MSE/D at D = 4, K = 8 (no training, 2048 prompts; T_True, T_Pretrain): M = 4: 1.89,
0.75; 16: 0.93, 0.47; 64: 0.41, 0.23; 256: 0.17, 0.12; 1024: 0.063, 0.045; 4096: 0.021, 0.018.  The previous
quick sweep's largest pool, 1024, was where the two nearly coincide, so its ratios there (1.12 on T_True,
1.21 on T_Pretrain) could not tell ridge from dMMSE; the quick pools now stop at 64, the largest power of 4
past the 0.2 criterion.

Sanity checks: dMMSE on pool prompts with M = 1 has risk σ² exactly (``derive_finite_pool``); ridge's risk on
T_True is the Bayes risk s² E tr(I + XᵀX/λ)⁻¹ + σ² (``ridge_bayes_risk``); dMMSE beats ridge on its own pool
and loses to it on T_True (posterior means are optimal under their own prior); the PT on M = 1 is closer to
dMMSE than to ridge.

Scales.  ``full``: the authors' settings above (icl/configs/example.py, icl/optim.py's triangle, icl/gpt2.py),
on M = 2^0, 2^2, …, 2^20 (the paper's range, every second power) and ∞.  ``quick`` shrinks sizes: D = 4,
K = 8 (the largest D this budget allows: 5 pools × 3 seeds of 2000 steps already take the 10 minutes, and
at D = 8 the sequence doubles and the pool where dMMSE and ridge separate moves up by orders of magnitude),
a GPT of 3 layers × 32 wide (2 heads) at the authors' initialisation N(0, 0.02²), 2000 Adam steps of batch 64
(lr 5e-3, warm-up 100, cosine), M ∈ {1, 4, 16, 64, ∞}.  ``long`` (where ``ridge-above-threshold`` is decided)
keeps quick's sizes and batch and takes the paper's optimiser, Adam at 1e-3 with the triangle (rising over the
first half), for 10 000 steps on M ∈ {1, 4, 64, ∞}, 5 seeds.  Its recipe was chosen on one development seed
(7777, M = ∞, training loss only; no claim check looked at): quick's 5e-3 with cosine stayed on the trivial
plateau for all 10 000 steps (loss 4.23 at the end, E[y²] = 4.25), the paper's 1e-3 triangle left it after ~1500
steps and ended at 2.17.  Smoke runs a few steps to test the pipeline.

The initialisation, re-examined: the previous quick scale drew weights at std 0.2, chosen after runs at the
paper's 0.02 stayed on the trivial predictor's plateau at M = ∞ (2 layers × 32, 1500 steps, lr 3e-3: MSE/D 2.19 ×
ridge's; 1000-2500 steps, widths 32-64, lr 1e-3-3e-3, with or without Garg's curriculum: never left it) and
after comparing std 0.1 and 0.2 on single seeds (0.1 "fragile": left the plateau with one initial draw, not
with another).  That is a setting chosen until a check passed, so quick now keeps the paper's 0.02 and
reports what it gives.
Measured at quick scale, 3 seeds (0, 1, 2; 2026-12-02; 429 s user + 10 s sys, 7.3 CPU minutes, for the 15 runs,
which train as one ensemble; 35.5 min of wall time on the 2 shared cores under a load of 7-15):
``dmmse-below-threshold`` HOLDS: Δ(PT, dMMSE)/Δ(PT, Ridge) at M = 4 is 0.522, 0.503, 0.479 on T_True and 0.255,
0.321, 0.257 on T_Pretrain (required ≤ 1; the untrained models: 1.45 and 1.51).  ``ridge-above-threshold`` is
DEFERRED to full scale: at the paper's initialisation no large-pool PT leaves the trivial predictor's plateau in
2000 steps (final training loss at M = ∞ 4.21, the trivial E[y²] = 4.25): its MSE/D on T_True is 2.187 × ridge's
for every seed (the untrained models: 2.19), the PT on M = 64 is at 1.90, 2.19, 2.18 × ridge's, and its ratios
at M = 64 are 1.03, 0.98, 0.98 (T_True) and 1.23, 1.17, 1.17 (T_Pretrain), required ≥ 2.  The M = 1 sanity checks
pass (ratios 4e-4, 9e-4).  Larger steps or weights would be a setting chosen until the check passes; the full
scale (500k steps, the triangle schedule) is where the paper shows the claim.
Fresh seed block (2026-12-04, nothing changed at quick): ``dmmse-below-threshold`` holds on seeds 200-202,
Δ(PT, dMMSE)/Δ(PT, Ridge) at M = 4 0.532, 0.573, 0.552 on T_True and 0.283, 0.332, 0.427 on T_Pretrain; the
untrained control fails both claims by finite values.  A second fresh block, seeds 300-302 (2026-12-04): it holds
again, 0.593, 0.529, 0.540 (T_True) and 0.243, 0.297, 0.287 (T_Pretrain); the untrained control fails both claims.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, monte_carlo, two_sample
from icl_sim.config import TrainConfig
from icl_sim.evaluation import bootstrap_interval
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.tasks import LinearRegression
from icl_sim.theory import DiscreteMMSE, Ridge
from icl_sim.theory.formulas import ridge_bayes_risk_samples
from icl_sim.theory.formulas.risk_curves import derive_finite_pool, sigma
from icl_sim.theory.symbolic import torch_function

from .spec import Claim, Paper, Reproduction

PAPER = Paper("A. Raventós, M. Paul, F. Chen, S. Ganguli",
              "Pretraining task diversity and the emergence of non-Bayesian in-context learning for regression",
              "NeurIPS 2023", "2306.15063")
FIGURE_2 = "Raventós et al. 2023, Fig. 2 / Sec. 3"
SECTION_2 = "Raventós et al. 2023, Sec. 2 (dMMSE and ridge are the Bayes estimators of T_Pretrain and T_True)"
PRIOR_SCALE = 1.0
POOL_SEED = 0
INFINITE = 0  # pool_size 0: a fresh w ~ N(0, I) per prompt (T_True)
PROMPT_SETS = ("T_True", "T_Pretrain")
#: beyond the threshold the PT must be at least this many times closer (squared distance) to ridge than to dMMSE
RIDGE_MARGIN = 2.0
#: "PT ≈ ridge": its MSE/D on T_True within this fraction of ridge's
RIDGE_BAND = 0.2
#: a pool where dMMSE and ridge differ visibly: Δ(dMMSE, Ridge) at least this fraction of ridge's MSE/D on both
#: prompt sets, so that a PT inside the ridge band (distance to ridge ≤ RIDGE_BAND of its MSE on T_True) can be
#: RIDGE_MARGIN times closer to ridge than to dMMSE
VISIBLE = RIDGE_BAND

CLAIMS = (
    Claim("dmmse-below-threshold", "Below the task-diversity threshold (the smallest pools) the pretrained transformer "
          "behaves like dMMSE, the Bayes estimator of its finite pool: it is closer to dMMSE than to ridge on pool "
          "and on Gaussian-prior prompts", FIGURE_2),
    Claim("ridge-above-threshold", "Above the threshold (the largest finite pool, and M = ∞) it behaves like ridge, "
          "the Bayes estimator of the Gaussian prior: closer to ridge than to dMMSE even on its own pool's prompts, "
          "where dMMSE is optimal, and with ridge's MSE on unseen tasks", FIGURE_2, decided_at="long",
          reason="at quick scale (3 seeds, the paper's initialisation N(0, 0.02²), 2000 steps) no large-pool PT leaves "
                 "the trivial predictor's plateau: MSE/D on T_True 2.187 × ridge's at M = ∞ (untrained: 2.19), 1.90, "
                 "2.19, 2.18 × at M = 64 (required 1 ± 0.2); Δ(PT, dMMSE)/Δ(PT, Ridge) at M = 64 1.03, 0.98, 0.98 "
                 "(T_True) and 1.23, 1.17, 1.17 (T_Pretrain), required ≥ 2; on a development seed (7777, M = ∞) "
                 "quick's lr 5e-3 with cosine stays there over 10 000 steps (training loss 4.23, trivial 4.25) while "
                 "the paper's 1e-3 with the triangle leaves it (2.17)",
          analysis="At long (seeds 0-4, the long scale's first run) the claim is INCONCLUSIVE.  At M = 64 every seed is "
                   "ridge-like: Δ(PT, dMMSE)/Δ(PT, Ridge) 3.69, 2.39, 5.90, 3.92, 5.80 on T_True and 2.78, 2.08, 3.73, "
                   "2.82, 3.69 on T_Pretrain (required ≥ 2; the untrained PT 0.99 and 1.17), MSE/D 1.06-1.17 times "
                   "ridge's; at M = ∞ four seeds are within 7 % of ridge (1.05, 1.06, 1.05, 1.07) but seed 0 is at "
                   "1.44 (95 % CI [0.92, 1.35] against 1 ± 0.2): its training loss was still falling at step 10 000 "
                   "(2.74, the other seeds 2.04), having left the plateau later.  The non-Bayesian half, ridge-like on "
                   "the pool's own prompts where dMMSE is optimal, holds on every seed."),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale."""

    dim: int
    points: int  # K: every position is a query
    noise: float  # σ
    pool_sizes: tuple[int, ...]  # M; 0 = ∞
    n_embd: int
    n_layer: int
    n_head: int
    steps: int
    batch_size: int
    lr: float
    warmup_steps: int
    lr_schedule: str
    test_prompts: int
    bayes_samples: int
    init_std: float = 0.02  # GPT-2's, as the authors' icl/gpt2.py (nanoGPT: normal(0.02))

    def task(self, pool_size: int) -> LinearRegression:
        return LinearRegression(dim=self.dim, points=self.points, noise=self.noise, prior_scale=PRIOR_SCALE,
                                pool_size=pool_size, pool_seed=POOL_SEED)


SCALES = {
    "smoke": Settings(dim=2, points=6, noise=0.5, pool_sizes=(1, 16, INFINITE), n_embd=16, n_layer=1, n_head=2,
                      steps=5, batch_size=16, lr=1e-3, warmup_steps=1, lr_schedule="cosine", test_prompts=128,
                      bayes_samples=500),
    "quick": Settings(dim=4, points=8, noise=0.5, pool_sizes=(1, 4, 16, 64, INFINITE), n_embd=32, n_layer=3,
                      n_head=2, steps=2000, batch_size=64, lr=5e-3, warmup_steps=100, lr_schedule="cosine",
                      test_prompts=4096, bayes_samples=20_000),
    # the authors' icl/configs/example.py (Adam, lr 1e-3, batch 256, 500k steps) with their triangle schedule
    # (icl/optim.py: linear rise to the peak at 250k steps, linear decay to 0 at 500k)
    "full": Settings(dim=8, points=16, noise=0.5, pool_sizes=tuple(2**k for k in range(0, 21, 2)) + (INFINITE,),
                     n_embd=128, n_layer=8, n_head=2, steps=500_000, batch_size=256, lr=1e-3, warmup_steps=250_000,
                     lr_schedule="triangle", test_prompts=65_536, bayes_samples=100_000),
}
#: long: quick's sizes (D = 4, K = 8, the 3 × 32 GPT at the paper's init 0.02, batch 64) on the paper's optimiser
#: (Adam at 1e-3, the triangle rising over the first half), 10 000 steps, 5 seeds; the pools the claims read
#: (M = 4 below the threshold, 64 above it, ∞) and M = 1's sanity check
SCALES["long"] = dataclasses.replace(SCALES["quick"], pool_sizes=(1, 4, 64, INFINITE), steps=10_000, lr=1e-3,
                                     warmup_steps=5000, lr_schedule="triangle")


def _label(pool_size: int) -> str:
    return "∞" if pool_size == INFINITE else str(pool_size)


def runs(settings: Settings) -> dict[str, TrainConfig]:
    return {f"M-{_label(m)}": TrainConfig(
        task="linear-regression", task_params=dataclasses.asdict(settings.task(m)), model="gpt",
        model_params={"n_embd": settings.n_embd, "n_layer": settings.n_layer, "n_head": settings.n_head,
                      "init_std": settings.init_std},
        steps=settings.steps, batch_size=settings.batch_size, lr=settings.lr, warmup_steps=settings.warmup_steps,
        lr_schedule=settings.lr_schedule, loss_on="all", log_every=max(settings.steps // 20, 1),
        checkpoint_every=settings.steps) for m in settings.pool_sizes}


def _mean_band(values: torch.Tensor) -> tuple[float, float, float]:
    """Mean over prompts of per-prompt values (P,) with its 95 % bootstrap interval."""
    mean, low, high = bootstrap_interval(values[:, None])
    return float(mean[0]), float(low[0]), float(high[0])


def _row(m: int, prompt_set: str, seed: int | None, quantity: str, values: torch.Tensor) -> dict:
    """One results row: ``quantity``'s mean over prompts and its bootstrap band (seed None: a baseline's)."""
    mean, low, high = _mean_band(values)
    return {"pool_size": _label(m), "pool_size_value": m or float("inf"), "prompts": prompt_set, "seed": seed,
            "quantity": quantity, "mean": mean, "ci_low": low, "ci_high": high}


def _prompt_sets(measurement, m: int) -> dict:
    """The held-out prompts of pool M = ``m``: Gaussian-prior prompts (T_True) and, for a finite pool, its own."""
    settings: Settings = measurement.settings
    sets = {"T_True": measurement.prompts(settings.task(INFINITE), "test", settings.test_prompts)}
    if m != INFINITE:
        sets["T_Pretrain"] = measurement.prompts(settings.task(m), "test", settings.test_prompts, index=1)
    return sets


def measure(measurement) -> dict:
    """Per pool and prompt set: the baselines' MSE/D and their distance Δ(dMMSE, Ridge) (rows of seed None), and
    per seed the PT's MSE/D and its distance to each baseline."""
    settings: Settings = measurement.settings
    dim, ridge = settings.dim, Ridge(settings.noise**2 / PRIOR_SCALE**2)
    rows, samples = [], {}
    for m in settings.pool_sizes:
        models = [copy.deepcopy(model).double().eval() for model in measurement.models[f"M-{_label(m)}"]]
        for prompt_set, prompt in _prompt_sets(measurement, m).items():
            baselines = {"Ridge": ridge.predict(prompt.xs, prompt.ys)}
            if m != INFINITE:
                baselines["dMMSE"] = DiscreteMMSE(settings.task(m).weight_pool(), settings.noise).predict(
                    prompt.xs, prompt.ys)
            samples[(m, prompt_set)] = {name: (p - prompt.ys) ** 2 for name, p in baselines.items()}  # (P, K)
            for name, errors in samples[(m, prompt_set)].items():
                rows.append(_row(m, prompt_set, None, f"mse_{name}", errors.mean(dim=1) / dim))
            if "dMMSE" in baselines:
                rows.append(_row(m, prompt_set, None, "distance_dMMSE_Ridge",
                                 (baselines["dMMSE"] - baselines["Ridge"]).square().mean(dim=1) / dim))
            for seed, model in enumerate(models):
                with torch.no_grad():
                    pt = model.predict(prompt.xs, prompt.ys)
                rows.append(_row(m, prompt_set, seed, "mse_PT", (pt - prompt.ys).square().mean(dim=1) / dim))
                for name, p in baselines.items():
                    rows.append(_row(m, prompt_set, seed, f"distance_PT_{name}", (pt - p).square().mean(dim=1) / dim))
    return {"rows": rows, "samples": samples,
            "bayes": {n: ridge_bayes_risk_samples(n, dim, PRIOR_SCALE, settings.noise, samples=settings.bayes_samples)
                      for n in (dim, settings.points - 1)}}


def per_seed(results: dict, m: int, prompt_set: str, quantity: str) -> list[float]:
    """``quantity``'s mean over prompts for each seed, in seed order (the models of pool M = ``m``)."""
    found = {r["seed"]: r["mean"] for r in results["rows"] if r["seed"] is not None
             and r["pool_size"] == _label(m) and r["prompts"] == prompt_set and r["quantity"] == quantity}
    return [found[seed] for seed in sorted(found)]


def baseline(results: dict, m: int, prompt_set: str, quantity: str) -> dict:
    """The row of a baseline quantity (the same for every seed) of pool M = ``m``."""
    return next(r for r in results["rows"] if r["seed"] is None and r["pool_size"] == _label(m)
                and r["prompts"] == prompt_set and r["quantity"] == quantity)


def visible(results: dict, m: int) -> bool:
    """Whether dMMSE and ridge differ visibly at pool M = ``m``: Δ(dMMSE, Ridge) ≥ VISIBLE × ridge's MSE/D on
    both prompt sets (from the baselines alone, before any model is looked at)."""
    return all(baseline(results, m, prompts, "distance_dMMSE_Ridge")["mean"]
               >= VISIBLE * baseline(results, m, prompts, "mse_Ridge")["mean"] for prompts in PROMPT_SETS)


def checked_pools(results: dict, settings: Settings) -> tuple[int, int]:
    """(the smallest pool past M = 1, where the PT should be dMMSE-like; the largest finite pool where dMMSE and
    ridge still differ visibly, where it should be ridge-like; the largest finite pool if none does)."""
    finite = [m for m in settings.pool_sizes if m != INFINITE]
    candidates = [m for m in finite[1:] if visible(results, m)]
    return finite[min(1, len(finite) - 1)], max(candidates, default=finite[-1])


def _ratios(results: dict, m: int, prompt_set: str) -> list[float]:
    """Seed k's Δ(PT, dMMSE)/Δ(PT, Ridge) at pool M = ``m``, from seed k's PT alone."""
    return [to_dmmse / to_ridge for to_dmmse, to_ridge in zip(per_seed(results, m, prompt_set, "distance_PT_dMMSE"),
                                                            per_seed(results, m, prompt_set, "distance_PT_Ridge"))]


def baseline_checks(results: dict, settings: Settings) -> list[Check]:
    """The baselines against their closed forms and the Bayes inequalities (sanity)."""
    samples, noise, found = results["samples"], settings.noise, []
    finite = [m for m in settings.pool_sizes if m != INFINITE]
    if 1 in finite:
        formula = float(torch_function(derive_finite_pool()[-1].expression.rhs, [sigma])(noise))
        check = monte_carlo("dMMSE risk on pool prompts, M = 1 (all positions) = σ²", formula,
                            samples[(1, "T_Pretrain")]["dMMSE"].mean(dim=1))
        found.append(dataclasses.replace(check, source=SECTION_2 + "; finite-pool-bayes claim (c)"))
    ridge_errors = samples[(settings.pool_sizes[0], "T_True")]["Ridge"]
    for n, bayes in results["bayes"].items():
        check = two_sample(f"ridge risk on T_True after n = {n} examples = Bayes risk "
                           "s² E tr(I + XᵀX/λ)⁻¹ + σ²", bayes, ridge_errors[:, n])
        found.append(dataclasses.replace(check, source=SECTION_2 + "; ridge_bayes_risk"))
    for m in finite[1:2]:
        own = samples[(m, "T_Pretrain")]
        check = monte_carlo(f"[inequality] risk(Ridge) − risk(dMMSE) > 0 on its pool, M = {m}", 0.0,
                            (own["Ridge"] - own["dMMSE"]).mean(dim=1), relation="at_least")
        found.append(dataclasses.replace(check, source=SECTION_2))
        true = samples[(m, "T_True")]
        check = monte_carlo(f"[inequality] risk(dMMSE, M = {m}) − risk(Ridge) > 0 on T_True", 0.0,
                            (true["dMMSE"] - true["Ridge"]).mean(dim=1), relation="at_least")
        found.append(dataclasses.replace(check, source=SECTION_2))
    return found


def checks(results: dict, settings: Settings) -> list[Check]:
    found = baseline_checks(results, settings)
    small, large = checked_pools(results, settings)
    # M = 1: one task, which any trained model learns; dMMSE is that task itself (sanity, not the claim)
    if 1 in settings.pool_sizes and small != 1:
        for prompt_set in PROMPT_SETS:
            ratios = _ratios(results, 1, prompt_set)
            found.append(Check(f"trained PT on M = 1 closer to dMMSE than to ridge on {prompt_set}: mean over seeds "
                               "of Δ(PT, dMMSE)/Δ(PT, Ridge)", 1.0, sum(ratios) / len(ratios), relation="at_most",
                               source=FIGURE_2 + " (one task: the PT learns it)"))
    for prompt_set in PROMPT_SETS:  # below the threshold: closer to dMMSE (the contrast)
        found.append(claim_check("dmmse-below-threshold", f"Δ(PT, dMMSE)/Δ(PT, Ridge) at M = {small} on {prompt_set} "
                                 "(dMMSE-like)", 1.0, _ratios(results, small, prompt_set), relation="at_most",
                                 source=FIGURE_2))
    for prompt_set in PROMPT_SETS:  # beyond it: closer to ridge, by the margin, where the two still differ
        delta = baseline(results, large, prompt_set, "distance_dMMSE_Ridge")["mean"]
        found.append(claim_check("ridge-above-threshold", f"Δ(PT, dMMSE)/Δ(PT, Ridge) at M = {large} on {prompt_set} "
                                 f"(ridge-like; there Δ(dMMSE, Ridge) = {delta:.3g})", RIDGE_MARGIN,
                                 _ratios(results, large, prompt_set), relation="at_least",
                                 source=FIGURE_2 + f" (closer to ridge; our margin ×{RIDGE_MARGIN:g})"))
    # beyond the threshold the PT solves unseen tasks near-optimally (seed k's MSE/D over ridge's, same prompts)
    for m in dict.fromkeys((large, INFINITE)):
        if m in settings.pool_sizes:
            ridge = baseline(results, m, "T_True", "mse_Ridge")["mean"]
            found.append(claim_check("ridge-above-threshold", f"MSE/D of the PT trained on M = {_label(m)} over "
                                     "ridge's, on T_True", 1.0, [pt / ridge for pt in per_seed(results, m, "T_True",
                                                                                             "mse_PT")],
                                     tolerance=RIDGE_BAND,
                                     source=FIGURE_2 + " (beyond the threshold: PT ≈ ridge on T_True; our band)"))
    return found


def _power_label(m: int) -> str:
    """A pool size as the paper's axis writes it: 2^k (∞ for T_True)."""
    return "∞" if m == INFINITE else f"$2^{{{m.bit_length() - 1}}}$"


def figure(results: dict, settings: Settings) -> list[Panel]:
    finite = [m for m in settings.pool_sizes if m != INFINITE]
    # ∞ is drawn one factor of 4 past the largest finite pool, and named on the axis
    xs = {m: (m if m != INFINITE else 4 * max(finite)) for m in settings.pool_sizes}
    ticks = [(xs[m], _power_label(m)) for m in settings.pool_sizes]

    def curve(label, prompt_set, quantity, pools):
        """A trained model's quantity: the mean over seeds with its 95 % interval over seeds."""
        picked = [m for m in pools if per_seed(results, m, prompt_set, quantity)]
        seeds = list(zip(*(per_seed(results, m, prompt_set, quantity) for m in picked)))
        return seed_curve(label, [xs[m] for m in picked], seeds, continuous=False)

    def baseline_curve(label, prompt_set, quantity, pools):
        """A baseline's quantity (the same for every seed) with its bootstrap interval over prompts."""
        found = [baseline(results, m, prompt_set, quantity) for m in pools]
        return Curve(label, [xs[m] for m in pools], [r["mean"] for r in found], [r["ci_low"] for r in found],
                     [r["ci_high"] for r in found], baseline=True, continuous=False)

    def mse_panel(prompt_set, pools):
        xs_all = [xs[m] for m in pools]
        # E[y²]/D under the Gaussian prior (on pool prompts it depends on the drawn pool, so it is not drawn)
        trivial = [] if prompt_set != "T_True" else [Curve(
            "trivial (predict 0)", [min(xs_all), max(xs_all)], [settings.task(INFINITE).trivial_error()] * 2,
            baseline=True)]
        floor = settings.noise**2 / settings.dim
        return Panel("pretraining tasks M", f"MSE/D on {prompt_set}",
                     [curve("PT", prompt_set, "mse_PT", pools),
                      baseline_curve("dMMSE", prompt_set, "mse_dMMSE", finite),
                      baseline_curve("Ridge", prompt_set, "mse_Ridge", pools), *trivial],
                     [Target("σ²/D (noise floor)", floor, floor, floor)],
                     title=f"{prompt_set} prompts", xscale="log", yscale="log",
                     xticks=[tick for tick in ticks if tick[0] in xs_all])

    def distance_panel(prompt_set, pools):
        return Panel("pretraining tasks M", f"Δ = E(f_A − f_B)²/D on {prompt_set}",
                     [curve("Δ(PT, dMMSE)", prompt_set, "distance_PT_dMMSE", finite),
                      curve("Δ(PT, Ridge)", prompt_set, "distance_PT_Ridge", pools),
                      baseline_curve("Δ(dMMSE, Ridge)", prompt_set, "distance_dMMSE_Ridge", finite)],
                     title=f"distance to the Bayes estimators ({prompt_set})", xscale="log", yscale="log",
                     xticks=[tick for tick in ticks if tick[0] in [xs[m] for m in pools]])

    return [mse_panel("T_Pretrain", finite), mse_panel("T_True", settings.pool_sizes), distance_panel("T_Pretrain", finite),
            distance_panel("T_True", settings.pool_sizes)]


REPRODUCTION = Reproduction(
    name="raventos-2023",
    paper=PAPER,
    summary="Below a task-diversity threshold a pretrained transformer behaves like the Bayes estimator of its finite "
          "task pool (dMMSE); above it, like ridge regression, the Bayes estimator of the Gaussian prior.",
    caption="Fig. 2 of the paper: MSE/D of the PT, dMMSE and ridge on pool (T_Pretrain) and Gaussian (T_True) "
            "prompts, and the PT's distance to each (dashed: dMMSE's to ridge), against the number of pretraining "
            "tasks M",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=7.3,  # CPU minutes (user + sys) of the 3-seed quick run; 35.5 min wall at load 7-15
    long_minutes=35.7,  # CPU minutes (user + sys) of the 5-seed long run (107 min wall at a load of 3-11)
)
