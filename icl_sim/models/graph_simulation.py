"""Looped transformers with graph attention heads that run BFS, DFS, Dijkstra's algorithm and Kosaraju's strongly
connected components, weights written by hand (de Luca & Fountoulakis 2024, "Simulation of graph algorithms with
looped transformers", ICML 2024, arXiv 2402.01107), built on the shared builder ``icl_sim.models.constructed``.

The architecture (theirs, opallab/graphalgosimulation ``ltfs/common/proto.py``): the tokens are one global row
(row 0) and one row per node (row v + 1 for node v); besides ordinary softmax heads a layer has *graph heads*,
update = Ã Φ X V (or Ãᵀ Φ X V), Φ = softmax(X Q (X K)ᵀ / T), where Ã is the graph's (weighted) adjacency matrix
padded with a zero row and column for the global row.  Nodes are told apart by their positional codes
p_r = (sin rε, cos rε) on the circle (``ltfs/common/utils.py`` ``get_positional_encoding``: rotations by ε;
``ltfs/config.py``: ε = 1e-2, T = 1e-7, float64).  A graph head whose Φ compares codes (Q = K = the code) is the
identity only when (1 − cos ε)/T is large (the margin, 500 at their ε and T) and the codes of distinct rows are
distinct, i.e. (n + 1) ε < 2π: this is where finite precision bounds the graph size.

One loop of the BFS, DFS and Dijkstra constructions expands one node, as the algorithms do (Kosaraju's, one event
a loop, is described at ``_scc_layers``; ``decode_scc`` reads its state for a step-by-step check):

1. *select* (a softmax head, the same query in every row, keys −priority): every row reads the index (and, for
   Dijkstra, the distance) of the unexpanded, discovered node of least priority; the global row's own key sits
   between every real priority and the masked ones, so when no node is left every row reads index −1 and the
   global row's ``done`` flag is set.  Priorities: BFS its discovery time, DFS minus it, Dijkstra its tentative
   distance, plus 10⁻³ × the index for ties (the references' smaller-index rule; this caps n below 1000).  The
   masks (10⁵ per unavailable flag) sit in a second key component, so no score adds them to the tie-break
   before they cancel: every arithmetic step but the code comparison is then exact in float32 too.  The
   MLP marks the selected row (``cur``, from |index − selected| by a ReLU trapezoid) and sets it visited.
2. *read* (a graph head Ãᵀ Φ X V with Φ from the codes, V copying ``cur``): row i receives Σ_j A_ji cur_j, the
   weight of the edge from the selected node to i; the MLP turns it into clean flags.
3. *update* (ReLU MLPs, gating values with big constants as the authors' ``ltfs/common/logic.py`` does): BFS
   discovers unreached neighbours (time = the loop's clock, parent = the selected node); DFS re-discovers every
   unvisited neighbour (a stack with duplicates: the latest discoverer is the parent, as in recursive DFS);
   Dijkstra relaxes strictly improving edges.  Then the scratch columns are cleared and ``last`` keeps the
   selected index, so that the state after every loop can be checked against the reference's step.

Departures from the authors' construction, by choice: their minimum is a scan over the nodes one per loop
(``ltfs/common/min.py``) and their nodes are addressed by code comparisons throughout; ours selects the minimum
with one softmax head over integer priorities (gaps ≥ 10⁻³, scores scaled to a margin of 100) and marks the
selected row by its integer index, so our loop count is the number of expanded nodes plus one.  The graph head
is theirs.  Distances start at their INF = 10⁴ and gates use their 10 × INF.

Precision.  The builder computes in float64, the authors' format; ``simulate(..., dtype=torch.float32)`` runs the
construction in float32 (the builder's ``dtype``: weights, codes and states rounded to float32 and every step
computed in it), so the code comparison's limit, 1 − cos ε above the unit roundoff u (``simulable_nodes``), can be
seen move with u.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Mapping

import torch

from icl_sim.models.constructed import DTYPE, AttentionHead, Layer, LoopedConstruction, ReLUMLP, Stream
from icl_sim.validation import check_choice, check_float, check_int

ALGORITHMS = ("bfs", "dfs", "dijkstra", "scc")
#: the authors' ``config.eps`` (the angle between consecutive positional codes) and ``config.T`` (temperature)
EPSILON = 1e-2
TEMPERATURE = 1e-7
#: their margin (1 − cos ε)/T between a code's score against itself and against its neighbour's (500)
MARGIN = 500.0
#: the authors' INF (a distance not yet reached) and ifINF (the gate of conditional updates)
INF = 1e4
GATE = 1e5
#: tie-breaking weight of the index in a priority (n ≤ 999), the select head's inverse temperature in priority
#: units (margin 100 at the smallest gap), the priority of the global row and the mask of unavailable nodes
TIE = 1e-3
SELECT_SCALE = 1e5
EMPTY_PRIORITY = 5e4
MASK = 1e5
#: offset that keeps index differences positive inside a gate (n ≤ 999)
OFFSET = 1e3
MAX_NODES = 999
#: the floating-point formats a simulation can run in
PRECISIONS = (torch.float64, torch.float32)

STREAM = Stream([("global", 1), ("node", 1), ("code", 2), ("index", 1), ("clock", 1), ("visited", 1),
                 ("discovered", 1), ("time", 1), ("parent", 1), ("distance", 1), ("selected", 1),
                 ("selected_distance", 1), ("current", 1), ("read", 1), ("edge", 1), ("closer", 1), ("update", 1),
                 ("new", 1), ("last", 1), ("done", 1), ("finished", 1), ("finish_time", 1), ("root", 1),
                 ("next", 1), ("is_next", 1), ("is_root", 1), ("top_exists", 1), ("next_exists", 1), ("visit", 1),
                 ("finish", 1), ("phase", 1), ("assigned", 1), ("expanded", 1), ("selected2", 1),
                 ("selected_label", 1), ("root2", 1), ("current2", 1), ("read2", 1), ("new2", 1),
                 ("is_root2", 1), ("start2", 1), ("frontier_exists", 1), ("label", 1)])


@dataclasses.dataclass
class GraphHead:
    """The paper's graph head: update = M Φ X V with M = ``context[name]`` (B, n, n), transposed when
    ``transpose``, and Φ = softmax(λ ⟨K x_k, Q x_i⟩) over the tokens k (``query``, ``key``: (r, d); ``value``:
    (d, d)): the attention first moves features between tokens, then the graph sums them over neighbours."""

    name: str
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    transpose: bool = False

    def __post_init__(self):
        self.attention = AttentionHead(self.query, self.key, self.value)
        self.query, self.key, self.value = self.attention.query, self.attention.key, self.attention.value

    @property
    def width(self) -> int:
        return self.value.shape[0]

    @classmethod
    def zeros(cls, stream: Stream, rank: int, name: str, transpose: bool = False) -> "GraphHead":
        head = AttentionHead.zeros(stream, rank)
        return cls(name, head.query, head.key, head.value, transpose)

    def random(self, generator: torch.Generator) -> "GraphHead":
        """The same shapes at a random initialisation (the untrained control): its attention's."""
        attention = self.attention.random(generator)
        return GraphHead(self.name, attention.query, attention.key, attention.value, self.transpose)

    def to(self, dtype: torch.dtype) -> "GraphHead":
        """The head with its weights rounded to ``dtype`` (itself when they already are)."""
        attention = self.attention.to(dtype)
        if attention is self.attention:
            return self
        head = copy.copy(self)
        head.attention = attention
        head.query, head.key, head.value = attention.query, attention.key, attention.value
        return head

    def __call__(self, state: torch.Tensor, temperature: float, context: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.name not in context:
            raise ValueError(f"a GraphHead reads context[{self.name!r}]: pass {self.name}=... to run")
        matrix = torch.as_tensor(context[self.name], dtype=state.dtype, device=state.device)
        if self.transpose:
            matrix = matrix.transpose(-1, -2)
        return matrix @ self.attention(state, temperature, context)


def _mlp(units: list[tuple[dict[str, float], float, dict[str, float]]], biases: dict[str, float] | None = None
         ) -> ReLUMLP:
    """A ReLU MLP from its hidden units: each (input weights by column, bias, output weights by column)."""
    mlp = ReLUMLP.zeros(STREAM, len(units))
    for unit, (inputs, bias, outputs) in enumerate(units):
        for name, weight in inputs.items():
            mlp.w1[unit, STREAM.column(name)] = weight
        mlp.b1[unit] = bias
        for name, weight in outputs.items():
            mlp.w2[STREAM.column(name), unit] = weight
    for name, bias in (biases or {}).items():
        mlp.b2[STREAM.column(name)] = bias
    return mlp


def _indicator(inputs: dict[str, float], outputs: list[str]) -> list:
    """Units computing [y = 0] for y = Σ inputs (exactly 1 for |y| ≤ 1/4, 0 for |y| ≥ 3/4), added to ``outputs``:
    the trapezoid 2 (ReLU(y + ¾) − ReLU(y + ¼) − ReLU(y − ¼) + ReLU(y − ¾))."""
    return [(inputs, shift, {name: 2.0 * sign for name in outputs})
            for shift, sign in ((0.75, 1), (0.25, -1), (-0.25, -1), (-0.75, 1))]


def _step(inputs: dict[str, float], output: str) -> list:
    """Units adding clamp(2y − ½, 0, 1) for y = Σ inputs to ``output``: 1 for y ≥ ¾, 0 for y ≤ ¼ (a clean bit)."""
    doubled = {name: 2.0 * weight for name, weight in inputs.items()}
    return [(doubled, -0.5, {output: 1.0}), (doubled, -1.5, {output: -1.0})]


def _clear(names: list[str]) -> list:
    """Units that set the columns ``names`` to 0 (x ← x − ReLU(x) + ReLU(−x))."""
    return [unit for name in names for unit in (({name: 1.0}, 0.0, {name: -1.0}), ({name: -1.0}, 0.0, {name: 1.0}))]


def _select_head(temperature: float, priority: dict[str, float], values: dict[str, str]) -> AttentionHead:
    """A head with the same query in every row whose keys are −priority (a linear form of the columns), so every
    row reads the columns ``values`` (output ← input) of the row of least priority; the global row's index reads
    as −1.  The key has two components: the mask terms (weights of size ``MASK`` and the global row's
    ``EMPTY_PRIORITY``, in units of ``MASK``) and the fine priority, so an available row's score never sums
    terms of 10⁵ with its 10⁻³ tie-break (exact in float32 too, where one rounding at 10⁵ is 0.008)."""
    head = AttentionHead.zeros(STREAM, 2)
    scale = SELECT_SCALE / temperature  # λ · scale = SELECT_SCALE in every row
    for rank, weight in enumerate((scale, scale * MASK)):
        head.query[rank, STREAM.column("global")] = weight
        head.query[rank, STREAM.column("node")] = weight
    for name, weight in {**priority, "global": priority.get("global", 0.0) + EMPTY_PRIORITY}.items():
        masking = abs(weight) >= EMPTY_PRIORITY
        head.key[int(masking), STREAM.column(name)] = -weight / MASK if masking else -weight
    for output, name in values.items():
        head.value[STREAM.column(output), STREAM.column(name)] = 1.0
        if name == "index":
            head.value[STREAM.column(output), STREAM.column("global")] = -1.0
    return head


def _exists(name: str, output: str) -> list:
    """Units adding [x ≥ 0] for the integer x = column ``name`` ≥ −1 to ``output`` (ReLU(x + 1) − ReLU(x))."""
    return [({name: 1.0}, 1.0, {output: 1.0}), ({name: 1.0}, 0.0, {output: -1.0})]


def _scc_layers(temperature: float) -> list[Layer]:
    """Kosaraju's algorithm, one event per loop.  Pass 1 (depth-first with restarts, on A): the stack's top is the
    visited, unfinished node of latest visit; its smallest-index unvisited out-neighbour is visited next, else the
    top finishes; with an empty stack the smallest-index unvisited node starts a new search.  When nothing is left
    the ``phase`` flag turns on pass 2 (on Aᵀ): the smallest-index assigned, unexpanded node gives its label to its
    unassigned in-neighbours; with none, the unassigned node of latest finish starts a component, labelled by
    itself."""
    pass2 = {"node": MASK, "phase": -MASK}
    top = _select_head(temperature, {"time": -1.0, "node": MASK, "visited": -MASK, "finished": MASK},
                       {"selected": "index"})
    root = _select_head(temperature, {"index": 1.0, "visited": MASK}, {"root": "index"})
    frontier = _select_head(temperature, {"index": TIE, "assigned": -MASK, "expanded": MASK, **pass2,
                                          "node": 2 * MASK}, {"selected2": "index", "selected_label": "label"})
    root2 = _select_head(temperature, {"finish_time": -1.0, "assigned": MASK, **pass2}, {"root2": "index"})
    units = _indicator({"index": 1.0, "selected": -1.0, "global": -GATE}, ["current"])
    units += _indicator({"index": 1.0, "selected2": -1.0, "global": -GATE}, ["current2", "expanded"])
    select = Layer("select", (top, root, frontier, root2), _mlp(units))

    out_edges = GraphHead.zeros(STREAM, 2, "adjacency", transpose=True)
    in_edges = GraphHead.zeros(STREAM, 2, "adjacency")
    for head, (read, current) in ((out_edges, ("read", "current")), (in_edges, ("read2", "current2"))):
        head.query[:, STREAM["code"]] = torch.eye(2, dtype=DTYPE)
        head.key[:, STREAM["code"]] = torch.eye(2, dtype=DTYPE)
        head.value[STREAM.column(read), STREAM.column(current)] = 1.0
    units = _step({"read": 1.0, "visited": -1.0}, "new") + _step({"read2": 1.0, "assigned": -1.0}, "new2")
    read = Layer("read", (out_edges, in_edges), _mlp(units))

    following = _select_head(temperature, {"index": 1.0, "node": MASK, "new": -MASK}, {"next": "index"})
    units = _indicator({"index": 1.0, "next": -1.0, "global": -GATE}, ["is_next"])
    units += _indicator({"index": 1.0, "root": -1.0, "global": -GATE}, ["is_root"])
    units += _indicator({"index": 1.0, "root2": -1.0, "global": -GATE}, ["is_root2"])
    units += _exists("selected", "top_exists") + _exists("next", "next_exists")
    units += _exists("selected2", "frontier_exists")
    choose = Layer("choose", (following,), _mlp(units))

    units = [({"is_next": 1.0, "top_exists": 1.0}, -1.0, {"visit": 1.0}),
             ({"is_root": 1.0, "top_exists": -1.0}, 0.0, {"visit": 1.0}),
             ({"current": 1.0, "next_exists": -1.0}, 0.0, {"finish": 1.0}),
             ({"is_root2": 1.0, "frontier_exists": -1.0}, 0.0, {"start2": 1.0}),
             ({"top_exists": -1.0, "root": -1.0, "phase": -1.0, "global": -GATE}, 0.0, {"phase": 1.0})]
    decide = Layer("decide", (), _mlp(units))

    units = [({"visit": 1.0}, 0.0, {"visited": 1.0}), ({"finish": 1.0}, 0.0, {"finished": 1.0}),
             ({"new2": 1.0}, 0.0, {"assigned": 1.0}), ({"start2": 1.0}, 0.0, {"assigned": 1.0})]
    units += _gated({"clock": 1.0}, "visit", GATE, "time") + _gated({"clock": 1.0}, "finish", GATE, "finish_time")
    units += _gated({"selected_label": 1.0, "label": -1.0}, "new2", OFFSET, "label")
    units += _clear(["selected", "root", "selected2", "selected_label", "root2", "current", "current2", "read",
                     "read2", "new", "new2", "next", "is_next", "is_root", "is_root2", "top_exists", "next_exists",
                     "frontier_exists", "visit", "finish", "start2"])
    return [select, read, choose, decide, Layer("update", (), _mlp(units, {"clock": 1.0}))]


def _select_layer(algorithm: str, temperature: float) -> Layer:
    """Select the unexpanded discovered node of least priority; mark it current and visited; flag an empty
    selection as done."""
    value = {"bfs": ("time", 1.0), "dfs": ("time", -1.0), "dijkstra": ("distance", 1.0)}[algorithm]
    priority = {value[0]: value[1], "index": TIE, "visited": MASK, "node": MASK, "discovered": -MASK}
    reads = {"selected": "index", **({"selected_distance": "distance"} if algorithm == "dijkstra" else {})}
    head = _select_head(temperature, priority, reads)
    units = _indicator({"index": 1.0, "selected": -1.0, "global": -GATE}, ["current", "visited"])
    units += [({"selected": -1.0, "node": -GATE}, 0.0, {"done": 1.0}),
              ({"selected": -1.0, "node": -GATE}, -1.0, {"done": -1.0})]
    return Layer("select", (head,), _mlp(units))


def _read_layer(algorithm: str) -> Layer:
    """Every row reads the weight of the edge from the current node (a graph head through Ãᵀ, its Φ the identity
    by the positional codes); the MLP makes the flags the update needs."""
    head = GraphHead.zeros(STREAM, 2, "adjacency", transpose=True)
    head.query[:, STREAM["code"]] = torch.eye(2, dtype=DTYPE)
    head.key[:, STREAM["code"]] = torch.eye(2, dtype=DTYPE)
    head.value[STREAM.column("read"), STREAM.column("current")] = 1.0
    if algorithm == "bfs":
        units = _step({"read": 1.0, "discovered": -1.0}, "new")
    elif algorithm == "dfs":
        units = _step({"read": 1.0, "visited": -1.0}, "new")
    else:
        units = _step({"read": 1.0}, "edge")
        closer = {"distance": 1.0, "selected_distance": -1.0, "read": -1.0}
        units += [(closer, 0.0, {"closer": 1.0}), (closer, -1.0, {"closer": -1.0})]
    return Layer("read", (head,), _mlp(units))


def _gated(value: dict[str, float], gate: str, bound: float, output: str) -> list:
    """Units adding gate · Σ value to ``output`` for a clean bit ``gate`` and |Σ value| < ``bound``."""
    inputs = {**value, gate: 2.0 * bound}
    return [(inputs, -bound, {output: 1.0}), ({gate: 1.0}, 0.0, {output: -bound})]


def _update_layer(algorithm: str) -> Layer:
    """Apply the flags: discovery (BFS, DFS) or relaxation (Dijkstra), keep the selection in ``last``, clear the
    scratch columns and advance the clock."""
    flag = "update" if algorithm == "dijkstra" else "new"
    units = _gated({"selected": 1.0, "parent": -1.0}, flag, OFFSET, "parent")
    units.append(({flag: 1.0, "discovered": -1.0}, 0.0, {"discovered": 1.0}))
    if algorithm == "bfs":
        units += _gated({"clock": 1.0}, flag, GATE, "time")
    elif algorithm == "dfs":
        units += _gated({"clock": 1.0, "time": -1.0}, flag, GATE, "time")
    else:
        units += _gated({"selected_distance": 1.0, "read": 1.0, "distance": -1.0}, flag, GATE, "distance")
    units.append(({"selected": 1.0, "last": -1.0}, OFFSET, {"last": 1.0}))
    units += _clear(["selected", "selected_distance", "current", "read", "edge", "closer", "update", "new"])
    return Layer("update", (), _mlp(units, {"last": -OFFSET, "clock": 1.0}))


def _relax_layer() -> Layer:
    """Dijkstra: a neighbour is updated when the edge exists, it is unvisited and the path through the current
    node is shorter by at least 1 (integer weights)."""
    units = [({"closer": 1.0, "edge": 1.0, "visited": -1.0, "global": -GATE}, -1.0, {"update": 1.0})]
    return Layer("relax", (), _mlp(units))


def graph_construction(algorithm: str, *, temperature: float = TEMPERATURE) -> LoopedConstruction:
    """The looped transformer that runs ``algorithm`` (bfs, dfs, dijkstra or scc), one step per loop, at the
    paper's temperature T (the builder's λ = 1/T)."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    check_float("temperature", temperature, 0.0, strict=True)
    if algorithm == "scc":
        return LoopedConstruction(STREAM, _scc_layers(1.0 / temperature), 1.0 / temperature)
    layers = [_select_layer(algorithm, 1.0 / temperature), _read_layer(algorithm)]
    if algorithm == "dijkstra":
        layers.append(_relax_layer())
    layers.append(_update_layer(algorithm))
    return LoopedConstruction(STREAM, layers, 1.0 / temperature)


def position_codes(rows: int, epsilon: float) -> torch.Tensor:
    """The authors' positional codes p_r = (sin rε, cos rε) of rows 0..rows − 1, (rows, 2) float64."""
    angle = torch.arange(rows, dtype=DTYPE) * epsilon
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=1)


def code_gap(epsilon: float) -> float:
    """1 − cos ε = 2 sin²(ε/2): how far a row's code scores below its own against its neighbour's."""
    check_float("epsilon", epsilon, 0.0, strict=True)
    return 2.0 * math.sin(epsilon / 2) ** 2


def margin_temperature(epsilon: float, margin: float = MARGIN) -> float:
    """The temperature T = (1 − cos ε) / margin that gives a code comparison ``margin`` (the authors' ε = 1e-2 and
    T = 1e-7 give 500)."""
    return code_gap(epsilon) / margin


def simulable_nodes(epsilon: float, dtype: torch.dtype = DTYPE) -> int:
    """The paper's finite-precision limit for our construction: the largest n for which the n + 1 rows get codes
    that attention can tell apart.  Distinct codes need n ε < 2π; and a code must score measurably below the row's
    own: 1 − cos ε above the unit roundoff of ``dtype`` (else p_r · p_r and p_r · p_(r+1) round to the same
    number).  0 when the codes are not resolvable at all."""
    if code_gap(epsilon) <= torch.finfo(dtype).eps / 2:
        return 0
    turns = 2 * math.pi / epsilon
    nearest = round(turns)
    turns = nearest if abs(turns - nearest) < 1e-9 * turns else turns
    return math.ceil(turns) - 1


def initial_state(adjacency: torch.Tensor, source: torch.Tensor, *, epsilon: float = EPSILON) -> torch.Tensor:
    """The state before the first loop, (B, n + 1, d) float64: codes, indices, the clock at 1, every node its own
    parent and (for Dijkstra) at distance INF, the source discovered at time and distance 0."""
    batch, n, _ = adjacency.shape
    check_int("nodes", n, 1, MAX_NODES)
    state = STREAM.zeros(batch, n + 1, device=adjacency.device)
    rows = torch.arange(batch, device=adjacency.device)
    nodes = torch.arange(n, dtype=DTYPE, device=adjacency.device)
    state[:, 0, STREAM.column("global")] = 1.0
    state[:, 1:, STREAM.column("node")] = 1.0
    state[:, :, STREAM["code"]] = position_codes(n + 1, epsilon).to(adjacency.device)
    state[:, 1:, STREAM.column("index")] = nodes
    state[:, 1:, STREAM.column("parent")] = nodes
    state[:, 1:, STREAM.column("label")] = nodes
    state[:, :, STREAM.column("clock")] = 1.0
    state[:, 1:, STREAM.column("distance")] = INF
    state[rows, source + 1, STREAM.column("distance")] = 0.0
    state[rows, source + 1, STREAM.column("discovered")] = 1.0
    state[:, 0, STREAM.column("last")] = -1.0
    return state


def padded_adjacency(adjacency: torch.Tensor) -> torch.Tensor:
    """Ã: the adjacency (B, n, n) with a zero row and column for the global row, (B, n + 1, n + 1) float64."""
    batch, n, _ = adjacency.shape
    padded = torch.zeros(batch, n + 1, n + 1, dtype=DTYPE, device=adjacency.device)
    padded[:, 1:, 1:] = adjacency
    return padded


def decode(state: torch.Tensor) -> dict[str, torch.Tensor]:
    """The outputs held in a state: ``parent`` (B, n) and ``last`` (B,) long (rounded), ``visited`` (B, n) bool,
    ``distance`` (B, n) float64 (INF where unreached), ``done`` (B,) bool and ``valid`` (B,): every integer column
    within 10⁻⁶ of an integer and every flag within 10⁻⁶ of 0 or 1."""
    parent, last = state[:, 1:, STREAM.column("parent")], state[:, 0, STREAM.column("last")]
    flags = state[:, 1:, STREAM.column("visited")]
    integers = torch.cat([parent, last[:, None], flags], dim=1)
    valid = ((integers - integers.round()).abs() < 1e-6).all(dim=1) & ((flags > -1e-6) & (flags < 1 + 1e-6)).all(1)
    return {"parent": parent.round().to(torch.long), "last": last.round().to(torch.long),
            "visited": flags.round() == 1, "distance": state[:, 1:, STREAM.column("distance")],
            "done": state[:, 0, STREAM.column("done")] > 0.5, "valid": valid}


def decode_scc(state: torch.Tensor) -> dict[str, torch.Tensor]:
    """Kosaraju's state held in an SCC construction's state (the names of ``theory.graph_algorithms.KosarajuStep``):
    ``visited``, ``finished``, ``assigned``, ``expanded`` (B, n) bool; ``discovery``, ``finish``, ``label`` (B, n)
    long (rounded); ``second_pass`` (B,) bool (every node row's phase flag); ``valid`` (B,): every column within
    10⁻⁶ of an integer and every flag within 10⁻⁶ of 0 or 1."""
    rows = state[:, 1:]
    flags = {name: rows[..., STREAM.column(column)] for name, column in
             (("visited", "visited"), ("finished", "finished"), ("assigned", "assigned"), ("expanded", "expanded"),
              ("second_pass", "phase"))}
    integers = {name: rows[..., STREAM.column(column)] for name, column in
                (("discovery", "time"), ("finish", "finish_time"), ("label", "label"))}
    every = torch.cat(list(flags.values()) + list(integers.values()), dim=1)
    binary = torch.cat(list(flags.values()), dim=1)
    valid = (((every - every.round()).abs() < 1e-6).all(dim=1) & ((binary > -1e-6) & (binary < 1 + 1e-6)).all(1))
    decoded = {name: value.round() == 1 for name, value in flags.items()}
    decoded["second_pass"] = decoded["second_pass"].all(dim=1)
    return {**decoded, **{name: value.round().to(torch.long) for name, value in integers.items()}, "valid": valid}


def simulate(construction: LoopedConstruction, adjacency: torch.Tensor, source: torch.Tensor, loops: int, *,
             epsilon: float = EPSILON, dtype: torch.dtype = DTYPE) -> list[torch.Tensor]:
    """The states after each of ``loops`` loops of ``construction`` on graphs ``adjacency`` (B, n, n) from
    ``source`` (B,), codes at angle ``epsilon``, computed in ``dtype`` (float64, the builder's, or float32: weights,
    codes and states rounded to it); the states are returned in float64."""
    check_choice("dtype", dtype, PRECISIONS)
    adjacency = torch.as_tensor(adjacency, dtype=DTYPE)
    states = construction.to(dtype).run(initial_state(adjacency, source, epsilon=epsilon), loops,
                                        adjacency=padded_adjacency(adjacency))
    return [state.to(DTYPE) for state in states]


__all__ = ["ALGORITHMS", "EPSILON", "GraphHead", "INF", "MARGIN", "PRECISIONS", "STREAM", "TEMPERATURE", "code_gap",
           "decode", "decode_scc", "graph_construction", "initial_state", "margin_temperature", "padded_adjacency",
           "position_codes", "simulable_nodes", "simulate"]
