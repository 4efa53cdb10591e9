"""Zhang & Cao (2026), "Transformers efficiently perform in-context logistic regression via normalized gradient
descent" (arXiv 2605.06609; PMLR v306, zhang26i).

What we could read.  The abstract (arxiv.org/abs/2605.06609, huggingface.co/papers/2605.06609, the first
page of the PMLR PDF) and two third-party summaries (api.emergentmind.com/papers/2605.06609,
pith.science/paper/2605.06609).  The abstract: a class of multi-layer softmax transformers "with each layer
exactly performing one step of normalized gradient descent on an in-context loss"; the constructed
transformer "can be obtained through (i) training a single self-attention layer supervised by one-step
gradient descent, and (ii) recurrently applying the trained layer to obtain a looped model"; "training
convergence guarantees of the self-attention layer and out-of-distribution generalization guarantees of the
looped model".  The emergentmind summary adds that Theorem 1 "implements NGD for the exponential loss" and
that "the transformer output approaches the maximal margin linear classifier as the depth increases".  The
body (embedding, step size, start, training law, experiments and their numbers) was not readable, and no
authors' code was found (code corpus, repository names); searched again on 2026-12-05 (pages corpus: the arXiv
abstract page and third-party summaries only).  So no threshold below is a number of the paper: each is a
closed form or a bar fixed before the runs that decide it.

Our setting (every choice ours where the paper could not be read; ``icl_sim.theory.normalized_gd``,
``icl_sim.models.looped_softmax_ngd``, ``icl_sim.tasks.linear_classification_ngd``):

* data: ``linear-classification``, x ~ N(0, I_d), y = sign(w*ᵀx), w* ~ N(0, I_d) per prompt (separable);
* the step: w ← w + η Σ_{j<i} softmax_j(−y_j wᵀx_j) y_j x_j = w − η ∇L/L for the exponential loss L (the
  one normalisation a softmax read-out computes; ``LogisticGD``'s Euclidean normalisation is not);
* the layer (``looped-softmax-ngd``): context tokens y_j x_j, the query token the iterate w, one loop
  w ← w + P Σ_j softmax_j(u_jᵀQw) u_j, read-out wᵀx_i; P and Q (d × d) both trained, shared across loops;
  P = ηI, Q = −I is the construction;
* one-step supervision (``linear-classification-ngd``, guidance 1): the target is the score of one step from
  w_0 = c·x_i (c = ``start_scale``); from w_0 = 0 the first step does not depend on Q (all scores are 0), so
  a layer trained on it would learn P alone;
* looping at evaluation: the trained layer applied k = 1 … K times from w_0 = 0, against normalised GD from
  0 with the same η.

What the claims can test.  The layer class is built around the construction: the embedding y_j x_j, the iterate in
the query and the start are ours and fixed, only P and Q are trained, and P = ηI, Q = −I is the one zero of the
one-step loss.  So no run here can say whether a transformer that does not contain the answer would find normalised
GD (the paper's own layer could not be read); a converged run of this class *is* the construction, and a check can
fail only through what training leaves undone.  Each claim check below can: its bar is one that the residual error
of a trained layer can cross (and some seeds do), and a converged layer of another mechanism fails it, the
contrast ``uniform attention``: Q = 0, so every context token weighs the same and the layer moves by P times the
mean of y_j x_j (as uniform or linear attention reads the context), with the P of least squared error against the
same one-step targets (fitted on the prompts it is measured on, which favours it).  Two checks that no layer near
the construction could fail became sanity checks on 2026-12-05 (a referee's reading, issue 39): the max-margin
gap ratio (the gap after K loops at most a quarter of that after one; quick seeds 0-2 and 100-102 0.058-0.064,
fresh blocks 1000 and 1100 at most 0.067 and 0.096, normalised GD's 0.058) and the ood accuracy (the looped
layer's out-of-distribution accuracy at most 0.02 below normalised GD's: seeds 0-2 +0.00125, −0.005, +0.00175;
blocks 1000 and 1100 at worst −0.0078 and −0.0095; the contrast's −0.13 would fail it, but no trained layer of
this class is the contrast).  The ood claim is now tested by the direction gap out of distribution (below), fixed
on 2026-12-05 after development seeds 0-2 gave 1.03, 1.00, 1.06 (bar 1.5, the max-margin claim's, not chosen on
them).  The iterate error out of distribution is no measure: there normalised GD's own iterates move by 34-36 %
(largest over k ≤ 50) when η changes by 3 %, against 3 % in distribution, and the trained layers' are 0.38-0.45.

Claims (``CLAIMS``), measured at the final query of held-out prompts, every bar fixed before the runs it decides:

* ``one-step`` (abstract: a single layer trained supervised by one-step GD; its training converges): the
  trained layer's squared error against its one-step target, relative to the target's own step size
  Σ(t − c‖x_i‖²)², is at most ``ONE_STEP_BAR`` = 0.01 (the construction's is 0; the contrast's 0.94);
* ``looped-construction`` (abstract: recurrently applying the trained layer gives the constructed
  transformer): the largest over k ≤ K of mean ‖w_k − w_k^NGD‖ / ‖w_k^NGD‖ is at most ``LOOPED_BAR`` = 0.1
  (the construction's is 0; the contrast's 3.5);
* ``max-margin`` (emergentmind's reading of the implicit-bias result): with w_mm the hard-margin classifier of
  the context (``icl_sim.theory.max_margin.max_margin_classifier``, cvxpy), the gap 1 − cos(w_K, w_mm) after K
  loops is at most ``CONSTRUCTION_FACTOR`` = 1.5 times normalised GD's after K steps (the contrast's 41): a layer
  whose residual error is not a rescaling of η turns toward another classifier, and the ratio grows with K;
* ``ood`` (abstract: out-of-distribution generalisation of the looped model): on prompts twice as long as in
  training with anisotropic, larger inputs (x ~ N(0, diag(s)), s geometric from ¼ to 4 times 4; labels by the
  same rule), the same gap ratio against the max-margin classifier of those prompts' contexts, at most 1.5 (the
  contrast's 11.5).

Sanity checks: the construction P = ηI, Q = −I equals ``ngd_iterates`` to floating-point error; normalised GD's
own direction gap shrinks by a factor 4 from step 1 to step K (its implicit bias, Nacson et al. 2019); the
contrast fails each claim's bar; the two former claim checks above.

Scales.  No authors' configuration could be read, so ``full`` is ours: d = 20, N = 41 (the task's
defaults), 20 000 Adam steps of batch 256, K = 200 loops.  ``quick``: d = 8, N = 33, η = 1, c = 1, 1 000
Adam steps of batch 64 at lr 1e-2, K = 50, 6 seeds.  ``long`` (looped-construction only): quick's layer trained
10 000 steps, 5 seeds.  ``smoke`` runs the pipeline.

Measured (one-step layer; values per seed).  Before 2026-12-05, 3 seeds, development: seeds 0-2: one-step
4.1e-05, 1.4e-05, 1.2e-04; looped 0.0329, 0.0213, 0.0523; gap over NGD's 1.004, 1.030, 1.032; seeds 100-102:
one-step 2.3e-06, 2.9e-04, 4.7e-05; looped 0.0121, 0.0772, 0.0351; over NGD 0.993, 1.095, 1.024.  A referee's
run on a block apart from these (block not recorded here) FAILED max-margin: one seed at 1.35 of normalised GD's
gap, the interval of the mean up to 1.61 against 1.5.

Fresh blocks at quick, 6 seeds (2026-12-05; the claims decided there):

* seeds 1000-1005: one-step 4e-05, 4.7e-04, 3e-05, 2e-05, 3.1e-04, 1.1e-04 (held); looped 0.0322, 0.0992,
  0.0318, 0.0227, 0.0808, 0.0512 (CI to 0.085); max-margin 1.001, 1.159, 1.018, 1.028, 1.115, 1.033 (held, CI
  0.99-1.13); ood 1.010, 1.080, 1.002, 1.077, 1.104, 1.023 (held, CI 1.00-1.09);
* seeds 1100-1105: one-step 2.3e-04, 2.2e-03, 4e-05, 1e-05, 2.5e-04, 3e-05 (held); looped 0.0714, 0.2137,
  0.0329, 0.0165, 0.0736, 0.0291 (inconclusive, CI to 0.149); max-margin 1.055, 1.666, 1.029, 0.998, 1.068, 0.999
  (held by the interval, 0.86-1.41, but seed 1101 alone is over the bar); ood 1.088, 1.204, 1.067, 1.032,
  1.050, 1.049 (held, CI 1.02-1.15).
* untrained control (both blocks): one-step 1.00, looped 0.99-1.03, max-margin 117-164, ood 23-33: all fail.

Seed 1101 is the one run whose training stopped furthest from the construction (one-step 2.2e-03): its residual,
compounded over 50 loops, is what crosses the looped and max-margin bars, as the referee's seed at 1.35 did.  So
max-margin at quick holds by its interval on the two fresh blocks here and failed on the referee's; read it as
held only where a seed block's training converges, which 1000 steps do not ensure (no run of the 12 converged by
``icl_sim.convergence``: the loss of a target the layer can fit exactly keeps falling).  Quick run: 92 s wall,
30 s CPU (user + sys) for 6 seeds.  The gallery's quick run (seeds 0-5, after the blocks above): looped 0.033,
0.021, 0.052, 0.058, 0.024, 0.108; max-margin 1.004, 1.030, 1.032, 1.074, 1.023, 1.212; ood 1.033, 1.004, 1.064,
1.069, 1.083, 1.132.

Long (looped-construction; 2026-12-05).  Development seeds 0-4 (the gallery's run): looped 0.0448, 0.0203,
0.0078, 0.0135, 0.0124.  Fresh seeds 1200-1204: one-step 2.0e-05, 2.4e-06, 3.7e-04, 7.7e-05, 2.0e-04; looped 0.0150,
0.0096, 0.0551, 0.0286, 0.0438 (HELD, CI 0.007-0.054); max-margin 1.025, 0.981, 1.156, 1.020, 1.059; ood 1.037,
1.028, 1.079, 1.081, 1.077; untrained control: looped 1.00-1.04, max-margin 135-171, ood 30-38 (fail).  Adam at a
constant lr 1e-2 brings every run's one-step loss to about 1e-12 (float32's floor) by step 2 000-5 000, then
loses it again: at step 10 000 the losses are 7e-6 to 1e-2 (Adam's step, the gradient over the root of its
vanishing second moment, grows as the loss reaches zero).  So the looped layers at long sit a spike's residual
from the construction, not at it; the claim holds there all the same.  Long: 143 s CPU (user + sys), 486 s wall,
for 5 seeds.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.models.looped_softmax_ngd import LoopedSoftmaxNGD, constructed_ngd_layer
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.prompt import Prompt
from icl_sim.tasks import make_task
from icl_sim.theory.max_margin import max_margin_classifier
from icl_sim.theory.normalized_gd import ngd_iterates

from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("C. Zhang, Y. Cao", "Transformers efficiently perform in-context logistic regression via normalized "
              "gradient descent", "arXiv preprint 2026", "2605.06609")
ABSTRACT = "Zhang & Cao 2026, abstract"
RUN = "one-step layer"
ONE_STEP_BAR = 0.01
LOOPED_BAR = 0.1
MARGIN_RATIO_BAR = 0.25
CONSTRUCTION_FACTOR = 1.5
OOD_SLACK = 0.02
#: the contrast: a layer of the wrong mechanism (uniform attention), converged on the one-step target
CONTRAST = "uniform attention"
#: the out-of-distribution prompts: this many times longer, inputs scaled per coordinate by √s, s geometric
OOD_LENGTH, OOD_SPECTRUM = 2, (0.25 * 4, 4.0 * 4)

CLAIMS = (
    Claim("one-step", "A softmax attention layer trained on the one-step normalised-GD target learns that step",
          f"{ABSTRACT}: (i) training a single self-attention layer supervised by one-step gradient descent, with "
          "training convergence guarantees"),
    Claim("looped-construction", "Applied recurrently, the trained layer reproduces the multi-step construction: "
          "loop k is step k of normalised GD", f"{ABSTRACT}: (ii) recurrently applying the trained layer",
          decided_at="long", reason="quick (1000 Adam steps, 6 seeds): held on seeds 1000-1005 (largest 0.099, CI "
                                    "to 0.085) but inconclusive on 1100-1105 (seed 1101 at 0.214, CI to 0.149), and "
                                    "none of the 12 runs converged (loss still falling over the last fifth): a seed's "
                                    "residual P, Q error, compounded over 50 loops, decides it; long trains 10x "
                                    "longer"),
    Claim("max-margin", "The looped layer's classifier converges in direction to the max-margin classifier of the "
          "context as fast as normalised GD's does", f"{ABSTRACT}; the implicit bias of normalised GD "
          "(emergentmind's reading of Theorem 1)",
          analysis="held by the interval on fresh seeds 1000-1005 (largest 1.16) and 1100-1105 (seed 1101 alone at "
                   "1.67, the interval 0.86-1.41), failed on a referee's block (one seed at 1.35, the interval to 1.61 "
                   "against 1.5): the verdict turns on whether a seed's 1000 Adam steps leave a residual P, Q error "
                   "that 50 loops compound (seed 1101's one-step error 2.2e-03, the others' 1e-05 to 5e-04)."),
    Claim("ood", "Out of distribution, the looped layer's classifier converges in direction to the context's "
          "max-margin classifier as fast as normalised GD's does",
          f"{ABSTRACT}: out-of-distribution generalization guarantees of the looped model"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale."""

    dim: int
    points: int
    step: float  # η
    start_scale: float  # c
    steps: int
    batch_size: int
    lr: float
    loops: int  # K, the loops at evaluation
    test_prompts: int
    margin_prompts: int
    log_every: int

    @property
    def task(self):
        """The training task: one-step targets from w_0 = c·x_i."""
        return make_task("linear-classification-ngd", dim=self.dim, points=self.points, guidance=1, lr=self.step,
                         start_scale=self.start_scale)

    @property
    def plain_task(self):
        return make_task("linear-classification", dim=self.dim, points=self.points)

    @property
    def ood_task(self):
        """``plain_task`` with prompts ``OOD_LENGTH`` times longer (their inputs are then shifted)."""
        return make_task("linear-classification", dim=self.dim, points=OOD_LENGTH * self.points)

    @property
    def evaluated_loops(self) -> list[int]:
        """1, 2, 5, 10, … up to K (a 1-2-5 grid, K included)."""
        grid = sorted({k for base in (1, 2, 5) for k in (base * 10 ** e for e in range(6)) if k <= self.loops})
        return grid if grid[-1] == self.loops else grid + [self.loops]


SCALES = {
    "smoke": Settings(dim=3, points=9, step=1.0, start_scale=1.0, steps=5, batch_size=16, lr=1e-2, loops=5,
                      test_prompts=64, margin_prompts=16, log_every=5),
    "quick": Settings(dim=8, points=33, step=1.0, start_scale=1.0, steps=1000, batch_size=64, lr=1e-2, loops=50,
                      test_prompts=4000, margin_prompts=300, log_every=50),
    # quick's layer trained 10x longer: its residual error, not its size, is what looping compounds
    "long": Settings(dim=8, points=33, step=1.0, start_scale=1.0, steps=10_000, batch_size=64, lr=1e-2, loops=50,
                     test_prompts=4000, margin_prompts=300, log_every=250),
    # ours (no authors' configuration could be read): the task's default sizes, longer training and looping
    "full": Settings(dim=20, points=41, step=1.0, start_scale=1.0, steps=20_000, batch_size=256, lr=1e-2,
                     loops=200, test_prompts=20_000, margin_prompts=1000, log_every=500),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    """One layer (one loop) trained on the one-step target."""
    task = settings.task
    return {RUN: TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="looped-softmax-ngd",
                             model_params={"loops": 1, "start_scale": settings.start_scale}, steps=settings.steps,
                             batch_size=settings.batch_size, lr=settings.lr, optimizer="adam",
                             log_every=settings.log_every, checkpoint_every=max(settings.steps // 5, 1))}


def shifted(prompt: Prompt, spectrum: tuple[float, float]) -> Prompt:
    """``prompt`` with coordinate m of every x scaled by √s_m (s geometric over ``spectrum``) and relabelled by
    sign(w*ᵀx): x ~ N(0, diag(s))."""
    dim = prompt.dim
    scales = torch.logspace(torch.log10(torch.tensor(spectrum[0])), torch.log10(torch.tensor(spectrum[1])), dim,
                            dtype=prompt.xs.dtype).sqrt().to(prompt.xs.device)
    xs = prompt.xs * scales
    ys = torch.where(torch.einsum("bnd,bd->bn", xs, prompt.latent["w"].to(xs)) > 0, 1.0, -1.0).to(xs)
    return Prompt(xs, ys, prompt.latent)


def gap(w: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """1 − cos(w, reference) per row."""
    return 1 - (w * reference).sum(-1) / (w.norm(dim=-1) * reference.norm(dim=-1)).clamp(min=1e-300)


def margin_directions(prompt: Prompt, count: int) -> torch.Tensor:
    """The max-margin classifier of the final query's context (N − 1 points) for the first ``count`` prompts."""
    count = min(count, prompt.batch_size)
    return torch.stack([max_margin_classifier(prompt.xs[b, :-1], prompt.ys[b, :-1]) for b in range(count)])


def uniform_attention_layer(guided: Prompt, settings: Settings) -> LoopedSoftmaxNGD:
    """The contrast, a converged layer of the wrong mechanism: Q = 0 (every context token weighs the same, the mean
    of y_j x_j moved by P, as uniform or linear attention reads it) with the P of least squared error against the
    one-step targets of ``guided``, a linear least-squares problem in P.  Fitted on the prompts it is measured on,
    which favours it."""
    xs, ys = guided.xs.to(torch.float64), guided.ys.to(torch.float64)
    mean = (ys[:, :-1, None] * xs[:, :-1]).mean(1)  # the uniform read-out of the final query's context
    query = xs[:, -1]
    features = (query[:, :, None] * mean[:, None, :]).flatten(1)  # qᵀ P m = Σ_ab P_ab q_a m_b
    residual = guided.target[:, -1].to(torch.float64) - settings.start_scale * query.square().sum(-1)
    value = torch.linalg.lstsq(features, residual[:, None]).solution.reshape(settings.dim, settings.dim)
    layer = build_model("looped-softmax-ngd", settings.dim, settings.points, start_scale=settings.start_scale).double()
    with torch.no_grad():
        layer.value.copy_(value)
        layer.key_query.zero_()
    return layer


def _loop_rows(run: str, seed: int, settings: Settings, model_w: list[torch.Tensor], ngd_w: list[torch.Tensor],
               prompt: Prompt, mm: torch.Tensor, prefix: str = "") -> list[dict]:
    """Per evaluated loop k: direction gap to w_mm, final-query accuracy and (in distribution) the relative iterate
    error against NGD; quantities named with ``prefix``."""
    rows = []
    query, label = prompt.xs[:, -1].to(torch.float64), prompt.ys[:, -1].to(torch.float64)
    count = mm.shape[0]
    for k in settings.evaluated_loops:
        w, reference = model_w[k - 1], ngd_w[k]
        values = {"accuracy": float(((w * query).sum(-1) * label > 0).to(torch.float64).mean()),
                  "margin_gap": float(gap(w[:count], mm).mean())}
        if not prefix:  # out of distribution NGD's own iterates move ~35 % under a 3 % change of η (see above)
            values["iterate_error"] = float(((w - reference).norm(dim=-1) / reference.norm(dim=-1)).mean())
        rows += [{"run": run, "seed": seed, "loops": k, "quantity": prefix + quantity, "value": value}
                 for quantity, value in values.items()]
    return rows


def _layer_rows(run: str, seed: int, layer: LoopedSoftmaxNGD, settings: Settings, guided: Prompt,
                streams: dict[str, tuple[Prompt, list[torch.Tensor], torch.Tensor]]) -> list[dict]:
    """A layer's one-step error on ``guided`` and its loop rows on each stream (prefix → prompts, NGD's iterates,
    max-margin directions)."""
    step = settings.start_scale * guided.xs[:, -1].square().sum(-1).to(torch.float64)
    target = guided.target[:, -1].to(torch.float64)
    one = layer.predict(guided.xs, guided.ys, loops=1)[:, -1].to(torch.float64)
    rows = [{"run": run, "seed": seed, "loops": 1, "quantity": "one_step_error",
             "value": float((one - target).square().sum() / (target - step).square().sum())}]
    for prefix, (prompt, ngd, mm) in streams.items():
        model_w = layer.classifiers(prompt.xs, prompt.ys, settings.loops, 0.0, last_only=True)
        rows += _loop_rows(run, seed, settings, model_w, ngd, prompt, mm, prefix)
    return rows


def measure(measurement) -> dict:
    settings = measurement.settings
    guided = measurement.prompts(settings.task, "test", settings.test_prompts)
    test = measurement.prompts(settings.plain_task, "test", settings.test_prompts)
    ood = shifted(measurement.prompts(settings.ood_task, "test", settings.test_prompts, index=1), OOD_SPECTRUM)
    K = settings.loops
    streams = {prefix: (prompt, ngd_iterates(prompt.xs, prompt.ys, K, settings.step, last_only=True),
                        margin_directions(prompt, settings.margin_prompts))
               for prefix, prompt in (("", test), ("ood_", ood))}
    rows = []
    for prefix, (prompt, ngd, mm) in streams.items():
        rows += _loop_rows("normalised GD", 0, settings, ngd[1:], ngd, prompt, mm, prefix)
    construction = constructed_ngd_layer(settings.dim, settings.points, settings.step).double()
    constructed = construction.classifiers(test.xs, test.ys, K, 0.0, last_only=True)
    rows.append({"run": "construction", "seed": 0, "loops": K, "quantity": "construction_error",
                 "value": max(float((a - b).abs().max()) for a, b in zip(constructed, streams[""][1][1:]))})
    rows += _layer_rows(CONTRAST, 0, uniform_attention_layer(guided, settings), settings, guided, streams)
    for seed, model in enumerate(measurement.models[RUN]):
        model = copy.deepcopy(model).double()  # the measurement's model stays as trained
        rows += _layer_rows(RUN, seed, model, settings, guided, streams)
    return {"rows": rows, "loss": measurement.histories[RUN]}


def _per_seed(results: dict, quantity: str, loops: int, run: str = RUN) -> list[float]:
    return seed_values(results["rows"], quantity, run=run, loops=loops)


def _reference(results: dict, quantity: str, loops: int, run: str = "normalised GD") -> float:
    """The one value of a closed-form row (normalised GD, the construction)."""
    return seed_values(results["rows"], quantity, run=run, loops=loops)[0]


def _claimed(results: dict, settings: Settings, run: str) -> dict[str, tuple[str, float, list[float], str]]:
    """Per claim: what its check measures, the bar (at most), ``run``'s values per seed, and the bar's source."""
    K = settings.loops
    errors = [_per_seed(results, "iterate_error", k, run) for k in settings.evaluated_loops]
    shifted_prompts = (f"out of distribution ({OOD_LENGTH}× longer prompts, x ~ N(0, diag(s)), s from "
                       f"{OOD_SPECTRUM[0]} to {OOD_SPECTRUM[1]})")
    return {
        "one-step": ("one loop from w_0 = c·x_i: squared error against the one-step target / the target's own squared "
                     "step", ONE_STEP_BAR, _per_seed(results, "one_step_error", 1, run),
                     f"{ABSTRACT}: training converges (the construction attains 0); bar {ONE_STEP_BAR} fixed before "
                     "measuring"),
        "looped-construction": (f"looped from 0: largest over k ≤ {K} of mean ‖w_k − w_k^NGD‖/‖w_k^NGD‖", LOOPED_BAR,
                                [max(values) for values in zip(*errors)],
                                f"{ABSTRACT}: the looped layer is the construction (error 0); bar {LOOPED_BAR} fixed "
                                "before measuring"),
        **{claim: (f"{where}1 − cos(w_K, w_mm) after K = {K} loops over normalised GD's after K steps",
                   CONSTRUCTION_FACTOR, [value / _reference(results, prefix + "margin_gap", K)
                                         for value in _per_seed(results, prefix + "margin_gap", K, run)],
                   f"{source}; normalised GD's own gap (closed form), factor {CONSTRUCTION_FACTOR} fixed before "
                   "measuring")
           for claim, prefix, where, source in (
               ("max-margin", "", "", "emergentmind's reading of Theorem 1"),
               ("ood", "ood_", shifted_prompts + ": ", f"{ABSTRACT}: out-of-distribution generalization of the "
                                                       "looped model"))},
    }


def checks(results: dict, settings: Settings) -> list[Check]:
    """A claim check per claim on the trained layers, and the contrast (a converged layer of the wrong mechanism)
    failing each claim's bar; sanity: the construction, normalised GD's implicit bias, and two former claim checks
    that no layer near the construction could fail."""
    K = settings.loops
    contrast = _claimed(results, settings, CONTRAST)
    found = []
    for claim, (quantity, bar, values, source) in _claimed(results, settings, RUN).items():
        found.append(claim_check(claim, quantity, bar, values, relation="at_most", source=source))
        found.append(Check(f"the contrast ({CONTRAST}: Q = 0, least-squares P) fails {claim}'s bar: {quantity}", bar,
                           contrast[claim][2][0], 0.0, "at_least", source="a wrong mechanism the check must reject"))
    ngd_first, ngd_last = _reference(results, "margin_gap", 1), _reference(results, "margin_gap", K)
    ratios = [b / a for a, b in zip(_per_seed(results, "margin_gap", 1), _per_seed(results, "margin_gap", K))]
    ood_ngd = _reference(results, "ood_accuracy", K)
    return found + [
        Check("the construction P = ηI, Q = −I against normalised GD: largest |w_k − w_k^NGD| over k ≤ K",
              0.0, _reference(results, "construction_error", K, "construction"), 1e-9, "close",
              source="icl_sim.theory.normalized_gd: the step is a softmax read-out"),
        Check(f"normalised GD: 1 − cos(w_K, w_mm) over its value after 1 step (K = {K})", MARGIN_RATIO_BAR,
              ngd_last / ngd_first, 0.0, "at_most", source="implicit bias of normalised GD on separable data "
                                                           "(Nacson et al. 2019)"),
        Check(f"trained layers, largest over seeds: 1 − cos(w_K, w_mm) after K = {K} loops over its value after 1 "
              "loop", MARGIN_RATIO_BAR, max(ratios), 0.0, "at_most",
              source="a max-margin claim check until 2026-12-05: any layer near the construction shrinks the gap "
                     f"as normalised GD does (contrast {MARGIN_RATIO_BAR} fixed before measuring)"),
        Check(f"trained layers, smallest over seeds: out-of-distribution final-query accuracy after K = {K} loops "
              "minus normalised GD's", -OOD_SLACK, min(_per_seed(results, "ood_accuracy", K)) - ood_ngd, 0.0,
              "at_least", source=f"the ood claim check until 2026-12-05: any layer near the construction classifies "
                                 f"as normalised GD does (slack {OOD_SLACK} fixed before measuring)"),
    ]


def _model_curve(results: dict, quantity: str, settings: Settings) -> Curve:
    loops = settings.evaluated_loops
    per_loop = [_per_seed(results, quantity, k) for k in loops]
    return seed_curve(RUN + " looped", loops, [list(values) for values in zip(*per_loop)], continuous=False)


def _ngd_curve(results: dict, quantity: str, settings: Settings, label: str = "normalised GD",
               run: str = "normalised GD") -> Curve:
    """A one-value-per-loop run's curve (normalised GD, the contrast) as a baseline."""
    loops = settings.evaluated_loops
    return Curve(label, loops, [_reference(results, quantity, k, run) for k in loops], baseline=True,
                 continuous=False)


def _in_and_out(results: dict, quantity: str, settings: Settings) -> list[Curve]:
    """The looped layer and normalised GD on ``quantity``, in and out of distribution."""
    ood = "out of distribution"
    return [_model_curve(results, quantity, settings), _ngd_curve(results, quantity, settings),
            dataclasses.replace(_model_curve(results, "ood_" + quantity, settings), label=f"{RUN} looped, {ood}"),
            _ngd_curve(results, "ood_" + quantity, settings, f"normalised GD, {ood}")]


def _loss_curve(results: dict) -> Curve | None:
    histories = [history for history in results["loss"] if history]
    if not histories:
        return None  # the untrained control has no training
    steps = [record["step"] for record in histories[0]]
    return seed_curve(RUN, steps, [[record["loss"] for record in history] for history in histories])


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Training on the one-step target; the looped layer against normalised GD per loop: iterate error,
    direction gap to the max-margin classifier (with the contrast's), accuracy in and out of distribution."""
    K = settings.loops
    loss = _loss_curve(results)
    return [
        Panel("training step", "error vs the one-step target", [loss] if loss else [],
              yscale="log", title="(i) one layer, one normalised-GD step"),
        Panel("loops k", "mean ‖w_k − w_k^NGD‖ / ‖w_k^NGD‖", [_model_curve(results, "iterate_error", settings)],
              targets=[Target(f"required ≤ {LOOPED_BAR}", LOOPED_BAR, 0.0, LOOPED_BAR, where=(1, K))],
              xscale="log", title="(ii) the looped layer against the construction"),
        Panel("loops k", "1 − cos(w_k, w_mm)", _in_and_out(results, "margin_gap", settings) + [
            _ngd_curve(results, "margin_gap", settings, f"contrast: {CONTRAST}", CONTRAST)],
              xscale="log", yscale="log", title="direction to the max-margin classifier"),
        Panel("loops k", "final-query accuracy", _in_and_out(results, "accuracy", settings),
              xscale="log", title="in and out of distribution"),
    ]


REPRODUCTION = Reproduction(
    name="zhang-cao-2026",
    paper=PAPER,
    summary="One softmax attention layer trained on the one-step normalised-GD target of in-context logistic "
            "(exponential-loss) regression learns that step; looped, it is the multi-step construction, and its "
            "classifier turns toward the max-margin one as fast as normalised GD's, in and out of distribution "
            "(a layer class that contains the construction: a test of training, not of discovery).",
    caption="In-context linear classification: a softmax layer over y_j x_j with a classifier query, trained for "
            "one loop on the one-step normalised-GD target and looped K times at evaluation, against normalised "
            "GD: training loss, iterate error, 1 − cos with the max-margin classifier (and a uniform-attention "
            "contrast's), accuracy in and out of distribution",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=0.5,  # 30 s of CPU (user + sys) for 6 seeds; 92 s wall on the shared machine
    long_minutes=2.5,  # 143 s of CPU (user + sys) for 5 seeds; 486 s wall on the shared machine
    seeds={"quick": 6},
)
