"""von Oswald et al. (ICML 2023), "Transformers learn in-context by gradient descent": beyond one GD step.

Two results beside Fig. 2 (``von_oswald_2023``), on the same task (d = 10, x ~ U(−0.5, 0.5)^d, the
authors' code rather than the text's U(−1, 1): see that module; w ~ N(0, I)) with the authors' Adam
(β = (0.9, 0.98), optax's ε = 1e-8), gradients clipped to a global norm of 1e-3 and initial weight scale
0.002/K for K layers.  The recurrent LSA is trained as the authors train theirs, whose attention sums over the
context where icl-sim's averages: ``summed_attention_training`` (von_oswald_2023) sets its learning rate,
initial scale, clip and ε so that icl-sim's weights over √N follow the authors' trajectory step for step.

GD++ (Sec. 3 "Multiple steps of gradient descent vs. multiple layers of self-attention", Fig. 3a, App. A.10,
Fig. 13): a recurrent two-layer LSA (one layer's weights applied twice, their code's ``deq``) is trained
with N ∈ {10, 25, 50, 100} context points (App. A.10's sweep).  GD++ transforms the inputs by
x ← (I − γĜ)x besides each GD step; its risk-optimal parameters, one (η, γ) for both steps, are computed
from the task alone, never from a trained model: the L-BFGS minimiser of its final-query risk on held-out
prompts (``tune_steps(..., shared=True)``; the authors train GD++'s parameters by Adam, the same optimum).
The trained γ is read off the weights: the best scalar fit of the layer's effective map by the GD++
construction with γ = 1, η = 0 (which touches only the feature update).  Normalisation: icl-sim's Ĝ is
(1/N) Σ_j x_j x_jᵀ, so its γ is per point; the paper's XXᵀ is the plain sum (the authors' attention does not
divide by N) and its γ is ours over N.

* ``gd-plus-plus-gamma``: the trained γ within 5 % of the risk-optimal γ, at every N.  A converged model of
  the wrong mechanism fails it: two plain GD steps (γ = 0), or a curvature correction of another size.
* ``gd-plus-plus-loss``: the trained model's loss within 5 % of the risk-optimal GD++'s, at every N: the
  paper's "matches GD++".  Two GD steps with their best shared step fail it (their loss is 1.42, 3.24, 8.39
  and 15.6 times GD++'s at N = 10, 25, 50, 100).  (Below two GD steps, the claim this replaces, holds for any converged
  recurrent LSA, GD++ or not; GD++'s optimum beating GD's is a sanity check of the algorithms.)

App. A.10's table of the authors' trained γ (0.179, 0.099, 0.056, 0.029 for N = 10, 25, 50, 100, un-normalised;
×N: 1.79, 2.48, 2.8, 2.9 per point) was a third claim, ``gamma-by-context-size``, until 2026-12-04: the
risk-optimal γ equals the table within 5 % (a sanity check below), so the trained γ against the table repeated
``gd-plus-plus-gamma``; the table is now that sanity check alone.

The 5 % margins are this reproduction's, the same as Fig. 2's reading of "identical loss" (``LOSS_GAP``),
set when it was written; the paper states no margin.

Softmax (App. A.9, Fig. 12), ``softmax-heads``: one softmax self-attention layer with one head cannot match
one GD step; with two heads it nearly does (two heads can cancel softmax's normalisation to first order).
The margin is one number, 10 % of GD's loss, this reproduction's (the paper states no number): two heads
within it, one head outside it.  The negative half (one head cannot) holds for any poor model, an
untrained one included, so it is one claim with the positive half (two heads nearly match), which an
untrained layer fails.

Sanity checks: the risk-optimal GD++ beats two GD steps with the best shared step at every N, and its γ
is App. A.10's trained γ within 5 % (the optimum the paper's models found).

Each claim check takes one value per training seed, each from that seed's models alone, and holds when the
95 % interval of their mean does.

Scales: ``full`` is the authors' notebook (google-research/self-organising-systems,
transformers_learn_icl_by_gd/constructed_token_setup.ipynb, its "Config" cell with ``num_layers`` = 2 and
``recurrent_Transformer`` for GD++, ``softmax`` and ``num_heads`` 1 or 2 for the ablation: batch 2048,
5000 steps, Adam lr 1e-3, global-norm clip 1e-3, ``init_scale`` 0.002/num_layers; β from src/config.py, ε
optax's default, which src/train.py keeps).  ``quick`` shrinks the batch to 1024 and the steps to 2000 at lr 5e-2 with cosine decay
(the optimiser's schedule, not the problem, is shrunk); ``smoke`` runs 10 steps to test the pipeline.
``long`` is the full scale itself, the authors' schedule unshrunk (5 seeds on one CPU thread within the hour):
the GD++ claims are decided there, since quick's schedule stalls seeds at N = 50 and 100.

Measured at quick scale (seeds 0–2; 100–102).  GD++'s risk-optimal γ per point is 1.752, 2.483, 2.803, 2.974 for
N = 10, 25, 50, 100, App. A.10's trained γ × N 1.79, 2.475, 2.8, 2.9.  Every seed at N = 10 and 25 learns it (γ
1.724–1.735 and 2.424–2.432, losses within 0.45 % and 0.29 % of GD++'s), but this schedule is not the authors':
at N = 50 two of seeds 0–2 stall (losses 59 and 24 times GD++'s) while seeds 100–102 converge (γ 2.771–2.773,
within 0.8 %), and at N = 100 two of seeds 0–2 and one of 100–102 stall (54 to 261 times) and the others, γ
2.98–2.99, are still 9 % above GD++'s loss after 2000 steps.  The three GD++ claims therefore wait for the full
scale (deferred to long since 2026-12-04).  Softmax: one head's gap to one GD step 0.40–0.43, two heads'
0.044–0.046.  Untrained, every claim fails.  The γ and gap panels draw each seed (a mean of stalled and converged
seeds describes no seed).  Fresh seed block (2026-12-04): ``softmax-heads`` holds on seeds 200-202 (two heads' gap
0.0457, 0.0459, 0.0458; one head's 0.428, 0.404, 0.426) and on seeds 300-302 (0.0449, 0.0457, 0.0444; 0.427,
0.426, 0.426); the untrained control fails all three claims by finite values on both blocks.

History.  Every number above was measured before 2026-12-04's fidelity fix, with icl-sim's averaged attention
trained at the authors' settings taken literally.  At long on that training (seeds 0-4) both GD++ claims FAILED
(``OLD_LONG_FAILURE``), and the cause was ours: the authors' attention sums over the context, so their settings
move icl-sim's weights √N times too slowly towards weights √N times theirs.  Since the fix the recurrent LSA is
trained as theirs is (``summed_attention_training``: their trajectory, step for step, in icl-sim's terms; ε is
optax's 1e-8), and the verdict at long was retaken on seeds 400-404, never run before (38 CPU minutes with the
quick re-measurement): ``LONG_VERDICT`` gives the numbers.  ``gd-plus-plus-gamma`` is INCONCLUSIVE: every seed
learns GD++'s γ within 5 % at N = 10 and 25, but one seed of five stalls at N = 50 and three at N = 100.
``gd-plus-plus-loss`` FAILED: at N = 25 every seed converged (training loss flat from step 2000) to γ 3-4 % below
the optimum and a loss 7-20 % above GD++'s.  One difference from the authors' model remains: their layer has
separate query, key, value and output matrices, icl-sim's the merged P and Q, so Adam's path differs even where
the function class is the same.  ``softmax-heads`` (decided at quick) measured at long: one head's gap 0.435-0.459,
two heads' 0.049-0.050 on three seeds and 0.43, 0.28 on seeds 400 and 401 (stalled near one head's level).  The
gallery's long run on the same training (seeds 0-4, 37.4 CPU minutes) gives the same verdicts: γ 1.713-1.736
(N = 10), 2.380-2.403 (25), 2.68-2.74 and one stalled seed at 5.80 (50), 2.83-2.91 and one at 5.33 (100); loss
gaps 0.014-0.040 (10), 0.078-0.194 (25: FAILED, CI [0.051, 0.174]), 0.16-0.41 and 23.6 (50), 0.25-0.51 and 113
(100); softmax two heads 0.049-0.050 on three seeds, 0.45 and 0.41 on seeds 2 and 3.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.probe_metrics import last_predictions
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory import GD, GDPlusPlus, gd_plus_plus_lsa_weights
from icl_sim.theory.step_tuning import tune_steps
from icl_sim.weight_comparison import compare_to_construction

from .measures import seed_values
from .runner import held_out_prompts
from .spec import Claim, Reproduction
from .von_oswald_2023 import (ADAM_BETAS, ADAM_EPS, LOSS_GAP, PAPER, TASK, best_gd_step_size, query_loss,
                              summed_attention_training)
from .von_oswald_2023 import Settings as Figure2Settings

#: context sizes N of the recurrent two-layer (GD++) runs and the γ App. A.10 reads off the authors' trained
#: models at each, for the un-normalised XXᵀ (icl-sim's per-point γ is N times it)
PAPER_GAMMAS = {10: 0.179, 25: 0.099, 50: 0.056, 100: 0.029}
GD_PLUS_PLUS_POINTS = tuple(PAPER_GAMMAS)
#: the margin of the trained γ and loss around GD++'s risk-optimal ones, and around the paper's γ
GAMMA_MARGIN = LOSS_GAP
#: softmax ablation: attention heads, and the one margin on the relative loss gap to one GD step
SOFTMAX_HEADS, SOFTMAX_MARGIN = (1, 2), 0.1
GD_PLUS_PLUS = "von Oswald et al. 2023, Sec. 3 (multiple layers), Fig. 3a and App. A.10"
APPENDIX_GAMMAS = "von Oswald et al. 2023, App. A.10: γ = 0.179, 0.099, 0.056, 0.029 for N = 10, 25, 50, 100"
SOFTMAX = "von Oswald et al. 2023, App. A.9 and Fig. 12: softmax attention ablation"

#: what long measured on icl-sim's averaged attention at the authors' literal settings (seeds 0-4), before the fix
OLD_LONG_FAILURE = ("Before 2026-12-04's fix (seeds 0-4, Adam at a literal 1e-3 on icl-sim's averaged attention) both "
                    "GD++ claims failed at every N: trained γ −0.57 to 1.76 (N = 10), −1.03 to −0.65 (25), −1.47 to "
                    "0.13 (50), −1.73 to −1.68 (100) against the optimum's 1.75, 2.48, 2.80, 2.97; losses 1.3-272 times "
                    "GD++'s; the trained η 1.7-6.4 against η* = 13.4-20.5, still rising at step 5000.")
#: the verdict at long on the authors' training, seeds 400-404 (never run before)
LONG_VERDICT = ("At long on the authors' training (seeds 400-404, never run before): trained γ 1.709-1.727 (N = 10, "
                "optimum 1.752), 2.391-2.408 (25; 2.483), 2.730-2.747 and one stalled seed at 5.73 (50; 2.803), "
                "2.854, 2.859 and three stalled seeds at −4.23, 5.39, 8.45 (100; 2.974); loss gaps to GD++ 0.016-0.034 "
                "(N = 10), 0.074-0.201 (25, CI [0.058, 0.185] against ≤ 0.05; training loss flat from step 2000), "
                "0.18-0.27 and 22.6 stalled (50), 0.64, 0.91 and 106-144 stalled (100).  ")
#: why the GD++ claims are decided at long: what the quick scale measured (seeds 0–2; 100–102)
STALLED = ("at quick (lr 5e-2 with cosine decay over 2000 steps, 50 times the authors' constant 1e-3) some seeds "
           "stall far from GD++ at N = 50 (2 of seeds 0–2, none of 100–102) and N = 100 (2 of 0–2, 1 of 100–102)")
CLAIMS = (
    Claim("gd-plus-plus-gamma", "A recurrent two-layer LSA learns GD++: its curvature correction γ is the "
          "risk-optimal one, for N = 10 … 100", GD_PLUS_PLUS, decided_at="long",
          reason=STALLED + ": γ 5.07 and 7.42 against the optimum's 2.80 (N = 50), 6.11, 4.64 and −0.63 against "
          "2.97 (N = 100); the other seeds, and N = 10 and 25 in every seed, are within 2.5 % of the optimum",
          analysis=LONG_VERDICT + "INCONCLUSIVE: N = 10 and 25 hold on every seed, the stalled seeds at N = 50 and "
          "100 put the intervals across the band.  " + OLD_LONG_FAILURE),
    Claim("gd-plus-plus-loss", "The trained recurrent two-layer LSA matches the loss of GD++ with the risk-optimal "
          "shared (η, γ), for N = 10 … 100", GD_PLUS_PLUS, decided_at="long",
          reason=STALLED + ": losses 59 and 24 times GD++'s (N = 50), 54, 219 and 261 times (N = 100), and at N = 100 "
          "the seeds that converge are still 9 % above it after 2000 steps; N = 10, 25 and 50 (unstalled) within "
          "0.8 %", analysis=LONG_VERDICT + "FAILED at N = 25, where every seed converged 7-20 % above GD++'s loss; "
          "a difference of parameterisation may remain (the authors' separate query, key, value and output "
          "matrices against the merged P, Q).  " + OLD_LONG_FAILURE),
    Claim("softmax-heads", "One softmax attention head cannot match one GD step; two heads nearly do", SOFTMAX),
)


@dataclass(frozen=True)
class Settings(Figure2Settings):
    """Fig. 2's sizes of one scale, and the prompts GD++'s and GD's shared steps are tuned on."""

    tuning_prompts: int = 20_000


SCALES = {
    "smoke": Settings(steps=10, batch_size=32, lr=1e-2, lr_schedule="constant", log_every=5, test_prompts=256,
                      probe_prompts=64, tuning_prompts=256),
    "quick": Settings(steps=2000, batch_size=1024, lr=5e-2, lr_schedule="cosine", log_every=50,
                      test_prompts=10_000, probe_prompts=1024, tuning_prompts=20_000),
    "full": Settings(steps=5000, batch_size=2048, lr=1e-3, lr_schedule="constant", log_every=100,
                     test_prompts=10_000, probe_prompts=2048, tuning_prompts=20_000),
}
#: long is the authors' notebook itself (one CPU thread runs its 5 seeds within the hour): nothing shrunk
SCALES["long"] = SCALES["full"]


def gd_plus_plus_task(points: int) -> LinearRegression:
    """Fig. 2's task with ``points`` context points (and the query)."""
    return dataclasses.replace(TASK, points=points + 1)


def softmax_runs() -> dict[int, str]:
    return {heads: f"softmax-{heads}-heads" for heads in SOFTMAX_HEADS}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    def run(task, model, model_params) -> TrainConfig:
        init_scale = settings.init_scale / model_params["layers"]  # the notebook's 0.002 / num_layers
        return TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model=model,
                           model_params={**model_params, "init_scale": init_scale}, steps=settings.steps,
                           batch_size=settings.batch_size, lr=settings.lr, betas=ADAM_BETAS, adam_eps=ADAM_EPS,
                           lr_schedule=settings.lr_schedule, grad_clip=settings.grad_clip, loss_on="last",
                           log_every=settings.log_every, checkpoint_every=max(settings.steps // 5, 1))

    return {**{f"recurrent-lsa-n{points}": summed_attention_training(
                   run(gd_plus_plus_task(points), "lsa", {"layers": 2, "recurrent": True}), points)
               for points in GD_PLUS_PLUS_POINTS},
            **{name: run(TASK, "softmax-attention", {"layers": 1, "heads": heads})
               for heads, name in softmax_runs().items()}}


def monitor(settings: Settings, device):
    """The softmax ablation's curves over training: the loss on Fig. 2's probe prompts beside one GD step's."""
    probe = held_out_prompts(TASK, "probe", settings.probe_prompts, device)
    loss_gd = query_loss(GD(steps=1, lr=best_gd_step_size(str(device))), probe)
    return lambda model: {"loss_model": query_loss(model, probe), "loss_gd": loss_gd}


def squared_error(predictor, prompt: Prompt) -> float:
    """½ · mean squared error at the final query (the paper's loss), from the context's statistics alone."""
    prediction = last_predictions(predictor.query_predictor, prompt)[-1]
    return 0.5 * float((prediction - prompt.ys[:, -1]).square().mean())


def measure(measurement) -> dict:
    rows = gd_plus_plus_rows(measurement) + softmax_rows(measurement)
    return {"rows": rows, "histories": {name: measurement.histories[name] for name in softmax_runs().values()},
            "gd_step_size": best_gd_step_size(str(measurement.device))}


def risk_optimal_rows(measurement, task: LinearRegression) -> dict[str, float]:
    """GD++'s risk-optimal shared (η, γ) on the tuning prompts of ``task``, and on its test prompts the losses of
    GD++ there and of two GD steps with their best shared step."""
    tuning = measurement.prompts(task, "tuning", measurement.settings.tuning_prompts)
    test = measurement.prompts(task, "test", measurement.settings.test_prompts)
    best = {family: tune_steps(family, tuning.xs, tuning.ys, 2, shared=True)[0] for family in ("gd", "gd-plus-plus")}
    eta, gamma = (float(best["gd-plus-plus"].parameters[name][0]) for name in ("step_sizes", "corrections"))
    return {"gamma_optimal": gamma, "eta_optimal": eta,
            "loss_gd_plus_plus": squared_error(GDPlusPlus(2, eta, gamma), test),
            "loss_gd_two_steps": squared_error(best["gd"].run()[-1], test)}


def trained_rows(model, task: LinearRegression, test: Prompt, eta: float, gamma: float) -> dict[str, float]:
    """A trained recurrent LSA's γ and η (scalar fits of its effective map by the GD++ construction's feature
    and label updates alone), its cosine with the construction at (η, γ), and its loss on ``test``."""
    model_64 = copy.deepcopy(model).double().eval()
    fitted = {name: compare_to_construction(model_64, gd_plus_plus_lsa_weights(task.dim, 2, lr, correction),
                                            maps=("full",))[0]
              for name, lr, correction in (("gamma", 0.0, 1.0), ("eta", 1.0, 0.0), ("cosine", eta, gamma))}
    return {"gamma_trained": fitted["gamma"]["scale"], "eta_trained": fitted["eta"]["scale"],
            "gd_plus_plus_weight_cosine": fitted["cosine"]["cosine"],
            "loss_recurrent_lsa": squared_error(model_64, test)}


def gd_plus_plus_rows(measurement) -> list[dict]:
    """Per N: GD++'s risk-optimal (η, γ) and loss, two GD steps' loss, and each trained recurrent LSA's."""
    rows = []
    for points in GD_PLUS_PLUS_POINTS:
        task = gd_plus_plus_task(points)
        optimal = risk_optimal_rows(measurement, task)
        test = measurement.prompts(task, "test", measurement.settings.test_prompts)
        for seed, model in enumerate(measurement.models[f"recurrent-lsa-n{points}"]):
            trained = trained_rows(model, task, test, optimal["eta_optimal"], optimal["gamma_optimal"])
            rows += [{"seed": seed, "points": points, "quantity": key, "value": value}
                     for key, value in {**optimal, **trained}.items()]
    return rows


def softmax_rows(measurement) -> list[dict]:
    """The relative loss gap to one GD step at η* of the trained softmax layers, per number of heads."""
    test = measurement.prompts(TASK, "test", measurement.settings.test_prompts)
    loss_gd = squared_error(GD(steps=1, lr=best_gd_step_size(str(measurement.device))), test)
    return [{"seed": seed, "heads": heads, "quantity": "softmax_loss_gap",
             "value": squared_error(copy.deepcopy(model).double().eval(), test) / loss_gd - 1}
            for heads, name in softmax_runs().items() for seed, model in enumerate(measurement.models[name])]


def _values(results: dict, quantity: str, points: int) -> list[float]:
    return seed_values(results["rows"], quantity, points=points)


def _mean(results: dict, quantity: str, points: int) -> float:
    """The mean over seeds of ``quantity`` at N = ``points``."""
    values = _values(results, quantity, points)
    return sum(values) / len(values)


def _loss_gaps(results: dict, points: int) -> list[float]:
    """Per seed, |L_LSA / L_GD++ − 1| at N = ``points``, GD++ at its risk-optimal (η, γ)."""
    return [abs(loss / optimal - 1) for loss, optimal in zip(_values(results, "loss_recurrent_lsa", points),
                                                             _values(results, "loss_gd_plus_plus", points))]


def checks(results: dict, settings: Settings) -> list[Check]:
    return [
        *(check for points in GD_PLUS_PLUS_POINTS for check in gd_plus_plus_checks(results, points)),
        claim_check("softmax-heads", "softmax, 2 heads: relative loss gap to one GD step", SOFTMAX_MARGIN,
                    seed_values(results["rows"], "softmax_loss_gap", heads=2), relation="at_most",
                    source=SOFTMAX + " (2 heads nearly match)"),
        claim_check("softmax-heads", "softmax, 1 head: relative loss gap to one GD step", SOFTMAX_MARGIN,
                    seed_values(results["rows"], "softmax_loss_gap", heads=1), relation="at_least",
                    source=SOFTMAX + " (1 head cannot)"),
    ]


def gd_plus_plus_checks(results: dict, points: int) -> list[Check]:
    """At N = ``points``: the trained γ and loss against the risk-optimal GD++'s (claims, one value per seed); GD++
    against GD, and its risk-optimal γ against the paper's trained γ (sanity)."""
    optimal = _values(results, "gamma_optimal", points)[0]  # the same in every seed's rows
    paper = PAPER_GAMMAS[points] * points  # per point, as icl-sim's γ
    loss_gd_plus_plus, loss_gd = (_values(results, name, points)[0] for name in ("loss_gd_plus_plus",
                                                                                 "loss_gd_two_steps"))
    trained = _values(results, "gamma_trained", points)
    return [
        claim_check("gd-plus-plus-gamma", f"recurrent 2-layer LSA, N = {points}: trained γ (per point)", optimal,
                    trained, tolerance=GAMMA_MARGIN * optimal,
                    source=GD_PLUS_PLUS + "; the risk-optimal shared GD++ γ, ±5 %"),
        claim_check("gd-plus-plus-loss", f"recurrent 2-layer LSA, N = {points}: relative loss gap to GD++ "
                    "|L_LSA / L_GD++ − 1|", LOSS_GAP, _loss_gaps(results, points), relation="at_most",
                    source=GD_PLUS_PLUS + ": the trained TF matches GD++ (risk-optimal shared η, γ)"),
        Check(f"N = {points}: loss of GD++ at its risk-optimal (η, γ) below two GD steps' at their best shared η",
              loss_gd, loss_gd_plus_plus, relation="at_most", source=GD_PLUS_PLUS + ": GD++ beats GD"),
        Check(f"N = {points}: GD++'s risk-optimal γ (per point) against App. A.10's trained γ × N", paper, optimal,
              GAMMA_MARGIN * paper, source=APPENDIX_GAMMAS + ", ±5 %"),
    ]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 13 / App. A.10: the recurrent LSA's γ against N beside GD++'s risk-optimal γ and the paper's; its
    loss beside GD++'s and two GD steps', and its gap to GD++; the softmax ablation's losses over training
    against one GD step (trained models: the mean over seeds, 95 % interval)."""
    points = list(GD_PLUS_PLUS_POINTS)
    optimal = [_mean(results, "gamma_optimal", n) for n in points]

    def by_points(quantity: str) -> list[float]:
        return [_mean(results, quantity, n) for n in points]

    def trained(label: str, per_point: list[list[float]]) -> Curve:
        return seed_curve(label, points, [list(seed) for seed in zip(*per_point)], continuous=False)

    def per_seed(per_point: list[list[float]]) -> list[Curve]:
        """One curve per training seed: a seed that stalls at some N is not averaged into the others."""
        return [Curve(f"recurrent 2-layer LSA, seed {seed}", points, list(values), continuous=False)
                for seed, values in enumerate(zip(*per_point))]

    softmax = []
    for heads, run in softmax_runs().items():
        histories = results["histories"][run]
        softmax.append(seed_curve(f"softmax, {heads} head{'s' * (heads > 1)}", [r["step"] for r in histories[0]],
                                  [[r["loss_model"] for r in history] for history in histories]))
    last = results["histories"][softmax_runs()[1]][0]
    gd_loss = Curve(f"GD, η* = {results['gd_step_size']:.2f}", [last[0]["step"], last[-1]["step"]],
                    [last[-1]["loss_gd"]] * 2, baseline=True)
    return [
        Panel("context points N", "γ per point (the paper's γ × N)", [
            *per_seed([_values(results, "gamma_trained", n) for n in points]),
            Curve("paper's trained TF (App. A.10)", points, [PAPER_GAMMAS[n] * n for n in points], continuous=False),
            Curve("GD++, risk-optimal (±5 %)", points, optimal, low=[(1 - GAMMA_MARGIN) * g for g in optimal],
                  high=[(1 + GAMMA_MARGIN) * g for g in optimal], baseline=True, continuous=False)], xscale="log"),
        Panel("context points N", "loss (½·MSE)", [
            trained("recurrent 2-layer LSA, trained", [_values(results, "loss_recurrent_lsa", n) for n in points]),
            Curve("GD++, 2 steps, risk-optimal (η, γ)", points, by_points("loss_gd_plus_plus"), baseline=True,
                  continuous=False),
            Curve("GD, 2 steps, risk-optimal η", points, by_points("loss_gd_two_steps"), baseline=True,
                  continuous=False)],
            xscale="log", yscale="log"),
        Panel("context points N", "|L_LSA / L_GD++ − 1|", per_seed([_loss_gaps(results, n) for n in points]),
              targets=[Target(f"accepted ≤ {LOSS_GAP}", LOSS_GAP, 0.0, LOSS_GAP)], xscale="log", yscale="log"),
        Panel("training step", "loss (½·MSE)", [*softmax, gd_loss], yscale="log"),
    ]


REPRODUCTION = Reproduction(
    name="von-oswald-2023-ablations",
    paper=PAPER,
    summary="A recurrent two-layer LSA learns GD++, with the risk-optimal curvature correction γ and GD++'s loss "
            "for N = 10 … 100; one softmax head cannot match one GD step, two heads nearly do.",
    caption="App. A.10 / Fig. 13 of the paper: a recurrent two-layer LSA's γ against GD++'s risk-optimal γ and the "
            "paper's trained γ for N = 10 … 100, its loss against GD++'s and two GD steps'; App. A.9: the softmax "
            "ablation (1 and 2 heads) against one GD step; d = 10, x ~ U(−0.5, 0.5)",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=8.2,
    long_minutes=38.5,  # CPU minutes (user + sys) of the long run on seeds 400-404, quick re-measured (2026-12-04)
    monitor=monitor,
)
