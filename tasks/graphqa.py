"""GraphQA connectivity in context (Fatemi, Halcrow & Perozzi 2024, "Talk like a graph", arXiv 2310.04560), the
benchmark Sanford et al. (2024, arXiv 2405.18512) train their transformers on: is there a path from s to t?

GraphQA's graphs (its released generator, google-research/graphqa ``graph_generator_utils.py``): one of seven
random-graph laws per graph, each law equally likely (GraphQA writes the same number of graphs per law), and a
size from three equal-width buckets (GraphQA's "small" 5-9, "medium" 10-14, "large" 15-19 nodes): a bucket
uniform, then a size uniform inside it.  Here the buckets split [``min_nodes``, ``nodes``] into three near-equal
ranges, which for 5-19 are GraphQA's own.  The laws (``generators``, a comma-separated subset):

* ``er``: Erdős–Rényi G(m, p) with p uniform on [0, 1] per graph;
* ``ba``: Barabási–Albert with k uniform on 1..m − 1 edges per new node: the star on nodes 0..k, then each new node
  joins k distinct earlier nodes drawn in turn with probability ∝ degree (networkx's ``barabasi_albert_graph``;
  Gumbel top-k draws exactly that successive sampling without replacement);
* ``sbm``: a stochastic block model with c communities, c uniform on 2..3, 2..7 or 2..9 by size bucket (capped at
  m), community sizes drawn one after another as GraphQA does, a c × c matrix of uniform edge probabilities made
  symmetric by its entrywise max or min (a fair coin);
* ``sfn``: the scale-free graph of Bollobás et al. (networkx's ``scale_free_graph``: α = 0.41, β = 0.54,
  γ = 0.05, δ_in = 0.2, δ_out = 0, from a directed 3-cycle) with its directions (and self-loops) removed;
* ``complete``, ``star`` (centre 0) and ``path`` (0 − 1 − ... − (m − 1)).

Node ids are GraphQA's, in generation order (a path graph is 0 − 1 − 2 − ...), not permuted.  The query is
GraphQA's reachability question: an ordered pair (s, t) of distinct nodes of the graph drawn uniformly
(``random.sample(nodes, 2)``), labelled by whether a path joins them.

``examples > 0`` is GraphQA's finite training set: that many (graph, query) examples drawn once from ``pool_seed``
(GraphQA's train split uses seed 9876), and every prompt is one of them, uniformly (batch t still a function of the
seed and t); ``examples = 0`` draws a fresh example per prompt, as held-out prompts are drawn.

Prompt encoding: the ``graph-connectivity`` one (node token v = [adjacency row of v ; one-hot(v)], the query token
[one-hot(s) ; one-hot(t)], the label ±1 at the query; nodes m..n − 1 isolated padding, never queried), so that
the reference algorithms of ``icl_sim.theory.graph_algorithms`` read these prompts unchanged.  ``latent``: as
``graph-connectivity``'s (adjacency, source, target, label, distance, size) and ``law`` (B,) long, the index in
``generators`` of each graph's law.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.tasks.graph_connectivity import encode_prompt, hard_pairs, shortest_distances, uniform_queries
from icl_sim.theory.graph_algorithms import BFSReachability, DegreeHeuristic, ReachabilityRounds
from icl_sim.validation import check_choice, check_int

#: GraphQA's seven random-graph laws (graph_generator.sh's list)
LAWS = ("er", "ba", "sbm", "sfn", "complete", "star", "path")
#: GraphQA's community counts per size bucket (small, medium, large): 2..3, 2..7, 2..9
COMMUNITY_RANGES = ((2, 3), (2, 7), (2, 9))
#: networkx scale_free_graph's defaults
SFN_ALPHA, SFN_BETA, SFN_DELTA_IN, SFN_DELTA_OUT = 0.41, 0.54, 0.2, 0.0


@dataclass(frozen=True)
class GraphQAConnectivity(TaskFamily):
    """One GraphQA graph per prompt (a token per node) and its reachability question at the end."""
    name: ClassVar[str] = "graphqa-connectivity"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "nodes"

    nodes: int = parameter("largest graph size n (tokens are 2n wide, prompts n + 1 long); GraphQA: 19", 19)
    min_nodes: int = parameter("smallest graph size (GraphQA: 5); sizes from three equal-width buckets", 5)
    generators: str = parameter("comma-separated graph laws among er, ba, sbm, sfn, complete, star, path",
                                ",".join(LAWS))
    examples: int = parameter("finite training set: this many (graph, query) examples (0 = a fresh one each)", 0)
    pool_seed: int = parameter("seed of the finite training set (GraphQA's train split: 9876)", 9876)

    def __post_init__(self):
        check_int("nodes", self.nodes, 3)
        check_int("min_nodes", self.min_nodes, 3, self.nodes, maximum_name="nodes")
        if not isinstance(self.generators, str) or not self.generators:
            raise ValueError(f"generators must be a comma-separated list of {', '.join(LAWS)}, got "
                             f"{self.generators!r}")
        for law in self.laws:
            check_choice("generators", law, LAWS)
        if len(set(self.laws)) != len(self.laws):
            raise ValueError(f"generators must name each law once, got {self.generators!r}")
        check_int("examples", self.examples, 0)
        check_int("pool_seed", self.pool_seed, 0)

    @property
    def laws(self) -> tuple[str, ...]:
        return tuple(law.strip() for law in self.generators.split(","))

    @property
    def dim(self) -> int:
        return 2 * self.nodes

    @property
    def points(self) -> int:
        return self.nodes + 1

    def buckets(self) -> list[tuple[int, int]]:
        """The three size buckets [low, high] that split [min_nodes, nodes] (GraphQA's 5-9, 10-14, 15-19)."""
        width = self.nodes - self.min_nodes + 1
        edges = [self.min_nodes + (k * width) // 3 for k in range(4)]
        return [(edges[k], edges[k + 1] - 1) for k in range(3) if edges[k + 1] > edges[k]]

    # -- prompts ------------------------------------------------------------------------
    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """``batch_size`` examples: fresh ones, or drawn uniformly from the finite training set (``examples``)."""
        check_draw(batch_size, generator, dtype)
        if points is not None and points != self.points:
            raise ValueError(f"points must be nodes + 1 = {self.points} for graphqa-connectivity, got {points}")
        if active_dims is not None and active_dims != self.dim:
            raise ValueError(f"active_dims must be 2 * nodes = {self.dim} for graphqa-connectivity, got {active_dims}")
        device = generator.device
        if self.examples:
            pool = _training_set(self)
            index = torch.randint(self.examples, (batch_size,), generator=generator, device=device).cpu()
            latent = {key: value[index].to(device) for key, value in pool.items()}
        else:
            latent = self.draw_examples(batch_size, generator)
        return encode_prompt(latent, dtype)

    def draw_examples(self, count: int, generator: torch.Generator) -> dict:
        """``count`` fresh (graph, query) examples as a latent dict (see the module docstring)."""
        adjacency, size, law = self._graphs(count, generator)
        active = torch.arange(self.nodes, device=generator.device) < size[:, None]
        source, target, label = uniform_queries(adjacency, active, generator)
        distance = shortest_distances(adjacency, source).gather(1, target[:, None]).squeeze(1)
        return {"adjacency": adjacency, "source": source, "target": target, "label": label, "distance": distance,
                "size": size, "law": law}

    def _graphs(self, count: int, generator: torch.Generator):
        """Adjacency (B, n, n) bool, sizes (B,) and law indices (B,): each law drawn for every graph, one kept."""
        device = generator.device
        buckets = self.buckets()
        low = torch.tensor([b[0] for b in buckets], device=device)
        high = torch.tensor([b[1] for b in buckets], device=device)
        bucket = torch.randint(len(buckets), (count,), generator=generator, device=device)
        u = torch.rand(count, generator=generator, device=device, dtype=torch.float64)
        width = (high - low + 1)[bucket]
        size = low[bucket] + (u * width).floor().long().clamp(max=width - 1)
        law = torch.randint(len(self.laws), (count,), generator=generator, device=device)
        adjacency = torch.zeros(count, self.nodes, self.nodes, dtype=torch.bool, device=device)
        for index, name in enumerate(self.laws):
            picked = law == index
            adjacency[picked] = LAW_SAMPLERS[name](self.nodes, size[picked], bucket[picked], generator)
        return adjacency, size, law

    def baselines(self):
        """Exact BFS, reachability within 2 and 4 hops (1, 2 rounds of squaring) and the degree heuristic."""
        return {"BFS": BFSReachability(), "Squaring L=1": ReachabilityRounds(1, 2),
                "Squaring L=2": ReachabilityRounds(2, 2), "Degree heuristic": DegreeHeuristic()}

    def slices(self, prompt: Prompt) -> dict:
        """``hard``: ``graph_connectivity.hard_pairs`` (distance ≥ 4, or disconnected with both ends of degree > 0)."""
        return {"hard": hard_pairs(prompt.latent)}


@functools.lru_cache(maxsize=4)
def _training_set(task: GraphQAConnectivity) -> dict:
    """The finite training set of ``task`` on the CPU: a pure function of its parameters (``pool_seed``)."""
    return task.draw_examples(task.examples, make_generator(task.pool_seed, "pool"))


def _symmetric(upper: torch.Tensor) -> torch.Tensor:
    """An undirected adjacency from edge indicators: the strict upper triangle, mirrored."""
    upper = upper.triu(diagonal=1)
    return upper | upper.transpose(1, 2)


def _pairs_within(size: torch.Tensor, n: int) -> torch.Tensor:
    """(B, n, n) bool: both ends among the graph's first ``size`` nodes."""
    active = torch.arange(n, device=size.device) < size[:, None]
    return active[:, :, None] & active[:, None, :]


def _erdos_renyi(n, size, bucket, generator):
    count, device = size.shape[0], size.device
    p = torch.rand(count, 1, 1, generator=generator, device=device, dtype=torch.float64)
    u = torch.rand(count, n, n, generator=generator, device=device, dtype=torch.float64)
    return _symmetric((u < p) & _pairs_within(size, n))


def _complete(n, size, bucket, generator):
    return _symmetric(_pairs_within(size, n))


def _star(n, size, bucket, generator):
    node = torch.arange(n, device=size.device)
    spoke = (node[None, :] >= 1) & (node[None, :] < size[:, None])  # (B, n): joined to the centre 0
    adjacency = torch.zeros(size.shape[0], n, n, dtype=torch.bool, device=size.device)
    adjacency[:, 0, :] = spoke
    return _symmetric(adjacency)


def _path(n, size, bucket, generator):
    node = torch.arange(n, device=size.device)
    step = (node[None, :, None] + 1 == node[None, None, :]) & (node[None, None, :] < size[:, None, None])
    return _symmetric(step.expand(size.shape[0], n, n))


def _barabasi_albert(n, size, bucket, generator):
    """networkx's BA graph with k uniform on 1..m − 1: the star on 0..k, then node v joins k earlier nodes, drawn
    successively ∝ degree (Gumbel top-k over log degree)."""
    count, device = size.shape[0], size.device
    u = torch.rand(count, generator=generator, device=device, dtype=torch.float64)
    k = 1 + (u * (size - 1)).floor().long().clamp(max=size - 2)  # uniform on 1..m − 1
    node = torch.arange(n, device=device)
    adjacency = torch.zeros(count, n, n, dtype=torch.bool, device=device)
    adjacency[:, 0, :] = (node[None, :] >= 1) & (node[None, :] <= k[:, None])  # the initial star
    adjacency = _symmetric(adjacency)
    rows = torch.arange(count, device=device)
    for v in range(2, n):
        grows = (v > k) & (v < size)  # (B,)
        degree = adjacency.sum(dim=2).to(torch.float64)
        gumbel = -torch.log(-torch.log(torch.rand(count, n, generator=generator, device=device,
                                                  dtype=torch.float64).clamp(min=1e-300)))
        keys = torch.where(node[None, :] < v, degree.log() + gumbel, -torch.inf)
        rank = keys.argsort(dim=1, descending=True).argsort(dim=1)
        joined = (rank < k[:, None]) & (node[None, :] < v) & grows[:, None]
        adjacency[rows, v, :] |= joined
        adjacency[rows, :, v] |= joined
    return adjacency


def _stochastic_block(n, size, bucket, generator):
    """GraphQA's SBM: c communities (by bucket, capped at m), sizes drawn in turn, a max- or min-symmetrised
    uniform c × c matrix of edge probabilities."""
    count, device = size.shape[0], size.device
    low = torch.tensor([r[0] for r in COMMUNITY_RANGES], device=device)[bucket]
    high = torch.minimum(torch.tensor([r[1] for r in COMMUNITY_RANGES], device=device)[bucket], size)
    u = torch.rand(count, generator=generator, device=device, dtype=torch.float64)
    communities = low + (u * (high - low + 1)).floor().long().clamp(max=high - low)
    most = COMMUNITY_RANGES[-1][1]
    sizes = torch.zeros(count, most, dtype=torch.long, device=device)
    total = torch.zeros(count, dtype=torch.long, device=device)
    for i in range(most - 1):  # community i < c − 1: uniform on 1..max(1, m − total − (c − 1))
        top = (size - total - (communities - 1)).clamp(min=1)
        u = torch.rand(count, generator=generator, device=device, dtype=torch.float64)
        drawn = torch.where(i < communities - 1, 1 + (u * top).floor().long().clamp(max=top - 1), 0)
        sizes[:, i] = drawn
        total = total + drawn
    last = (communities - 1)[:, None] == torch.arange(most, device=device)[None, :]
    sizes = torch.where(last, (size - total)[:, None].clamp(min=1), sizes)
    block = (torch.arange(n, device=device)[None, :, None] >= sizes.cumsum(dim=1)[:, None, :]).sum(dim=2)
    block = block.clamp(max=most - 1)  # (B, n); padding nodes' blocks do not matter
    p = torch.rand(count, most, most, generator=generator, device=device, dtype=torch.float64)
    coin = torch.rand(count, 1, 1, generator=generator, device=device) < 0.5
    p = torch.where(coin, torch.maximum(p, p.transpose(1, 2)), torch.minimum(p, p.transpose(1, 2)))
    rows = torch.arange(count, device=device)[:, None, None]
    edge_p = p[rows, block[:, :, None], block[:, None, :]]
    u = torch.rand(count, n, n, generator=generator, device=device, dtype=torch.float64)
    return _symmetric((u < edge_p) & _pairs_within(size, n))


def _scale_free(n, size, bucket, generator):
    """networkx's scale_free_graph (Bollobás et al. 2003) grown to m nodes, directions and self-loops removed."""
    count, device = size.shape[0], size.device
    rows = torch.arange(count, device=device)
    edges = torch.zeros(count, n, n, dtype=torch.bool, device=device)  # v → w
    in_degree = torch.zeros(count, n, dtype=torch.float64, device=device)
    out_degree = torch.zeros(count, n, dtype=torch.float64, device=device)
    for v in range(3):  # the initial directed 3-cycle 0 → 1 → 2 → 0
        edges[:, v, (v + 1) % 3] = True
    in_degree[:, :3] = 1.0
    out_degree[:, :3] = 1.0
    grown = torch.full((count,), 3, dtype=torch.long, device=device)
    node = torch.arange(n, device=device)

    def pick(weights):  # a node ∝ weights among the grown ones (weights > 0 somewhere in every row)
        weights = torch.where(node[None, :] < grown[:, None], weights, 0.0)
        return torch.multinomial(weights, 1, generator=generator).squeeze(1)

    while bool((grown < size).any()):
        growing = grown < size
        r = torch.rand(count, generator=generator, device=device, dtype=torch.float64)
        new_source, new_target = r < SFN_ALPHA, r >= SFN_ALPHA + SFN_BETA
        w = pick(in_degree + SFN_DELTA_IN)
        v = pick(out_degree + SFN_DELTA_OUT)
        source = torch.where(new_source, grown, v)
        target = torch.where(new_target, grown, w)
        source, target = source.clamp(max=n - 1), target.clamp(max=n - 1)
        edges[rows[growing], source[growing], target[growing]] = True
        out_degree[rows[growing], source[growing]] += 1
        in_degree[rows[growing], target[growing]] += 1
        grown = grown + (growing & (new_source | new_target)).long()
    undirected = edges | edges.transpose(1, 2)
    return undirected & ~torch.eye(n, dtype=torch.bool, device=device) & _pairs_within(size, n)


LAW_SAMPLERS = {"er": _erdos_renyi, "ba": _barabasi_albert, "sbm": _stochastic_block, "sfn": _scale_free,
                "complete": _complete, "star": _star, "path": _path}
