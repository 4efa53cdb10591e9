"""Graph connectivity in context: is node t reachable from node s?

A prompt is one graph on ``n = nodes`` nodes followed by one query; the label is +1 if
t is reachable from s and −1 otherwise (Sanford, Hsu & Telgarsky 2024, "Transformers,
parallel computation, and logarithmic depth", arXiv 2402.09268: connectivity needs
depth logarithmic in the graph size; Saparov et al. 2024, "Transformers struggle to
learn to search", arXiv 2412.04703; Ye, Fu, Jia & Sharan 2025, arXiv 2510.19753: an
L-layer disentangled transformer computes connectivity exactly for diameter ≤ 3^L, by
powers of the adjacency matrix, and learns a node-degree heuristic from graphs beyond
that capacity).

Prompt encoding (``points = n + 1``, ``dim = 2n``, one label at the last position):

* node token ``v`` (position v, v < n): ``xs[:, v] = [adjacency row of v (n bits) ;
  one-hot(v) (n)]`` and ``ys[:, v] = 0`` (no label);
* query token (position n): ``xs[:, n] = [one-hot(s) ; one-hot(t)]`` and
  ``ys[:, n] = ±1``.

The two halves of the query are separate blocks, so (s, t) is unambiguous (s ≠ t
always; a node is never asked about itself).  For a directed graph the row of v holds
its out-edges (``adjacency[v, w]`` = edge v → w) and the question is whether a directed
path s → … → t exists.  ``dim_parameter = "nodes"``: ``icl-sim train --dim N`` sets the
node count n, and the token width is then 2n (``task.dim``), the only size knob the
family has.  ``points`` is derived (n + 1), not a parameter: ``sample`` rejects
``points`` / ``active_dims`` other than the full prompt (a curriculum cannot shorten a
graph prompt).

Graph generators (``generator``):

* ``erdos-renyi``: the graph size m is uniform on [min_nodes, nodes] per prompt
  (``min_nodes = 0`` means m = n); nodes 0..m−1 form G(m, p) with p = min(1,
  average_degree / (m − 1)); nodes m..n−1 are padding: isolated, their tokens
  present, and never queried.
  With ``er_max_diameter = D > 0`` only graphs of diameter ≤ D are kept (rejection:
  a rejected graph is redrawn), Ye et al.'s within-capacity training law (D = 3^L);
  with ``er_min_diameter = D'`` only graphs of diameter ≥ D', their beyond-capacity
  graphs at D' = 3^L + 1.
* ``chain``: a random permutation of the nodes is cut into consecutive blocks of
  ``path_length + 1`` nodes; each full block is a path with ``path_length`` edges
  (directed: along the permutation), the n mod (path_length + 1) left-over nodes are
  isolated.  Several chains act as distractors for one another (Ye et al.'s
  out-of-distribution "two isolated chains"), so endpoints with edges may be
  disconnected.
* ``cliques``: a random permutation cut into blocks of ``clique_size`` nodes, each a
  clique (Ye et al.'s out-of-distribution "two cliques" at n = 2 · clique_size); the
  n mod clique_size left-over nodes are isolated.
* ``bounded-diameter``: ``components`` random trees of depth ≤ h = ⌊D/2⌋
  (D = ``max_diameter``; for odd D each component has two adjacent roots, a central
  edge), built by giving every non-root node a level in 1..h and a parent uniform
  among the nodes of lower level; then each pair (u, v) with v already reachable from
  u gains an edge u → v with probability ``extra_edges``.  Extra edges inside what is
  already reachable only shorten paths, so every shortest path has length ≤ D
  (undirected: every component has diameter ≤ D).
* ``graphqa`` (GraphQA-style, after Fatemi et al. 2023 as used by Sanford et al. 2024,
  arXiv 2405.18512): the graph size m is drawn from buckets — a bucket uniform among the
  powers-of-two ranges [2^k, 2^(k+1) − 1] that meet [min_nodes, nodes] (``min_nodes = 0``
  means m = n), then m uniform inside it, so every octave of sizes is equally likely; the
  edge probability p is drawn per graph, uniform on [``edge_probability_min``,
  ``edge_probability_max``], and nodes 0..m−1 form G(m, p) (nodes m..n−1 are isolated
  padding, never queried).  The query (s, t) is an ordered pair of distinct graph nodes
  drawn uniformly, and the label is whatever reachability says for that pair
  (``reachable_fraction`` is not used): on dense graphs most labels are +1, as in GraphQA.
* ``balanced-dag`` (after Saparov et al. 2024's balanced distribution, arXiv 2412.04703,
  their generator.cpp ``generate_graph_with_lookahead``; directed graphs only): a
  lookahead ℓ uniform on 1..``max_lookahead`` per graph (0 = the largest that fits,
  ⌊(n − 1) / branches⌋ − 1), so query distances are balanced rather than dominated by
  short ones.  A start vertex r has ``branches`` out-edges to branch heads h_0..h_{k−1};
  each head starts a directed path of ℓ edges, and the end of branch 0 is the goal g.  The
  remaining vertices are fillers that make the graph a layered DAG: r has level 0, the
  i-th vertex of a branch level i (heads 1, ends ℓ + 1), a filler a level uniform on
  −1..ℓ + 1; a filler is an ancestor or a descendant (probability ½ each), and each edge
  u → v with level(v) = level(u) + 1, u an ancestor or v a descendant, is present with
  probability min(1, c / (number of vertices at level(u) + 1)), c = ``average_degree``.
  Fillers thus add in-edges (ancestors) and side branches (descendants) around the
  branches, like the paper's extra preferential-attachment vertices, but no path leaves
  the branches and comes back.  Every edge goes up one level, so a path from u to v has
  exactly level(v) − level(u) edges.  The query is (h_J, g), the binary form of the
  paper's "which out-neighbour of r leads to g": J = 0 (the goal's own branch, label +1,
  distance exactly ℓ) with probability ``reachable_fraction``, else J uniform among the
  distractor branches (label −1; both ends have edges, so every negative is hard).  The
  label is still read from the drawn pair's reachability.  Vertex ids are a random
  permutation, so ids carry no structure.

Queries (erdos-renyi, chain, cliques, bounded-diameter): the label is drawn first, +1 with
probability ``reachable_fraction``; s is uniform among the queryable nodes that have at
least one target with that label and t uniform among those targets (masked sampling,
vectorised).  When no node has such a
target (e.g. +1 asked of a graph with no edges) the label flips, so the realised
fraction can differ from ``reachable_fraction`` for graphs where one answer is rare.

All pairs (``all_pairs``, Ye et al.'s output: the whole connectivity matrix): the prompt
is the same, and its ``targets`` (B, N, n(n − 1)) hold at the query position the ±1 label
of every ordered pair (s, t), s ≠ t, row-major (the matrix off its diagonal), zero at the
node tokens: the loss of a model that answers all pairs at once (``disentangled`` with
``all_pairs``).  ``pair_prompts`` spells the same pairs out as prompts of their own, one
query each, for predictors that answer one pair.

Labels use boolean reachability: ⌈log₂ n⌉ squarings of A ∨ I, each product clamped
to {0, 1} (never float matrix powers, which overflow).  ``latent``: ``adjacency``
(B, n, n) bool, ``source``, ``target`` (B,) long, ``label`` (B,) bool, ``distance``
(B,) long (shortest-path length from s to t, −1 if unreachable) and ``size`` (B,)
long (the sampled graph size; n except for padded Erdős–Rényi and GraphQA graphs).

``hard_pairs(latent)`` is the one definition of the hard slice (``slices()["hard"]``):
distance ≥ 4, or disconnected with both ends of positive degree — the pairs that neither
"connected iff both ends have edges" nor "connected iff within 3 hops" answers for free.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.theory.graph_algorithms import BFSReachability, DegreeHeuristic, ReachabilityRounds
from icl_sim.validation import check_choice, check_float, check_int

GENERATORS = ("erdos-renyi", "chain", "bounded-diameter", "graphqa", "balanced-dag", "cliques")
#: rounds of redrawing an Erdős–Rényi batch's graphs that exceed er_max_diameter before the bound is refused
MAX_REDRAWS = 1000
#: the hard slice: pairs at least this far apart (or disconnected with both ends of positive degree)
HARD_DISTANCE = 4


@dataclass(frozen=True)
class GraphConnectivity(TaskFamily):
    """One graph per prompt (a token per node) and one reachability query at the end."""
    name: ClassVar[str] = "graph-connectivity"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "nodes"

    nodes: int = parameter("number of nodes n (tokens are 2n wide, prompts n + 1 long)", 16)
    generator: str = parameter("graph law: erdos-renyi, chain, bounded-diameter, graphqa, balanced-dag or "
                               "cliques", "erdos-renyi")
    directed: bool = parameter("directed edges (reachability along edge directions)", False)
    reachable_fraction: float = parameter("probability that a query asks for a reachable pair (label +1)", 0.5)
    min_nodes: int = parameter("erdos-renyi, graphqa: smallest graph size (0 = nodes); the other nodes are "
                               "isolated padding, never queried", 0)
    average_degree: float = parameter("erdos-renyi: expected (out-)degree c, edge probability c/(m-1); "
                                      "balanced-dag: expected out-degree of a filler", 1.5)
    er_max_diameter: int = parameter("erdos-renyi: keep only graphs whose diameter (the longest shortest path) is "
                                     "at most this, by rejection (0 = no filter)", 0)
    er_min_diameter: int = parameter("erdos-renyi: keep only graphs whose diameter is at least this, by rejection "
                                     "(0 = no filter)", 0)
    all_pairs: bool = parameter("label every ordered pair (s, t), s ≠ t, at the query: targets (B, N, n(n - 1)), "
                                "the connectivity matrix off its diagonal, row-major", False)
    path_length: int = parameter("chain: edges per chain (each chain has path_length + 1 nodes)", 4)
    max_diameter: int = parameter("bounded-diameter: bound D on every shortest-path length", 4)
    components: int = parameter("bounded-diameter: number of trees (connected components)", 2)
    extra_edges: float = parameter("bounded-diameter: probability of each extra edge inside a reachable pair", 0.0)
    edge_probability_min: float = parameter("graphqa: smallest edge probability (p uniform per graph)", 0.0)
    edge_probability_max: float = parameter("graphqa: largest edge probability (p uniform per graph)", 1.0)
    branches: int = parameter("balanced-dag: branches from the start vertex (one leads to the goal)", 2)
    max_lookahead: int = parameter("balanced-dag: largest query distance ℓ, uniform on 1..max (0 = largest "
                                   "that fits, (nodes - 1) // branches - 1)", 0)
    clique_size: int = parameter("cliques: nodes per clique (the n mod clique_size left-over nodes are isolated)", 4)

    def __post_init__(self):
        check_int("nodes", self.nodes, 2)
        check_choice("generator", self.generator, GENERATORS)
        for name in ("directed", "all_pairs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")  # noqa: TRY004
        check_float("reachable_fraction", self.reachable_fraction, 0.0, maximum=1.0)
        check_int("min_nodes", self.min_nodes, 0, self.nodes, maximum_name="nodes")
        if self.min_nodes == 1:
            raise ValueError("min_nodes must be 0 (= nodes) or >= 2 (a query needs two nodes), got 1")
        check_float("average_degree", self.average_degree, 0.0)
        check_int("path_length", self.path_length, 1)
        check_int("max_diameter", self.max_diameter, 1)
        check_int("components", self.components, 1)
        check_float("extra_edges", self.extra_edges, 0.0, maximum=1.0)
        check_float("edge_probability_min", self.edge_probability_min, 0.0, maximum=1.0)
        check_float("edge_probability_max", self.edge_probability_max, self.edge_probability_min, maximum=1.0)
        check_int("branches", self.branches, 1)
        check_int("max_lookahead", self.max_lookahead, 0)
        check_int("er_max_diameter", self.er_max_diameter, 0)
        check_int("er_min_diameter", self.er_min_diameter, 0)
        if self.er_max_diameter and self.er_min_diameter > self.er_max_diameter:
            raise ValueError(f"er_min_diameter ({self.er_min_diameter}) must be at most er_max_diameter "
                             f"({self.er_max_diameter})")
        check_int("clique_size", self.clique_size, 2)
        # bounds that involve the graph size, for the generator whose parameters they are (a default
        # of another generator's parameter must not refuse a small graph)
        if self.generator == "chain":
            check_int("path_length", self.path_length, 1, self.nodes - 1, maximum_name="nodes - 1")
        if self.generator == "cliques":
            check_int("clique_size", self.clique_size, 2, self.nodes, maximum_name="nodes")
        if self.generator == "bounded-diameter":
            roots = 2 if self.max_diameter % 2 else 1
            check_int("components", self.components, 1, self.nodes // roots, maximum_name=f"nodes // {roots}")
        if self.generator == "balanced-dag":
            if not self.directed:
                raise ValueError("generator balanced-dag builds directed graphs: set directed=true")
            check_int("branches", self.branches, 1, max((self.nodes - 1) // 2, 1),  # so that ℓ = 1 fits
                      maximum_name="(nodes - 1) // 2")
            check_int("max_lookahead", self.max_lookahead, 0, self.largest_lookahead,
                      maximum_name="(nodes - 1) // branches - 1")

    @property
    def largest_lookahead(self) -> int:
        """balanced-dag: the largest ℓ that fits, (n − 1) // branches − 1 (a start and k branches of ℓ + 1 nodes)."""
        return (self.nodes - 1) // self.branches - 1

    @property
    def lookahead(self) -> int:
        """balanced-dag: the largest query distance drawn, ``max_lookahead`` or (0) the largest that fits."""
        return self.max_lookahead or self.largest_lookahead

    @property
    def dim(self) -> int:
        """Token width 2n: adjacency row and one-hot node id (the query: one-hot s and one-hot t)."""
        return 2 * self.nodes

    @property
    def points(self) -> int:
        """n node tokens and the query."""
        return self.nodes + 1

    # -- graphs -------------------------------------------------------------------------
    def sample_graphs(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Adjacency (B, n, n) bool without self-loops and the queryable-node mask (B, n) bool."""
        if self.generator == "erdos-renyi":
            return self._erdos_renyi(batch_size, generator)
        if self.generator == "chain":
            return self._chains(batch_size, generator)
        if self.generator == "cliques":
            return self._cliques(batch_size, generator)
        if self.generator == "graphqa":
            return self._graphqa(batch_size, generator)
        if self.generator == "balanced-dag":
            return self._balanced_dag(batch_size, generator)[:2]
        return self._bounded_diameter(batch_size, generator)

    def _edges_from_scores(self, keep: torch.Tensor) -> torch.Tensor:
        """Independent edge indicators (B, n, n): all ordered pairs if directed, else the upper triangle mirrored."""
        n = self.nodes
        off_diagonal = ~torch.eye(n, dtype=torch.bool, device=keep.device)
        if self.directed:
            return keep & off_diagonal
        upper = keep.triu(diagonal=1)
        return upper | upper.transpose(1, 2)

    def _erdos_renyi(self, batch_size, generator):
        """G(m, p) graphs; with a diameter bound the rejected ones are redrawn: each round draws about twice as
        many fresh graphs as the acceptance rate so far needs (at least a batch), and each rejected slot takes the
        next fresh graph within the bounds, until every graph is."""
        adjacency, active = self._erdos_renyi_draw(batch_size, generator)
        if not (self.er_max_diameter or self.er_min_diameter):
            return adjacency, active
        rejected = ~self._within_bounds(adjacency)
        drawn, accepted = batch_size, batch_size - int(rejected.sum())
        for _ in range(MAX_REDRAWS):
            if not bool(rejected.any()):
                return adjacency, active
            count = max(batch_size, min(2 * int(rejected.sum()) * drawn // max(accepted, 1), 64 * batch_size))
            fresh, fresh_active = self._erdos_renyi_draw(count, generator)
            kept = self._within_bounds(fresh).nonzero().squeeze(1)
            slots = rejected.nonzero().squeeze(1)[:len(kept)]
            adjacency[slots], active[slots] = fresh[kept[:len(slots)]], fresh_active[kept[:len(slots)]]
            rejected[slots] = False
            drawn, accepted = drawn + count, accepted + len(kept)
        raise ValueError(f"er_min_diameter={self.er_min_diameter}, er_max_diameter={self.er_max_diameter}: after "
                         f"{MAX_REDRAWS} redraws some graphs are still outside the bounds: the law almost never "
                         f"meets them (widen them, or change average_degree)")

    def _within_bounds(self, adjacency: torch.Tensor) -> torch.Tensor:
        """(B,) bool: the diameter is at most er_max_diameter and at least er_min_diameter (a bound of 0: none).
        The diameter exceeds h iff some reachable pair is not within h hops."""
        reach = reachability(adjacency)

        def wider_than(hops: int) -> torch.Tensor:
            return (reach & ~within_hops(adjacency, hops)).flatten(1).any(dim=1)

        keep = torch.ones(adjacency.shape[0], dtype=torch.bool, device=adjacency.device)
        if self.er_max_diameter:
            keep &= ~wider_than(self.er_max_diameter)
        if self.er_min_diameter:
            keep &= wider_than(self.er_min_diameter - 1)
        return keep

    def _erdos_renyi_draw(self, batch_size, generator):
        n, device = self.nodes, generator.device
        low = self.min_nodes or n
        size = low + torch.randint(n - low + 1, (batch_size,), generator=generator, device=device)
        active = torch.arange(n, device=device) < size[:, None]  # (B, n)
        p = (self.average_degree / (size - 1).to(torch.float64)).clamp(max=1.0)
        u = torch.rand(batch_size, n, n, generator=generator, device=device, dtype=torch.float64)
        keep = (u < p[:, None, None]) & active[:, :, None] & active[:, None, :]
        return self._edges_from_scores(keep), active

    def _chains(self, batch_size, generator):
        n, device, k = self.nodes, generator.device, self.path_length + 1
        order = torch.rand(batch_size, n, generator=generator, device=device).argsort(dim=1)  # position -> node
        position = torch.arange(n, device=device)
        linked = ((position[:-1] // k) == (position[1:] // k)) & (position[1:] < (n // k) * k)  # (n-1,)
        batch = torch.arange(batch_size, device=device)[:, None]
        adjacency = torch.zeros(batch_size, n, n, dtype=torch.bool, device=device)
        adjacency[batch, order[:, :-1], order[:, 1:]] = linked.expand(batch_size, -1)
        if not self.directed:
            adjacency = adjacency | adjacency.transpose(1, 2)
        return adjacency, torch.ones(batch_size, n, dtype=torch.bool, device=device)

    def _cliques(self, batch_size, generator):
        """A random permutation cut into blocks of ``clique_size`` nodes, each block a clique (Ye et al.'s "two
        cliques" at n = 2 · clique_size); the n mod clique_size left-over nodes are isolated."""
        n, device, k = self.nodes, generator.device, self.clique_size
        position = torch.rand(batch_size, n, generator=generator, device=device).argsort(dim=1).argsort(dim=1)
        block = torch.where(position < (n // k) * k, position // k, -1 - position)  # node -> its block (or alone)
        same = block[:, :, None] == block[:, None, :]
        adjacency = same & ~torch.eye(n, dtype=torch.bool, device=device)
        return adjacency, torch.ones(batch_size, n, dtype=torch.bool, device=device)

    def _bounded_diameter(self, batch_size, generator):
        n, device = self.nodes, generator.device
        depth = self.max_diameter // 2
        paired = self.max_diameter % 2 == 1
        roots = self.components * (2 if paired else 1)
        # a random node order; the first `roots` nodes are level 0, the others get a level in 1..depth
        order = torch.rand(batch_size, n, generator=generator, device=device).argsort(dim=1)
        if depth == 0:  # D = 1: only the root pairs have edges; the other nodes stay isolated
            level = torch.zeros(batch_size, n, dtype=torch.long, device=device)
        else:
            level = torch.randint(1, depth + 1, (batch_size, n), generator=generator, device=device)
            level[:, :roots] = 0
        # sort (stably) by level, so the nodes of lower level form a prefix of every row
        level, rank = level.sort(dim=1, stable=True)
        order = order.gather(1, rank)
        lower = (level[:, :, None] > level[:, None, :]).sum(dim=2)  # nodes of lower level (B, n)
        u = torch.rand(batch_size, n, generator=generator, device=device, dtype=torch.float64)
        parent = (u * lower).floor().long().clamp(max=n - 1)  # uniform in [0, lower), a position
        has_parent = lower > 0
        batch = torch.arange(batch_size, device=device)[:, None]
        adjacency = torch.zeros(batch_size, n, n, dtype=torch.bool, device=device)
        adjacency[batch, order.gather(1, parent), order] = has_parent  # parent -> child
        if paired:  # join roots 2c and 2c+1: each component has a central edge
            even = torch.arange(0, roots, 2, device=device)
            adjacency[batch, order[:, even], order[:, even + 1]] = True
        if not self.directed:
            adjacency = adjacency | adjacency.transpose(1, 2)
        if self.extra_edges > 0:
            reach = reachability(adjacency) & ~torch.eye(n, dtype=torch.bool, device=device)
            u = torch.rand(batch_size, n, n, generator=generator, device=device, dtype=torch.float64)
            adjacency = adjacency | self._edges_from_scores((u < self.extra_edges) & reach)
        return adjacency, torch.ones(batch_size, n, dtype=torch.bool, device=device)

    def _graph_sizes(self, batch_size, generator):
        """graphqa: sizes (B,) long: a powers-of-two bucket uniform among those meeting [min_nodes, nodes], then a size
        uniform inside it."""
        n, device = self.nodes, generator.device
        low = self.min_nodes or n
        starts = [max(low, 2 ** k) for k in range(low.bit_length() - 1, n.bit_length())]
        ends = [min(n, 2 ** (k + 1) - 1) for k in range(low.bit_length() - 1, n.bit_length())]
        start, end = (torch.tensor(v, device=device) for v in (starts, ends))
        bucket = torch.randint(len(starts), (batch_size,), generator=generator, device=device)
        u = torch.rand(batch_size, generator=generator, device=device, dtype=torch.float64)
        width = (end - start + 1)[bucket]
        return start[bucket] + (u * width).floor().long().clamp(max=width - 1)

    def _graphqa(self, batch_size, generator):
        n, device = self.nodes, generator.device
        size = self._graph_sizes(batch_size, generator)
        active = torch.arange(n, device=device) < size[:, None]
        u = torch.rand(batch_size, generator=generator, device=device, dtype=torch.float64)
        p = self.edge_probability_min + (self.edge_probability_max - self.edge_probability_min) * u
        scores = torch.rand(batch_size, n, n, generator=generator, device=device, dtype=torch.float64)
        keep = (scores < p[:, None, None]) & active[:, :, None] & active[:, None, :]
        return self._edges_from_scores(keep), active

    def _balanced_dag(self, batch_size, generator):
        """Layered DAG with a start, ``branches`` paths of ℓ edges and fillers; also the query (source, target)."""
        n, k, device = self.nodes, self.branches, generator.device
        ell = torch.randint(1, self.lookahead + 1, (batch_size, 1), generator=generator, device=device)
        position = torch.arange(n, device=device)[None, :]  # layout: 0 = start, then k branches of ℓ + 1 nodes
        branch, offset = (position - 1).div(ell + 1, rounding_mode="floor"), (position - 1) % (ell + 1)
        on_branch = (position >= 1) & (branch < k)
        filler = (position >= 1) & ~on_branch
        u = torch.rand(batch_size, n, generator=generator, device=device, dtype=torch.float64)
        filler_level = -1 + (u * (ell + 3)).floor().long().clamp(max=ell + 2)  # uniform on -1..ℓ + 1
        level = torch.where(on_branch, offset + 1, torch.where(filler, filler_level, 0))  # (B, n)
        head = on_branch & (offset == 0)  # (B, n)
        start_to_head = (position.T == 0) & head[:, None, :]
        along_branch = (position.T + 1 == position) & on_branch[:, :, None] & (on_branch & (offset != 0))[:, None, :]
        structure = start_to_head | along_branch  # (B, u, v) in layout positions
        next_level = level[:, None, :] == level[:, :, None] + 1  # (B, u, v)
        count_next = next_level.sum(dim=2).clamp(min=1)
        p = (self.average_degree / count_next.to(torch.float64)).clamp(max=1.0)
        u = torch.rand(batch_size, n, n, generator=generator, device=device, dtype=torch.float64)
        # half the fillers are ancestors (edges out of them only), half descendants (edges into them only): no
        # path leaves the structure and comes back, so a distractor head never reaches the goal
        ancestor = filler & (torch.rand(batch_size, n, generator=generator, device=device) < 0.5)
        descendant = filler & ~ancestor
        extra = (u < p[:, :, None]) & next_level & (ancestor[:, :, None] | descendant[:, None, :])
        layout = structure | extra
        distractor = torch.rand(batch_size, generator=generator, device=device) >= self.reachable_fraction
        other = 1 + (torch.rand(batch_size, generator=generator, device=device) * (k - 1)).floor().long()
        queried = torch.where(distractor & (k > 1), other.clamp(max=k - 1), 0)  # the queried branch J
        # ids: a random permutation (node id = node[position]); adjacency[node[i], node[j]] = layout[i, j]
        node = torch.rand(batch_size, n, generator=generator, device=device).argsort(dim=1)
        inverse = node.argsort(dim=1)
        rows = torch.arange(batch_size, device=device)[:, None, None]
        adjacency = layout[rows, inverse[:, :, None], inverse[:, None, :]]
        source = node.gather(1, (1 + queried * (ell[:, 0] + 1))[:, None])[:, 0]
        target = node.gather(1, 1 + ell)[:, 0]  # the goal: the end of branch 0
        return adjacency, torch.ones(batch_size, n, dtype=torch.bool, device=device), source, target

    # -- prompts ------------------------------------------------------------------------
    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` graphs and queries; see the module docstring for the encoding and latents."""
        check_draw(batch_size, generator, dtype)
        if points is not None and points != self.points:
            raise ValueError(f"points must be nodes + 1 = {self.points} for graph-connectivity, got {points}")
        if active_dims is not None and active_dims != self.dim:
            raise ValueError(f"active_dims must be 2 * nodes = {self.dim} for graph-connectivity, got {active_dims}")
        device = generator.device
        if self.generator == "balanced-dag":
            adjacency, queryable, source, target = self._balanced_dag(batch_size, generator)
            label = reachability(adjacency)[torch.arange(batch_size, device=device), source, target]
        elif self.generator == "graphqa":
            adjacency, queryable = self.sample_graphs(batch_size, generator)
            source, target, label = uniform_queries(adjacency, queryable, generator)
        else:
            adjacency, queryable = self.sample_graphs(batch_size, generator)
            source, target, label = self._queries(adjacency, queryable, generator)
        distance = shortest_distances(adjacency, source).gather(1, target[:, None]).squeeze(1)
        prompt = encode_prompt({"adjacency": adjacency, "source": source, "target": target, "label": label,
                                "distance": distance, "size": queryable.sum(dim=1)}, dtype)
        if not self.all_pairs:
            return prompt
        targets = torch.zeros(batch_size, self.points, self.nodes * (self.nodes - 1), device=device, dtype=dtype)
        targets[:, -1] = _off_diagonal(reachability(adjacency)).to(dtype) * 2 - 1
        return Prompt(prompt.xs, prompt.ys, prompt.latent, targets)

    def _queries(self, adjacency, queryable, generator):
        """(source, target, label): label ~ Bernoulli(reachable_fraction), then s and t by masked sampling."""
        batch_size, n = queryable.shape
        device = adjacency.device
        reach = reachability(adjacency)
        off_diagonal = ~torch.eye(n, dtype=torch.bool, device=device)
        pair_ok = queryable[:, :, None] & queryable[:, None, :] & off_diagonal  # (B, s, t)
        candidates = {True: reach & pair_ok, False: ~reach & pair_ok}
        want = torch.rand(batch_size, generator=generator, device=device) < self.reachable_fraction
        has = {value: mask.any(dim=2) for value, mask in candidates.items()}  # (B, n): s has such a t
        possible = {value: mask.any(dim=1) for value, mask in has.items()}  # (B,)
        label = torch.where(want, possible[True], ~possible[False])  # flip when the wanted kind is absent
        source_mask = torch.where(label[:, None], has[True], has[False])
        source = _uniform_choice(source_mask, generator)
        rows = torch.arange(batch_size, device=device)
        target_mask = torch.where(label[:, None], candidates[True][rows, source], candidates[False][rows, source])
        target = _uniform_choice(target_mask, generator)
        return source, target, label

    def baselines(self):
        """Exact BFS, reachability within 2^L (2 ≤ L ≤ 3 rounds of squaring) and 3^L hops, and the degree heuristic."""
        return {"BFS": BFSReachability(), "Squaring L=1": ReachabilityRounds(1, 2),
                "Squaring L=2": ReachabilityRounds(2, 2), "Cubing L=1": ReachabilityRounds(1, 3),
                "Cubing L=2": ReachabilityRounds(2, 3), "Degree heuristic": DegreeHeuristic()}

    def slices(self, prompt: Prompt) -> dict:
        """``hard``: :func:`hard_pairs` (distance ≥ 4, or disconnected with both ends of positive degree)."""
        return {"hard": hard_pairs(prompt.latent)}


def hard_pairs(latent: dict) -> torch.Tensor:
    """(B,) bool: s and t at distance ≥ ``HARD_DISTANCE``, or disconnected although both have edges (degree > 0).

    Degree counts in- and out-edges ("has an edge at all"), so on these pairs neither the
    degree shortcut nor "reachable iff within 3 hops" is right for free.
    """
    adjacency = latent["adjacency"]
    degree = adjacency.sum(dim=2) + adjacency.sum(dim=1)
    rows = torch.arange(adjacency.shape[0], device=adjacency.device)
    both_have_edges = (degree[rows, latent["source"]] > 0) & (degree[rows, latent["target"]] > 0)
    return (latent["distance"] >= HARD_DISTANCE) | (~latent["label"] & both_have_edges)


def pair_prompts(adjacency: torch.Tensor, dtype: torch.dtype = torch.float64) -> Prompt:
    """Every ordered pair (s, t), s ≠ t, of the n nodes of each graph (B, n, n) as a prompt of its own: B·n(n − 1)
    prompts, graph by graph, a graph's pairs row-major (the order of the ``all_pairs`` targets); latents adjacency,
    source, target, label and distance."""
    count, n, device = adjacency.shape[0], adjacency.shape[-1], adjacency.device
    source, target = (~torch.eye(n, dtype=torch.bool, device=device)).nonzero().unbind(1)  # row-major
    # labels and distances once per graph (a BFS per source), not once per pair
    every_source = torch.arange(n, device=device).repeat(count)
    distances = shortest_distances(adjacency.repeat_interleave(n, dim=0), every_source).view(count, n, n)
    return encode_prompt({"adjacency": adjacency.repeat_interleave(source.numel(), dim=0),
                          "source": source.repeat(count), "target": target.repeat(count),
                          "label": reachability(adjacency)[:, source, target].flatten(),
                          "distance": distances[:, source, target].flatten()}, dtype)


def _off_diagonal(matrices: torch.Tensor) -> torch.Tensor:
    """The entries of (B, n, n) matrices off their diagonal, row-major: (B, n(n − 1))."""
    n = matrices.shape[-1]
    return matrices[:, ~torch.eye(n, dtype=torch.bool, device=matrices.device)]


def encode_prompt(latent: dict, dtype: torch.dtype) -> Prompt:
    """The prompt of a latent dict (adjacency (B, n, n), source, target, label, ...): a token per node
    [adjacency row ; one-hot id] and the query [one-hot s ; one-hot t], labelled ±1 at the query."""
    adjacency = latent["adjacency"]
    count, n, device = adjacency.shape[0], adjacency.shape[-1], adjacency.device
    eye = torch.eye(n, device=device, dtype=dtype)
    xs = torch.zeros(count, n + 1, 2 * n, device=device, dtype=dtype)
    xs[:, :n, :n] = adjacency.to(dtype)
    xs[:, :n, n:] = eye
    xs[:, n, :n] = eye[latent["source"]]
    xs[:, n, n:] = eye[latent["target"]]
    ys = torch.zeros(count, n + 1, device=device, dtype=dtype)
    ys[:, n] = latent["label"].to(dtype) * 2 - 1
    return Prompt(xs, ys, dict(latent))


def uniform_queries(adjacency: torch.Tensor, queryable: torch.Tensor, generator: torch.Generator):
    """(source, target, label): a uniform ordered pair of distinct queryable nodes, labelled by its reachability."""
    source = _uniform_choice(queryable, generator)
    rows = torch.arange(queryable.shape[0], device=queryable.device)
    others = queryable.clone()
    others[rows, source] = False
    target = _uniform_choice(others, generator)
    return source, target, reachability(adjacency)[rows, source, target]


def _uniform_choice(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """An index uniform among the True entries of each row of ``mask`` (B, n); 0 for an empty row."""
    u = torch.rand(mask.shape, generator=generator, device=mask.device)
    return torch.where(mask, u, torch.full_like(u, -1.0)).argmax(dim=1)


def reachability(adjacency: torch.Tensor) -> torch.Tensor:
    """R[b, u, v] = v reachable from u in any number of steps, (B, n, n) bool (:func:`within_hops` for a bound).

    Repeated squaring of A ∨ I, clamping every product back to {0, 1}: ⌈log₂(n − 1)⌉
    float matrix products whose entries never exceed n, so nothing overflows.
    """
    n = adjacency.shape[-1]
    eye = torch.eye(n, dtype=torch.bool, device=adjacency.device)
    reach = adjacency.bool() | eye
    dtype = torch.float64 if n >= 2 ** 24 else torch.float32
    for _ in range(math.ceil(math.log2(max(n - 1, 1)))):
        r = reach.to(dtype)
        reach = (r @ r) > 0
    return reach


def within_hops(adjacency: torch.Tensor, hops: int) -> torch.Tensor:
    """R[b, u, v] = v reachable from u in at most ``hops`` steps, exactly (B, n, n) bool: (A ∨ I)^hops by binary
    powers, each product clamped to {0, 1}."""
    n = adjacency.shape[-1]
    eye = torch.eye(n, dtype=torch.bool, device=adjacency.device)
    power, result = (adjacency.bool() | eye).to(torch.float32), eye.to(torch.float32).expand_as(adjacency)
    while hops:
        if hops & 1:
            result = ((result @ power) > 0).to(torch.float32)
        hops >>= 1
        if hops:
            power = ((power @ power) > 0).to(torch.float32)
    return result > 0


def diameters(adjacency: torch.Tensor) -> torch.Tensor:
    """The diameter of each graph (B,) long: the longest shortest path between two nodes that are connected
    (0 for a graph without edges), by boolean frontier growth from every node at once."""
    n = adjacency.shape[-1]
    step = (adjacency.bool() | torch.eye(n, dtype=torch.bool, device=adjacency.device)).to(torch.float32)
    reach = step.clone()
    diameter = torch.zeros(adjacency.shape[0], dtype=torch.long, device=adjacency.device)
    for hops in range(1, n):
        grown = (reach @ step) > 0
        changed = (grown != (reach > 0)).flatten(1).any(dim=1)
        if not bool(changed.any()):
            break
        diameter = torch.where(changed, hops + 1, diameter)
        reach = grown.to(torch.float32)
    return torch.where(adjacency.flatten(1).any(dim=1), diameter.clamp(min=1), 0)


def shortest_distances(adjacency: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """BFS distances (B, n) from ``source`` (B,) along edges u → v (−1 if unreachable), long.

    Frontier expansion over the whole batch; stops when every frontier is empty.
    """
    batch_size, n, _ = adjacency.shape
    device = adjacency.device
    frontier = torch.zeros(batch_size, n, dtype=torch.bool, device=device)
    frontier[torch.arange(batch_size, device=device), source] = True
    visited = frontier.clone()
    distance = torch.where(frontier, 0, -1).long()
    a = adjacency.to(torch.float32)
    for step in range(1, n):
        frontier = (torch.bmm(frontier.to(torch.float32)[:, None, :], a).squeeze(1) > 0) & ~visited
        if not bool(frontier.any()):
            break
        visited |= frontier
        distance[frontier] = step
    return distance
