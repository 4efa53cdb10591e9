"""Song, Han, Zhang, Ding & Hong (2024), "Unraveling the gradient descent dynamics of Transformers": with a large
embedding dimension and a suitable initialisation, gradient descent trains one attention layer to a global optimum
with either kernel, softmax or Gaussian; the softmax kernel can stall in a suboptimal local solution where the
Gaussian kernel does not.

What could be read: the abstract (arXiv 2411.07538; NeurIPS 2024 proceedings page) and third-party summaries of
its figures (the layer of their Fig. 1: tokens X_i, W^Q, W^K, W^V, the softmax S_ih, W^O; test curves and loss
landscapes, along two directions d1 and d2, of Text classification and Pathfinder models whose second training
stage uses one kernel or the other).  The body (the theorems, their embedding-dimension condition, initialisation
and loss) was not found in any stored copy, and no authors' code was found, so every setting below is icl-sim's
own, fixed before running, and no number of the paper is used.  The Gaussian kernel is the unnormalised RBF
attention exp(−‖q − k‖²/(2√d)) of Skyformer (Chen et al. 2021, pkuzengqi/Skyformer code/models/attention.py),
whose LRA Text and Pathfinder tasks Song et al. also report: a lead, not their definition.

Setting (``kernel-attention``): N = 6 prompts, each T = 8 points and a query on the unit sphere of R^d, the query's
target y = wᵀz with a fresh w ~ N(0, I) per prompt (``linear-regression`` with ``x_distribution="sphere"``), so
y ~ N(0, 1); the layer f = Σ_t κ(W^Q z, W^K x_t) vᵀx_t; the squared loss on this fixed training set, full-batch GD
(lr 0.1) for 3000 steps.  One output per prompt, so the analogue of a "D ≥ Nn" condition is d ≥ N: then the
least-squares problem in v alone has an exact solution, and the global optimum of the loss is 0.  A run reaches
the global optimum when its final training loss is at most ``GLOBAL_TOLERANCE`` = 1e-3 (the trivial predictor's
loss is E y² = 1).  d runs over N/2, N and 4N; W^Q, W^K start with entries N(0, s²/d), s = 1 (standard) or 4
(large: a saturated softmax); v with entries N(0, 1).  Each training seed trains ``repeats`` runs per setting
(run r on seed 1000 r + the training seed) and a seed's value is the fraction of them at the global optimum.

Claims, each checked per training seed, thresholds and contrasts fixed before running:

* ``value-global`` (the abstract's "with appropriate weight initialization, GD can train a Transformer model
  (with either kernel type) to achieve a global optimal solution", for W^V alone): v trained, d = 4N, standard
  start: at least 0.9 of the runs at the global optimum, each kernel ("near 1", our bound).
* ``embedding-dimension`` ("especially when the input embedding dimension is large"): v trained, the fraction at
  d = 4N minus the fraction at d = N/2 is at least 0.5, each kernel.  At d = N/2 the least-squares floor in v is
  above the tolerance in every run (a sanity check: closed form), so no value-trained run can get there.
* ``transformer-global``: W^Q, W^K and v trained, d = 4N, standard start: at least 0.9 at the global optimum,
  each kernel.
* ``gaussian-escapes`` ("training a Transformer using the Softmax attention kernel may sometimes lead to
  suboptimal local solutions.  In contrast, the Gaussian attention kernel exhibits a much favorable behavior"):
  all trained, the Gaussian fraction minus the softmax fraction is at least one run's worth (1/repeats), at the
  small embedding dimension d = N/2 (standard start) and at the large start s = 4 (d = 4N).

Sanity (closed forms, not claims): for the value-trained runs the loss is never below the least-squares floor
min_v Σ_i (a_iᵀv − y_i)²/N (a batched ``torch.linalg.lstsq`` of the fixed attention outputs a_i), which is 0 (below
1e-20) at d ≥ N and above the tolerance at d = N/2; for W^Q alone under the softmax kernel (d = 4N), f_i is a
convex combination of the values vᵀx_it, so the loss is never below Σ_i dist(y_i, [min_t vᵀx_it, max_t
vᵀx_it])²/N, the floor a softmax layer with fixed values cannot pass (the Gaussian kernel is not so bounded).

Measured at quick scale (seeds 0-2; 11 min wall beside another job, 367 s CPU; 5 min alone): fraction at the global
optimum, d = 24, v trained: softmax 0.83, 1, 1 and Gaussian 1, 1, 1 (``value-global`` deferred: one softmax run in
18 still converging); at d = 3 every value-trained run is at its least-squares floor (≥ 0.032), fraction 0 (so
``embedding-dimension`` holds: gains 0.83, 1, 1 and 1, 1, 1); the whole layer at d = 24 reaches it in every run of
both kernels (``transformer-global`` holds), and at d = 3 too (softmax 1, 0.83, 1; Gaussian 1, 1, 1), as at the
large start (softmax 1, 1, 1; Gaussian 0.83, 1, 1), so ``gaussian-escapes`` shows no contrast and is deferred. W^Q
alone (d = 24) reaches it almost never (softmax 0, 0, 0; Gaussian 0.17, 0, 0), the softmax runs above a convex-hull
floor whose median is 0.05, 0.03, 0.12. Seeds 100-102 give the same verdicts: ``value-global`` 1, 1, 1 for both
kernels (deferred all the same, as seed 0 missed), ``embedding-dimension`` and ``transformer-global`` 1, 1, 1,
``gaussian-escapes`` 0, 0, 0 (d = 3) and 0, 0, −0.17 (start ×4); 5 min wall alone, 296 s CPU. The untrained control
fails every claim (all fractions 0). The rehearsal of the full scale (864 runs) passes in 19 s.

The figure: the fraction at the global optimum against d for each kernel and training set; the training loss
of the small-d runs; and a one-dimensional loss-landscape slice, the loss along θ_0 + t (θ_T − θ_0) from each
run's start (t = 0) through its end (t = 1), in place of the paper's two-direction landscapes of LRA models.

Scales: ``quick`` d ∈ {3, 6, 24}, 6 runs per setting and seed, 3000 steps; ``full`` d ∈ {3, 6, 12, 24, 48}, 12 runs
per setting and seed (36 over the 3 seeds), 20000 steps: no authors' configuration exists to copy; ``smoke`` a
few points and steps for the pipeline.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.plots import Panel, Target, seed_curve
from icl_sim.tasks import make_task
from icl_sim.training import initial_model, training_batch

from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("B. Song, B. Han, S. Zhang, J. Ding, M. Hong", "Unraveling the gradient descent dynamics of "
              "Transformers", "NeurIPS 2024", "2411.07538")
ABSTRACT = "Song et al. 2024, abstract"
#: a run at most this far above the global optimum 0 has reached it (the trivial predictor's loss is 1)
GLOBAL_TOLERANCE = 1e-3
#: the fraction of runs at the global optimum that counts as "near 1"
NEAR_ONE = 0.9
#: the least gain in that fraction from d = N/2 to d = 4N that counts as "large d helps"
DIMENSION_GAIN = 0.5
#: the W^Q, W^K start scales s (entries N(0, s²/d)): standard and large
STANDARD_START, LARGE_START = 1.0, 4.0
#: run r of a setting trains on the dataset and start of seed DATASET_STRIDE·r + the training seed
DATASET_STRIDE = 1000
#: the slice's positions t along θ_0 + t (θ_T − θ_0)
SLICE = tuple(float(t) for t in np.linspace(-0.5, 1.5, 41))
KERNELS = ("softmax", "gaussian")

CLAIMS = (
    Claim("value-global", "With W^V alone trained and a large embedding dimension, GD reaches the global optimum "
          "with either kernel", ABSTRACT + " (GD reaches a global optimum with either kernel, large embedding)",
          decided_at="full", reason="quick (3000 GD steps): the Gaussian fraction at d = 24 is 1, 1, 1 but the softmax "
          "one 0.83, 1, 1 (seeds 0-2; 1, 1, 1 on seeds 100-102): one softmax run in 18 is still above 1e-3, its "
          "averaged attention outputs making the convex problem ill-conditioned; full takes 20000 steps"),
    Claim("embedding-dimension", "A large embedding dimension is what lets GD reach the global optimum",
          ABSTRACT + " (\"especially when the input embedding dimension is large\")"),
    Claim("transformer-global", "GD on the whole layer (W^Q, W^K, W^V) reaches the global optimum with either "
          "kernel at a large embedding dimension", ABSTRACT),
    Claim("gaussian-escapes", "Where the softmax kernel stalls in suboptimal solutions the Gaussian kernel does "
          "better: more runs reach the global optimum", ABSTRACT + " (softmax may lead to suboptimal local "
          "solutions; the Gaussian kernel behaves much more favourably)", decided_at="full",
          reason="quick: Gaussian minus softmax fraction 0, 0.17, 0 at d = 3 and −0.17, 0, 0 at start ×4 (seeds "
          "0-2; 0, 0, 0 and 0, 0, −0.17 on seeds 100-102; required ≥ 1/6 each): with the whole layer trained "
          "both kernels reach the optimum in 16-18 runs of 18, so no stall shows; whether full's 36 runs per "
          "setting and 20000 steps separate them, or the paper's unread setting differs, is open"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale: the dataset, the sweep, the optimiser."""

    prompts: int
    tokens: int
    dims: tuple[int, ...]
    repeats: int
    steps: int
    log_every: int
    lr: float = 0.1

    @property
    def small_dim(self) -> int:
        return self.dims[0]

    @property
    def large_dim(self) -> int:
        return self.dims[-1]

    def task(self, dim: int):
        return make_task("linear-regression", dim=dim, points=self.tokens + 1, x_distribution="sphere")


SCALES = {
    "smoke": Settings(prompts=3, tokens=3, dims=(2, 12), repeats=2, steps=40, log_every=10),
    "quick": Settings(prompts=6, tokens=8, dims=(3, 6, 24), repeats=6, steps=3000, log_every=100),
    "full": Settings(prompts=6, tokens=8, dims=(3, 6, 12, 24, 48), repeats=12, steps=20000, log_every=200),
}


def settings_of(settings: Settings) -> list[tuple[str, int, float]]:
    """The (trained, d, start scale) settings of the sweep: v alone and the whole layer over d at the standard
    start, the whole layer at the large start and W^Q alone at the largest d."""
    found = [(trained, dim, STANDARD_START) for trained in ("value", "all") for dim in settings.dims]
    return found + [("all", settings.large_dim, LARGE_START), ("query", settings.large_dim, STANDARD_START)]


def setting_name(kernel: str, trained: str, dim: int, start: float) -> str:
    return f"{trained}-{kernel}-d{dim}-s{start:g}"


def run_name(kernel: str, trained: str, dim: int, start: float, repeat: int) -> str:
    return f"{setting_name(kernel, trained, dim, start)}-{repeat:02d}"


def runs(settings: Settings) -> dict[str, TrainConfig]:
    configs = {}
    for trained, dim, start in settings_of(settings):
        task = settings.task(dim)
        for kernel in KERNELS:
            for repeat in range(settings.repeats):
                configs[run_name(kernel, trained, dim, start, repeat)] = TrainConfig(
                    task=task.name, task_params=dataclasses.asdict(task), model="kernel-attention",
                    model_params={"kernel": kernel, "trained": trained, "query_scale": start},
                    steps=settings.steps, batch_size=settings.prompts, batch_redraw_every=settings.steps,
                    optimizer="sgd", lr=settings.lr, seed=DATASET_STRIDE * repeat, log_every=settings.log_every,
                    checkpoint_every=settings.steps)
    return configs


def training_loss(model, xs: torch.Tensor, targets: torch.Tensor) -> float:
    """The mean squared error of ``model`` on its training prompts, in float64."""
    with torch.no_grad():
        return float((model.last_prediction(xs, torch.zeros_like(xs[..., 0])) - targets).square().mean())


def least_squares_floor(model, xs: torch.Tensor, targets: torch.Tensor) -> float:
    """min_v Σ_i (a_iᵀv − y_i)²/N for the attention outputs a_i = Σ_t κ_it x_it of ``model``'s W^Q, W^K: the global
    optimum of training v alone (a convex problem), from a least-squares solve."""
    with torch.no_grad():
        weights = model.kernel_weights(xs, torch.tensor([xs.shape[1] - 1]))[:, 0]  # (N, T + 1)
        design = torch.einsum("nt,ntk->nk", weights, xs)
        solution = torch.linalg.lstsq(design, targets[:, None], driver="gelsd").solution
        return float((design @ solution - targets[:, None]).square().mean())


def hull_floor(model, xs: torch.Tensor, targets: torch.Tensor) -> float:
    """Σ_i dist(y_i, [min_t vᵀx_it, max_t vᵀx_it])²/N: the least loss of any softmax layer with ``model``'s values,
    whose output is a convex combination of them."""
    values = (xs[:, :-1] @ model.value.detach())[..., 0]
    below, above = values.min(dim=1).values - targets, targets - values.max(dim=1).values
    return float((below.clamp(min=0) + above.clamp(min=0)).square().mean())


def landscape_slice(model, start, xs: torch.Tensor, targets: torch.Tensor) -> list[float]:
    """The training loss at θ_0 + t (θ_T − θ_0) for each t of ``SLICE`` (every trained matrix moved together)."""
    trained = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
    initial = dict(start.named_parameters())
    losses = []
    with torch.no_grad():
        for t in SLICE:
            for name, parameter in model.named_parameters():
                parameter.copy_(initial[name] + t * (trained[name] - initial[name]))
            losses.append(training_loss(model, xs, targets))
        for name, parameter in model.named_parameters():
            parameter.copy_(trained[name])
    return losses


def _run_measures(model, config: TrainConfig, history: list[dict], settings: Settings) -> dict:
    """One run on its training set: its final and initial loss, its floors, its loss curve and its slice."""
    task = make_task(config.task, **config.task_params)
    prompt = training_batch(task, config, 0, torch.device("cpu"))
    xs, targets = prompt.xs.double(), prompt.ys[:, -1].double()
    start = initial_model(config, torch.device("cpu"))
    measured = {"loss": training_loss(model, xs, targets), "initial_loss": training_loss(start, xs, targets),
                "curve": [record["loss"] for record in history], "slice": landscape_slice(model, start, xs, targets)}
    if config.model_params["trained"] == "value":
        measured["least_squares_floor"] = least_squares_floor(model, xs, targets)
    if config.model_params["trained"] == "query" and config.model_params["kernel"] == "softmax":
        measured["hull_floor"] = hull_floor(model, xs, targets)
    return measured


def measure(measurement) -> dict:
    """Per seed and setting: the fraction of runs at the global optimum, the median losses and floors; the loss
    curves and slices (median over runs) for the figure; every run's floors for the sanity checks."""
    settings = measurement.settings
    rows, curves, slices, floors = [], {}, {}, {"least_squares": {}, "hull": []}
    for trained, dim, start in settings_of(settings):
        for kernel in KERNELS:
            setting = setting_name(kernel, trained, dim, start)
            names = [run_name(kernel, trained, dim, start, r) for r in range(settings.repeats)]
            for seed in range(len(measurement.models[names[0]])):
                measured = [_run_measures(measurement.models[name][seed], measurement.configs[name][seed],
                                          measurement.histories[name][seed], settings) for name in names]
                losses = np.array([m["loss"] for m in measured])
                base = {"run": setting, "seed": seed, "kernel": kernel, "trained": trained, "dim": dim,
                        "start": start}
                rows += [{**base, "quantity": "global_fraction", "value": float(np.mean(losses <= GLOBAL_TOLERANCE))},
                         {**base, "quantity": "median_loss", "value": float(np.median(losses))},
                         {**base, "quantity": "median_initial_loss",
                          "value": float(np.median([m["initial_loss"] for m in measured]))}]
                if trained == "value":
                    pairs = [(m["least_squares_floor"], m["loss"]) for m in measured]
                    floors["least_squares"].setdefault(dim, []).extend(pairs)
                    rows.append({**base, "quantity": "median_least_squares_floor",
                                 "value": float(np.median([floor for floor, _ in pairs]))})
                if "hull_floor" in measured[0]:
                    floors["hull"] += [(m["hull_floor"], m["loss"]) for m in measured]
                    rows.append({**base, "quantity": "median_hull_floor",
                                 "value": float(np.median([m["hull_floor"] for m in measured]))})
                if measured[0]["curve"]:
                    curves.setdefault(setting, []).append(np.median([m["curve"] for m in measured], axis=0).tolist())
                slices.setdefault(setting, []).append(np.median([m["slice"] for m in measured], axis=0).tolist())
    first = measurement.histories[run_name(KERNELS[0], "all", settings.small_dim, STANDARD_START, 0)][0]
    steps = [record["step"] for record in first]
    return {"rows": rows, "curves": curves, "slices": slices, "floors": floors, "steps": steps}


def _fractions(results: dict, kernel: str, trained: str, dim: int, start: float = STANDARD_START) -> list[float]:
    return seed_values(results["rows"], "global_fraction", run=setting_name(kernel, trained, dim, start))


def checks(results: dict, settings: Settings) -> list[Check]:
    small, large, found = settings.small_dim, settings.large_dim, []
    for kernel in KERNELS:
        found.append(claim_check(
            "value-global", f"{kernel}, v trained, d = {large}: fraction of runs with loss ≤ {GLOBAL_TOLERANCE:g}",
            NEAR_ONE, _fractions(results, kernel, "value", large), relation="at_least", every_seed=True,
            source=f"{CLAIMS[0].source}; the bound {NEAR_ONE} fixed before running"))
        gain = np.subtract(_fractions(results, kernel, "value", large), _fractions(results, kernel, "value", small))
        found.append(claim_check(
            "embedding-dimension", f"{kernel}, v trained: fraction at the global optimum, d = {large} minus d = "
            f"{small}", DIMENSION_GAIN, gain.tolist(), relation="at_least", every_seed=True,
            source=f"{CLAIMS[1].source}; the gain {DIMENSION_GAIN} fixed before running"))
        found.append(claim_check(
            "transformer-global", f"{kernel}, W^Q W^K v trained, d = {large}: fraction of runs with loss ≤ "
            f"{GLOBAL_TOLERANCE:g}", NEAR_ONE, _fractions(results, kernel, "all", large), relation="at_least",
            every_seed=True, source=f"{CLAIMS[2].source}; the bound {NEAR_ONE} fixed before running"))
    for dim, start, where in ((small, STANDARD_START, f"d = {small}"),
                              (large, LARGE_START, f"W^Q, W^K start ×{LARGE_START:g}")):
        gain = np.subtract(_fractions(results, "gaussian", "all", dim, start),
                           _fractions(results, "softmax", "all", dim, start))
        found.append(claim_check(
            "gaussian-escapes", f"all trained, {where}: Gaussian minus softmax fraction at the global optimum",
            1 / settings.repeats, gain.tolist(), relation="at_least", every_seed=True,
            source=f"{CLAIMS[3].source}: a contrast fixed before running (one run in {settings.repeats} more)"))
    return found + _floor_checks(results, settings)


def _floor_checks(results: dict, settings: Settings) -> list[Check]:
    """The closed-form floors: least squares in v (0 at d ≥ N, above the tolerance at d = N/2) and the softmax
    convex hull, never passed by a trained run."""
    least_squares = results["floors"]["least_squares"]
    below = max(floor - loss for pairs in least_squares.values() for floor, loss in pairs)
    found = [Check("v-trained runs: largest (least-squares floor − final loss)", 1e-12, float(below), 0.0, "at_most",
                   0.0, "least squares in v is convex: no v does better than its solve")]
    large = [floor for dim, pairs in least_squares.items() if dim >= settings.prompts for floor, _ in pairs]
    small = [floor for floor, _ in least_squares[settings.small_dim]]
    found += [Check(f"d ≥ N = {settings.prompts}: largest least-squares floor in v", 1e-20, max(large), 0.0,
                    "at_most", 0.0, "N generic equations in d ≥ N unknowns are solved exactly"),
              Check(f"d = {settings.small_dim} < N: smallest least-squares floor in v", GLOBAL_TOLERANCE, min(small),
                    0.0, "at_least", 0.0, "N generic equations in d < N unknowns leave a residual")]
    hull = results["floors"]["hull"]
    found.append(Check("W^Q-trained softmax runs: largest (convex-hull floor − final loss)", 1e-12,
                       float(max(floor - loss for floor, loss in hull)), 0.0, "at_most", 0.0,
                       "a softmax output is a convex combination of the values vᵀx_t"))
    return found


def figure(results: dict, settings: Settings) -> list[Panel]:
    """The fraction at the global optimum against d; the small-d training losses; the landscape slice."""
    labels = {"softmax": "softmax", "gaussian": "Gaussian"}
    dodge = {"softmax": 0.94, "gaussian": 1.06}  # the kernels' points side by side, as they often coincide
    fractions = []
    for trained, start, what in (("value", STANDARD_START, "v alone"), ("all", STANDARD_START, "all")):
        for kernel in KERNELS:
            per_seed = np.array([_fractions(results, kernel, trained, dim, start) for dim in settings.dims]).T
            fractions.append(seed_curve(f"{labels[kernel]}, {what}", [dim * dodge[kernel] for dim in settings.dims],
                                        per_seed.tolist(), baseline=trained == "all", continuous=False))
    sweep = Panel(f"embedding dimension d (N = {settings.prompts} prompts; kernels dodged)",
                  "fraction of runs at the global optimum",
                  fractions, targets=[Target(f"required ≥ {NEAR_ONE:g} at d = {settings.large_dim}", NEAR_ONE,
                                             NEAR_ONE, 1.0, where=(settings.large_dim * 0.8, settings.large_dim))],
                  xscale="log", ylim=(-0.05, 1.05))
    small_runs = [(kernel, setting_name(kernel, "all", settings.small_dim, STANDARD_START)) for kernel in KERNELS]
    large_start = [(kernel, setting_name(kernel, "all", settings.large_dim, LARGE_START)) for kernel in KERNELS]
    training = Panel("GD step", "training loss (median over runs)", [
        seed_curve(f"{labels[kernel]}, {note}", results["steps"], results["curves"][name])
        for runs_of, note in ((small_runs, f"d = {settings.small_dim}"), (large_start, f"start ×{LARGE_START:g}"))
        for kernel, name in runs_of], yscale="log", title="all trained")
    landscape = Panel("t along θ_0 + t (θ_T − θ_0)", "training loss (median over runs)", [
        seed_curve(f"{labels[kernel]}, {note}", list(SLICE), results["slices"][name])
        for runs_of, note in ((small_runs, f"d = {settings.small_dim}"), (large_start, f"start ×{LARGE_START:g}"))
        for kernel, name in runs_of], yscale="log", title="loss-landscape slice, start (0) to end (1)")
    return [sweep, training, landscape]


REPRODUCTION = Reproduction(
    name="song-2024",
    paper=PAPER,
    summary="Gradient descent trains one attention layer, softmax or Gaussian kernel, to the global optimum when the "
            "embedding dimension is large; the softmax kernel can stall in suboptimal solutions where the Gaussian "
            "does better.",
    caption="The fraction of GD runs reaching the global optimum (loss ≤ 1e-3) against the embedding dimension for "
            "each kernel, training v alone or the whole layer; the training loss and a loss-landscape slice of the "
            "small-d and large-start runs",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=5.0,
)
