"""de Luca & Fountoulakis (2024), "Simulation of graph algorithms with looped transformers" (ICML 2024, arXiv
2402.01107).

What could be read: the abstract and introduction (arXiv HTML, ar5iv: the stored copies end there), and the authors'
code, opallab/graphalgosimulation (commit ee53a68).  The claims are the abstract's: a looped transformer with extra
attention heads that interact with the graph simulates Dijkstra's shortest paths, breadth- and depth-first search
and Kosaraju's strongly connected components, with a number of parameters that does not grow with the graph; and
finite precision limits the simulation.  The paper's own section on that limit was not readable here, so the bound
tested is the one the construction's mechanism implies (below), with the authors' constants (``ltfs/config.py``:
float64, positional codes at angle ε = 1e-2, temperature T = 1e-7, INF = 1e4) and their graph heads
(``ltfs/common/proto.py``: update = Ã softmax(X Q (X K)ᵀ / T) X V).  Their validation (``validation.ipynb``)
runs each model on CLRS-30's graphs (train and validation: n = 16; test: n = 64) and counts the graphs whose output
equals CLRS's.

Ours (``icl_sim.models.graph_simulation``, on the shared builder ``icl_sim.models.constructed``): the same graph
heads and codes, our own loop body (one expanded node per loop: a softmax head selects the node of least priority,
a graph head reads its adjacency row, ReLU MLPs update the state; the module's docstring lists the departures from
their blocks).  Test graphs (``icl_sim.tasks.weighted_graphs``): CLRS-30's law as we read it from the paper's use of
it (Erdős–Rényi, edge probability uniform on {0.1, …, 0.9} per graph, a uniform source), undirected for BFS and
Dijkstra, directed for DFS and SCC, with the authors' own integer weights 1..10 for Dijkstra (``ltfs/utils.py``
``generate_A``; CLRS's real-valued weights were not used: our selection breaks ties by 10⁻³ × the index, which needs
integer distances).  References (``icl_sim.theory.graph_algorithms``, tested against networkx): the authors'
``reference_bfs/dfs/dijkstra/scc`` conventions (neighbours in index order; DFS from the source only; a node never
reached is its own parent; Kosaraju's label is the node that started the component's search).

Claims, decided at quick (a construction is not trained; each seed draws its own graphs):

* ``exact-simulation`` (abstract): on every test graph the state after the loops equals the reference algorithm's
  output — parents (BFS, DFS, Dijkstra), distances (Dijkstra), component labels and the first pass's finishing
  order (SCC) — and, for BFS, DFS and Dijkstra, the state after every loop too: the node expanded in loop k is the
  reference's k-th, the visited set its first k, and the loop after the last sets the done flag.  One claim check
  per algorithm: per seed, the fraction of the test graphs (n = 16 and n = 64) that are exact, at least 1 (the
  paper's 100 %).  A wrong mechanism fails it: CLRS's layer-synchronous BFS picks other parents, a hop-count search
  other Dijkstra trees, and a graph head whose attention is not the identity reads mixed rows.
* ``precision-limit`` (abstract: "a limit to simulation ... due to finite precision"): the graph heads tell nodes
  apart only by their codes, so the construction is exact for n ≤ n_max(ε) = ⌈2π/ε⌉ − 1 (n + 1 distinct codes on
  the circle) and only while 1 − cos ε exceeds the float's unit roundoff (float64: ε above about 1.5·10⁻⁸), at the
  authors' margin (1 − cos ε)/T = 500.  Checked at ε = 2π/24 (n_max = 23): exact on every graph at n = 23, at most
  half the graphs exact at n = 32 (beyond the bound: the codes of rows r and r + 24 coincide); and at n = 16:
  exact at ε = 10⁻⁷, at most half exact at ε = 3·10⁻⁹ (1 − cos ε = 4.5·10⁻¹⁸, below float64's 1.1·10⁻¹⁶).  The
  thresholds 1 and ½ were fixed before the verdict blocks.  The wrong mechanism: nodes addressed by exact integer
  indices (or by one-hot codes) would stay exact beyond 2π/ε and at any ε.

The untrained control is the same architecture (stream, layers, heads, MLP widths, temperature) at a random
initialisation (U(±1/√fan_in), the builder's ``random``): no graph is exact, so it fails both claims by 0.

Measured at quick (per seed: 16 graphs per algorithm at n = 16 and 8 at n = 64; 8 per algorithm at each sweep
point; about 17 CPU seconds, 15 for the control), fresh blocks never run before, 1000 (seeds 1000-1002) and 1100
(seeds 1100-1102), code at commit 6193525:

* ``exact-simulation`` HELD in both blocks: BFS, DFS, Dijkstra and SCC exact on every graph of every seed (1, 1, 1
  each, both blocks); for BFS, DFS and Dijkstra every loop's state matched the reference's step (fraction of
  matching loops 1 in every seed, size and algorithm).  Control: 0 in every seed of both blocks, every algorithm.
* ``precision-limit`` HELD in both blocks.  At ε = 2π/24 the fraction exact (four algorithms pooled) was 1 at
  n = 8, 16, 20 and 23 in every seed; beyond the bound it fell: block 1000, n = 24: 0.59, 0.66, 0.81; n = 26: 0.03,
  0.03, 0.09; n = 28: 0, 0.03, 0; n = 32 (the check): 0, 0.03, 0; block 1100, n = 24: 0.62, 0.81, 0.66; n = 26:
  0.12, 0.03, 0.03; n = 28: 0, 0.12, 0.06; n = 32: 0, 0, 0 (at n = 24 only node 23's code collides, with the
  global row's, and a graph fails only when that node's expansion matters).  At n = 16 the fraction exact was 1
  at ε = 1e-2, 1e-4, 1e-7 and 3e-8 and 0 at ε = 1e-8 and 3e-9 in every seed of both blocks: the break lies between
  3e-8 and 1e-8, where 1 − cos ε crosses float64's unit roundoff (ε = √(2u) = 1.5e-8).  Control: 0 within the
  bound and at ε = 1e-7 in every seed (0 beyond it too).

Not done: a float32 contrast.  The builder computes in float64; a development probe that cast the weights and
states to float32 (dev seed 950, n = 16, 8 graphs per algorithm, not kept) found our construction inexact already
at the authors' ε = 1e-2 (fraction exact 0, 0, 0.12, 0.38 for BFS, DFS, Dijkstra, SCC) for another finite-precision
reason: a selection key spans the 10⁻³ tie-break to the 10⁵ mask, eight decimal digits, past float32's seven (the
authors' INF = 1e4 and 10·INF gates stress it the same way), so float32 would test the constants' range, not the
codes' bound.  Also not done: the state of every SCC loop against Kosaraju's (its final labels and whole finishing
order are checked); CLRS's own graph files and real-valued weights.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.models.constructed import matching_loops
from icl_sim.models.graph_simulation import (EPSILON, INF, TEMPERATURE, code_gap, decode, decode_scc,
                                             graph_construction, margin_temperature, simulable_nodes, simulate)
from icl_sim.paper_repro.measures import seed_values
from icl_sim.paper_repro.spec import Claim, Paper, Reproduction
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.seeding import make_generator
from icl_sim.tasks.weighted_graphs import AUTHORS_WEIGHTS, erdos_renyi_graphs
from icl_sim.theory.graph_algorithms import KosarajuStep, bfs_tree, dfs_tree, dijkstra_tree, kosaraju_scc, kosaraju_steps

PAPER = Paper("A. B. de Luca, K. Fountoulakis", "Simulation of graph algorithms with looped transformers",
              "ICML 2024", "2402.01107")
ABSTRACT = "de Luca & Fountoulakis 2024, abstract; authors' validation.ipynb (CLRS-30, exact outputs)"
LIMIT = "de Luca & Fountoulakis 2024, abstract (finite precision); the bound from ltfs/config.py's codes and T"

#: per algorithm: directed graphs, integer weights, reference
ALGORITHMS = {"bfs": (False, None, bfs_tree), "dfs": (True, None, dfs_tree),
              "dijkstra": (False, AUTHORS_WEIGHTS, dijkstra_tree), "scc": (True, None, None)}
LABELS = {"bfs": "BFS", "dfs": "DFS", "dijkstra": "Dijkstra", "scc": "SCC (Kosaraju)"}
#: the precision sweep: codes at ε = 2π/WRAP (n_max = WRAP − 1), and a resolvable and an unresolvable ε
WRAP = 24
FINE, COARSE = 1e-7, 3e-9
#: the float32 contrast: 1 − cos ε is 8.4 and 0.084 times float32's unit roundoff (float64 is exact at both)
FINE32, COARSE32 = 1e-3, 1e-4
WITHIN_SHARE, BEYOND_SHARE = 1.0, 0.5
PRECISIONS = {"float64": torch.float64, "float32": torch.float32}
#: Kosaraju's state compared after every loop
SCC_FIELDS = tuple(field.name for field in dataclasses.fields(KosarajuStep))

CLAIMS = (
    Claim("exact-simulation", "A looped transformer with graph attention heads (Ã softmax(·) X V), weights set by "
          "hand and independent of n, runs BFS, DFS, Dijkstra's algorithm and Kosaraju's SCC exactly: on every test "
          "graph its state after every loop equals the reference algorithm's after the same step, and its final "
          "state the reference's output", ABSTRACT),
    Claim("precision-limit", "Finite precision limits the graphs it can simulate: the graph heads address nodes by "
          "positional codes at angle ε, so it is exact up to n = ⌈2π/ε⌉ − 1 nodes and not beyond, and only while "
          "1 − cos ε exceeds the float's unit roundoff u (float64: ε above 1.5·10⁻⁸)", LIMIT),
    Claim("float32-limit", "The limit moves with the machine epsilon as the bound says: computed in float32 "
          "(u = 6·10⁻⁸) the same construction is exact up to n = ⌈2π/ε⌉ − 1 while ε is above √(2u) = 3.5·10⁻⁴, "
          "and not below it, at an ε where float64 is still exact", LIMIT),
)


@dataclass(frozen=True)
class Settings:
    small_nodes: int             # the exactness claim's graph sizes (CLRS-30: 16 in train and validation, 64 in test)
    large_nodes: int
    small_prompts: int           # graphs per algorithm and seed at each size
    large_prompts: int
    sweep_prompts: int           # graphs per algorithm, seed and precision setting
    wrap: int                    # ε = 2π/wrap in the size sweep
    wrap_sizes: tuple[int, ...]  # graph sizes of the size sweep (those of the claim: wrap − 1 and ⌈4 wrap / 3⌉)
    resolution_nodes: int        # graph size of the ε sweep
    epsilons: tuple[float, ...]  # the ε sweep (FINE, COARSE and COARSE32 among them)
    wrap_sizes32: tuple[int, ...]  # the size sweep in float32 (wrap − 1 and ⌈4 wrap / 3⌉)
    epsilons32: tuple[float, ...]  # the ε sweep in float32 (FINE32 and COARSE32 among them)

    @property
    def sizes(self) -> tuple[tuple[int, int], ...]:
        """(graph size, graphs) of the exactness claim."""
        return (self.small_nodes, self.small_prompts), (self.large_nodes, self.large_prompts)


SWEEP = dict(wrap=WRAP, wrap_sizes=(8, 16, 20, 23, 24, 26, 28, 32), resolution_nodes=16,
             epsilons=(1e-2, COARSE32, FINE, 3e-8, 1e-8, COARSE), wrap_sizes32=(23, 32),
             epsilons32=(1e-2, FINE32, 3e-4, COARSE32))
SCALES = {
    "smoke": Settings(small_nodes=5, large_nodes=6, small_prompts=1, large_prompts=1, sweep_prompts=1, wrap=6,
                      wrap_sizes=(5, 8), resolution_nodes=5, epsilons=(COARSE32, FINE, COARSE), wrap_sizes32=(5, 8),
                      epsilons32=(FINE32, COARSE32)),
    "quick": Settings(small_nodes=16, large_nodes=64, small_prompts=16, large_prompts=8, sweep_prompts=8, **SWEEP),
    # the authors' validation: CLRS-30's 1000 training and 32 validation graphs (n = 16) and 32 test graphs (n = 64)
    "full": Settings(small_nodes=16, large_nodes=64, small_prompts=1032, large_prompts=32, sweep_prompts=32, **SWEEP),
}


def runs(settings: Settings) -> dict:
    """No training runs: the models are built in ``measure`` (hand weights, or random ones for the control)."""
    return {}


def beyond_size(settings: Settings) -> int:
    return math.ceil(4 * settings.wrap / 3)


def loops_for(algorithm: str, nodes: int) -> int:
    """Loops run: one per expanded node and one that finds none (BFS, DFS, Dijkstra); Kosaraju's two passes, one
    event each (2n + 1 and at most 2n)."""
    return 4 * nodes + 2 if algorithm == "scc" else nodes + 1


def exact_graphs(construction, algorithm: str, adjacency: torch.Tensor, source: torch.Tensor, epsilon: float,
                 dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """(exact (B,) bool, fraction of loops whose state matches the reference's step (B,)) of ``construction`` on
    the graphs, computed in ``dtype``: exact means every loop matches and the final outputs equal the reference's."""
    batch, n, _ = adjacency.shape
    states = simulate(construction, adjacency, source, loops_for(algorithm, n), epsilon=epsilon, dtype=dtype)
    if algorithm == "scc":
        return _scc_exact(states, adjacency)
    reference = [ALGORITHMS[algorithm][2](a, int(s)) for a, s in zip(adjacency, source)]
    expected = []
    for loop in range(len(states)):
        last, visited = torch.full((batch,), -1, dtype=torch.long), torch.zeros(batch, n, dtype=torch.bool)
        for b, traversal in enumerate(reference):
            order = traversal.order
            if loop < len(order):
                last[b] = order[loop]
            visited[b, order[:loop + 1]] = True
        expected.append({"last": last, "visited": visited})
    per_loop = matching_loops(states, lambda state: {key: value for key, value in decode(state).items()
                                                     if key in ("last", "visited", "valid")}, expected)
    out = decode(states[-1])
    parents = torch.stack([traversal.parent for traversal in reference])
    exact = per_loop.all(dim=1) & out["done"] & (out["parent"] == parents).all(dim=1)
    if algorithm == "dijkstra":
        distances = torch.stack([traversal.distance for traversal in reference])
        distances = torch.where(distances.isinf(), torch.full_like(distances, INF), distances)
        exact &= (out["distance"] == distances).all(dim=1)
    return exact, per_loop.to(torch.float64).mean(dim=1)


def _scc_exact(states: list[torch.Tensor], adjacency: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Kosaraju: after every loop the state (visited, finished, timestamps, pass, assigned, expanded, labels) is
    the reference's after the same number of events (its last once it has run out), and the final labels and
    finishing order are ``kosaraju_scc``'s."""
    traces = [kosaraju_steps(a) for a in adjacency]
    expected = []
    for loop in range(len(states)):
        steps = [trace[min(loop, len(trace) - 1)] for trace in traces]
        expected.append({name: torch.stack([torch.as_tensor(getattr(step, name)) for step in steps])
                         for name in SCC_FIELDS})
    per_loop = matching_loops(states, decode_scc, expected)
    out = decode_scc(states[-1])
    exact = per_loop.all(dim=1)
    for b, a in enumerate(adjacency):
        reference = kosaraju_scc(a)
        exact[b] &= bool(torch.equal(out["label"][b], reference.parent)
                         and torch.equal(out["finish"][b].argsort(), reference.order))
    return exact, per_loop.to(torch.float64).mean(dim=1)


def _construction(measurement, algorithm: str, seed: int, temperature: float):
    construction = graph_construction(algorithm, temperature=temperature)
    if measurement.control == "untrained":
        index = list(ALGORITHMS).index(algorithm)
        construction = construction.random(make_generator(seed, "init", index))
    return construction


def _graphs(seed: int, index: int, algorithm: str, count: int, nodes: int):
    directed, weights, _ = ALGORITHMS[algorithm]
    generator = make_generator(seed, "eval", index * len(ALGORITHMS) + list(ALGORITHMS).index(algorithm))
    return erdos_renyi_graphs(generator, count, nodes, directed=directed, weights=weights)


def _sweeps(settings: Settings) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """(sweep, precision, [(graph size, ε)]) of the precision sweeps, in the order their graphs are drawn."""
    wrap = 2 * math.pi / settings.wrap
    return [("wrap", "float64", [(nodes, wrap) for nodes in settings.wrap_sizes]),
            ("resolution", "float64", [(settings.resolution_nodes, epsilon) for epsilon in settings.epsilons]),
            ("wrap", "float32", [(nodes, wrap) for nodes in settings.wrap_sizes32]),
            ("resolution", "float32", [(settings.resolution_nodes, epsilon) for epsilon in settings.epsilons32])]


def measure(measurement) -> dict:
    """Per seed: the fraction of exact graphs (and of loops matching the reference's step) per algorithm and size at
    the authors' ε and T; the fraction of exact graphs (all algorithms pooled) against the graph size at
    ε = 2π/wrap and against ε at a fixed size, in float64 and in float32."""
    settings, rows = measurement.settings, []
    for seed in measurement.seeds:
        for algorithm in ALGORITHMS:
            construction = _construction(measurement, algorithm, seed, TEMPERATURE)
            for index, (nodes, count) in enumerate(settings.sizes):
                adjacency, source = _graphs(seed, index, algorithm, count, nodes)
                exact, loops = exact_graphs(construction, algorithm, adjacency, source, EPSILON)
                for quantity, value in (("exact fraction", exact.double().mean()), ("matching loops", loops.mean())):
                    rows.append({"seed": seed, "sweep": "size", "precision": "float64", "algorithm": algorithm,
                                 "nodes": nodes, "epsilon": EPSILON, "quantity": quantity, "value": float(value)})
        offset = len(settings.sizes)
        for sweep, precision, points in _sweeps(settings):
            for index, (nodes, epsilon) in enumerate(points):
                exact = []
                for algorithm in ALGORITHMS:
                    construction = _construction(measurement, algorithm, seed, margin_temperature(epsilon))
                    adjacency, source = _graphs(seed, offset + index, algorithm, settings.sweep_prompts, nodes)
                    exact.append(exact_graphs(construction, algorithm, adjacency, source, epsilon,
                                              PRECISIONS[precision])[0])
                rows.append({"seed": seed, "sweep": sweep, "precision": precision, "algorithm": "all",
                             "nodes": nodes, "epsilon": epsilon, "quantity": "exact fraction",
                             "value": float(torch.cat(exact).double().mean())})
            offset += len(points)
    return {"rows": rows}


def unit_roundoff(precision: str) -> float:
    """u = 2⁻⁵³ (float64) or 2⁻²⁴ (float32): half the machine epsilon."""
    return torch.finfo(PRECISIONS[precision]).eps / 2


def resolution_limit(precision: str) -> float:
    """The smallest ε whose codes the attention resolves in ``precision``: 1 − cos ε = u, ε ≈ √(2u)."""
    return math.sqrt(2 * unit_roundoff(precision))


def sanity_checks(settings: Settings) -> list[Check]:
    """The bound's arithmetic: ε = 2π/wrap gives n_max = wrap − 1; the sweeps' ε straddle each float's
    resolution."""
    return [Check("n_max at ε = 2π/wrap", settings.wrap - 1, simulable_nodes(2 * math.pi / settings.wrap),
                  source=LIMIT),
            Check("n_max at the fine ε is above the sweep's graph size (1 = yes)", 1.0,
                  float(simulable_nodes(FINE) > settings.resolution_nodes), source=LIMIT),
            Check("n_max at the coarse ε (codes below float64's roundoff)", 0.0, simulable_nodes(COARSE),
                  source=LIMIT),
            Check("float32: n_max above the sweep's size at the fine ε and 0 at the coarse ε (1 = yes)", 1.0,
                  float(simulable_nodes(FINE32, torch.float32) > settings.resolution_nodes
                        and simulable_nodes(COARSE32, torch.float32) == 0), source=LIMIT)]


def _limit_checks(claim: str, rows, settings: Settings, precision: str, fine: float, coarse: float) -> list[Check]:
    """The bound's four checks in ``precision``: exact at n = wrap − 1 (ε = 2π/wrap) and at ε = ``fine``
    (n = the ε sweep's size); at most half the graphs exact beyond the bound (n = ⌈4 wrap / 3⌉) and at ε =
    ``coarse``."""
    wrap, n, u = f"ε = 2π/{settings.wrap}", settings.resolution_nodes, unit_roundoff(precision)

    def values(sweep: str, **point) -> list[float]:
        return seed_values(rows, "exact fraction", sweep=sweep, precision=precision, **point)

    return [
        claim_check(claim, f"{precision}: fraction exact at {wrap}, n = {settings.wrap - 1} (the bound)",
                    WITHIN_SHARE, values("wrap", nodes=settings.wrap - 1), relation="at_least", source=LIMIT,
                    every_seed=True),
        claim_check(claim, f"{precision}: fraction exact at {wrap}, n = {beyond_size(settings)} (beyond the bound)",
                    BEYOND_SHARE, values("wrap", nodes=beyond_size(settings)), relation="at_most", source=LIMIT,
                    every_seed=True),
        claim_check(claim, f"{precision}: fraction exact at ε = {fine:g}, n = {n} (1 − cos ε = "
                    f"{code_gap(fine) / u:.3g} u)", WITHIN_SHARE, values("resolution", epsilon=fine),
                    relation="at_least", source=LIMIT, every_seed=True),
        claim_check(claim, f"{precision}: fraction exact at ε = {coarse:g}, n = {n} (1 − cos ε = "
                    f"{code_gap(coarse) / u:.3g} u)", BEYOND_SHARE, values("resolution", epsilon=coarse),
                    relation="at_most", source=LIMIT, every_seed=True),
    ]


def checks(results: dict, settings: Settings) -> list[Check]:
    rows = results["rows"]
    found = sanity_checks(settings)
    for algorithm in ALGORITHMS:
        per_size = [seed_values(rows, "exact fraction", sweep="size", algorithm=algorithm, nodes=nodes)
                    for nodes, _ in settings.sizes]
        pooled = [sum(values) / len(values) for values in zip(*per_size)]
        found.append(claim_check("exact-simulation", f"{LABELS[algorithm]}: fraction of test graphs (n = "
                                 f"{settings.small_nodes}, {settings.large_nodes}) simulated exactly, every loop",
                                 1.0, pooled, relation="at_least", source=ABSTRACT, every_seed=True))
    found += _limit_checks("precision-limit", rows, settings, "float64", FINE, COARSE)
    found += _limit_checks("float32-limit", rows, settings, "float32", FINE32, COARSE32)
    found.append(claim_check("float32-limit", f"float64 at float32's coarse ε = {COARSE32:g}, n = "
                             f"{settings.resolution_nodes}: fraction exact (the contrast: the break moves with u)",
                             WITHIN_SHARE, seed_values(rows, "exact fraction", sweep="resolution", precision="float64",
                                                       epsilon=COARSE32), relation="at_least", source=LIMIT,
                             every_seed=True))
    return found


def _per_seed(rows, sweep: str, key: str, xs, **match) -> list[list[float]]:
    return list(map(list, zip(*[seed_values(rows, "exact fraction", sweep=sweep, **{key: x}, **match) for x in xs])))


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Exactness per algorithm and size; against the graph size at ε = 2π/wrap; against ε at a fixed size (float64
    and float32)."""
    rows = results["rows"]
    sizes = [nodes for nodes, _ in settings.sizes]
    exact = [seed_curve(LABELS[algorithm], sizes, _per_seed(rows, "size", "nodes", sizes, algorithm=algorithm),
                        bounds=(0.0, 1.0), continuous=False) for algorithm in ALGORITHMS]
    bound = settings.wrap - 1
    grids = {("wrap", "float64"): list(settings.wrap_sizes), ("wrap", "float32"): list(settings.wrap_sizes32),
             ("resolution", "float64"): list(settings.epsilons), ("resolution", "float32"): list(settings.epsilons32)}

    def curves(sweep: str, key: str) -> list[Curve]:
        return [seed_curve(precision, grids[sweep, precision],
                           _per_seed(rows, sweep, key, grids[sweep, precision], precision=precision),
                           bounds=(0.0, 1.0), continuous=False) for precision in PRECISIONS]

    wrap_sizes = grids["wrap", "float64"]
    return [
        Panel("graph size n", "fraction of graphs simulated exactly", exact,
              targets=[Target("paper: every graph", 1.0, 1.0, 1.0)], title="ε = 1e-2, T = 1e-7 (the authors')",
              ylim=(-0.05, 1.05)),
        Panel("graph size n", "fraction exact (4 algorithms)",
              curves("wrap", "nodes") + [Curve("bound n ≤ ⌈2π/ε⌉ − 1", [bound, bound], [0.0, 1.0], baseline=True)],
              targets=[Target("exact within", 1.0, 1.0, 1.0, where=(min(wrap_sizes), bound)),
                       Target("≤ ½ beyond", 0.5, 0.0, 0.5, where=(beyond_size(settings), max(wrap_sizes)))],
              title=f"codes at ε = 2π/{settings.wrap}", ylim=(-0.05, 1.05)),
        Panel("code angle ε", "fraction exact (4 algorithms)",
              curves("resolution", "epsilon")
              + [Curve(f"{precision}: 1 − cos ε = u", [resolution_limit(precision)] * 2, [0.0, 1.0], baseline=True)
                 for precision in PRECISIONS],
              title=f"n = {settings.resolution_nodes}, T = (1 − cos ε)/500", xscale="log", ylim=(-0.05, 1.05)),
    ]


REPRODUCTION = Reproduction(
    name="deluca-fountoulakis-2024",
    paper=PAPER,
    summary="A looped transformer with hand-set weights and graph attention heads runs BFS, DFS, Dijkstra and "
            "Kosaraju's SCC exactly on every test graph, up to the graph size its positional codes can tell apart "
            "in floating point.",
    caption="Abstract and the authors' code (opallab/graphalgosimulation): hand-weighted looped transformers on "
            "CLRS-30-style Erdős–Rényi graphs (n = 16, 64), and the precision limit of their positional codes",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    claims=CLAIMS,
    quick_minutes=0.3,
)
