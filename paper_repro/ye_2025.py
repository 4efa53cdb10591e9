"""Ye, Fu, Jia & Sharan (2025), "Transformers provably learn algorithmic solutions for graph connectivity, but
only with the right data" (arXiv 2510.19753; v1: "When do transformers learn heuristics for graph connectivity?").

Setting (Sec. 3-4): a graph on n vertices is given as its self-loop-augmented adjacency matrix A, one token
per vertex; the target is reachability.  The Disentangled Transformer (Sec. 4; linear attention whose outputs
are concatenated to the residual stream, ``icl_sim.models.disentangled``) with L layers computes
connectivity exactly for every graph of diameter ≤ 3^L and no further: a layer forms A·W·A·A, i.e. cubes the
reachability relation when W = I (the "algorithmic" channel), while W = J = 11ᵀ gives products of node degrees
(the "heuristic" channel).  Their training-dynamics theorem: graphs within capacity (diameter ≤ 3^L) drive
the algorithmic channel, graphs beyond capacity drive the degree heuristic ("connected iff both endpoints have
edges"); Sec. 5 / Fig. 1: a model trained beyond capacity scores well in distribution but fails on
out-of-distribution graphs of isolated chains, and restricting the training graphs to diameter ≤ 3^L makes
the model learn the exact algorithm.

Our prompts (``icl_sim.tasks.graph_connectivity``) hold the graph as n node tokens [A_v ; one-hot v] and one
query (s, t) whose ±1 label is reachability; the model answers that one entry of the connectivity matrix (the
paper's models answer all n² entries at once).  Runs, L = 1 (capacity 3):

* ``within``: ``bounded-diameter`` graphs, D = 3 = 3^L, two components (so half the unreachable pairs are
  both of positive degree and the heuristic is wrong on them);
* ``beyond``: ``chain`` graphs with path_length n − 4 > 3^L (8 at n = 12: one path through all but three
  vertices, which stay isolated), where the degree heuristic is right on every query — as it is on most
  queries of sparse Erdős–Rényi graphs, the training law of the paper's Fig. 1.

Held out (never trained on): two-or-more isolated chains of path_length 3 (``chain``, the paper's
out-of-distribution "isolated chains"; every vertex has an edge, so the heuristic answers "connected" for all
pairs and is wrong on every disconnected one: the hard slice), and chains of path_length 5 (distances 4-5 are
beyond capacity).  Accuracy is reported on all queries and on the hard slice (distance ≥ 4, or disconnected
with both ends of positive degree) — on random graphs shortcuts score high.

Claim checked on trained models (``CLAIMS``), one value per training seed; the paper's contrast is one claim:

* ``only-with-the-right-data`` (abstract, Sec. 4-5, Fig. 1): the within-capacity model is exact on held-out chains
  (accuracy ≥ 0.99 overall and on the hard slice: the paper's abstract and Sec. 5 say the models "learn the exact
  algorithm", i.e. accuracy 1; the 0.01 is our allowance, set when this reproduction was written), and the
  beyond-capacity model falls back to the heuristic: on the held-out chains its hard-slice accuracy is nearer the
  heuristic's (0, closed form: all hard pairs there are disconnected with both ends of positive degree) than the
  algorithm's (1), i.e. ≤ 0.5, most of its errors are the heuristic's answers (≥ 0.5 of them), and it agrees with
  the heuristic more often than with cubing (per seed: its agreement with the heuristic minus its agreement with
  cubing, ≥ 0).  The 0.5, 0.5 and 0 are midpoints and a contrast chosen when this reproduction was written; the
  paper states no number.  The beyond-capacity half is a negative result that a model which learned nothing can
  show (one answering "connected" everywhere is the heuristic; a random one sits at these midpoints), so it is
  held only together with the within-capacity half.

Sanity checks (the reference algorithm): the capacity theorem — ``ReachabilityRounds(L, power=3)`` is right on every
pair of a chain of diameter 3^L (L = 1, 2) and wrong on every pair at distance 3^L + 1.

Quick scale shrinks sizes only: n = 12 vertices, L = 1, 2000 Adam steps of batch 256 (lr 1e-2, cosine, 100
warm-up), 8192 held-out prompts per test set.  Measured (seed 0): the within-capacity model is exact on the
held-out chains of 3 edges (1.000 overall, 1.000 on the hard slice; 0.998 on its own training law); the
beyond-capacity model scores 0.986 on its own law but 0.517 on the held-out chains (hard slice 0.217, the
heuristic 0.490 and 0), 83 % of its errors are the heuristic's answer ("connected"), and it agrees with the
heuristic on 81 % of queries against 52 % with cubing.  Not claimed by the paper and not checked, but visible
in the middle panel: on chains of 5 edges (diameter 5, outside the within-capacity training law) the
within-capacity model is not the pure cubing algorithm (distance 3: 0.47, cubing 1), and the beyond-capacity
model answers some distance-4 pairs (0.51), the extra hop of our read-out.  The beyond law keeps its form at
full scale (a path through n − 3 vertices, three isolated).

Full scale: n = 24 and 20k steps of batch 512 at lr 1e-3 — NOT the paper's numbers: its optimiser and graph
sizes could not be read from the stored copies of the paper available here (only its abstract, set-up and
Fig. 1 caption: 2-layer transformers trained on Erdős–Rényi graphs); replace them when read.  Smoke runs a
few steps to test the pipeline.

Model note: our read-out attends from the query to the node tokens (bilinear in the query), so besides reading
node s's row it may also sum over the neighbours of s, one more hop than the paper's row read-out: a hand-set
L-layer model is exact within 3^L + 1 hops here (tests/test_repro_ye_2025.py sets the two channels by hand).
The beyond-capacity law (diameter n − 4 = 8) exceeds both.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.tasks import GraphConnectivity
from icl_sim.theory.graph_algorithms import BFSReachability, DegreeHeuristic, ReachabilityRounds

from .connectivity_measures import accuracy_band, query_correct, rounds_accuracy
from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("Q. Ye, D. Fu, R. Jia, V. Sharan",
              "Transformers provably learn algorithmic solutions for graph connectivity, but only with the right "
              "data", "arXiv preprint (ICML 2026)", "2510.19753")
THEOREM = "Ye et al. 2025, Sec. 4 (capacity theorem: L layers are exact for diameter ≤ 3^L, and only up to it)"
SECTION_5 = "Ye et al. 2025, Sec. 5 and abstract: training within capacity learns the exact algorithm"
HEURISTIC = "Ye et al. 2025, Sec. 4-5 and Fig. 1: beyond-capacity training learns the degree heuristic"
LAYERS = 1
CAPACITY = 3 ** LAYERS
WITHIN_DIAMETER, HELD_OUT_PATH, BOUNDARY_PATH = CAPACITY, CAPACITY, 5
#: the beyond-capacity paths leave this many vertices isolated (path_length = n − 1 − ISOLATED)
ISOLATED = 3

CLAIMS = (
    Claim("only-with-the-right-data", "Trained within capacity (diameter ≤ 3^L) the model learns the exact "
          "algorithm, exact on held-out isolated chains; trained beyond capacity it learns the degree heuristic "
          "instead",
          "Ye et al. 2025, abstract, Sec. 4-5 and Fig. 1"),
)


@dataclass(frozen=True)
class Settings:
    """Training and measurement sizes of one scale."""

    nodes: int
    steps: int
    batch_size: int
    lr: float
    lr_schedule: str
    warmup_steps: int
    test_prompts: int
    log_every: int


SCALES = {
    "smoke": Settings(nodes=12, steps=10, batch_size=32, lr=1e-2, lr_schedule="constant", warmup_steps=0,
                      test_prompts=512, log_every=5),
    "quick": Settings(nodes=12, steps=2000, batch_size=256, lr=1e-2, lr_schedule="cosine", warmup_steps=100,
                      test_prompts=8192, log_every=100),
    "full": Settings(nodes=24, steps=20_000, batch_size=512, lr=1e-3, lr_schedule="cosine", warmup_steps=500,
                     test_prompts=32_768, log_every=500),
}


def training_tasks(settings: Settings) -> dict[str, GraphConnectivity]:
    """The two training laws: every graph within capacity (diameter ≤ 3^L) or beyond it (a path of n − 4 edges)."""
    n = settings.nodes
    return {"within": GraphConnectivity(nodes=n, generator="bounded-diameter", max_diameter=WITHIN_DIAMETER,
                                        components=2),
            "beyond": GraphConnectivity(nodes=n, generator="chain", path_length=n - 1 - ISOLATED)}


def test_tasks(settings: Settings) -> dict[str, GraphConnectivity]:
    """Held-out isolated chains within capacity (path_length 3^L) and across its boundary (path_length 5)."""
    n = settings.nodes
    return {f"chains of {HELD_OUT_PATH} edges": GraphConnectivity(nodes=n, generator="chain",
                                                                  path_length=HELD_OUT_PATH),
            f"chains of {BOUNDARY_PATH} edges": GraphConnectivity(nodes=n, generator="chain",
                                                                  path_length=BOUNDARY_PATH)}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    return {name: TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="disentangled",
                              model_params={"layers": LAYERS}, steps=settings.steps, batch_size=settings.batch_size,
                              lr=settings.lr, lr_schedule=settings.lr_schedule, warmup_steps=settings.warmup_steps,
                              loss_on="last", log_every=settings.log_every,
                              checkpoint_every=max(settings.steps // 4, 1))
            for name, task in training_tasks(settings).items()}


BASELINES = {"BFS (exact)": BFSReachability(), f"cubing, L = {LAYERS}": ReachabilityRounds(LAYERS, 3),
             "degree heuristic": DegreeHeuristic()}
MODEL_LABELS = {"within": "trained within capacity (diameter ≤ 3)",
                "beyond": "trained beyond capacity (one long path)"}


def capacity_chain(rounds: int, settings: Settings) -> GraphConnectivity:
    """A chain of 3^L + 1 edges, every query reachable: distances 1 … 3^L + 1, the last one beyond capacity."""
    path = 3 ** rounds + 1
    return GraphConnectivity(nodes=max(settings.nodes, path + 1), generator="chain", path_length=path,
                             reachable_fraction=1.0)


def capacity_rows(measurement) -> list[dict]:
    """Cubing with L = 1, 2 rounds on chains of 3^L + 1 edges: accuracy within 3^L, beyond it, and by distance."""
    settings, rows = measurement.settings, []
    for rounds in (1, 2):
        prompt = measurement.prompts(capacity_chain(rounds, settings), "probe", settings.test_prompts, index=rounds)
        run = f"cubing L={rounds}"
        rows += [{"run": run, "seed": 0, "test": "capacity chain", "slice": key, "quantity": "accuracy", "value": value}
                 for key, value in rounds_accuracy(prompt, rounds, 3).items() if key in ("inside", "beyond")]
        rows += _slice_rows(run, 0, "capacity chain", query_correct(ReachabilityRounds(rounds, 3), prompt),
                            prompt, by_distance_only=True, longest=3 ** rounds + 1)
    return rows


def _slice_rows(run: str, seed: int, test: str, correct: torch.Tensor, prompt, hard: torch.Tensor | None = None,
                by_distance_only: bool = False, longest: int = 0) -> list[dict]:
    """Accuracy with its 95 % band on all queries, the hard slice, the disconnected pairs and each distance up to
    ``longest`` (the task's) or the longest drawn: a distance no prompt drew has accuracy NaN, count 0."""
    distance = prompt.latent["distance"]
    masks = {} if by_distance_only else {"all": None, "hard": hard, "disconnected": distance < 0}
    masks.update({f"distance {d}": distance == d for d in range(1, max(longest, int(distance.max())) + 1)})
    rows = []
    for name, mask in masks.items():
        band = accuracy_band(correct, mask)
        rows.append({"run": run, "seed": seed, "test": test, "slice": name, "quantity": "accuracy",
                     "value": band["mean"], "low": band["ci_low"], "high": band["ci_high"], "count": band["count"]})
    return rows


def measure(measurement) -> dict:
    settings = measurement.settings
    rows = capacity_rows(measurement)
    predictors = {name: [baseline] for name, baseline in BASELINES.items()}
    predictors.update(measurement.models)
    for index, (test, task) in enumerate(test_tasks(settings).items()):
        prompt = measurement.prompts(task, "test", settings.test_prompts, index=index)
        hard, label = task.slices(prompt)["hard"], prompt.latent["label"]
        answers = {}
        for run, models in predictors.items():
            for seed, model in enumerate(models):
                correct = query_correct(model, prompt)
                answers[run, seed] = torch.where(correct > 0.5, label, ~label)  # its answer: right or the other one
                rows += _slice_rows(run, seed, test, correct, prompt, hard, longest=task.path_length)
        heuristic = answers["degree heuristic", 0]
        cubing = answers[f"cubing, L = {LAYERS}", 0]
        for (run, seed), answer in answers.items():
            wrong = answer != label
            values = {"errors agreeing with the heuristic": (answer == heuristic)[wrong].double().mean(),
                      "agreement with the heuristic": (answer == heuristic).double().mean(),
                      "agreement with cubing": (answer == cubing).double().mean()}
            rows += [{"run": run, "seed": seed, "test": test, "slice": "all", "quantity": key, "value": float(value)}
                     for key, value in values.items()]
    for index, (run, task) in enumerate(training_tasks(settings).items()):  # in distribution, for the record
        prompt = measurement.prompts(task, "test", settings.test_prompts, index=10 + index)
        for seed, model in enumerate(measurement.models.get(run, [])):
            rows += _slice_rows(run, seed, "training law", query_correct(model, prompt), prompt,
                                task.slices(prompt)["hard"])
    return {"rows": rows}


def _mean(results: dict, run: str, test: str, slice_name: str, quantity: str = "accuracy",
          key: str = "value") -> float:
    """The mean over seeds of ``key`` of ``quantity`` for ``run`` on ``test`` (``slice_name``); NaN if absent."""
    values = [row[key] for row in results["rows"] if row["run"] == run and row["test"] == test
              and row["slice"] == slice_name and row["quantity"] == quantity]
    return sum(values) / len(values) if values else float("nan")


def checks(results: dict, settings: Settings) -> list[Check]:
    held_out = f"chains of {HELD_OUT_PATH} edges"
    found = []
    for rounds in (1, 2):
        hops = 3 ** rounds
        found += [exact(f"cubing, L = {rounds}: accuracy on reachable pairs within 3^L = {hops} hops", 1.0,
                        _mean(results, f"cubing L={rounds}", "capacity chain", "inside"), source=THEOREM),
                  exact(f"cubing, L = {rounds}: accuracy at distance 3^L + 1 = {hops + 1}", 0.0,
                        _mean(results, f"cubing L={rounds}", "capacity chain", "beyond"), source=THEOREM)]
    def per_seed(run: str, slice_name: str, quantity: str = "accuracy") -> list[float]:
        return seed_values(results["rows"], quantity, run=run, test=held_out, slice=slice_name)

    agreement_gap = [heuristic - cubing for heuristic, cubing in
                     zip(per_seed("beyond", "all", "agreement with the heuristic"),
                         per_seed("beyond", "all", "agreement with cubing"))]
    found += [
        claim_check("only-with-the-right-data", f"within-capacity model: accuracy on held-out {held_out}", 0.99,
                    per_seed("within", "all"), relation="at_least", source=SECTION_5),
        claim_check("only-with-the-right-data", f"within-capacity model: hard-slice accuracy on held-out {held_out}",
                    0.99, per_seed("within", "hard"), relation="at_least", source=SECTION_5),
        claim_check("only-with-the-right-data", f"beyond-capacity model: hard-slice accuracy on held-out {held_out} "
                    "(heuristic 0, algorithm 1)", 0.5, per_seed("beyond", "hard"), relation="at_most",
                    source=HEURISTIC),
        claim_check("only-with-the-right-data", f"beyond-capacity model: fraction of its errors on {held_out} that "
                    "are the heuristic's answer", 0.5, per_seed("beyond", "all", "errors agreeing with the heuristic"),
                    relation="at_least", source=HEURISTIC),
        claim_check("only-with-the-right-data", "beyond-capacity model: agreement with the heuristic minus agreement "
                    "with cubing", 0.0, agreement_gap, relation="at_least", source=HEURISTIC),
    ]
    return found


def _curve(results: dict, run: str, label: str, test: str, slices: list[str], xs: list[int]) -> Curve:
    """Accuracy of ``run`` on ``slices`` of ``test`` at ``xs``: a trained run's mean over seeds with its 95 % interval,
    a baseline's value with its bootstrap band (dashed); x is a few measured values."""
    if run in MODEL_LABELS:
        per_seed = list(zip(*(seed_values(results["rows"], "accuracy", run=run, test=test, slice=s) for s in slices)))
        return seed_curve(label, xs, per_seed, continuous=False)
    return Curve(label, xs, [_mean(results, run, test, s) for s in slices],
                 [_mean(results, run, test, s, key="low") for s in slices],
                 [_mean(results, run, test, s, key="high") for s in slices], baseline=True, continuous=False)


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Cubing's reach 3^L, the trained models by query distance across capacity, and overall vs hard accuracy."""
    capacity = []
    for rounds in (1, 2):
        distances = list(range(1, 3 ** rounds + 2))
        capacity.append(_curve(results, f"cubing L={rounds}", f"cubing, L = {rounds} (3^L = {3 ** rounds})",
                               "capacity chain", [f"distance {d}" for d in distances], distances))
    boundary, held_out = f"chains of {BOUNDARY_PATH} edges", f"chains of {HELD_OUT_PATH} edges"
    labels = {**MODEL_LABELS, **{name: name for name in BASELINES}}
    distances = list(range(0, BOUNDARY_PATH + 1))
    boundary_slices = ["disconnected", *(f"distance {d}" for d in distances[1:])]
    return [
        Panel("query distance (chain of 3^L + 1 edges)", "accuracy", capacity,
              title="cubing is exact up to 3^L hops", ylim=(-0.05, 1.05)),
        Panel(f"query distance, held-out {boundary} (0: disconnected)", "accuracy",
              [_curve(results, run, label, boundary, boundary_slices, distances) for run, label in labels.items()],
              title=f"L = {LAYERS}: capacity 3^L = {CAPACITY}", ylim=(-0.05, 1.05)),
        Panel(f"held-out {held_out}: 0 all queries, 1 hard slice", "accuracy",
              [_curve(results, run, label, held_out, ["all", "hard"], [0, 1]) for run, label in labels.items()],
              targets=[Target("within-capacity model: required ≥ 0.99", 0.99, 0.99, 1.0, where=(0, 1))],
              title="exact algorithm vs degree heuristic", ylim=(-0.05, 1.05)),
    ]


REPRODUCTION = Reproduction(
    name="ye-2025",
    paper=PAPER,
    summary="An L-layer (disentangled) transformer computes connectivity exactly within diameter 3^L when trained "
          "within that capacity, and falls back to the node-degree heuristic when trained beyond it.",
    caption="Sec. 4-5 and Fig. 1 of the paper: cubing's reach 3^L, and one-layer disentangled transformers trained "
            "within (diameter ≤ 3) or beyond (a path of n − 4 edges) capacity, on held-out isolated chains",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    claims=CLAIMS,
    quick_minutes=1.5,
)
