"""Boursier & Boyer (2025), "Softmax as linear attention in the large-prompt regime": as the prompt length L grows,
training one softmax attention head follows training its linear counterpart from the same start.

Setting (their Sec. 6 and eboursier/softmax_as_linear ``run_experiments.py``, ``data_utils.py``, ``models.py``, at
commit 8fa49b3, read in the snapshot of MachineLearning-Nerd/icml26-repro-MvuCgK0Qns-softmax-linear-attention,
``source/official-snapshot/``): in-context linear regression in d = 5 dimensions, x ~ N(0, Σ) with the Toeplitz
("KCM 0.5") covariance Σ_ij = 0.5^|i−j| (``kcm-regression``), β ~ N(0, I/d) per prompt, y = βᵀx + ε with noise
variance 0.1 on the context and the query, tokens z = (x, y) ∈ R⁶ and the query (x_q, 0).  The model is their
one-head ``MultiHeadAttention`` without bias (``projected-attention``): separate W_q, W_k, W_v (6 × 6), scores
qᵀk_j/√6, softmax, then W_o (6 → 1), no residual; its linear variant drops the softmax and divides by L.  Both
start from nn.Linear's default U(−1/√6, 1/√6).  At each L the two runs here start from the same weights and see
the same batches (both runs of an L share the seed, hence the "init" and "train" streams): the pairing of their
``run_experiment``, whose linear run loads the softmax run's step-0 weights and data-generator state.  That branch
runs only with ``warm=True``; their ``__main__`` sets ``warm=False``, so as shipped their runs share the batches
(the data generator is seeded 327 in every run) but not the start (both built from one global stream seeded 327).
Plain SGD on the batch-mean squared error (torch's MSELoss, no ½), 128 prompts a step.  Their code applies the Cholesky root of Σ twice to the context x and never to the query x_q
(``LinearReg.__generatedata__``), so their context has covariance RΣRᵀ and their query I; this reproduction follows
the paper's stated law (x and x_q ~ N(0, Σ)); the claim is about softmax against linear on one law, which either law
tests.

The paper's Sec. 6 and its figure captions could not be read here (only the abstract is in the corpora): the claim
below is the abstract's and Thm 4.3's ("the limit risk of finite-prompt training approaches the infinite-prompt
one") made measurable, not a figure's number.  Every record of training (every ``log_every`` steps, with the start)
evaluates both runs of an L on the same 512 held-out prompts (the "probe" stream): risks R_soft(t), R_lin(t) and
predictions ŷ_soft(t), ŷ_lin(t).

Claim ``softmax-follows-linear`` (contrasts fixed before running; none is a number of the paper):

* the loss-trajectory gap max_t |R_soft(t) − R_lin(t)|, relative to the linear run's loss decrease
  R_lin(0) − R_lin(T), is smaller at the largest L than at the smallest, on every seed;
* its least-squares slope in log L over the lengths is negative on every seed;
* the prediction gap max_t E(ŷ_soft(t) − ŷ_lin(t))², relative to the linear run's movement E(ŷ_lin(T) − ŷ_lin(0))²,
  is smaller at the largest L than at the smallest, on every seed.
Relative gaps, because at a shared start the two heads already agree more closely at larger L (both near 0 and the
softmax average of the values tends to its linear limit, Lemma 2.1, for any fixed weights): the claim is that
training keeps them together, measured against how far training moved.  The untrained control has no trajectory:
its models are the start, their loss decrease and movement are 0, the relative gaps infinite, and every check fails.

Sanity: the two runs of an L start from identical weights and draw identical batches (the pairing of their code).
The Monte Carlo check of the limit itself and its rate is the claim ``large-prompt-softmax``
(``icl_sim.claims.large_prompt_softmax``), not repeated here.

Scales: ``quick`` L ∈ {10, 30, 100} (L = 1000 made quick take over 16 minutes here; cut before any verdict was seen), SGD at lr QUICK_LR for QUICK_STEPS steps (theirs: lr 1e-3 for 300 000, beyond
CPU minutes; the larger rate moves the loss visibly within them), 3 seeds; ``full`` their 19 lengths 10, 20, …, 100,
200, …, 1000, lr 1e-3, 300 000 steps, a record every 1000 steps (``run_experiments.py``); ``smoke`` the pipeline.

Measured at quick scale (seeds 0-2, then 100-102), held on every seed: the relative loss-trajectory gap at L = 100
minus at L = 10 is −0.36, −0.41, −0.52 and −0.21, −0.38, −0.32; its slope in log L −0.66, −1.02, −1.00 and −0.35,
−1.02, −0.73; the relative prediction gap's difference −0.37, −0.35, −0.41 and −0.16, −0.39, −0.39.  The untrained
control fails every check (no trajectory: the relative gaps are undefined).  Quick took 1.0 min (the gallery's run).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.plots import Panel, seed_curve
from icl_sim.tasks.kcm_regression import KCMRegression
from icl_sim.training import initial_model, training_batch

from .measures import least_squares_slope, seed_values
from .runner import held_out_prompts
from .spec import Claim, Paper, Reproduction

PAPER = Paper("E. Boursier, C. Boyer", "Softmax as linear attention in the large-prompt regime: a measure-based "
              "perspective", "ICML 2026", "2512.11784")
CODE = "eboursier/softmax_as_linear run_experiments.py"
ACTIVATIONS = ("softmax", "linear")
#: held-out prompts every record evaluates both runs of an L on
PROBES = 512

CLAIMS = (
    Claim("softmax-follows-linear", "Trained from the same start on the same batches, the softmax head's held-out "
          "loss and predictions follow the linear head's more closely as the prompt length L grows",
          "Boursier & Boyer 2025, abstract and Thm 4.3 (finite-prompt training approaches the infinite-prompt "
          "limit, linear attention's); Sec. 6 experiment, " + CODE),
)


@dataclass(frozen=True)
class Settings:
    """One scale: the prompt lengths and SGD's steps and rate (the rest is the authors')."""

    lengths: tuple[int, ...]
    steps: int
    lr: float
    log_every: int
    batch_size: int = 128
    dim: int = 5
    correlation: float = 0.5
    noise_variance: float = 0.1

    def task(self, length: int) -> KCMRegression:
        """Prompts of ``length`` context points and the query."""
        return KCMRegression(dim=self.dim, points=length + 1, noise=math.sqrt(self.noise_variance),
                             prior_scale=1 / math.sqrt(self.dim), correlation=self.correlation)


#: quick scale's SGD: 10 × their rate, so that 1000 steps move the loss (theirs: 1e-3 for 300 000 steps)
QUICK_LR, QUICK_STEPS = 0.01, 1000
SCALES = {
    "smoke": Settings(lengths=(4, 16), steps=20, lr=0.01, log_every=10, batch_size=16),
    "quick": Settings(lengths=(10, 30, 100), steps=QUICK_STEPS, lr=QUICK_LR, log_every=100),
    "full": Settings(lengths=tuple(range(10, 100, 10)) + tuple(range(100, 1001, 100)), steps=300_000, lr=1e-3,
                     log_every=1000),
}


def run_name(activation: str, length: int) -> str:
    return f"{activation}-L{length:04d}"


def runs(settings: Settings) -> dict[str, TrainConfig]:
    """Softmax and linear at every L, with one seed per L: the same start and the same batches."""
    return {run_name(activation, length): TrainConfig(
        task=KCMRegression.name, task_params=dataclasses.asdict(settings.task(length)), model="projected-attention",
        model_params={"activation": activation}, steps=settings.steps, batch_size=settings.batch_size,
        optimizer="sgd", lr=settings.lr, seed=0, log_every=settings.log_every, checkpoint_every=settings.steps)
        for length in settings.lengths for activation in ACTIVATIONS}


def _probe_predictions(model, settings: Settings, device, cache: dict) -> list[float]:
    """The model's predictions on the held-out probes of its prompt length (drawn once per length)."""
    length = model.points - 1
    if length not in cache:
        cache[length] = held_out_prompts(settings.task(length), "probe", PROBES, device)
    prompt = cache[length]
    return model.predict(prompt.xs, prompt.ys)[:, -1].tolist()


def monitor(settings: Settings, device):
    """Each record's predictions on the probes, for the trajectory gaps."""
    cache: dict = {}
    return lambda model: {"probe_predictions": _probe_predictions(model, settings, device, cache)}


def _trajectory(measurement, name: str, seed: int, cache: dict) -> tuple[list[int], torch.Tensor]:
    """The record steps and the probe predictions (T, PROBES) of one run: its start, then its records (for an
    untrained model, the start alone)."""
    config, history = measurement.configs[name][seed], measurement.histories[name][seed]
    start = initial_model(config, measurement.device)
    predictions = [_probe_predictions(start, measurement.settings, measurement.device, cache)]
    predictions += [record["probe_predictions"] for record in history]
    return [0] + [record["step"] for record in history], torch.tensor(predictions, dtype=torch.float64)


def _pair_measures(soft: torch.Tensor, lin: torch.Tensor, targets: torch.Tensor) -> dict:
    """The gaps of one paired trajectory (T, n) against the probe labels (n,): risks per record, the relative loss
    and prediction gaps (∞ when the linear run did not move)."""
    risks = {"softmax": (soft - targets).square().mean(-1), "linear": (lin - targets).square().mean(-1)}
    decrease = float(risks["linear"][0] - risks["linear"][-1])
    movement = float((lin[-1] - lin[0]).square().mean())
    loss_gap = float((risks["softmax"] - risks["linear"]).abs().max())
    prediction_gap = float((soft - lin).square().mean(-1).max())
    return {"risks": {key: value.tolist() for key, value in risks.items()},
            "loss_gap": loss_gap, "prediction_gap": prediction_gap,
            "relative_loss_gap": loss_gap / decrease if decrease > 0 else math.inf,
            "relative_prediction_gap": prediction_gap / movement if movement > 0 else math.inf}


def log_slope(lengths, values) -> float:
    """The least-squares slope of log(value) against log L (NaN unless every value is finite and positive)."""
    values = [float(value) for value in values]
    if not all(math.isfinite(value) and value > 0 for value in values):
        return math.nan
    return least_squares_slope([math.log(length) for length in lengths], [math.log(value) for value in values])


def measure(measurement) -> dict:
    """Per L and seed: the paired gaps, the risk curves, and the pairing's sanity (identical start and batch)."""
    settings = measurement.settings
    rows, curves, steps, cache = [], {}, [], {}
    for length in settings.lengths:
        names = {activation: run_name(activation, length) for activation in ACTIVATIONS}
        targets = held_out_prompts(settings.task(length), "probe", PROBES, measurement.device).ys[:, -1]
        for seed in range(len(measurement.models[names["softmax"]])):
            trajectories = {activation: _trajectory(measurement, name, seed, cache) for activation, name in
                            names.items()}
            steps = trajectories["softmax"][0]
            found = _pair_measures(trajectories["softmax"][1], trajectories["linear"][1], targets.cpu())
            curves.setdefault(length, []).append(found["risks"])
            rows += [{"run": f"L{length}", "length": length, "seed": seed, "quantity": quantity,
                      "value": found[quantity]}
                     for quantity in ("loss_gap", "prediction_gap", "relative_loss_gap", "relative_prediction_gap")]
            rows.append({"run": f"L{length}", "length": length, "seed": seed, "quantity": "pairing_difference",
                         "value": _pairing_difference(*(measurement.configs[name][seed] for name in names.values()),
                                                      measurement.device)})
    return {"rows": rows, "curves": curves, "steps": steps}


def _pairing_difference(soft: TrainConfig, lin: TrainConfig, device) -> float:
    """The largest difference between the two runs' starting weights and between their first batches."""
    weights = zip(initial_model(soft, device).parameters(), initial_model(lin, device).parameters())
    task = KCMRegression(**soft.task_params)
    batches = (training_batch(task, config, 0, device) for config in (soft, lin))
    first, second = batches
    return max([float((a - b).detach().abs().max()) for a, b in weights] +
               [float((first.xs - second.xs).abs().max()), float((first.ys - second.ys).abs().max())])


def checks(results: dict, settings: Settings) -> list[Check]:
    rows, lengths = results["rows"], settings.lengths
    smallest, largest = f"L{lengths[0]}", f"L{lengths[-1]}"

    def per_seed(quantity: str, run: str) -> list[float]:
        return seed_values(rows, quantity, run=run)

    def contrast(quantity: str, label: str) -> Check:
        differences = [high - low for high, low in zip(per_seed(quantity, largest), per_seed(quantity, smallest))]
        return claim_check("softmax-follows-linear", f"{label} at L = {lengths[-1]} minus at L = {lengths[0]}", 0.0,
                           differences,
                           relation="at_most", every_seed=True,
                           source=CLAIMS[0].source + ": a contrast fixed before running (the gap shrinks with L)")

    relative = [per_seed("relative_loss_gap", f"L{length}") for length in lengths]
    slopes = [log_slope(lengths, [values[seed] for values in relative]) for seed in range(len(relative[0]))]
    loss_label = "max_t |R_soft − R_lin| / (R_lin(0) − R_lin(T))"
    prediction_label = "max_t E(ŷ_soft − ŷ_lin)² / E(ŷ_lin(T) − ŷ_lin(0))²"
    pairing = max(value for length in lengths for value in per_seed("pairing_difference", f"L{length}"))
    return [contrast("relative_loss_gap", loss_label),
            claim_check("softmax-follows-linear", f"slope of log[{loss_label}] against log L", 0.0, slopes,
                        relation="at_most", every_seed=True,
                        source=CLAIMS[0].source + ": a contrast fixed before running (a gap decreasing in L)"),
            contrast("relative_prediction_gap", prediction_label),
            Check("largest difference between the paired runs' starts and first batches", 0.0, pairing, 0.0,
                  "at_most", 0.0, CODE + " (run_experiment, warm restart): the linear run starts from the softmax run's "
                  "step-0 weights and data-generator state")]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Held-out risk over training, softmax (solid) against linear (dashed) at each L, and the relative loss gap
    against L."""
    steps, curves, lengths = results["steps"], results["curves"], settings.lengths
    risks = Panel("SGD step", "held-out squared error (ŷ − y)²", [
        seed_curve(f"{activation}, L = {length}", steps, [seed[activation] for seed in curves[length]],
                   baseline=activation == "linear", color_key=f"L = {length}")
        for length in lengths for activation in ACTIVATIONS], title="softmax (solid) and linear (dashed) attention")
    gaps = [seed_values(results["rows"], "relative_loss_gap", run=f"L{length}") for length in lengths]
    gap = Panel("prompt length L", "relative loss-trajectory gap", [
        seed_curve("softmax against linear", list(lengths),
                   [[values[seed] for values in gaps] for seed in range(len(gaps[0]))], continuous=False)],
        xscale="log", yscale="log", title="max_t |R_soft − R_lin| / (R_lin(0) − R_lin(T))")
    return [risks, gap]


REPRODUCTION = Reproduction(
    name="boyer-boursier-2025",
    paper=PAPER,
    summary="Trained from one start on the same batches, a softmax attention head's loss and predictions follow its "
            "linear-attention counterpart's ever more closely as the prompt length L grows.",
    caption="Held-out risk over SGD of one softmax attention head (separate W_q, W_k, W_v, W_o) and its linear "
            "counterpart from the same start, on in-context linear regression (d = 5, KCM 0.5 covariance, noise 0.1), "
            "for several prompt lengths L, and their relative loss-trajectory gap against L",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=4.0,
    monitor=monitor,
)
