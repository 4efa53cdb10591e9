"""de Luca & Fountoulakis (2024), "Simulation of graph algorithms with looped transformers" (ICML 2024, PMLR 235,
arXiv 2402.01107).

What could be read.  The abstract and introduction (arXiv HTML v2 and ar5iv: the stored copies end in the
introduction; proceedings.mlr.press: the abstract); two third-party pages that quote the body: ri.k117.org's
reproducibility summary ("we provide empirical validation of the results in Appendix B.3"; CLRS-30 graphs, "the
training and validation sets include graphs with 16 nodes, while the test set contains graphs with 64 nodes";
"an angular increment δ set at 10⁻², a maximum value Ω of 10⁵, and a temperature parameter T at 10⁻⁷";
"Algorithm 1 Looped Transformer (Giannou et al., 2023)") and liner.com's summary (Figure 1: Dijkstra's pseudocode
as the source code, each step simulated by one or more blocks, lines 11-12 worked out in Section 5; Ã constant and
X updated every loop until a termination flag; the output decoded from columns of X); and the authors' code,
opallab/graphalgosimulation (commit ee53a68).  The paper's finite-precision section and its theorem (the statement
relating the graph size to the precision and δ) could NOT be read: the stored arXiv HTML, ar5iv and PMLR copies
stop before it, chatpaper's summary covers the introduction only, and no OpenReview, sciencestack or alphaxiv copy
was found; so the precision claims below test the limit that the construction's mechanism implies, with the
paper's constants, and say so; they do not quote the theorem.

Compared with what was read, the module's settings stand (no number changed): the paper's δ is our ε = 10⁻² (the
authors' ``ltfs/config.py`` ``eps``), its Ω = 10⁵ our gate (``ifINF`` = 10 INF), T = 10⁻⁷, float64, CLRS-30's
sizes 16 and 64.  The algorithms are the four the abstract names.  SCC: theirs is one looped network
(``ltfs/scc/model.py``, 39 blocks a loop) that runs Kosaraju's two passes as two priority queues (``Q1``, ``Q2`` in
``ltfs/scc/input.py``), a minimum found by a scan of one node per loop and the labels kept as positional codes
(``SCC``) and integers (``OUT``); ours runs one Kosaraju event per loop (``icl_sim.models.graph_simulation``).  The
experiments (Appendix B.3; ``validation.ipynb`` prints correct / incorrect / exception counts, its outputs are not
committed) count the CLRS-30 graphs whose output equals CLRS's: the claim is every graph.

Ours (``icl_sim.models.graph_simulation``, on the shared builder ``icl_sim.models.constructed``): the same graph
heads (``ltfs/common/proto.py``: update = Ã softmax(X Q (X K)ᵀ / T) X V) and codes, our own loop body (one expanded
node or one Kosaraju event per loop: a softmax head selects the node of least priority, a graph head reads its
adjacency row, ReLU MLPs update the state; that module's docstring lists the departures from their blocks).  Test
graphs (``icl_sim.tasks.weighted_graphs``): CLRS-30's law as we read it (Erdős–Rényi, edge probability uniform on
{0.1, …, 0.9} per graph, a uniform source), undirected for BFS and Dijkstra, directed for DFS and SCC, with the
authors' integer weights 1..10 for Dijkstra (``ltfs/utils.py`` ``generate_A``).  References
(``icl_sim.theory.graph_algorithms``, tested against networkx): the authors' ``reference_bfs/dfs/dijkstra/scc``
conventions (neighbours in index order; DFS from the source only; a node never reached is its own parent;
Kosaraju's label is the node that started the component's search), and ``kosaraju_steps``, Kosaraju event by
event: pass 1 with CLRS's discovery and finishing times on one clock, then pass 2 from the unassigned node of
latest finish, expanding the component's smallest-index unexpanded node.

Claims, decided at quick (a construction is not trained; each seed draws its own graphs):

* ``exact-simulation`` (abstract; Appendix B.3): on every test graph the state after every loop equals the
  reference algorithm's after the same step — BFS, DFS, Dijkstra: the node expanded in loop k is the reference's
  k-th, the visited set its first k, and the loop after the last sets the done flag; SCC: the visited and finished
  sets, both timestamps, the pass, the assigned and expanded sets and every label after every event — and the final
  state equals the reference's output (parents, Dijkstra's distances, the component labels and finishing order).
  One claim check per algorithm: per seed, the fraction of test graphs (n = 16 and n = 64) exact, at least 1 (the
  paper's every graph).  Wrong mechanisms fail it: CLRS's layer-synchronous BFS picks other parents, a hop-count
  search other Dijkstra trees, a graph head whose attention is not the identity reads mixed rows, and an SCC
  second pass in another order finds the same labels but not Kosaraju's steps (``tests/``: largest index first).
* ``precision-limit`` (abstract: "a limit to simulation ... due to finite precision"; the bound from the
  mechanism): the graph heads tell nodes apart only by their codes, so the construction is exact for
  n ≤ n_max(ε) = ⌈2π/ε⌉ − 1 (n + 1 distinct codes on the circle) and only while 1 − cos ε exceeds the float's unit
  roundoff u (float64: u = 1.1·10⁻¹⁶, ε above √(2u) = 1.5·10⁻⁸), at the authors' margin (1 − cos ε)/T = 500.
  Checked at ε = 2π/24 (n_max = 23): exact on every graph at n = 23, at most half exact at n = 32 (codes of rows r
  and r + 24 coincide); and at n = 16: exact at ε = 10⁻⁷ (1 − cos ε = 45 u), at most half exact at ε = 3·10⁻⁹
  (0.04 u).  The wrong mechanism: nodes addressed by exact integer indices (or one-hot codes) stay exact beyond
  2π/ε and at any ε.
* ``float32-limit`` (added this session): the same bound with float32's u = 2⁻²⁴ = 6.0·10⁻⁸ predicts the break at
  ε = √(2u) = 3.45·10⁻⁴ instead of 1.5·10⁻⁸ (a factor √(u₃₂/u₆₄) = 2.3·10⁴) and the same n_max(ε).  Fixed from that
  prediction before any verdict run: in float32 every graph exact at ε = 2π/24, n = 23 and at ε = 10⁻³, n = 16
  (1 − cos ε = 8.4 u); at most half at n = 32 and at ε = 10⁻⁴ (0.084 u); and float64 exact at that same ε = 10⁻⁴
  (the contrast).  Wrong mechanisms: exact integer addressing stays exact at ε = 10⁻⁴ in float32; a construction
  limited by its constants' range rather than its codes fails at ε = 10⁻³ already — as ours did (below).
  ``simulate(..., dtype=torch.float32)`` rounds the weights, codes and states to float32 and computes in it.

The untrained control is the same architecture (stream, layers, heads, MLP widths, temperature) at a random
initialisation (U(±1/√fan_in), the builder's ``random``): no graph is exact, so it fails every claim by 0.

Measured at quick (per seed: 16 graphs per algorithm at n = 16 and 8 at n = 64; 8 per algorithm at each sweep
point, four algorithms pooled; about 21 CPU seconds, 19 for the control).

This session (code at commit 88f104a), fresh blocks 1300 (seeds 1300-1302) and 1400 (1400-1402), never run before:

* ``exact-simulation`` HELD in both: every algorithm exact on every graph of every seed (1, 1, 1 each), every loop
  matching (fraction 1 per seed, size and algorithm, SCC included).  Control: 0 in every seed, every algorithm.
* ``precision-limit`` HELD in both.  float64, ε = 2π/24: fraction exact 1 at n = 8, 16, 20, 23 in every seed;
  block 1300, n = 24: 0.75, 0.75, 0.56; n = 26: 0.03, 0.09, 0; n = 28: 0, 0, 0.06; n = 32: 0, 0, 0; block 1400,
  n = 24: 0.62, 0.50, 0.66; n = 26: 0.12, 0.09, 0; n = 28: 0.06, 0, 0.03; n = 32: 0, 0, 0.  At n = 16: 1 at ε =
  10⁻², 10⁻⁴, 10⁻⁷, 3·10⁻⁸ and 0 at 10⁻⁸ in every seed; at 3·10⁻⁹: 0, 0.03, 0 (1300) and 0, 0, 0 (1400).
* ``float32-limit`` HELD in both.  float32, ε = 2π/24: 1 at n = 23 every seed; n = 32: 0, 0, 0 (1300) and 0.03, 0,
  0.03 (1400).  At n = 16: 1 at ε = 10⁻² and 10⁻³ every seed; at 3·10⁻⁴ (just below the predicted 3.45·10⁻⁴): 0, 0,
  0 (1300) and 0.03, 0.03, 0.03 (1400); at 10⁻⁴: 0 every seed; float64 at 10⁻⁴: 1 every seed.  The break lies
  between 10⁻³ and 3·10⁻⁴ in float32 and between 3·10⁻⁸ and 10⁻⁸ in float64, each where 1 − cos ε meets its u.
  Control: 0 everywhere (fails the checks asking for 1).
* The gallery block (seeds 0-2, same code) agrees: every claim held; exact-simulation 1 everywhere; float64
  n = 32: 0, 0, 0, ε = 3·10⁻⁹: 0, 0.03, 0; float32 n = 32: 0, 0.06, 0.03, ε = 10⁻⁴: 0, 0, 0; control 0.

The float32 fidelity fix, with the old numbers.  Our select head summed its 10⁵ mask terms and its 10⁻³ tie-break
in one key; in float32 one rounding at 10⁵ is 0.008, which erases the tie-break, so the old construction (commit
6193525) was inexact in float32 already at the authors' ε (dev seed 950, n = 16, 8 graphs per algorithm, fraction
exact BFS, DFS, Dijkstra, SCC: 0, 0, 0.12, 0.38 at ε = 10⁻²; 0, 0.12, 0.12, 0.25 at 10⁻³): it tested the
constants' range, not the codes' bound.  The head now keeps the mask terms in a key component of their own (an
available row's mask component is exactly 0), the same scores in exact arithmetic; on the same dev graphs float32
became 1, 1, 1, 1 at 10⁻² and 10⁻³, and 0.12, 0, 0, 0 at 3·10⁻⁴.  The float64 verdicts were taken again on the
new blocks above.

Earlier verdicts (code at commit 6193525; SCC then checked on its final labels and finishing order only; no
float32), blocks 1000 (seeds 1000-1002) and 1100 (1100-1102): ``exact-simulation`` HELD (1 everywhere; matching
loops 1 for BFS, DFS, Dijkstra); ``precision-limit`` HELD: ε = 2π/24, n = 24: 0.59, 0.66, 0.81 and 0.62, 0.81,
0.66; n = 26: 0.03, 0.03, 0.09 and 0.12, 0.03, 0.03; n = 28: 0, 0.03, 0 and 0, 0.12, 0.06; n = 32: 0, 0.03, 0 and
0, 0, 0; at n = 16, 1 down to ε = 3·10⁻⁸ and 0 at 10⁻⁸ and 3·10⁻⁹.  Control 0.  Seed blocks used for this
reproduction: 900 and 950 (development), 1000, 1100, 1300, 1400, and the gallery's default block (0).

Not done: CLRS-30's own graph files and real-valued weights (our tie-break needs integer distances); the paper's
theorem itself (unread, above); graphs near float32's n_max at its smallest ε (about 1.8·10⁴ nodes) are beyond
quick.
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
from icl_sim.theory.graph_algorithms import (KosarajuStep, bfs_tree, dfs_tree, dijkstra_tree, kosaraju_scc,
                                             kosaraju_steps)

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
            "Kosaraju's SCC exactly, loop by loop, on every test graph, up to the graph size its positional codes "
            "can tell apart in floating point: in float32 the limit moves where the float's unit roundoff puts it.",
    caption="Abstract, quotes of the body and the authors' code (opallab/graphalgosimulation): hand-weighted looped "
            "transformers on CLRS-30-style Erdős–Rényi graphs (n = 16, 64), and the precision limit of their "
            "positional codes in float64 and float32",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    claims=CLAIMS,
    quick_minutes=0.4,
)
