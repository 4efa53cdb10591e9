"""Ahn, Cheng, Daneshmand & Sra (NeurIPS 2023), "Transformers learn to implement preconditioned gradient
descent for in-context learning", Thm 1, Thm 3, Thm 4 / Fig. 4 and the number-of-layers experiment.

Setting (the authors' repository, chengxiang/LinearTransformer: ``linear_transformer.py``,
``rotation demonstration-Adam.ipynb``, ``rotation demonstration-Adam-p0.ipynb``, ``variable_L_exp.ipynb``):
linear regression with d = 5 and n = 20 context points, noiseless, x ~ N(0, Σ) with one Σ = U D² Uᵀ for
the whole run (U a random orthogonal matrix, D = diag(1, 1, 1/2, 1/4, 1)), the loss on the final query,
linear self-attention over the context tokens normalised by n (the query's own value masked out) —
icl-sim's ``lsa`` with ``rotation="fixed"``.  The authors' L-layer experiments draw w = U D⁻¹ g, i.e.
w ~ N(0, Σ⁻¹) (``weight_prior="inverse-covariance"``), the setting of their Thm 3 and Thm 4.

Models.  The one-layer run (Thm 1, a global minimum over free P and Q) trains icl-sim's free (P, Q) layer.
The free L-layer runs (``layers-L``, ``figure-4``) train the authors' ``Transformer_F``,
``parameterisation="sparse"``: per layer P = [[B_ℓ, 0], [0, 1]], Q = −[[A_ℓ, 0], [0, 0]] with B_ℓ and A_ℓ
learned (Sec. 5, Thm 4).  The restricted runs (``restricted-L``) are the paper's Thm 3 model, B_ℓ = 0 (the
authors' ``zero_p`` after every step in ``rotation demonstration-Adam-p0.ipynb``): icl-sim's
``parameterisation="preconditioner"``, whose L layers with A_ℓ = a_ℓ Σ⁻¹ are exactly L steps of
Σ⁻¹-preconditioned GD with steps a_ℓ (tests/test_repro_ahn_2023.py).

Claims (``CLAIMS``), each a claim check per training seed (one value from each seed's model):

* ``one-layer-preconditioner`` (Thm 1; one layer, w ~ N(0, I)): the optimum is one preconditioned GD
  step, ŷ = x_qᵀ A (1/n) Σ_j y_j x_j with A = ((1 + 1/n) Σ + tr Σ/n · I)⁻¹ (``optimal_preconditioner``),
  which is neither I nor a multiple of Σ⁻¹.  We read the trained layer's A as its effective
  preconditioner B (``effective_layer_maps``; a product of P and Q, so invariant to P → cP, Q → Q/c)
  and check the relative Frobenius error ‖B − A‖/‖A‖ ≤ 0.05 (no rescaling: the step size is part of
  A) and the test risk against the closed form ``preconditioned_gd_risk`` (within 3 standard errors
  of the test prompts plus 2 %).  Thm 1 is exact, the paper states no tolerance: the 0.05 and the
  2 % are this reproduction's, set when it was written.
* ``layers-inverse-covariance`` and ``layers-feature-identity`` (Thm 4 / Fig. 4; the free model,
  w ~ N(0, Σ⁻¹)): at the critical point training finds, A_ℓ = a_ℓ Σ⁻¹ and B_ℓ = b_ℓ I.  Fig. 4 plots the
  authors' ``compute_dist_identity``, ‖M − (tr M/d) I‖_F/‖M‖_F, of M = Σ^(1/2) A_ℓ Σ^(1/2) (their
  (UD)ᵀ A_ℓ (UD), orthogonally similar) and of B_ℓ for ℓ < L (the last layer's B feeds nothing); we
  check the same statistic per layer.  The threshold is Fig. 4's value at the scale's training length:
  the notebook's figure (κ = 16, batch 20 000, lr 0.1; its output is in the repository) is at ≈ 0.1 for
  every matrix after ~5000 steps and ≤ 0.05 from ~50 000 steps to its end at 100 000 (A_0 0.04, A_1, A_2
  0.01, B_0 0.02, B_1 0.01): quick and long (2000-16 000 steps) require ≤ 0.1, full (the notebook's 100 000)
  ≤ 0.05.  At quick and long the L-sweep's runs (L = 1, 2, 3) stand for Fig. 4's three-layer run.  A converged
  model of another mechanism fails it: plain GD steps (A_ℓ ∝ I: distance 0.39 at κ = 4) or Thm 1's one-layer A
  (neither I nor Σ⁻¹).  The figure also draws Fig. 4 as the notebook does, each matrix's distance against the
  training step, from the weights logged with every metrics record (``monitor``), for the three-layer free run
  and the deepest B = 0 run.
* ``restricted-preconditioned-steps`` (Thm 3; B_ℓ = 0): every A_ℓ is a multiple of Σ⁻¹ (the same
  distance and threshold), so the model is L steps of Σ⁻¹-preconditioned GD; and, a contrast fixed
  before running, its risk is nearer (in log) to L tuned Σ⁻¹-preconditioned GD steps than to L tuned
  plain GD steps: |log(R/R_pgd)| − |log(R/R_gd)| ≤ 0 per seed's mean.  The figure draws the B = 0 model's risk
  relative to L tuned preconditioned steps in a panel of its own (on the loss panel it lay under their curve).

Sanity: the number-of-layers figure (``variable_L_exp.ipynb``), the free L-layer transformer's loss against L
steps of GD and of Σ⁻¹-preconditioned GD.  The authors tune one step size on a grid; we tune one step size per
step (``tune_steps``, L-BFGS on held-out "tuning" prompts; a stronger baseline).  For L ≥ 2 the trained
L-layer model's test risk is at most that of L tuned preconditioned GD steps on every seed (paired on the same
test prompts).  L preconditioned steps are a special case of the free L-layer class (B_ℓ = 0, A_ℓ = a_ℓ Σ⁻¹),
so any converged model passes: a sanity check of the training, not evidence of the mechanism.  The paper does
not state a monotone growth of the per-layer step sizes; we report each layer's fitted scale without a check.

Scales.  ``full`` is the authors' notebooks, run by run: Σ eigenvalues (1, 1, 1/4, 1/16, 1), batch
20 000 prompts redrawn every 100 steps (``batch_redraw_every``), init std 1e-4, AdamW β = (0.99, 0.9),
weight decay 0, each (layer, head, P or Q) matrix's gradient clipped at norm 0.01 (``grad_clip_matrix``)
and the lr halved every K steps (``lr_schedule="halving"``): the L-sweep L = 1..4 at lr 0.01, K = 4000,
20 000 steps, each model the best on the validation prompts (our "tuning" stream; theirs seed 999) of its
last 20 snapshots, logged every 100 steps (``best_of``; theirs are the parameters before the last 20
multiples of 100, ours after them) (``variable_L_exp.ipynb``); Fig. 4's three-layer run at lr 0.1,
K = 4000, 100 000 steps (``rotation demonstration-Adam.ipynb``); the B = 0 three-layer run at lr 0.02,
K = 2000, 30 000 steps (``rotation demonstration-Adam-p0.ipynb``).  The one-layer Thm 1 run (w ~ N(0, I))
has no notebook; it takes the L-sweep's recipe.  The authors train 5 seeds (0-4) in the L-sweep and the
B = 0 run, 3 in the Fig. 4 run; the runner's seed count is per scale (3), not per reproduction, so the
full scale runs 3 unless ``--seeds 5`` is given.

``long`` (where ``one-layer-preconditioner``, ``layers-inverse-covariance`` and ``restricted-preconditioned-steps``
are decided) runs quick's recipe four times longer, 8000 steps for every run and 16 000 for the three-layer free
one, over 5 seeds, about 35 CPU minutes by the per-step costs measured on one thread (3.4-9.7 ms a step; its
first run took 98 minutes of wall time at a load of 5-11 on the 2 cores).  Every run is then longer than Fig. 4's
≈ 5000-step point whose ≈ 0.1 is the threshold.  Quick's 2000 steps were shorter than that point, a defect of the
threshold's reading at quick, not of the claim, which is why the restricted claim's failure on seeds 100-102 at
quick (below) moved it to long rather than standing as its verdict.

``quick`` (2 CPU cores) takes D instead of D², eigenvalues (1, 1, 1/2, 1/4, 1) (κ = 4 instead of 16),
L = 1, 2, 3 (free) and 2, 3 (B = 0), batch 1024, and keeps the recipe it was developed with: Adam
β = (0.99, 0.9) at lr 0.01 with cosine decay, the global gradient norm clipped at 1, a fresh batch every
step, 2000 steps and 8000 for the three-layer free run, the final model (no snapshot selection).  The
authors' rules fit their 20 000-100 000 steps at batch 20 000: in 2000-8000 steps a halving every 4000
barely decays, and reusing a 1024-prompt batch for 100 steps overfits it.  With κ = 16 the risk's
curvature along the smallest eigendirection is ~10³ times below the largest and Adam does not move it in
a CPU budget (measured: after 2000 steps that eigenvalue of B was 0.33 against A's 4.32, relative error
0.82, while the risk was already within 3 % of the optimum; the authors' README notes Adam needs ~100×
more steps with a rotated covariance).  The phenomenon — A differs from both I and Σ⁻¹, and deep layers
are Σ⁻¹-preconditioned steps — is the same at κ = 4.  Without the clip Adam at lr 1e-2 diverged on three
layers (loss 10.6 at step 150, 2.1 at the end); with β = (0.9, 0.999) the free three-layer model ended at
training loss 0.040 (against 0.0022) and the two-layer distances failed (0.13, 0.31).

Earlier measurements (one seed, before the B = 0 runs): the three-layer free model's distances converge
slowly and steadily, they do not plateau: 2000 steps ended at 0.20, 0.23, 0.35 (training loss 0.0020);
4000 steps at 0.15, 0.13, 0.16; 8000 steps at 0.077, 0.049, 0.074 (loss 0.0007, the authors' final loss at
κ = 16, the same whitened problem).  Faster schedules did not help: the library's geometric halving at
lr 0.1 or 0.03 (2000 steps) froze the last layer at 0.75 / 0.51 after loss spikes; cosine at lr 0.02 (4000
steps) spiked to 10⁴ and ended worse (layer 3 at 0.54); a global clip at 0.01 at lr 0.03 and 0.1 spiked to
10⁶.

Measured at quick scale, seeds 0-2 (ensembles; 556 CPU seconds, 535 s user + 21 s sys, 30.6 min wall at a
load average of 8-10 from other jobs on the 2 cores), and seeds 100-102 where said (981 s wall, loaded too):

* ``one-layer-preconditioner`` — deferred: ‖B − A‖/‖A‖ = 0.010, 0.079, 0.0065 (seed 1's slow direction not
  converged in 2000 Adam steps; 2 of 3 seeds hold); the risk holds, 0.861, 0.862, 0.861 against 0.836 ± 0.043.
* ``layers-inverse-covariance`` — deferred: L = 1: 0.0055, 0.0069, 0.0076; L = 2: (0.041, 0.046, 0.050) and
  (0.050, 0.066, 0.082); L = 3: (0.068, 0.090, 0.072), (0.048, 0.053, 0.043), (0.073, 0.083, 0.068): every
  seed ≤ 0.1, but two layers' 95 % intervals reach 0.106.
* ``layers-feature-identity`` — held: B_ℓ's distance 0.009-0.027 (L = 2), 0.015-0.024 (L = 3).
* ``restricted-preconditioned-steps`` — deferred: held on seeds 0-2 (B = 0, A_ℓ's distances 0.007-0.025; risk
  0.3651-0.3655 (L = 2) against 0.3652 for 2 tuned Σ⁻¹-preconditioned steps and 0.8425 for 2 tuned GD steps;
  0.1312 (L = 3) against 0.1343 and 0.442, log contrast −0.84 and −1.19), but not on seeds 100-102
  (``--first-seed 100``): L = 3, layers 2 and 3, 0.023, 0.103, 0.017 and 0.013, 0.108, 0.018 — seed 101's
  deeper layers are still converging after 2000 steps (the contrast holds: −0.84; −1.19, −1.00, −1.19).
* the number-of-layers comparison (a claim, ``layers-beat-preconditioned-gd``, until 2026-12-04, when a
  referee's reading found it class inclusion; a sanity check since, no setting changed) — free-model risk
  0.056-0.059 (L = 2) and 0.0007 (L = 3) against 0.365 and 0.134.

Fresh seed blocks (2026-12-04, after the number-of-layers comparison became a sanity check; nothing else
changed): ``layers-feature-identity``, the one claim decided at quick, holds on seeds 200-202 and 300-302, B_ℓ's
distance 0.009-0.019 (L = 2) and 0.016-0.024 (L = 3) on the first, 0.012-0.021 and 0.011-0.024 on the second;
of the nine free runs it rests on, 5 and 6 converged (a smoothed loss falling by at most 5 % over the last fifth:
the others are still learning, the three-layer runs among them).  The deferred claims measure as before
(``one-layer-preconditioner``: 0.014, 0.017, 0.110 and 0.007, 0.010, 0.023; the deepest A_ℓ distances up to
0.091); the untrained control fails all four claims by finite values on both blocks; the number-of-layers sanity
check passes on both.

At long (seeds 0-4, the long scale's first run, 2026-12-04) all four claims HOLD.  ``one-layer-preconditioner``:
‖B − A‖/‖A‖ = 0.0039, 0.0031, 0.0029, 0.0027, 0.0029 (the slow direction converged in 8000 steps), risk 0.8608-
0.8610 against the closed form 0.836 ± 0.043.  ``layers-inverse-covariance``: every layer of every free run at or
below 0.061 (L = 3: 0.041-0.061, 0.017-0.024, 0.028-0.037; L = 1, 2: ≤ 0.012), 12 of the 15 runs converged.
``restricted-preconditioned-steps``: B = 0 layers at 0.003-0.016, risks nearer L tuned Σ⁻¹-preconditioned steps
(log contrast −0.84 and −1.19 on every seed; the three-layer model's risk 2.5 % below the tuned steps').
``layers-feature-identity``: B_ℓ at 0.003-0.012.  The untrained control fails all four by finite values; the
number-of-layers sanity checks pass.  Over training (the figure's Fig. 4 panels) the three-layer free model's
distances fall steadily from ≈ 0.5 to 0.01-0.05 by step 16 000, as the notebook's do.

The per-layer scale of Σ^(1/2)A_ℓΣ^(1/2) grows with depth (free L = 3: 0.37, 2.35, 9.3; B = 0, L = 3: 0.42-0.70,
0.43-0.70, 1.72); it is reported, not checked.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, mean_and_standard_error
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.tasks import LinearRegression
from icl_sim.theory import StepwiseGD, StepwisePreconditionedGD
from icl_sim.theory.formulas import optimal_preconditioner, preconditioned_gd_risk
from icl_sim.theory.step_tuning import tune_steps

from .measures import (layer_preconditioners, query_squared_errors, relative_error, risk_claim_check, run_mean,
                       scaled_distance, seed_values)
from .spec import Claim, Paper, Reproduction

PAPER = Paper("K. Ahn, X. Cheng, H. Daneshmand, S. Sra", "Transformers learn to implement preconditioned "
              "gradient descent for in-context learning", "NeurIPS 2023", "2306.00297")
THM_1 = "Ahn et al. 2023, Thm 1: A = ((1+1/n)Σ + tr Σ/n · I)⁻¹"
FIG_4 = "Ahn et al. 2023, Thm 4 and Fig. 4: Σ^(1/2) A_ℓ Σ^(1/2) ∝ I (authors' rotation demonstration)"
FIG_4_B = "Ahn et al. 2023, Thm 4 and Fig. 4: B_ℓ ∝ I (authors' rotation demonstration)"
THM_3 = "Ahn et al. 2023, Thm 3 (B_ℓ = 0): A_ℓ ∝ Σ⁻¹, L preconditioned GD steps (rotation demonstration-Adam-p0)"
LAYERS_FIGURE = "Ahn et al. 2023, L-layer experiment (variable_L_exp.ipynb): transformer ≤ L preconditioned GD steps"
#: the authors' D (Σ = U D² Uᵀ): full scale uses D², quick scale D itself (see the docstring)
AUTHORS_D = (1.0, 1.0, 0.5, 0.25, 1.0)
RELATIVE_TOLERANCE = 0.05  # one layer: ‖B − A‖/‖A‖
RISK_SLACK = 0.02

#: the free L-layer runs Fig. 4's claims rest on (the L-sweep's, or the figure's own three-layer run)
FREE_RUNS = ("layers-*", "figure-4")
CLAIMS = (
    Claim("one-layer-preconditioner", "One trained LSA layer (w ~ N(0, I)) is one GD step preconditioned by "
          "A = ((1+1/n)Σ + trΣ/n·I)⁻¹, with A's risk", THM_1, decided_at="long",
          reason="quick (seeds 0-2): ‖B − A‖/‖A‖ = 0.010, 0.079, 0.0065 (mean 0.032, 95 % CI up to 0.13 > 0.05): "
                 "2000 Adam steps leave one seed's slow Σ-direction unconverged; the risk holds (0.861 vs 0.836 "
                 "± 0.043)",
          runs=("one-layer",)),
    Claim("layers-inverse-covariance", "In a trained L-layer LSA (w ~ N(0, Σ⁻¹)) every layer's preconditioner A_ℓ "
          "is a multiple of Σ⁻¹", FIG_4, decided_at="long",
          reason="quick (seeds 0-2): every seed's distance ≤ 0.1, but the 95 % CI of L = 2 layer 2 (0.050, 0.066, "
                 "0.082) and of L = 3 layer 1 (0.068, 0.090, 0.072) reaches 0.106: at 2000-8000 steps the "
                 "structure is still converging, as in Fig. 4 at ~5000 steps",
          runs=FREE_RUNS),
    Claim("layers-feature-identity", "In a trained L-layer LSA (w ~ N(0, Σ⁻¹)) every layer's feature update B_ℓ "
          "(ℓ < L) is a multiple of I", FIG_4_B, runs=FREE_RUNS),
    Claim("restricted-preconditioned-steps", "With B_ℓ = 0 a trained L-layer LSA is L steps of Σ⁻¹-preconditioned "
          "GD: every A_ℓ a multiple of Σ⁻¹, its risk nearer L tuned preconditioned steps than L tuned GD steps", THM_3,
          decided_at="long",
          reason="quick's 2000 steps are shorter than Fig. 4's ≈ 5000-step point the 0.1 is read from: held on "
                 "seeds 0-2 (distances 0.007-0.025), failed on seeds 100-102 (seed 101's B = 0, L = 3 layers 2 and "
                 "3 at 0.103 and 0.108 > 0.1, its loss still falling); the risk contrast holds on both blocks",
          runs=("restricted-*",)),
)


@dataclass(frozen=True)
class Recipe:
    """How one family of runs trains: steps, optimiser and the authors' training rules (``TrainConfig`` fields)."""

    steps: int
    lr: float
    optimizer: str = "adam"
    lr_schedule: str = "cosine"
    lr_halving_every: int = 0
    grad_clip: float = 0.0
    grad_clip_matrix: float = 0.0
    batch_redraw_every: int = 1
    betas: tuple[float, float] = (0.99, 0.9)


#: the authors' notebooks (chengxiang/LinearTransformer): AdamW β = (0.99, 0.9), lr halved every K steps, each
#: (layer, head, P or Q) matrix's gradient clipped at 0.01, the batch of 20 000 prompts redrawn every 100 steps
def _authors(steps: int, lr: float, halving_every: int) -> Recipe:
    return Recipe(steps, lr, optimizer="adamw", lr_schedule="halving", lr_halving_every=halving_every,
                  grad_clip_matrix=0.01, batch_redraw_every=100)


@dataclass(frozen=True)
class Settings:
    """Training and measurement sizes of one scale."""

    spectrum: tuple[float, ...]
    layers: tuple[int, ...]  # the L-sweep, free (B_ℓ, A_ℓ) model
    restricted_layers: tuple[int, ...]  # the B_ℓ = 0 model
    one_layer: Recipe
    sweep: Recipe
    restricted: Recipe
    batch_size: int
    init_scale: float
    log_every: int
    test_prompts: int
    tuning_prompts: int
    distance_tolerance: float  # each layer's distance to a multiple of I (Fig. 4 at this scale's training length)
    #: the L-sweep's runs with L ≥ ``deep_from`` layers train by this recipe (None: ``sweep``)
    deep: Recipe | None = None
    deep_from: int = 3
    #: Fig. 4's own run (3 layers, the rotation demonstration); None: the L-sweep's runs stand for it
    figure4: Recipe | None = None
    #: the L-sweep's models are the best on the tuning prompts of their last ``best_of`` logged snapshots
    #: (variable_L_exp.ipynb: 20, every 100 steps); 0: the final model
    best_of: int = 0
    dim: int = 5
    context: int = 20


QUICK = Recipe(2000, 1e-2, grad_clip=1.0)
SCALES = {
    "smoke": Settings(spectrum=AUTHORS_D, layers=(1, 2), restricted_layers=(2,), one_layer=Recipe(5, 3e-3),
                      sweep=Recipe(5, 3e-3, grad_clip=1.0), restricted=_authors(5, 3e-3, 2), batch_size=64,
                      init_scale=0.002, log_every=5, test_prompts=512, tuning_prompts=256, distance_tolerance=0.1,
                      figure4=_authors(5, 3e-3, 4), best_of=1),
    "quick": Settings(spectrum=AUTHORS_D, layers=(1, 2, 3), restricted_layers=(2, 3), one_layer=QUICK, sweep=QUICK,
                      restricted=QUICK, deep=dataclasses.replace(QUICK, steps=8000), batch_size=1024,
                      init_scale=0.002, log_every=100, test_prompts=50_000, tuning_prompts=2048,
                      distance_tolerance=0.1),
    "full": Settings(spectrum=tuple(v * v for v in AUTHORS_D), layers=(1, 2, 3, 4), restricted_layers=(3,),
                     one_layer=_authors(20_000, 1e-2, 4000), sweep=_authors(20_000, 1e-2, 4000),
                     restricted=_authors(30_000, 2e-2, 2000), figure4=_authors(100_000, 0.1, 4000),
                     batch_size=20_000, init_scale=1e-4, log_every=100, test_prompts=100_000, tuning_prompts=20_000,
                     distance_tolerance=0.05, best_of=20),
}
#: long: quick's recipe run 4× longer (8000 steps; 16 000 for the three-layer free run), 5 seeds; every run at
#: least as long as Fig. 4's ≈ 5000-step point whose ≈ 0.1 is the threshold
SCALES["long"] = dataclasses.replace(SCALES["quick"], one_layer=dataclasses.replace(QUICK, steps=8000),
                                     sweep=dataclasses.replace(QUICK, steps=8000),
                                     restricted=dataclasses.replace(QUICK, steps=8000),
                                     deep=dataclasses.replace(QUICK, steps=16_000), log_every=200)


def _task(settings: Settings, **prior) -> LinearRegression:
    return LinearRegression(dim=settings.dim, points=settings.context + 1, spectrum=settings.spectrum,
                            rotation="fixed", **prior)


def run_plan(settings: Settings) -> dict[str, tuple[LinearRegression, dict, Recipe]]:
    """Every run: name → (task, model parameters, recipe).  ``one-layer``: Thm 1's free (P, Q) layer on
    w ~ N(0, I); ``layers-L``: the authors' model (free B_ℓ, A_ℓ) on w ~ N(0, Σ⁻¹); ``restricted-L``: B_ℓ = 0
    (Thm 3); ``figure-4``: the authors' rotation demonstration, where the scale has one."""
    inverse = _task(settings, weight_prior="inverse-covariance")
    base = {"init_scale": settings.init_scale}
    plan = {"one-layer": (_task(settings), {**base, "layers": 1}, settings.one_layer)}
    for layers in settings.layers:
        deep = settings.deep is not None and layers >= settings.deep_from
        plan[f"layers-{layers}"] = (inverse, {**base, "layers": layers, "parameterisation": "sparse"},
                                    settings.deep if deep else settings.sweep)
    for layers in settings.restricted_layers:
        plan[f"restricted-{layers}"] = (inverse, {**base, "layers": layers, "parameterisation": "preconditioner"},
                                        settings.restricted)
    if settings.figure4 is not None:
        plan["figure-4"] = (inverse, {**base, "layers": 3, "parameterisation": "sparse"}, settings.figure4)
    return plan


def runs(settings: Settings) -> dict[str, TrainConfig]:
    return {name: TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="lsa",
                              model_params=model_params, steps=recipe.steps, batch_size=settings.batch_size,
                              lr=recipe.lr, optimizer=recipe.optimizer, betas=recipe.betas,
                              lr_schedule=recipe.lr_schedule, lr_halving_every=recipe.lr_halving_every,
                              grad_clip=recipe.grad_clip, grad_clip_matrix=recipe.grad_clip_matrix,
                              batch_redraw_every=recipe.batch_redraw_every, loss_on="last",
                              log_every=settings.log_every, checkpoint_every=max(recipe.steps // 4, 1))
            for name, (task, model_params, recipe) in run_plan(settings).items()}


def monitor(settings: Settings, device):
    """The model's weights with every metrics record: Fig. 4's distances over training are read from them, and
    the L-sweep keeps the best of its last snapshots where the scale says so."""
    return lambda model: {"weights": torch.nn.utils.parameters_to_vector(model.parameters()).tolist()}


def snapshots(model, history: list[dict]) -> list[tuple[int, torch.nn.Module]]:
    """(step, model at that step) for every logged snapshot; none for an untrained model."""
    device = next(model.parameters()).device
    out = []
    for record in history:
        if "weights" in record:
            candidate = copy.deepcopy(model)
            vector = torch.tensor(record["weights"], dtype=torch.float32, device=device)
            torch.nn.utils.vector_to_parameters(vector, candidate.parameters())
            out.append((record["step"], candidate))
    return out


def best_snapshot(model, history: list[dict], prompt, count: int):
    """The model at the one of its last ``count`` logged snapshots with the least final-query loss on ``prompt``
    (the authors' validation set): ``model`` itself when none was logged (the untrained control)."""
    logged = [record for record in history if "weights" in record][-count:]
    candidates = [candidate for _, candidate in snapshots(model, logged)]
    if not candidates:
        return model
    return min(candidates, key=lambda candidate: float(query_squared_errors(candidate, prompt).mean()))


def _whitener(covariance: torch.Tensor) -> torch.Tensor:
    eigenvalues, vectors = torch.linalg.eigh(covariance)
    return (vectors * eigenvalues.sqrt()) @ vectors.T


def _tuned_baselines(task: LinearRegression, covariance: torch.Tensor, measurement, layers: int) -> dict:
    """L tuned steps of GD and of Σ⁻¹-preconditioned GD (one step size per step, on the tuning prompts)."""
    tuning = measurement.prompts(task, "tuning", measurement.settings.tuning_prompts)
    inverse_root = torch.linalg.inv(_whitener(covariance))
    (gd, *_) = tune_steps("gd", tuning.xs, tuning.ys, layers)
    (whitened, *_) = tune_steps("gd", tuning.xs @ inverse_root, tuning.ys, layers)
    steps = whitened.parameters["step_sizes"]
    inverse = torch.linalg.inv(covariance)
    return {"GD": StepwiseGD(gd.parameters["step_sizes"].tolist()),
            "preconditioned GD": StepwisePreconditionedGD(steps[:, None, None] * inverse)}


def distances_to_identity(model, root: torch.Tensor, free: bool) -> dict[str, float]:
    """The authors' ``compute_dist_identity``, ‖M − (tr M/d) I‖_F/‖M‖_F (our least-squares scale equals tr M/d),
    of M = Σ^(1/2) A_ℓ Σ^(1/2) per layer and, for the free model, of B_ℓ per layer but the last (which feeds
    nothing); with the fitted scale of each Σ^(1/2) A_ℓ Σ^(1/2)."""
    identity = torch.eye(root.shape[0], dtype=torch.float64)
    out = {}
    for layer, matrix in enumerate(layer_preconditioners(model), start=1):
        distance, scale = scaled_distance(root @ matrix @ root, identity)
        out[f"distance_to_identity_layer_{layer}"], out[f"scale_layer_{layer}"] = distance, scale
    if free:
        updates = model.feature_update.detach().to(torch.float64)[:, 0]
        for layer, matrix in enumerate(updates[:-1], start=1):
            out[f"feature_distance_layer_{layer}"] = scaled_distance(matrix, identity)[0]
    return out


def measure(measurement) -> dict:
    settings = measurement.settings
    rows, baselines = [], {}

    def add(run, seed, **values):
        rows.extend({"run": run, "seed": seed, "quantity": key, "value": value} for key, value in values.items())

    spectra, over_training = {}, {}
    tracked = tracked_runs(settings)
    for name, (task, model_params, _) in run_plan(settings).items():
        prompt = measurement.prompts(task, "test", settings.test_prompts)
        covariance = prompt.latent["covariance"][0].to(torch.float64)
        root = _whitener(covariance)
        eigenvalues, vectors = torch.linalg.eigh(covariance)
        if name == "one-layer":
            optimum = optimal_preconditioner(covariance, settings.context)
            spectra["eigenvalues"] = eigenvalues.tolist()
            spectra["optimum"] = torch.diagonal(vectors.T @ optimum @ vectors).tolist()
            spectra["inverse"] = (optimum.trace() / torch.linalg.inv(covariance).trace() / eigenvalues).tolist()
            for seed, model in enumerate(measurement.models[name]):
                (matrix,) = layer_preconditioners(model)
                risk, error = mean_and_standard_error(query_squared_errors(model, prompt))
                add(name, seed, relative_error=relative_error(matrix, optimum),
                    shape_residual=scaled_distance(matrix, optimum)[0],
                    inverse_covariance_residual=scaled_distance(matrix, torch.linalg.inv(covariance))[0],
                    identity_residual=scaled_distance(matrix, torch.eye(task.dim, dtype=torch.float64))[0],
                    risk=risk, risk_standard_error=error,
                    risk_formula=float(preconditioned_gd_risk(covariance, settings.context)))
                spectra.setdefault("learned", []).append(torch.diagonal(vectors.T @ matrix @ vectors).tolist())
            continue
        layers, free = model_params["layers"], model_params["parameterisation"] == "sparse"
        if layers not in baselines:
            found = _tuned_baselines(task, covariance, measurement, layers)
            baselines[layers] = {label: query_squared_errors(baseline, prompt) for label, baseline in found.items()}
        baseline_errors = baselines[layers]
        validation = measurement.prompts(task, "tuning", settings.tuning_prompts)
        for seed, model in enumerate(measurement.models[name]):
            if name.startswith("layers-") and settings.best_of:
                model = best_snapshot(model, measurement.histories[name][seed], validation, settings.best_of)
            errors = query_squared_errors(model, prompt)
            difference = mean_and_standard_error(errors - baseline_errors["preconditioned GD"])
            risk, risk_gd = float(errors.mean()), float(baseline_errors["GD"].mean())
            risk_pgd = float(baseline_errors["preconditioned GD"].mean())
            add(name, seed, layers=layers, risk=risk, risk_gd=risk_gd, risk_preconditioned_gd=risk_pgd,
                risk_minus_preconditioned_gd=difference[0], paired_standard_error=difference[1],
                log_distance_contrast=abs(math.log(risk / risk_pgd)) - abs(math.log(risk / risk_gd)),
                **distances_to_identity(model, root, free))
        if name in tracked:
            over_training[name] = [distances_over_training(model, history, root, free)
                                   for model, history in zip(measurement.models[name], measurement.histories[name])]
    return {"rows": rows, "spectra": spectra, "over_training": over_training}


def distances_over_training(model, history: list[dict], root: torch.Tensor, free: bool) -> dict[str, list[float]]:
    """Fig. 4's curves for one seed: ``steps`` and each of :func:`distances_to_identity`'s values at every logged
    snapshot (empty for an untrained model)."""
    found = {"steps": []}
    for step, snapshot in snapshots(model, history):
        found["steps"].append(step)
        for key, value in distances_to_identity(snapshot, root, free).items():
            found.setdefault(key, []).append(value)
    return found


def tracked_runs(settings: Settings) -> tuple[str, ...]:
    """The runs whose distances Fig. 4 draws over training: the three-layer free run (Fig. 4's own, or the
    L-sweep's deepest) and the deepest B = 0 run (the authors' p0 notebook)."""
    free = max(distance_runs(settings).items(), key=lambda item: item[1])[0]
    return (free, f"restricted-{max(settings.restricted_layers)}")


def _per_seed(results: dict, run: str, quantity: str) -> list[float]:
    return seed_values(results["rows"], quantity, run=run)


def distance_runs(settings: Settings) -> dict[str, int]:
    """The free-model runs whose matrices Fig. 4's claims are checked on, with their depths."""
    if settings.figure4 is not None:
        return {"figure-4": 3}
    return {f"layers-{layers}": layers for layers in settings.layers}


def _distance_checks(results: dict, settings: Settings, claim: str, run: str, layers: int, quantity: str,
                     label: str, source: str) -> list[Check]:
    return [claim_check(claim, f"{run}, layer {layer}: distance of {label} to a multiple of I",
                        settings.distance_tolerance, _per_seed(results, run, f"{quantity}_layer_{layer}"),
                        relation="at_most", source=source)
            for layer in range(1, layers + 1)]


def checks(results: dict, settings: Settings) -> list[Check]:
    out = [
        claim_check("one-layer-preconditioner", "one layer, w ~ N(0, I): ‖B − A‖_F/‖A‖_F", RELATIVE_TOLERANCE,
                    _per_seed(results, "one-layer", "relative_error"), relation="at_most", source=THM_1),
        risk_claim_check("one-layer-preconditioner", "one layer: test risk against the risk of A",
                         run_mean(results, "one-layer", "risk_formula"), _per_seed(results, "one-layer", "risk"),
                         _per_seed(results, "one-layer", "risk_standard_error"), slack=RISK_SLACK,
                         source=f"{THM_1} (preconditioned_gd_risk)"),
    ]
    for run, layers in distance_runs(settings).items():
        out += _distance_checks(results, settings, "layers-inverse-covariance", run, layers, "distance_to_identity",
                                "Σ^(1/2)A_ℓΣ^(1/2)", FIG_4)
        out += _distance_checks(results, settings, "layers-feature-identity", run, layers - 1, "feature_distance",
                                "B_ℓ", FIG_4_B)
    for layers in settings.restricted_layers:
        run = f"restricted-{layers}"
        out += _distance_checks(results, settings, "restricted-preconditioned-steps", run, layers,
                                "distance_to_identity", "Σ^(1/2)A_ℓΣ^(1/2)", THM_3)
        out.append(claim_check("restricted-preconditioned-steps",
                               f"{run}: |log risk/risk(L tuned Σ⁻¹-precond. GD)| − |log risk/risk(L tuned GD)|",
                               0.0, _per_seed(results, run, "log_distance_contrast"), relation="at_most",
                               source=THM_3))
    for layers in settings.layers:
        if layers >= 2:
            out.append(Check(f"L={layers}: largest risk(L-layer LSA) − risk(L tuned Σ⁻¹-preconditioned GD steps) "
                             "over seeds (a special case of the trained class)", 0.0,
                             max(_per_seed(results, f"layers-{layers}", "risk_minus_preconditioned_gd")),
                             relation="at_most", source=LAYERS_FIGURE))
    return out


def _per_layer(results: dict, run: str, layers: int, quantity: str):
    """Seed curves over the layers ℓ = 1 … L of a run: (ℓ values, per-seed values)."""
    by_layer = [_per_seed(results, run, f"{quantity}_layer_{k}") for k in range(1, layers + 1)]
    return list(range(1, layers + 1)), [list(curve) for curve in zip(*by_layer)]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """The one-layer preconditioner (Thm 1), Fig. 4's distances per layer (A_ℓ and B_ℓ; with B_ℓ = 0, Thm 3),
    the loss against L, and the per-layer steps."""
    spectra = results["spectra"]
    one_layer = Panel("eigenvalue λ of Σ", "uᵀBu on Σ's eigenvector u", [
        seed_curve("trained one-layer LSA", spectra["eigenvalues"], spectra["learned"], continuous=False),
        Curve("A = ((1+1/n)Σ + trΣ/n·I)⁻¹ (Thm 1)", spectra["eigenvalues"], spectra["optimum"], baseline=True),
        Curve("c·Σ⁻¹ (same trace)", spectra["eigenvalues"], spectra["inverse"], baseline=True)],
        title="one layer, w ~ N(0, I)", xscale="log", yscale="log")
    free = distance_runs(settings)
    restricted = {f"restricted-{layers}": layers for layers in settings.restricted_layers}
    deepest = max([*free.values(), *restricted.values()])
    required = [Target(f"required ≤ {settings.distance_tolerance:g}", settings.distance_tolerance, 0.0,
                       settings.distance_tolerance, where=(1, deepest))]
    distances = Panel("layer ℓ", "distance of Σ^(1/2)A_ℓΣ^(1/2) to cI", [
        *[seed_curve(run, *_per_layer(results, run, layers, "distance_to_identity"), continuous=False)
          for run, layers in free.items()],
        *[seed_curve(f"{run} (B = 0)", *_per_layer(results, run, layers, "distance_to_identity"), continuous=False)
          for run, layers in restricted.items()]],
        targets=required, title="Fig. 4, Thm 3: A_ℓ, w ~ N(0, Σ⁻¹)")
    features = Panel("layer ℓ", "distance of B_ℓ to cI",
                     [seed_curve(run, *_per_layer(results, run, layers - 1, "feature_distance"), continuous=False)
                      for run, layers in free.items() if layers >= 2],
                     targets=required, title="Fig. 4: B_ℓ (ℓ < L)")
    depth = list(settings.layers)
    runs_by_depth = [f"layers-{layers}" for layers in depth]
    risks = [_per_seed(results, run, "risk") for run in runs_by_depth]
    losses = Panel("number of layers / steps L", "test risk E(ŷ − y_q)²", [
        seed_curve("trained LSA", depth, [list(curve) for curve in zip(*risks)], continuous=False),
        Curve("tuned GD", depth, [run_mean(results, run, "risk_gd") for run in runs_by_depth], baseline=True,
              continuous=False),
        Curve("tuned Σ⁻¹-preconditioned GD", depth,
              [run_mean(results, run, "risk_preconditioned_gd") for run in runs_by_depth], baseline=True,
              continuous=False)],
        title="loss against L (free B_ℓ)", yscale="log")
    restricted_depth = list(settings.restricted_layers)
    relative = [[risk / pgd - 1 for risk, pgd in zip(_per_seed(results, f"restricted-{layers}", "risk"),
                                                     _per_seed(results, f"restricted-{layers}",
                                                               "risk_preconditioned_gd"))]
                for layers in restricted_depth]
    thm_3 = Panel("number of layers / steps L", "risk / risk(L tuned Σ⁻¹-precond. steps) − 1", [
        seed_curve("trained LSA, B = 0", restricted_depth, [list(curve) for curve in zip(*relative)],
                   continuous=False)],
        targets=[Target("L tuned Σ⁻¹-preconditioned steps", 0.0, 0.0, 0.0)], title="Thm 3: B = 0 against its steps")
    scales = Panel("layer ℓ", "scale of Σ^(1/2)A_ℓΣ^(1/2)", [
        *[seed_curve(run, *_per_layer(results, run, layers, "scale"), continuous=False) for run, layers in free.items()],
        *[seed_curve(f"{run} (B = 0)", *_per_layer(results, run, layers, "scale"), continuous=False)
          for run, layers in restricted.items()]], title="per-layer step (reported, not checked)")
    return [one_layer, distances, features, *_over_training(results, settings), losses, thm_3, scales]


def _over_training(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 4 as the authors draw it: each matrix's distance to a multiple of I against the training step, for the
    three-layer free run and the deepest B = 0 run (none for untrained models, which have no snapshots)."""
    panels = []
    for run in tracked_runs(settings):
        seeds = results["over_training"][run]
        if not seeds or not seeds[0]["steps"]:
            continue
        steps = seeds[0]["steps"]
        keys = [key for key in seeds[0] if key.startswith(("distance_to_identity", "feature_distance"))]
        curves = [seed_curve(("A" if key.startswith("distance") else "B") + f"_{key.rsplit('_', 1)[1]}", steps,
                             [seed[key] for seed in seeds]) for key in keys]
        label = run if run.startswith("layers") or run == "figure-4" else f"{run} (B = 0)"
        required = Target(f"required ≤ {settings.distance_tolerance:g} at the end", settings.distance_tolerance, 0.0,
                          settings.distance_tolerance, where=(steps[-1], steps[-1]))
        panels.append(Panel("training step", "distance to cI (Σ^(1/2)A_ℓΣ^(1/2), B_ℓ)", curves, targets=[required],
                            title=f"Fig. 4 over training: {label}", yscale="log"))
    return panels


REPRODUCTION = Reproduction(
    name="ahn-2023",
    paper=PAPER,
    summary="One trained linear self-attention layer is one step of GD preconditioned by "
          "((1+1/n)Σ + trΣ/n·I)⁻¹; L layers are L Σ⁻¹-preconditioned steps (B_ℓ = 0, Thm 3), and with their "
          "feature updates B_ℓ ∝ I they beat them.",
    caption="Thm 1, Thm 3, Fig. 4 and the number-of-layers experiment of the paper: d = 5, n = 20, one fixed "
            "Σ = UD²Uᵀ",
    scales=SCALES,
    runs=runs,
    measure=measure,
    claims=CLAIMS,
    checks=checks,
    figure=figure,
    monitor=monitor,
    quick_minutes=9.3,
    long_minutes=35.0,
)
