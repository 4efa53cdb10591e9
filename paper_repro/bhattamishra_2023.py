"""Bhattamishra, Patel, Blunsom & Kanade (ICLR 2024), "Understanding in-context learning in transformers and LLMs by
learning to learn discrete functions", Sec. 3-5, Table 1 and the accuracy-vs-examples figures.

Setting (Sec. 3; the authors' code github.com/satwik77/incontext-bool, ``src/bool_tasks.py``, followed by
``icl_sim.tasks.boolean``): prompts (x_1, f(x_1), …, x_N, f(x_N)) with x ∈ {±1}^n and f drawn per prompt from a
Boolean class; the model predicts every label from the examples before it (cross-entropy on all positions) and is
scored by its accuracy at each position, against the class's optimal learner and nearest neighbours.  Classes here:
conjunctions (literal prior 0.15/0.15/0.7, 30 % of the points planted positive), disjunctions (the De Morgan
mirror), and parities over a uniformly random subset of the n bits, without and with a *teaching sequence* (the basis
e_1 … e_n first, which identifies the parity; ``teaching=True``).  Model: the authors' GPT-2 (their README: 12 layers,
width 256, 8 heads, Adam lr 1e-4, batch 64, 15 000 steps, n = 28), here the library's ``gpt``.

Claims (``CLAIMS``; Table 1 / Fig. 2, Sec. 5), each checked per training seed (the 95 % interval of the mean
over seeds):

* ``conjunctions-near-optimal``: Transformers nearly match the optimal learner on conjunctions and disjunctions
  (the elimination algorithm, Valiant 1984), well above nearest neighbours.  Checks (disjunctions only where a
  model is trained on them, the full scale): after n examples (positions i ≥ n) the model's accuracy is within
  0.05 of elimination's closed form — our band for "nearly match" (Fig. 2), set when this reproduction was
  written, the paper states no number — and above 1-NN's by 3 s.e. (the contrast of Table 1).  Deferred below
  full scale: see "What CPU scale does not give reliably" below.
* ``parity-needs-teaching``: on parities Transformers stay at chance although GF(2) elimination learns them from
  O(n) examples; trained with teaching sequences they learn them (accuracy ≈ 1 right after the n teaching
  examples).  "At chance" alone holds for any model that has learned nothing (an untrained one is at chance), so
  it is one claim with the teaching contrast.  Checks: without teaching, |acc − 1/2| ≤ 0.02 (or 3 s.e. if
  larger; our band, fixed when it was written; Table 1 reports ≈ 50 %), on the queries no context-free rule can
  know — not a repeat of an earlier point, not the all-(−1) input (labelled −1 by every parity) — where any
  learner without GF(2) reasoning is right with probability exactly 1/2 (at small n repeats are frequent: at
  n = 6 and i = 23 one has probability 0.30, and copying a repeat's label is not learning a parity); with
  teaching, after the teaching sequence within 0.05 of GF(2) elimination (which is exact there; our band, as
  above); and the model trained with teaching above the one trained without at the same positions, by 3 s.e.
  (the contrast of Sec. 5; each seed's teaching model against the same seed's plain one).

A check's standard error, where it has one, is the seeds' mean Monte Carlo standard error over test prompts.

Exact learners.  Each optimal learner's curve has a closed form on these distributions
(``icl_sim.theory.formulas.boolean_learning``): elimination's error after i examples sums, over the number r of
literals, the chance that a positive query meets an irrelevant coordinate on which all earlier positives took the
other value; GF(2) elimination is right exactly when the query is in the span of the context and at chance
otherwise, acc(i) = 1/2 + E[2^{rank_i}]/2^{n+1} with the GF(2) rank law of i uniform vectors; with the teaching
sequence it is 1/2 before position n and 1 from n on; 1-nearest-neighbour on a parity is right on an exact repeat
and at chance otherwise, acc(i) = 1/2 + (1 − (1 − 2^{−n})^i)/2.  The Monte Carlo curves of the library's learners
are checked against these (3 standard errors), the rank law against ``parity_rank``.

Full scale, and where each setting comes from: n = 28, GPT-2 12 layers × 256 wide with 8 heads, Adam lr 1e-4, batch
64, 15 000 steps: the authors' README command (``src.train … -n_dims 28 -n_embd 256 -n_layer 12 -n_head 8
-batch_size 64 -learning_rate 0.0001 -train_steps 15000``); N = 70 examples: the ``boolean`` task's default, stated
there as the paper's (the authors' ``args.py`` defaults to 40 points and the README command leaves it unset; the
paper's own text could not be read from here, only its abstract and the authors' code).  The authors' published
code has teaching sequences for conjunctions and DNFs but none for parities; the parity teaching sequence here is
the standard basis (a minimal teaching set of the class), so the parity-with-teaching setting is ours.

Quick scale shrinks sizes only: N = 24 examples, n = 5 bits for conjunctions (elimination is at 0.99 by position
16) and n = 6 for parities (GF(2) elimination reaches rank 6 after ≈ 8 examples), a GPT of 2 layers × 32 wide
(2 heads), Adam lr 3e-3 with 10 % warm-up and cosine decay, batch 64; 3000 steps for conjunctions, 1500 for each
parity run (one budget, so that the teaching contrast is at equal training).  Why n = 6 for parities: at n = 5 the
class has only 32 functions and the model trained without teaching started to learn it in context (0.547 on the
chance queries at positions ≥ n, 20 s.e. above 1/2, in our first quick run), a small-class effect that the paper's
n = 28 (2^28 parities) excludes; at n = 6 the same budget gives 0.517 ± 0.002 there: inside our 0.02 band for
chance, but still 8 s.e. above 1/2 (a residue of the same effect, which the band, fixed before this run, tolerates).

What CPU scale does not give reliably: the conjunction model reaches elimination only after leaving a plateau
where it behaves like nearest neighbours / averaging (training loss ≈ 0.45), and when it leaves it depends on the
seed.  In our trials at n = 5, N = 24 with this model, 2 of 5 runs came within 0.05 of elimination after n
(seed 0 with these settings: gap 0.018; batch 32 × 6000 steps, seed 2: −0.006), while 3 stayed near 1-NN
(gaps 0.076 for seed 0 with 5 % warm-up, 0.099 for seed 1, 0.074 for seed 1 at batch 32 × 6000 steps).
``--seeds 3`` at quick scale may therefore fail the conjunction checks; the paper's scale (Table 1) is what they are
for, so ``conjunctions-near-optimal`` is declared ``needs="full"``: below it its checks are measured and reported,
neither held nor failed.  A parity model at chance is weak evidence at this budget on its own (an untrained model is
at chance too); the informative part is the contrast with the teaching run of the same size and steps, which is why
both are one claim.  Smoke runs a few steps to test the pipeline.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact, mean_and_standard_error, monte_carlo
from icl_sim.config import TrainConfig
from icl_sim.evaluation import bootstrap_interval, prompt_errors
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.tasks import Boolean
from icl_sim.theory.boolean_learners import parity_rank
from icl_sim.theory.formulas.boolean_learning import (accuracy_curve, conjunction_elimination_accuracy,
                                                      gf2_rank_distribution, nearest_neighbour_parity_accuracy,
                                                      parity_elimination_accuracy)

from .spec import Claim, Paper, Reproduction

PAPER = Paper("S. Bhattamishra, A. Patel, P. Blunsom, V. Kanade",
              "Understanding in-context learning in transformers and LLMs by learning to learn discrete functions",
              "ICLR 2024", "2310.03016")
TABLE_1 = "Bhattamishra et al. 2024, Table 1 / Fig. 2"
TEACHING = "Bhattamishra et al. 2024, Sec. 5 (teaching sequences)"
FORMULAS = "icl_sim.theory.formulas.boolean_learning"
#: the classes: run name -> the task's class parameters
CLASSES = {"conjunction": {"function": "conjunction"}, "disjunction": {"function": "disjunction"},
           "parity": {"function": "parity"}, "parity-teaching": {"function": "parity", "teaching": True}}
#: our band for "nearly match the optimal learner" (accuracy, after n examples)
NEAR_OPTIMAL = 0.05
#: our band for "at chance" (accuracy), on top of 3 standard errors
CHANCE_BAND = 0.02

CLAIMS = (
    Claim("conjunctions-near-optimal", "Transformers trained on conjunctions (and disjunctions) nearly match the "
          "optimal learner, elimination, after n examples, well above nearest neighbours", TABLE_1, needs="full",
          reason="at the quick scale (n = 5, N = 24) only 2 of 5 trial runs came within 0.05 of elimination after n "
                 "(gaps 0.018 and −0.006); 3 stayed near 1-NN (gaps 0.076, 0.099, 0.074): when the model leaves its "
                 "nearest-neighbour plateau depends on the seed"),
    Claim("parity-needs-teaching", "Transformers stay at chance on parities (which GF(2) elimination learns from O(n) "
          "examples), and learn them when prompts start with a teaching sequence: ≈ 1 after it, above the model "
          "trained without", "Bhattamishra et al. 2024, Table 1 and Sec. 5 (teaching sequences)"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale; ``trained`` names the classes a model is trained on (every class's learners are measured)."""

    n: int  # conjunctions and disjunctions
    parity_n: int  # parities, with and without teaching
    points: int
    trained: tuple[str, ...]
    n_embd: int
    n_layer: int
    n_head: int
    steps: int  # the parity runs (with and without teaching: one budget)
    conjunction_steps: int  # conjunctions and disjunctions
    batch_size: int
    lr: float
    warmup_fraction: float  # of each run's steps
    lr_schedule: str
    test_prompts: int

    def bits(self, name: str) -> int:
        """n of the class ``name``."""
        return self.parity_n if name.startswith("parity") else self.n

    def task(self, name: str) -> Boolean:
        return Boolean(n=self.bits(name), points=self.points, **CLASSES[name])


SCALES = {
    "smoke": Settings(n=4, parity_n=4, points=10, trained=("conjunction", "parity", "parity-teaching"), n_embd=16,
                      n_layer=1, n_head=2, steps=3, conjunction_steps=3, batch_size=16, lr=1e-3, warmup_fraction=0.1,
                      lr_schedule="cosine", test_prompts=128),
    "quick": Settings(n=5, parity_n=6, points=24, trained=("conjunction", "parity", "parity-teaching"), n_embd=32,
                      n_layer=2, n_head=2, steps=1500, conjunction_steps=3000, batch_size=64, lr=3e-3,
                      warmup_fraction=0.1, lr_schedule="cosine", test_prompts=4096),
    # the authors' README command (GPT-2 12 × 256, 8 heads, Adam 1e-4, batch 64, 15 000 steps, n = 28) and the
    # task's N = 70 examples; the paper trains every class at these settings
    "full": Settings(n=28, parity_n=28, points=70, trained=("conjunction", "disjunction", "parity", "parity-teaching"),
                     n_embd=256, n_layer=12, n_head=8, steps=15_000, conjunction_steps=15_000, batch_size=64,
                     lr=1e-4, warmup_fraction=0.0, lr_schedule="constant", test_prompts=8192),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    def config(name: str) -> TrainConfig:
        steps = settings.steps if name.startswith("parity") else settings.conjunction_steps
        return TrainConfig(task="boolean", task_params=dataclasses.asdict(settings.task(name)), model="gpt",
                           model_params={"n_embd": settings.n_embd, "n_layer": settings.n_layer,
                                         "n_head": settings.n_head},
                           steps=steps, batch_size=settings.batch_size, lr=settings.lr,
                           warmup_steps=int(settings.warmup_fraction * steps), lr_schedule=settings.lr_schedule, loss_on="all",
                           log_every=max(steps // 20, 1), checkpoint_every=steps)

    return {name: config(name) for name in settings.trained}


def closed_forms(name: str, settings: Settings) -> dict[str, list[float]]:
    """The exact accuracy curves of the class's learners (positions 0 … N − 1)."""
    n, points = settings.bits(name), settings.points
    if name in ("conjunction", "disjunction"):
        return {"Elimination": accuracy_curve(conjunction_elimination_accuracy, n, points)}
    if name == "parity":
        return {"GF(2) elimination": accuracy_curve(parity_elimination_accuracy, n, points),
                "Nearest neighbour": accuracy_curve(nearest_neighbour_parity_accuracy, n, points)}
    return {"GF(2) elimination": accuracy_curve(parity_elimination_accuracy, n, points, teaching=True)}


def repeated_queries(xs: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: the query at position i equals some earlier point j < i."""
    same = (xs[:, :, None, :] == xs[:, None, :, :]).all(-1)
    earlier = torch.ones(xs.shape[1], xs.shape[1], dtype=torch.bool, device=xs.device).tril(-1)
    return (same & earlier).any(-1)


def parity_chance_queries(xs: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: queries whose parity label no context-only rule can know: not a repeat of an earlier point and
    not the all-(−1) input (labelled −1 by every parity).  On them any learner without GF(2) reasoning over the
    context is right with probability exactly 1/2 under the uniform subset."""
    return ~repeated_queries(xs) & (xs > 0).any(-1)


def measure(measurement) -> dict:
    settings: Settings = measurement.settings
    rows, samples = [], {}
    for index, name in enumerate(CLASSES):
        task = settings.task(name)
        prompt = measurement.prompts(task, "test", settings.test_prompts, index=index)
        accuracies = {label: prompt_errors(predictor, prompt, "accuracy")
                      for label, predictor in task.baselines().items()}
        per_seed = [prompt_errors(copy.deepcopy(model).double().eval(), prompt, "accuracy")
                    for model in measurement.models.get(name, [])]
        samples[name] = {"accuracy": accuracies, "transformer": per_seed,
                         "chance_queries": parity_chance_queries(prompt.xs)}
        if name == "parity":
            samples[name]["rank"] = parity_rank(prompt.xs)
        forms = closed_forms(name, settings)
        curves = [("Transformer", seed, values) for seed, values in enumerate(per_seed)]
        for label, seed, values in [*curves, *((label, None, values) for label, values in accuracies.items())]:
            mean, low, high = bootstrap_interval(values)
            rows += [{"class": name, "n": settings.bits(name), "predictor": label, "seed": seed, "position": i,
                      "mean": float(m), "ci_low": float(lo), "ci_high": float(hi),
                      "closed_form": forms[label][i] if label in forms else float("nan")}
                     for i, (m, lo, hi) in enumerate(zip(mean, low, high))]
    return {"rows": rows, "samples": samples}


def _after(values: torch.Tensor, start: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-prompt mean of (P, N) ``values`` over positions ≥ ``start`` (where ``mask`` holds), for prompts with any."""
    keep = torch.ones_like(values, dtype=torch.bool) if mask is None else mask.clone()
    keep[:, :start] = False
    counts = keep.sum(1)
    return ((values * keep).sum(1) / counts.clamp(min=1))[counts > 0]


def _optimal_after(name: str, settings: Settings) -> float:
    """The optimal learner's closed-form accuracy averaged over positions ≥ n of class ``name``."""
    curve = next(iter(closed_forms(name, settings).values()))[settings.bits(name):]
    return sum(curve) / len(curve)


def _trained(samples: dict, name: str) -> list[torch.Tensor]:
    """The trained Transformer's (P, N) accuracies on class ``name``, one per seed (none if it is not trained)."""
    return samples.get(name, {}).get("transformer", [])


def _means_and_errors(per_seed) -> tuple[list[float], list[float]]:
    """Per seed, the mean of a per-prompt sample and its standard error."""
    found = [mean_and_standard_error(values) for values in per_seed]
    return [mean for mean, _ in found], [error for _, error in found]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def checks(results: dict, settings: Settings) -> list[Check]:
    samples, points = results["samples"], settings.points
    found = []
    # (a) the learners against their exact curves: the mean over positions (one sample per prompt) and position n
    for name, label in (("conjunction", "Elimination"), ("disjunction", "Elimination"),
                        ("parity", "GF(2) elimination"), ("parity", "Nearest neighbour"),
                        ("parity-teaching", "GF(2) elimination")):
        n, curve = settings.bits(name), closed_forms(name, settings)[label]
        values = samples[name]["accuracy"][label]
        found.append(monte_carlo(f"{label} on {name} (n = {n}): accuracy averaged over positions 0…{points - 1} = "
                                 "closed form", sum(curve) / points, values.mean(1), source=FORMULAS))
        if name != "parity-teaching":  # there exactly 1 from position n on: the exact check below
            found.append(monte_carlo(f"{label} on {name}: accuracy after n = {n} examples = closed form", curve[n],
                                     values[:, n], source=FORMULAS))
    n = settings.parity_n
    taught = samples["parity-teaching"]["accuracy"]["GF(2) elimination"]
    found.append(exact("GF(2) elimination after the teaching sequence: least accuracy over positions ≥ n (exactly 1)",
                       1.0, float(taught[:, n:].mean(0).min()), source=FORMULAS))
    found.append(monte_carlo(f"P(rank = n) of n = {n} uniform vectors of GF(2)^n (parity_rank)",
                             gf2_rank_distribution(n, n)[n], (samples["parity"]["rank"][:, n] == n).to(torch.float64),
                             source=FORMULAS))
    # (b) the trained models, one value per seed
    for name in ("conjunction", "disjunction"):
        models, n = _trained(samples, name), settings.bits(name)
        if not models:
            continue
        found.append(claim_check("conjunctions-near-optimal", f"{name}s: elimination (closed form) − Transformer, "
                                 f"accuracy over positions ≥ n = {n}", NEAR_OPTIMAL,
                                 [_optimal_after(name, settings) - float(model[:, n:].mean()) for model in models],
                                 relation="at_most",
                                 source=TABLE_1 + " (Transformers nearly match the optimal learner; the band is ours)"))
        means, errors = _means_and_errors(_after(model - samples[name]["accuracy"]["Nearest neighbour"], n)
                                          for model in models)
        found.append(claim_check("conjunctions-near-optimal",
                                 f"{name}s: Transformer − 1-NN, accuracy over positions ≥ n", 0.0, means,
                                 relation="at_least", tolerance=3 * _mean(errors),
                                 source=TABLE_1 + " (Transformer above nearest neighbours)"))
    n = settings.parity_n
    without, with_teaching = _trained(samples, "parity"), _trained(samples, "parity-teaching")
    if without:
        means, errors = _means_and_errors(_after(model, n, samples["parity"]["chance_queries"]) for model in without)
        found.append(claim_check("parity-needs-teaching", f"parity without teaching (n = {n}): Transformer accuracy "
                                 "at positions ≥ n on queries no context-free rule knows (no repeat, not all −1): "
                                 "chance = 1/2", 0.5, means, tolerance=max(3 * _mean(errors), CHANCE_BAND),
                                 source=TABLE_1 + " (parities at chance; the band is ours)"))
    if with_teaching:
        found.append(claim_check("parity-needs-teaching", f"parity with teaching (n = {n}): GF(2) elimination "
                                 "(exactly 1) − Transformer, accuracy over positions ≥ n", NEAR_OPTIMAL,
                                 [1.0 - float(model[:, n:].mean()) for model in with_teaching], relation="at_most",
                                 source=TEACHING + " (learned with teaching sequences; the band is ours)"))
    if without and with_teaching:
        (taught, taught_errors), (plain, plain_errors) = (_means_and_errors(_after(model, n) for model in models)
                                                          for models in (with_teaching, without))
        errors = [(a**2 + b**2) ** 0.5 for a, b in zip(taught_errors, plain_errors)]
        found.append(claim_check("parity-needs-teaching", "parity: accuracy over positions ≥ n, trained with "
                                 "teaching − trained without (seed by seed)", 0.0,
                                 [a - b for a, b in zip(taught, plain)],
                                 relation="at_least", tolerance=3 * _mean(errors), source=TEACHING))
    return found


def _curve(results: dict, name: str, predictor: str, baseline: bool = False, closed_form: bool = False) -> Curve | None:
    rows = [r for r in results["rows"] if r["class"] == name and r["predictor"] == predictor]
    if not rows:
        return None
    if predictor == "Transformer":  # the mean over seeds with its 95 % interval
        seeds = sorted({r["seed"] for r in rows})
        per_seed = [[r["mean"] for r in rows if r["seed"] == seed] for seed in seeds]
        return seed_curve(predictor, [r["position"] for r in rows if r["seed"] == seeds[0]], per_seed)
    x = [r["position"] for r in rows]
    if closed_form:
        return Curve(f"{predictor} (closed form)", x, [r["closed_form"] for r in rows], baseline=True)
    return Curve(predictor, x, [r["mean"] for r in rows], [r["ci_low"] for r in rows], [r["ci_high"] for r in rows],
                 baseline=baseline)


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Accuracy against the number of in-context examples, one panel per class (the paper's Fig. 2 axes)."""
    def panel(name: str, title: str, learners: tuple[str, ...], forms: tuple[str, ...], targets=()) -> Panel:
        curves = [_curve(results, name, "Transformer"),
                  *(_curve(results, name, label, baseline=True) for label in learners),
                  *(_curve(results, name, label, closed_form=True) for label in forms)]
        return Panel("in-context examples", "accuracy", [c for c in curves if c is not None], targets,
                     title=f"{title} (n = {settings.bits(name)})", ylim=(0.3, 1.02))

    def near_optimal(name: str) -> list[Target]:
        value = _optimal_after(name, settings)
        return [Target(f"required mean after n: optimal − {NEAR_OPTIMAL}", value, value - NEAR_OPTIMAL, value,
                       where=after(name))]

    def after(name: str) -> tuple[int, int]:  # the positions ≥ n a check averages over
        return settings.bits(name), settings.points - 1

    disjunctions = "Disjunctions" + ("" if "disjunction" in settings.trained else ", learners only")
    return [panel("conjunction", "Conjunctions", ("Elimination", "Nearest neighbour", "Averaging"), ("Elimination",),
                  near_optimal("conjunction")),
            panel("disjunction", disjunctions, ("Elimination", "Nearest neighbour"), ("Elimination",),
                  near_optimal("disjunction") if "disjunction" in settings.trained else ()),
            panel("parity", "Parities, no teaching", ("GF(2) elimination", "Nearest neighbour"),
                  ("GF(2) elimination", "Nearest neighbour"),
                  [Target("chance", 0.5, 0.5 - CHANCE_BAND, 0.5 + CHANCE_BAND, where=after("parity"))]),
            panel("parity-teaching", "Parities, teaching sequence e_1…e_n first",
                  ("GF(2) elimination", "Nearest neighbour"), ("GF(2) elimination",), near_optimal("parity-teaching"))]


REPRODUCTION = Reproduction(
    name="bhattamishra-2023",
    paper=PAPER,
    summary="Transformers trained to learn Boolean functions in context nearly match the optimal learner on "
          "conjunctions but stay at chance on parities, which they learn once prompts start with a teaching sequence.",
    caption="Table 1, Fig. 2 and Sec. 5 of the paper: accuracy against the number of in-context examples of a "
            "trained Transformer, the optimal learners (elimination, GF(2) elimination; Monte Carlo dashed, closed "
            "form dashed) and nearest neighbours, on conjunctions and on parities without and with teaching sequences",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    claims=CLAIMS,
    quick_minutes=3.0,  # CPU time on one thread (idle wall time); 5.8 min wall at load ≈ 4.5 on the shared 2 cores
)
