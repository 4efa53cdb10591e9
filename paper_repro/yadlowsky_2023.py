"""Yadlowsky, Doshi & Tripuraneni (2023), "Pretraining data mixtures enable narrow model selection capabilities in
transformer models" (arXiv 2311.00871).

What could be read (searched 2026-12-05: arXiv HTML and ar5iv copies, emergentmind, summarizepaper, arxivlens,
deeppaper, paperswithcode, chatpaper, sciencestack, the authors' names with the families' names; no code of the
authors' was found):

* the abstract and the opening of the introduction (a stored markdown copy of the arXiv text,
  hf.edwardfuchs.keenetic.pro/papers/2311.00871.md, of which only the beginning could be read): a transformer
  trained, as in Garg et al. (2022), on sequences of (x, f(x)) pairs whose f comes from a mixture of distinct
  function families first identifies the family in context and then learns within it, near-optimally, when the
  family is well-represented in the pretraining mixture; on functions outside the mixture it fails, its
  generalisation degrading even for simple extrapolations;
* the abstract of the workshop version, Tripuraneni, Doshi & Yadlowsky, "Can transformers in-context learn task
  mixtures?" (NeurIPS 2023 workshop on distribution shifts; openreview.net/forum?id=HpY9tkX3Ui): for pretraining
  mixtures balanced across task families the cost of unsupervised in-context family selection is near zero; for
  families rarely seen in pretraining the in-context learning curves are non-monotonic;
* the opening of a third-party literature review of the paper (a markdown file in a public repository, found by
  the code search, its repository not named): x drawn from a normal distribution, f from a mixture of function
  classes among which D(F_dense), dense linear functions, and D(F_sparse, nnz), sparse linear functions with nnz
  non-zero weights; the text breaks off there.

Not read, so not the paper's: d, the number of points, the model's size, the mixture weights, the sparsity nnz,
the ReLU networks' width, the sinusoids' form and frequency range, the figures and their axes, and every number
the paper reports.  The issue that asked for this reproduction (issue 42) names the two out-of-mixture tests,
convex combinations of the families and sinusoids of frequencies outside the pretraining range, and the ReLU-network
family; every size below is this module's choice, taken from Garg et al. (their src/conf and tasks.py) where the
paper says it builds on them.

Setting.  Functions on x ~ N(0, I_d): the linear family f(x) = wᵀx, w ~ N(0, I_d) (``linear-regression``), and
sinusoids f(x) = a sin(ω uᵀx + φ), u uniform on the unit sphere, ω uniform on [1, 2], φ uniform on [0, 2π)
(``sinusoid``), with a = √(2d) so that E[f(x)²] = d for both families, as Garg et al. scale each of their families
(the sinusoids at a = 1 carry half the linear functions' scale, and a 1-seed pilot of the mixture at a = 1 had them
at 0.67 of their trivial error after 6000 steps against 0.41 at a = √2 after 4000).  Three GPT-2-style
transformers (``gpt``, Garg et al.'s model) train per seed on one recipe: ``mixture`` on the two families mixed per
prompt with weights ½, ½ (``mixture``), and the two experts ``linear`` and ``sinusoid`` on one family each, for half
the mixture model's steps, so that each sees as many prompts of its family as the mixture model does.  Out of the
mixture, with the same points: convex combinations α wᵀx + (1 − α) a sin(ω uᵀx + φ) at α = ¼, ½, ¾ (``sinusoid``
with ``linear_weight`` α) and sinusoids of frequencies in [0.25, 0.5], [0.5, 1], [2, 3] and [3, 4].

Measure.  Squared error at every k (the number of in-context examples), per training seed, on held-out prompts
(the "test" stream), and the relative error: the error over the trivial predictor's E[y²] (0 is predicting 0), so
that functions of different scales compare; "late" means averaged over k = ⌈(N − 1)/2⌉ … N − 1 (k = 5 … 10 at
N = 11), where a learner of either family has seen enough points to pin its function down.

The dense / sparse / ReLU mixture (the review's two linear families, the ReLU networks of issue 42): one more
transformer per seed, ``selection``, on the same recipe, trains on prompts drawn with weights ⅓, ⅓, ⅓ from dense
linear functions (w ~ N(0, I_d)), sparse ones (Garg et al.'s: ``sparsity`` entries of w ~ N(0, 1) at random
coordinates, the rest 0) and two-layer ReLU networks √(2/h) aᵀReLU(Wx) with h = 100 (Garg et al.'s
``relu_2nn_regression``), at d = 20, 41 points and 3 non-zero weights at full (Garg et al.'s sizes).  It is measured
on held-out prompts of each family at every k, against least squares (``OLS``) and Lasso (``Lasso``, λ = 0.01,
FISTA), on the window k = d/2 … d − 2: fewer points than d, where least squares' relative error is 1 − k/d on either
linear family while Lasso's on sparse prompts is far below it (at d = 8, one weight, k = 4 … 6: 0.10 against 0.40;
at full, d = 20, three weights, k = 10 … 18: 0.02 against 0.35, 300 prompts) and on dense ones above it (0.58
against 0.39; at full 0.43 against 0.29).

Claims (``CLAIMS``), each a contrast fixed before any run of this module, one value per training seed:

* ``selects-family`` (abstract: near-optimal model selection, identifying the family in context): on each family
  F, (a) the mixture model's late relative error at most ``MARGIN`` = 0.1 (a tenth of the trivial error) above the
  expert of F's, and (b) at most ``FAR_BELOW`` = ¼ of the other expert's late error on F.  A model of the wrong
  mechanism, one learner for both families (committed to one family's fit, or a blend of the two), fails (a) on
  one family and (b) on the other; so does the untrained control, whose models are alike ((b) ≈ 1).
* ``combinations-degrade`` (abstract: failure outside the pretraining mixture; issue 42: convex combinations):
  the mixture model's late relative error on the α = ½ combination at least ``DEGRADATION`` = 2 times the larger of
  its late relative errors on the two pure families.  A learner that fits functions beyond the mixture (a general
  regressor, or one of the union of the families) does about as well on the combination as on the hardest family
  (ratio ≈ 1), and a model that only picks one family leaves the other's half of the signal: ¼ of E[y²] from the
  sinusoid's, ⅓ of the combination's trivial error.
* ``frequencies-degrade`` (abstract: degradation even for simple extrapolation; issue 42: out-of-range
  frequencies): its late relative error on sinusoids of frequency in [3, 4] at least ``DEGRADATION`` = 2 times its
  late relative error on those of the pretraining range [1, 2].  A learner of sinusoids as such (one that fits the
  frequency from the points, as least squares over a grid of ω would) has ratio ≈ 1 with 5 to 10 noiseless points.
  The untrained control's relative error is flat in α and ω (ratios ≈ 1): it fails both.
* ``selects-sparsity`` (abstract: model selection between the families of the mixture; the review's dense and
  sparse families): on sparse prompts the selection model's window error, placed on the segment from Lasso's (0)
  to least squares' (1), at most ``HALF_WAY`` = ½, and on dense prompts, placed from least squares' (0) to Lasso's
  (1), at most ½: on each family nearer that family's estimator than the other's.  The wrong mechanisms fail one
  each: a learner that ignores sparsity (least squares, ridge, any rotation-invariant rule, a dense-only model)
  sits at 1 on sparse prompts, whatever its training, and one that always fits sparse functions (Lasso) at 1 on
  dense ones; the untrained control, at the trivial error on both, sits far beyond 1 (2-17).

Scales.  ``full`` is Garg et al.'s recipe, which the abstract says the paper builds on (their src/conf: the
``standard`` GPT-2 of 12 layers, width 256, 8 heads, Adam at 1e-4, batch 64, 500 001 steps, curriculum dims
5:1:2000 and points 11:2:2000, d = 20 and 41 points, 1280 test prompts): the paper's own sizes could not be read.
``quick`` and ``long`` shrink it to d = 1 and 11 points (k up to 10), a GPT of 2 layers, width 32 and 2 heads
(GPT-2's tanh GELU, init std 0.02, the read-in and read-out at nn.Linear's default as in Garg et al.'s code), batch
64, Adam at 3e-3 with 100 warm-up steps and a cosine decay, no curriculum (at d = 1 there are no dimensions to grow,
and the prompts are short): 2400 steps for the mixture model at quick (1200 for each expert; 3 seeds), 12 000 at
long (6000; 5 seeds).  A model-step costs 11.8 ms of CPU
(measured: dev block 900, 3 runs × 3 seeds × 2000 steps and the measure, 212 s user + 10 s sys), so quick is about
2.8 CPU minutes and long about 5 × 24 000 × 11.8 ms = 23.6 (measured: 19.4 on a less loaded machine); with the
selection runs below quick measures 3.5.
The selection model at quick and long: d = 8, 15 points, one non-zero weight, 500 steps; its claim is decided at
full only (``PILOTS``: the quick model learns neither linear family at d = 8 in 3000-6000 steps), so these runs
carry the pipeline and the control (8 CPU s a seed).  ``smoke`` trains a few steps.

Fidelity defect, fixed 2026-12-05 (before it, every quick and long run below under "Measured before the fix").
Until then ``quick`` and ``long`` initialised the GPT's read-in and read-out like its other layers (GPT-2's normal
of std 0.02), where Garg et al.'s model, whose recipe the paper builds on, has them as nn.Linear layers outside
HuggingFace's GPT2Model at PyTorch's default (uniform of ±1/√fan-in: ±1 for the read-in at d = 1, ±0.18 for the
read-out at width 32); ``full`` already had them so.  The defect is why seed 0's linear expert at long never
trained: its read-out weights fell to a norm of 0.004 (0.96-1.10 in the other four experts) and its read-in stayed at
its initial 0.12, the saddle where a zero read-out passes no gradient back, its loss at 0.97-1.01 for all 6000
steps; the same run with the read-out and read-in at nn.Linear's default leaves that plateau by step 500 (loss
0.56 at step 400, 0.14 at 900; 1000 steps, 10 CPU s).

Measured after the fix (2026-12-05, seed blocks never run before; CPU = user + sys at one thread, under a load of
6-9):

* ``frequencies-degrade`` at quick, block 1200 (3.5 CPU min): 6.65, 5.28, 7.10, 95 % CI [3.98, 8.71]: HELD; block
  1300 (3.5 CPU min): 5.66, 7.32, 4.89, CI [2.87, 9.04]: HELD.  The mixture models' late relative error on
  sinusoids is 0.14-0.24 in the pretraining range and 1.04-1.33 at ω in [3, 4].
* deferred at quick, blocks 1200 and 1300: selects-family linear margin 0.001, −0.026, 0.017 and −0.306, −0.029,
  0.070 (seed 1300's linear expert left the plateau only at step ~900 of its 1200, its read-out at norm 0.59, not
  the defect's saddle); linear, far below 0.11, 0.18, 0.12 and 0.13, 0.10, 0.19; sinusoid margin 0.070, 0.103,
  0.026 and 0.041, 0.041, 0.101; sinusoid, far below 0.10, 0.11, 0.07 and 0.16, 0.08, 0.10.  combinations-degrade
  1.17, 1.06, 1.17 and 1.36, 1.43, 0.95.  selects-sparsity (500 steps, d = 8: the selection model near the trivial
  error, 1.02-1.03 on dense prompts, 0.93-0.94 on sparse ones, 0.79-0.80 on ReLU networks): sparse 3.10, 3.10, 3.09
  and 3.10, 3.11, 3.12, dense 3.95, 3.91, 3.96 and 3.94, 3.96, 3.95 (required ≤ ½).
* untrained control, blocks 1200 and 1300 (0.6 CPU min each): selects-family margins 0 and ratios 1 (the runs share
  their initial weights); combinations 1.10, 1.39, 1.20 and 1.23, 1.08, 1.09; frequencies 1.00, 1.00, 1.00 and 1.01,
  1.00, 1.01; selects-sparsity sparse 4.60, 3.83, 4.87 and 5.44, 4.44, 4.56, dense 4.11, 3.98, 4.16 and 4.32, 4.08,
  4.07: every claim failed by a finite value.
* the gallery's quick block (seeds 0-2; 3.4 CPU min, control 0.6): frequencies-degrade 4.58, 5.72, 5.70, CI [3.70,
  6.96], held; deferred: selects-family linear margin 0.075, −0.198, −0.059, sinusoid margin −0.138, 0.043, −0.155,
  far below 0.16, 0.14, 0.12 (linear) and 0.10, 0.16, 0.11 (sinusoid); combinations 0.89, 1.10, 0.93;
  selects-sparsity sparse 3.10, 3.11, 3.13, dense 3.93, 3.96, 3.99.  Untrained control: selects-family margins 0
  and ratios 1, combinations 1.54, 1.33, 1.07, frequencies 1.01, 1.01, 1.00, selects-sparsity sparse 4.41, 4.40,
  3.61, dense 4.06, 4.11, 3.91: every claim failed by a finite value.
* ``--scale full --rehearse`` passes with the selection runs: 12 runs of 9.5 M parameters, 1.28e18 FLOP, about 54
  minutes on one H200 at 40 % of its bf16 peak (0.7 CPU min here).
* long, the gallery's block (seeds 0-4; 19.7 CPU min, control 1.8): seeds run before only with the defective
  initialisation, never with the fixed model, so that its first run serves as the long verdict (a block never run
  at all, e.g. 1200-1204, is left for a second long verdict).  ``selects-family`` HELD, every check on every seed:
  linear margin 0.042, 0.044, 0.033, 0.025, 0.048 (CI [0.027, 0.050]); linear, far below 0.068, 0.078, 0.064,
  0.051, 0.080; sinusoid margin 0.015, 0.057, −0.060, 0.047, 0.054 (CI [−0.038, 0.084]); sinusoid, far below
  0.024, 0.029, 0.021, 0.032, 0.023.  Every linear expert trained (relative error 0.004-0.011 on linear functions,
  where seed 0's had 1.02 before the fix).  ``combinations-degrade`` HELD: 2.98, 2.77, 2.28, 3.03, 3.13 (CI [2.42,
  3.25]): relative error 0.20-0.30 at α = ½ against 0.08-0.10 on sinusoids and 0.03-0.05 on linear functions.
  ``frequencies-degrade`` 10.2, 10.3, 10.3, 12.2, 10.7 (held).  The selection runs (500 steps) sit near the trivial
  error (1.02-1.03 dense, 1.03-1.04 sparse, 0.80-0.81 ReLU): selects-sparsity sparse 3.08, 3.10, 3.12, 3.12, 3.12,
  dense 3.78, 3.81, 3.84, 3.82, 3.85, deferred.  Untrained control: selects-family margins 0 and ratios 1,
  combinations 1.56, 1.34, 1.08, 1.37, 1.14, frequencies 0.98, 0.98, 0.99, 1.00, 0.99, selects-sparsity sparse
  4.26, 4.24, 3.47, 3.93, 3.87, dense 3.99, 3.91, 3.77, 3.86, 3.84: every claim failed by a finite value.

Measured before the fix (2026-12-05, read-in and read-out at std 0.02; per-seed values in seed order; CPU = user +
sys at one thread, under a load of 5-9):

* dev block 900 (2000 steps for all three runs, before the experts' steps were halved; 3.7 CPU min): selects-family
  0.067, −0.019, 0.135 (linear margin), 0.26, 0.12, 0.39 (linear, far below), 0.20, 0.11, 0.52 (sinusoid margin),
  0.15, 0.10, 0.29 (sinusoid, far below); combinations 0.92, 0.99, 0.97; frequencies 4.43, 5.30, 2.56.  On it
  selects-family and combinations-degrade were moved to long, before any verdict block was run.
* ``frequencies-degrade`` at quick: block 1000 (seeds 1000-1002; 2.87 CPU min) 2.26, 5.76, 5.19, 95 % CI
  [−0.26, 9.07]: INCONCLUSIVE (every seed above 2; seed 1000's mixture model had learned the sinusoids least, its
  in-range relative error 0.62 against 0.17 and 0.25); block 1100 (2.87 CPU min) 5.27, 5.34, 4.83, CI [4.46, 5.83]:
  HELD.  The sinusoid expert degrades alike (relative error 0.09-0.27 in range, 1.17-1.41 at [3, 4], block 1000).
* deferred at quick (decided at long), blocks 1000 and 1100: selects-family linear margin 0.086, −0.009, −0.026 and
  −0.014, 0.033, 0.064; linear, far below 0.29, 0.16, 0.10 and 0.15, 0.12, 0.15; sinusoid margin 0.53, 0.05, −0.02
  and 0.12, 0.07, 0.06; sinusoid, far below 0.26, 0.08, 0.12 and 0.13, 0.07, 0.13.  combinations-degrade 1.14,
  0.92, 1.21 and 0.95, 1.06, 1.05: even the mixture models within the margin of both experts (seeds 1001, 1002,
  1101, 1102) do as well on the α = ½ combination as on the sinusoids at d = 1 (seed 1001: relative error 0.17 on
  sinusoids, 0.16 at α = ½, 0.09 on linear functions); the longer-trained models at long do degrade (below).
* untrained control (blocks 1000 and 1100): the three runs start from the same weights, so selects-family's
  margins are 0 and its ratios exactly 1 (against ≤ ¼: failed by a finite value); combinations 0.99, 1.01, 0.99 and
  1.00, 0.99, 1.00; frequencies 1.00, 0.99, 1.00 and 1.01, 1.00, 1.00 (against ≥ 2): every claim failed.
* the gallery's quick block (seeds 0-2; 3.06 CPU min): frequencies 2.23, 5.57, 4.49, CI [−0.14, 8.33],
  inconclusive (seed 0's mixture model, like seed 1000's, had learned the sinusoids least); deferred: sinusoid
  margin 0.53, 0.07, −0.07, combinations 0.98, 0.93, 0.92; untrained control as above (combinations 1.00, 1.01,
  0.99; frequencies 1.00, 0.99, 1.00).
* ``--scale full --rehearse`` passes: 9 runs of 9.5 M parameters, 8.54e17 FLOP, about 36 minutes on one H200 at
  40 % of its bf16 peak.
* long (the gallery's block, seeds 0-4, its first run: the verdict; 19.4 CPU min, control 1.5): selects-family
  INCONCLUSIVE: the linear margin is −1.004, 0.027, 0.032, 0.013, 0.037 (95 % CI [−0.75, 0.39]): seed 0's linear
  expert never left the plateau (relative error 1.02, its loss 0.97 at the end), the other four mixture models are
  within 0.04 of theirs; the other three checks held on every seed: linear, far below 0.027, 0.061, 0.069, 0.034,
  0.078; sinusoid margin 0.025, 0.055, 0.057, 0.046, 0.069; sinusoid, far below 0.073, 0.028, 0.028, 0.041, 0.036.
  combinations-degrade INCONCLUSIVE: 3.48, 1.83, 2.00, 3.48, 2.08 (CI [1.54, 3.60]): the mixture models' relative
  error at α = ½ is 0.18-0.28 against 0.07-0.11 on sinusoids and 0.02-0.05 on linear functions, a degradation
  quick's less trained models (0.9-1.2) did not show, but two seeds of five at or under the factor 2.
  frequencies-degrade 12.9, 8.9, 9.4, 13.1, 8.0 (held).  Untrained control: margins 0 and ratios 1 (selects-family
  failed), combinations 1.01, 1.02, 1.01, 1.01, 1.01, frequencies 0.99, 0.99, 0.99, 0.99, 0.99: every claim failed.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

from icl_sim.checks import Check, claim_check
from icl_sim.config import Curriculum, TrainConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.tasks import LinearRegression
from icl_sim.tasks.mixture import Mixture
from icl_sim.tasks.relu_network import ReLUNetwork
from icl_sim.tasks.sinusoid import Sinusoid
from icl_sim.theory import KNN, OLS, Lasso

from .measures import seed_values, squared_errors
from .spec import Claim, Paper, Reproduction

PAPER = Paper("S. Yadlowsky, L. Doshi, N. Tripuraneni",
              "Pretraining data mixtures enable narrow model selection capabilities in transformer models",
              "arXiv preprint 2023", "2311.00871")
ABSTRACT = "Yadlowsky et al. 2023, abstract"
ISSUE = "issue 42's reading of the paper"
#: the pretraining families, by run name
FAMILIES = ("linear", "sinusoid")
#: the pretraining range of the sinusoids' frequency (the ``sinusoid`` task's default)
TRAINED_BAND = (1.0, 2.0)
#: frequency bands shown beside the trained one; the claim reads the highest
BANDS = ((0.25, 0.5), (0.5, 1.0), TRAINED_BAND, (2.0, 3.0), (3.0, 4.0))
OUT_OF_RANGE = (3.0, 4.0)
#: the convex combinations α wᵀx + (1 − α) sin(...) shown (α = 0: the sinusoids, 1: the linear functions)
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
COMBINATION = 0.5
#: fixed before running: the mixture model within a tenth of the trivial error of each expert (relative error)
MARGIN = 0.1
#: fixed before running: "far below the other family's expert": at most this fraction of its error
FAR_BELOW = 0.25
#: fixed before running: "degrades sharply": relative error at least this factor of the in-mixture one
DEGRADATION = 2.0
#: the runs: the mixture model and one expert per family
RUNS = ("mixture", *FAMILIES)
#: the run pretrained on dense linear, sparse linear and two-layer ReLU-network functions (weights ⅓ each)
SELECTION = "selection"
#: its families by name, in the order of the mixture's components
SELECTION_FAMILIES = ("dense", "sparse", "relu")
#: Lasso's penalty λ for noiseless sparse prompts (objective (1/2k) Σ (wᵀx − y)² + λ‖w‖₁)
LASSO_PENALTY = 0.01
#: fixed before running: "tracks the right estimator": at most half-way from it to the wrong one
HALF_WAY = 0.5
#: GPT-2's MLP activation, as in Garg et al.'s model (HuggingFace ``gelu_new``)
GPT2_MLP = {"activation": "gelu-tanh"}

PILOTS = ("dev seed 900, the quick model on the three-family mixture at d = 8, 15 points, s = 1: after 3000 steps "
          "(no curriculum), 6000 (dimensions grown 2 to 8) and 4000 on dense and sparse functions alone, its relative "
          "error on dense prompts at k = 4-6 is 0.97, 0.85, 0.96 and on sparse ones 1.04, 0.93, 1.04, where least "
          "squares has 0.39 and 0.40 and Lasso 0.58 and 0.10: it has not learned least squares, let alone chosen "
          "between it and Lasso (as Garg et al.'s linear regression at d > 1, garg-2022); a larger model trained "
          "longer does not fit the long scale's 20 CPU minutes, 19.4 of which the claims above take")
DEV_QUICK = "dev block 900 (seeds 900-902) at quick's recipe with 2000 steps for all three runs (3.7 CPU min): "
CLAIMS = (
    Claim("selects-family", "Pretrained on a mixture of linear functions and sinusoids, the transformer identifies "
          "each prompt's family in context: on each family its error is close to the model trained on that family "
          "alone, far below the other family's model", f"{ABSTRACT} (near-optimal model selection)",
          decided_at="long", runs=RUNS,
          reason=DEV_QUICK + "on sinusoids the mixture model's late relative error is 0.20, 0.11, "
          "0.52 above the sinusoid expert's (required ≤ 0.1), on linear functions 0.07, −0.02, 0.14 above the "
          "linear expert's: it has not yet learned the sinusoids that half its prompts hold",
          analysis="Held at long after the read-in / read-out fidelity fix (seeds 0-4, never run with the fixed "
          "model): every check on every seed, the mixture model within 0.025-0.048 of the linear expert and "
          "−0.060-0.057 of the sinusoid expert, at 0.02-0.08 of the other expert's error.  Before the fix, "
          "inconclusive at long on the same seeds: seed 0's linear expert never left the plateau (relative error "
          "1.02, its read-out at norm 0.004: the defect's saddle), a linear margin of −1.004 that widened the "
          "interval to [−0.75, 0.39]."),
    Claim("combinations-degrade", "On convex combinations of the two families, outside the pretraining mixture, "
          "its error degrades sharply", f"{ABSTRACT} (out-of-domain failure); {ISSUE} (convex combinations)",
          decided_at="long", runs=RUNS,
          reason=DEV_QUICK + "the α = ½ combination's late relative error is 0.92, 0.99, 0.97 "
          "of the larger pure family's, because that family (the sinusoids) is itself at 0.3-0.6 of its trivial "
          "error: the contrast needs a model that has learned both families, the premise of selects-family",
          analysis="Held at long after the read-in / read-out fidelity fix (seeds 0-4, never run with the fixed "
          "model): 2.98, 2.77, 2.28, 3.03, 3.13 (95 % CI [2.42, 3.25]).  Before the fix, inconclusive at long on "
          "the same seeds: 3.48, 1.83, 2.00, 3.48, 2.08 (CI [1.54, 3.60]), two seeds of five at or under the "
          "factor 2."),
    Claim("frequencies-degrade", "On sinusoids of frequencies above the pretraining range its error degrades "
          "sharply", f"{ABSTRACT} (degradation for simple extrapolation); {ISSUE} (out-of-range frequencies)",
          runs=RUNS,
          analysis="Held on two blocks never run before, after the read-in / read-out fidelity fix: block 1200 "
          "6.65, 5.28, 7.10 (95 % CI [3.98, 8.71]) and block 1300 5.66, 7.32, 4.89 (CI [2.87, 9.04]).  Before the "
          "fix, INCONCLUSIVE on block 1000 (2.26, 5.76, 5.19, 95 % CI "
          "[−0.26, 9.07], every seed above 2: seed 1000's mixture model had learned the sinusoids least, relative "
          "error 0.62 in range) and HELD on block 1100 (5.27, 5.34, 4.83, CI [4.46, 5.83]); at long (seeds 0-4) "
          "8.0-13.1, held; after it, at long, 10.2-12.2."),
    Claim("selects-sparsity", "Pretrained on a mixture of dense linear, sparse linear and two-layer ReLU-network "
          "functions, the transformer tracks Lasso on sparse prompts and least squares on dense ones",
          f"{ABSTRACT} (model selection between function classes); family list: a third-party review of the paper, "
          "see the module docstring", decided_at="full", reason=PILOTS, runs=(SELECTION,)),
)


@dataclass(frozen=True)
class Selection:
    """The dense / sparse / ReLU-network mixture of one scale: its dimension, points, sparsity and steps."""

    dim: int
    points: int
    sparsity: int
    steps: int
    hidden: int = 100

    def family(self, name: str):
        """``dense`` (w ~ N(0, I_d)), ``sparse`` (``sparsity`` entries of w ~ N(0, 1) at random coordinates, the
        rest 0: Garg et al.'s sparse family) or ``relu`` (√(2/h) aᵀReLU(Wx), h = ``hidden``)."""
        if name == "relu":
            return ReLUNetwork(dim=self.dim, points=self.points, hidden=self.hidden)
        return LinearRegression(dim=self.dim, points=self.points, sparsity=self.sparsity if name == "sparse" else 0)

    @property
    def mixture(self) -> Mixture:
        return Mixture(dim=self.dim, points=self.points, families=(
            "linear-regression", f"linear-regression:sparsity={self.sparsity}", f"relu-network:hidden={self.hidden}"),
            weights=(1.0, 1.0, 1.0))

    @property
    def window(self) -> range:
        """The k compared, d/2 … d − 2: fewer points than d, where least squares has not yet pinned w down and
        Lasso, on sparse w, has."""
        return range(self.dim // 2, self.dim - 1)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale."""

    dim: int
    points: int
    model: dict
    steps: int
    batch_size: int
    lr: float
    warmup_steps: int
    lr_schedule: str
    test_prompts: int
    log_every: int
    curriculum_dims: Curriculum | None = None
    curriculum_points: Curriculum | None = None
    selection: Selection | None = None

    @property
    def amplitude(self) -> float:
        """√(2d): the sinusoids' E[f(x)²] = d, the linear family's (Garg et al. scale every family so)."""
        return math.sqrt(2 * self.dim)

    def family(self, run: str):
        if run == "linear":
            return LinearRegression(dim=self.dim, points=self.points)
        return self.band(*TRAINED_BAND)

    @property
    def mixture(self) -> Mixture:
        sinusoid = self.family("sinusoid")
        spec = f"sinusoid:amplitude={sinusoid.amplitude!r}"
        return Mixture(dim=self.dim, points=self.points, families=("linear-regression", spec), weights=(0.5, 0.5))

    def combination(self, alpha: float):
        """α wᵀx + (1 − α) a sin(ω uᵀx + φ); α = 1 is the linear family itself."""
        if alpha == 1.0:
            return self.family("linear")
        return Sinusoid(dim=self.dim, points=self.points, amplitude=self.amplitude, linear_weight=alpha)

    def band(self, low: float, high: float) -> Sinusoid:
        return Sinusoid(dim=self.dim, points=self.points, frequency_low=low, frequency_high=high,
                        amplitude=self.amplitude)

    @property
    def late(self) -> range:
        """The k averaged over: the second half of the prompt."""
        return range(math.ceil((self.points - 1) / 2), self.points)

    def task(self, run: str):
        return self.mixture if run == "mixture" else self.family(run)


#: Garg et al.'s model at the CPU scales' size: read-in and read-out initialised as nn.Linear's default, as in their
#: code (they sit outside HuggingFace's GPT2Model), not at GPT-2's std 0.02 (a fidelity defect until 2026-12-05)
SMALL_GPT = {"n_embd": 32, "n_layer": 2, "n_head": 2, "io_init": "pytorch", **GPT2_MLP}
#: the dense / sparse / ReLU mixture below full: d = 8 with one non-zero weight (Garg et al.'s 3 of 20, shrunk), 15
#: points (k up to 14, the window 4 … 6), 500 steps: deferred to full, these runs only carry the pipeline and control
SMALL_SELECTION = Selection(dim=8, points=15, sparsity=1, steps=500)
SCALES = {
    "smoke": Settings(dim=1, points=11, model={"n_embd": 16, "n_layer": 1, "n_head": 2, "io_init": "pytorch",
                                               **GPT2_MLP}, steps=10,
                      batch_size=16, lr=3e-3, warmup_steps=0, lr_schedule="constant", test_prompts=64, log_every=5,
                      selection=Selection(dim=4, points=7, sparsity=1, steps=10, hidden=8)),
    "quick": Settings(dim=1, points=11, model=SMALL_GPT, steps=2400, batch_size=64, lr=3e-3, warmup_steps=100,
                      lr_schedule="cosine", test_prompts=2048, log_every=100, selection=SMALL_SELECTION),
    "long": Settings(dim=1, points=11, model=SMALL_GPT, steps=12_000, batch_size=64, lr=3e-3, warmup_steps=100,
                     lr_schedule="cosine", test_prompts=4096, log_every=200, selection=SMALL_SELECTION),
    "full": Settings(dim=20, points=41, model={"size": "standard", "io_init": "pytorch", **GPT2_MLP}, steps=500_001,
                     batch_size=64, lr=1e-4, warmup_steps=0, lr_schedule="constant", test_prompts=1280,
                     log_every=1000, curriculum_dims=Curriculum(5, 1, 2000),
                     curriculum_points=Curriculum(11, 2, 2000),
                     selection=Selection(dim=20, points=41, sparsity=3, steps=500_001)),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    """The mixture model and the two experts, one recipe; each expert trains half the mixture model's steps, so
    that it sees as many prompts of its family as the mixture model does (in expectation, weights ½, ½).  Beside
    them, on the same recipe, the model of the dense / sparse / ReLU mixture (``selection``)."""
    found = {}
    for run in RUNS:
        task = settings.task(run)
        found[run] = _config(settings, task, settings.steps if run == "mixture" else settings.steps // 2)
    found[SELECTION] = _config(settings, settings.selection.mixture, settings.selection.steps)
    return found


def _config(settings: Settings, task, steps: int) -> TrainConfig:
    return TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="gpt", model_params=settings.model,
                       steps=steps, batch_size=settings.batch_size, lr=settings.lr, warmup_steps=settings.warmup_steps,
                       lr_schedule=settings.lr_schedule, loss_on="all", curriculum_dims=settings.curriculum_dims,
                       curriculum_points=settings.curriculum_points, log_every=settings.log_every,
                       checkpoint_every=max(steps // 5, 1))


def _errors(predictor, prompt) -> list[float]:
    """Mean squared error / d at every k."""
    return (squared_errors(predictor, prompt).mean(dim=0) / prompt.dim).tolist()


def _conditions(settings: Settings) -> dict[str, object]:
    """Every evaluation: condition name → task."""
    found = {f"alpha={alpha:g}": settings.combination(alpha) for alpha in ALPHAS}
    found.update({f"band={low:g}-{high:g}": settings.band(low, high) for low, high in BANDS})
    return found


def measure(measurement) -> dict:
    """Per seed, model and condition: error / d at every k and the late relative error (over E[y²]/d); the
    baselines' curves on the two families."""
    settings = measurement.settings
    conditions = _conditions(settings)
    rows, curves = [], {}
    prompts = {name: measurement.prompts(task, "test", settings.test_prompts) for name, task in conditions.items()}
    for run in RUNS:
        for seed, model in enumerate(measurement.models[run]):
            model = copy.deepcopy(model).double().eval()
            for name, task in conditions.items():
                errors = _errors(model, prompts[name])
                curves.setdefault((run, name), []).append(errors)
                late = sum(errors[k] for k in settings.late) / len(settings.late)
                rows.append({"run": run, "seed": seed, "condition": name, "quantity": "late_relative_error",
                             "value": late / task.trivial_error()})
    baselines = {"Least squares": OLS(), "3-Nearest Neighbors": KNN(3)}
    for label, baseline in baselines.items():
        for name in ("alpha=1", "alpha=0"):
            curves[(label, name)] = [_errors(baseline, prompts[name])]
    window = _measure_selection(measurement, rows, curves)
    return {"rows": rows, "curves": {f"{run}|{name}": value for (run, name), value in curves.items()},
            "trivial": {name: task.trivial_error() for name, task in conditions.items()}, "selection": window}


def _measure_selection(measurement, rows: list, curves: dict) -> dict:
    """The selection model's relative error (error over E[y²]) at every k on each family's held-out prompts, its
    mean over the window as a row per seed, and least squares' and Lasso's on the same prompts: family → {label:
    window mean}."""
    selection = measurement.settings.selection
    window = {}
    for family in SELECTION_FAMILIES:
        task = selection.family(family)
        prompt = measurement.prompts(task, "test", measurement.settings.test_prompts)
        scale = task.trivial_error()
        for seed, model in enumerate(measurement.models[SELECTION]):
            errors = [error / scale for error in _errors(copy.deepcopy(model).double().eval(), prompt)]
            curves.setdefault((SELECTION, family), []).append(errors)
            rows.append({"run": SELECTION, "seed": seed, "condition": family, "quantity": "window_relative_error",
                         "value": sum(errors[k] for k in selection.window) / len(selection.window)})
        window[family] = {}
        for label, baseline in (("Least squares", OLS()), ("Lasso", Lasso(LASSO_PENALTY))):
            errors = [error / scale for error in _errors(baseline, prompt)]
            curves[(label, family)] = [errors]
            window[family][label] = sum(errors[k] for k in selection.window) / len(selection.window)
    return window


def _late(rows, run: str, condition: str) -> list[float]:
    return seed_values(rows, "late_relative_error", run=run, condition=condition)


def checks(results: dict, settings: Settings) -> list[Check]:
    rows = results["rows"]
    family_condition = {"linear": "alpha=1", "sinusoid": "alpha=0"}
    out = []
    for family, condition in family_condition.items():
        other = next(run for run in FAMILIES if run != family)
        mixture, expert, rival = (_late(rows, run, condition) for run in ("mixture", family, other))
        out.append(claim_check("selects-family", f"{family} functions: mixture model's late relative error minus "
                               f"the {family} expert's", MARGIN, [m - e for m, e in zip(mixture, expert)],
                               relation="at_most", source=f"{CLAIMS[0].source}; margin a tenth of the trivial "
                                                          "error, fixed before running"))
        out.append(claim_check("selects-family", f"{family} functions: mixture model's late error / the {other} "
                               "expert's", FAR_BELOW, [m / r for m, r in zip(mixture, rival)], relation="at_most",
                               source=f"{CLAIMS[0].source}; far below the other family's model: at most "
                                      f"{FAR_BELOW:g} of its error, fixed before running"))
    pure = [max(a, b) for a, b in zip(_late(rows, "mixture", "alpha=0"), _late(rows, "mixture", "alpha=1"))]
    combined = _late(rows, "mixture", f"alpha={COMBINATION:g}")
    out.append(claim_check("combinations-degrade", f"mixture model's late relative error at α = {COMBINATION:g} / "
                           "the larger of its two families'", DEGRADATION, [c / p for c, p in zip(combined, pure)],
                           relation="at_least", source=f"{CLAIMS[1].source}; factor fixed before running"))
    low, high = TRAINED_BAND
    inside = _late(rows, "mixture", f"band={low:g}-{high:g}")
    outside = _late(rows, "mixture", f"band={OUT_OF_RANGE[0]:g}-{OUT_OF_RANGE[1]:g}")
    out.extend(_selection_checks(results))
    out.append(claim_check("frequencies-degrade", f"mixture model's late relative error on sinusoids of ω in "
                           f"[{OUT_OF_RANGE[0]:g}, {OUT_OF_RANGE[1]:g}] / in [{low:g}, {high:g}]", DEGRADATION,
                           [o / i for o, i in zip(outside, inside)], relation="at_least",
                           source=f"{CLAIMS[2].source}; factor fixed before running"))
    return out


#: the two estimators as named in a sentence
NAMES = {"Lasso": "Lasso", "Least squares": "least squares"}


def _selection_checks(results: dict) -> list[Check]:
    """Where the selection model sits between the right estimator and the wrong one, per seed: on sparse prompts
    (its error − Lasso's) / (least squares' − Lasso's), on dense ones (its error − least squares') / (Lasso's −
    least squares'), each at most ½: nearer the family's estimator than the other family's."""
    out = []
    for family, right, wrong in (("sparse", "Lasso", "Least squares"), ("dense", "Least squares", "Lasso")):
        base = results["selection"][family]
        model = seed_values(results["rows"], "window_relative_error", run=SELECTION, condition=family)
        out.append(claim_check("selects-sparsity", f"{family} prompts: the selection model's window error placed "
                               f"between {NAMES[right]} (0) and {NAMES[wrong]} (1)", HALF_WAY,
                               [(value - base[right]) / (base[wrong] - base[right]) for value in model],
                               relation="at_most", source=f"{CLAIMS[3].source}; half-way, fixed before running"))
    return out


LABELS = {"mixture": "Transformer, mixture", "linear": "Transformer, linear only",
          "sinusoid": "Transformer, sinusoids only"}


def _family_panel(results: dict, condition: str, title: str) -> Panel:
    curves = []
    for run in RUNS:
        per_seed = results["curves"][f"{run}|{condition}"]
        curves.append(seed_curve(LABELS[run], list(range(len(per_seed[0]))), per_seed))
    for label in ("Least squares", "3-Nearest Neighbors"):
        values = results["curves"][f"{label}|{condition}"][0]
        curves.append(Curve(label, list(range(len(values))), values, baseline=True))
    trivial = results["trivial"][condition]
    return Panel("in-context examples", "squared error / d", curves,
                 targets=[Target("trivial (predict 0)", trivial, trivial, trivial)], title=title,
                 ylim=(-0.05 * trivial, 2.0 * trivial))


def _selection_panel(results: dict, family: str, settings: Settings) -> Panel:
    per_seed = results["curves"][f"{SELECTION}|{family}"]
    ks = list(range(len(per_seed[0])))
    curves = [seed_curve("Transformer, dense / sparse / ReLU mixture", ks, per_seed)]
    curves += [Curve(label, ks, results["curves"][f"{label}|{family}"][0], baseline=True)
               for label in ("Least squares", "Lasso")]
    selection = settings.selection
    titles = {"dense": "dense linear", "sparse": f"sparse linear ({selection.sparsity} of {selection.dim} weights)",
              "relu": "two-layer ReLU networks"}
    return Panel("in-context examples", "relative error (error / E[y²])", curves, ylim=(-0.05, 2.0),
                 targets=[Target("trivial (predict 0)", 1.0, 1.0, 1.0)], title=f"{titles[family]}, d = {selection.dim}")


def _sweep_panel(results: dict, names: list[str], xs: list[float], xlabel: str, title: str) -> Panel:
    rows = results["rows"]
    curves = [seed_curve(LABELS[run], xs, list(zip(*[_late(rows, run, name) for name in names])), continuous=False)
              for run in RUNS]
    return Panel(xlabel, "late relative error (error / E[y²])", curves, title=title,
                 targets=[Target("trivial (predict 0)", 1.0, 1.0, 1.0)])


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Error against k on each family (the three models, least squares and 3-NN dashed), the late relative error
    against α (convex combinations) and against the frequency band's centre, and the selection model's relative
    error against k on dense, sparse and ReLU-network prompts (least squares and Lasso dashed)."""
    bands = [f"band={low:g}-{high:g}" for low, high in BANDS]
    centres = [(low + high) / 2 for low, high in BANDS]
    return [_family_panel(results, "alpha=1", f"linear functions, d = {settings.dim}"),
            _family_panel(results, "alpha=0", f"sinusoids, ω in [{TRAINED_BAND[0]:g}, {TRAINED_BAND[1]:g}]"),
            _sweep_panel(results, [f"alpha={alpha:g}" for alpha in ALPHAS], list(ALPHAS),
                         "α (weight of the linear function)", "convex combinations (α = 0, 1: the mixture's families)"),
            _sweep_panel(results, bands, centres, "frequency ω (band centre)",
                         f"sinusoid frequencies (pretraining: [{TRAINED_BAND[0]:g}, {TRAINED_BAND[1]:g}])"),
            *[_selection_panel(results, family, settings) for family in SELECTION_FAMILIES]]


REPRODUCTION = Reproduction(
    name="yadlowsky-2023",
    paper=PAPER,
    summary="A transformer pretrained on a mixture of linear functions and sinusoids picks each prompt's family in "
            "context, close to the model trained on that family alone, and degrades sharply outside the mixture "
            "(convex combinations, out-of-range frequencies); pretrained on dense linear, sparse linear and "
            "ReLU-network functions it should track Lasso on sparse prompts and least squares on dense ones (decided "
            "at full).",
    caption="Error against in-context examples on linear functions and on sinusoids for the mixture model and the "
            "two single-family models (least squares and 3-NN dashed), and the late relative error on convex "
            "combinations (α) and on sinusoid frequency bands (pretraining range [1, 2]); the relative error against k "
            "of the model pretrained on dense, sparse and ReLU-network functions on each family, least squares and "
            "Lasso dashed",
    scales=SCALES,
    runs=runs,
    measure=measure,
    claims=CLAIMS,
    checks=checks,
    figure=figure,
    quick_minutes=3.5,  # CPU minutes (user + sys) of the quick run: blocks 1200 and 1300 3.53 and 3.47
    long_minutes=19.7,  # CPU minutes (user + sys) of the 5-seed long run, seeds 0-4 after the fix
)
