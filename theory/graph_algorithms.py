"""Reference algorithms for graph-connectivity prompts (``icl_sim.tasks.graph_connectivity``).

Every predictor decodes the graph from the tokens alone (never from the latent): with
``n = d / 2``, node token v holds the adjacency row of v in ``xs[:, v, :n]`` and the
final query token holds one-hot(s) in ``xs[:, -1, :n]`` and one-hot(t) in
``xs[:, -1, n:]``.  ``predict(xs, ys)`` returns float64 scores (B, N) in {−1, +1}: the
answer at the last position, and −1 ("not reachable", a constant) at the node tokens,
which ask nothing.  The last position reads every node token and the query, nothing
else, so no prediction depends on a later point or on any label.

* ``BFSReachability``: exact; frontier expansion from s, vectorised over the batch.
* ``ReachabilityRounds(L, power)``: L rounds of boolean squaring (power 2) or cubing
  (power 3) of A ∨ I, i.e. "t within power^L hops of s": what an L-layer transformer
  can compute when each layer composes reachability relations (Sanford, Hsu &
  Telgarsky 2024, arXiv 2402.09268: log depth suffices; Ye, Fu, Jia & Sharan 2025,
  arXiv 2510.19753: an L-layer disentangled transformer solves diameter ≤ 3^L by
  powers of the adjacency matrix).  Exact on pairs within power^L hops and on
  unreachable pairs; it answers −1 for reachable pairs farther apart.
* ``DegreeHeuristic``: +1 iff s has an edge and t has an edge (directed: s has an
  out-edge and t an in-edge), the node-degree shortcut Ye et al. (2025) find
  transformers learn from graphs beyond their capacity.  Right on every isolated
  endpoint, wrong exactly on disconnected pairs whose endpoints both have edges.

Single-graph traversals with the outputs CLRS-30 scores (de Luca & Fountoulakis 2024, arXiv 2402.01107, their
references in opallab/graphalgosimulation ``ltfs/utils.py``): each takes one adjacency matrix (n, n) (a nonzero
entry is an edge, its value the weight) and returns a ``Traversal``: ``parent`` (n,) long (a node never reached
is its own parent, as is the source), ``order`` (the nodes in the order the algorithm visits them) and, for
Dijkstra, ``distance`` (n,) float64 (``math.inf`` where unreached).  Neighbours are always scanned in index order
and ties go to the smaller index, the convention of those references, so every output is one definite answer:

* ``bfs_tree``: queue-based breadth-first search from the source; a node's parent is the node that discovered it;
* ``dfs_tree``: recursive depth-first search from the source (no restart);
* ``dijkstra_tree``: Dijkstra's algorithm; the unvisited node of least distance (smallest index on ties) is
  expanded next, and a neighbour's distance and parent change only on a strict improvement;
* ``kosaraju_scc``: Kosaraju's algorithm; the first pass is depth-first with restarts from the smallest
  unvisited index, the second searches the transpose in decreasing finishing time, and every node's label is the
  node that started its component's search (``order`` lists the nodes in the first pass's finishing order);
* ``kosaraju_steps``: the same algorithm one event at a time, the state after every event (``KosarajuStep``):
  pass 1 visits or finishes one node per step with CLRS's timestamps (discovery and finishing times on one clock,
  one tick per event), one step finds no node left, then pass 2 starts a component at the unassigned node of
  latest finish or expands one node of the current component (the assigned, unexpanded node of smallest index:
  its unassigned in-neighbours join the component).  Any search on the transpose gives Kosaraju's components;
  this order is the one a step-by-step simulation checks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from icl_sim.validation import check_choice, check_int

from .baselines import Baseline


class GraphBaseline(Baseline):
    """A graph-connectivity predictor: token v is node v's adjacency row, so the tokens' order is the graph's
    node numbering and permuting them asks about another graph (order-dependent by design)."""

    order_invariant = False


def decode_prompt(xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(adjacency (B, n, n) bool, source (B,), target (B,)) read from the node tokens and the query."""
    _, points, dim = xs.shape
    n = dim // 2
    if dim != 2 * n or points != n + 1:
        raise ValueError(f"xs must have the shape of graph prompts, (B, n + 1, 2n); got {tuple(xs.shape)}")
    adjacency = xs[:, :n, :n] > 0.5
    query = xs[:, n]
    return adjacency, query[:, :n].argmax(dim=1), query[:, n:].argmax(dim=1)


def _scores_at_last(answer: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """−1 everywhere except the last position, which gets ±1 from the boolean ``answer`` (B,)."""
    preds = -torch.ones_like(ys)
    preds[:, -1] = answer.to(ys.dtype) * 2 - 1
    return preds


def _reachable_within(adjacency: torch.Tensor, rounds: int, power: int) -> torch.Tensor:
    """R after ``rounds`` boolean powers: R[u, v] = v within power^rounds hops of u, (B, n, n) bool."""
    n = adjacency.shape[-1]
    reach = adjacency | torch.eye(n, dtype=torch.bool, device=adjacency.device)
    for _ in range(rounds):
        r = reach.to(torch.float64)  # entries of a product of 0/1 matrices are ≤ n²: exact in float64
        product = r
        for _ in range(power - 1):
            product = ((product @ r) > 0).to(torch.float64)
        reach = product > 0
    return reach


class BFSReachability(GraphBaseline):
    """Exact reachability of t from s by breadth-first frontier expansion, all prompts at once."""

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        adjacency, source, target = decode_prompt(xs)
        batch_size, n, _ = adjacency.shape
        rows = torch.arange(batch_size, device=xs.device)
        visited = torch.zeros(batch_size, n, dtype=torch.bool, device=xs.device)
        visited[rows, source] = True
        frontier = visited.clone()
        a = adjacency.to(torch.float64)
        for _ in range(n - 1):
            frontier = (torch.bmm(frontier.to(torch.float64)[:, None, :], a).squeeze(1) > 0) & ~visited
            if not bool(frontier.any()):
                break
            visited |= frontier
        return _scores_at_last(visited[rows, target], ys)


class ReachabilityRounds(GraphBaseline):
    """t within ``power``^``rounds`` hops of s: ``rounds`` boolean squarings (power 2) or cubings (power 3)."""

    def __init__(self, rounds: int, power: int = 2):
        check_int("rounds", rounds, 0)
        check_choice("power", power, (2, 3))
        self.rounds, self.power = rounds, power

    @property
    def hops(self) -> int:
        """The largest distance answered correctly: power^rounds."""
        return self.power ** self.rounds

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        adjacency, source, target = decode_prompt(xs)
        reach = _reachable_within(adjacency, self.rounds, self.power)
        rows = torch.arange(xs.shape[0], device=xs.device)
        return _scores_at_last(reach[rows, source, target], ys)


class DegreeHeuristic(GraphBaseline):
    """Connected iff both endpoints have edges (directed graphs: s an out-edge, t an in-edge)."""

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        adjacency, source, target = decode_prompt(xs)
        rows = torch.arange(xs.shape[0], device=xs.device)
        out_degree, in_degree = adjacency.sum(dim=2), adjacency.sum(dim=1)
        return _scores_at_last((out_degree[rows, source] > 0) & (in_degree[rows, target] > 0), ys)


@dataclass(frozen=True)
class Traversal:
    """One traversal's outputs: ``parent`` (n,) long, ``order`` (visited nodes in visiting order, long) and, for
    shortest paths, ``distance`` (n,) float64 (``math.inf`` where unreached)."""

    parent: torch.Tensor
    order: torch.Tensor
    distance: torch.Tensor | None = None


def _neighbours(adjacency: torch.Tensor) -> tuple[int, list[list[int]]]:
    """(n, the out-neighbours of every node in increasing index) of one (n, n) adjacency matrix."""
    if adjacency.dim() != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise ValueError(f"adjacency must be one square (n, n) matrix; got shape {tuple(adjacency.shape)}")
    nonzero = (adjacency != 0).cpu()
    return adjacency.shape[0], [torch.nonzero(row).flatten().tolist() for row in nonzero]


def _check_source(source: int, n: int) -> int:
    check_int("source", source, 0, n - 1)
    return int(source)


def _traversal(parent: list[int], order: list[int], distance: list[float] | None = None) -> Traversal:
    return Traversal(torch.tensor(parent, dtype=torch.long), torch.tensor(order, dtype=torch.long),
                     None if distance is None else torch.tensor(distance, dtype=torch.float64))


def bfs_tree(adjacency: torch.Tensor, source: int) -> Traversal:
    """Queue-based breadth-first search from ``source``: parents and the order nodes leave the queue."""
    n, neighbours = _neighbours(adjacency)
    source = _check_source(source, n)
    parent, reached, queue, order = list(range(n)), [False] * n, [source], []
    reached[source] = True
    while queue:
        node = queue.pop(0)
        order.append(node)
        for neighbour in neighbours[node]:
            if not reached[neighbour]:
                reached[neighbour], parent[neighbour] = True, node
                queue.append(neighbour)
    return _traversal(parent, order)


def dfs_tree(adjacency: torch.Tensor, source: int) -> Traversal:
    """Recursive depth-first search from ``source`` (an explicit stack of neighbour iterators, no recursion
    limit): parents and the visiting (pre-)order."""
    n, neighbours = _neighbours(adjacency)
    source = _check_source(source, n)
    parent, reached, order = list(range(n)), [False] * n, [source]
    reached[source] = True
    stack = [(source, iter(neighbours[source]))]
    while stack:
        node, pending = stack[-1]
        following = next((v for v in pending if not reached[v]), None)
        if following is None:
            stack.pop()
            continue
        reached[following], parent[following] = True, node
        order.append(following)
        stack.append((following, iter(neighbours[following])))
    return _traversal(parent, order)


def dijkstra_tree(weights: torch.Tensor, source: int) -> Traversal:
    """Dijkstra's algorithm from ``source`` on nonnegative ``weights`` (0 = no edge): parents, the expansion
    order of the reached nodes and the distances."""
    n, neighbours = _neighbours(weights)
    source = _check_source(source, n)
    if bool((weights < 0).any()):
        raise ValueError("weights must be nonnegative (0 means no edge)")
    w = weights.to(torch.float64).cpu().tolist()
    distance, parent, done, order = [math.inf] * n, list(range(n)), [False] * n, []
    distance[source] = 0.0
    while True:
        candidates = [v for v in range(n) if not done[v] and distance[v] < math.inf]
        if not candidates:
            break
        node = min(candidates, key=lambda v: (distance[v], v))
        done[node] = True
        order.append(node)
        for neighbour in neighbours[node]:
            if distance[node] + w[node][neighbour] < distance[neighbour]:
                distance[neighbour], parent[neighbour] = distance[node] + w[node][neighbour], node
    return _traversal(parent, order, distance)


def _finishing_order(neighbours: list[list[int]], roots: list[int]) -> tuple[list[int], list[int]]:
    """Depth-first search restarted from each unvisited node of ``roots`` in turn: (the nodes in finishing
    order, the root each node's search started from)."""
    n = len(neighbours)
    reached, finished, root_of = [False] * n, [], list(range(n))
    for root in roots:
        if reached[root]:
            continue
        reached[root] = True
        stack = [(root, iter(neighbours[root]))]
        while stack:
            node, pending = stack[-1]
            following = next((v for v in pending if not reached[v]), None)
            if following is None:
                finished.append(stack.pop()[0])
                continue
            reached[following], root_of[following] = True, root
            stack.append((following, iter(neighbours[following])))
    return finished, root_of


def kosaraju_scc(adjacency: torch.Tensor) -> Traversal:
    """Kosaraju's strongly connected components: ``parent`` holds each node's component label (the node that
    started its component's search in the second pass), ``order`` the first pass's finishing order."""
    n, neighbours = _neighbours(adjacency)
    finished, _ = _finishing_order(neighbours, list(range(n)))
    _, transpose = _neighbours(adjacency.T)
    _, label = _finishing_order(transpose, finished[::-1])
    return _traversal(label, finished)


@dataclass(frozen=True)
class KosarajuStep:
    """Kosaraju's state after one event: ``visited``, ``finished``, ``assigned``, ``expanded`` (n,) bool;
    ``discovery`` and ``finish`` (n,) long (the event's clock, 0 until it happens); ``second_pass`` (bool: pass 1
    is over); ``label`` (n,) long (the component's root once assigned, else the node itself)."""

    visited: torch.Tensor
    finished: torch.Tensor
    discovery: torch.Tensor
    finish: torch.Tensor
    second_pass: bool
    assigned: torch.Tensor
    expanded: torch.Tensor
    label: torch.Tensor


def kosaraju_steps(adjacency: torch.Tensor) -> list[KosarajuStep]:
    """Kosaraju's algorithm event by event (module docstring): the state after each of its 2n + 1 + n + c
    events (c components)."""
    n, out_neighbours = _neighbours(adjacency)
    _, in_neighbours = _neighbours(adjacency.T)
    flags = {name: [False] * n for name in ("visited", "finished", "assigned", "expanded")}
    discovery, finish, label, steps = [0] * n, [0] * n, list(range(n)), []
    second_pass = False

    def record():
        steps.append(KosarajuStep(*(torch.tensor(flags[name]) for name in ("visited", "finished")),
                                  torch.tensor(discovery), torch.tensor(finish), second_pass,
                                  *(torch.tensor(flags[name]) for name in ("assigned", "expanded")),
                                  torch.tensor(label)))

    for root in range(n):
        if flags["visited"][root]:
            continue
        stack = [root]
        flags["visited"][root], discovery[root] = True, len(steps) + 1
        record()
        while stack:
            top = stack[-1]
            following = next((v for v in out_neighbours[top] if not flags["visited"][v]), None)
            if following is None:
                stack.pop()
                flags["finished"][top], finish[top] = True, len(steps) + 1
            else:
                flags["visited"][following], discovery[following] = True, len(steps) + 1
                stack.append(following)
            record()
    second_pass = True
    record()
    for root in sorted(range(n), key=lambda v: -finish[v]):
        if flags["assigned"][root]:
            continue
        flags["assigned"][root] = True
        record()
        frontier = [root]
        while frontier:
            node = min(frontier)
            frontier.remove(node)
            flags["expanded"][node] = True
            for neighbour in in_neighbours[node]:
                if not flags["assigned"][neighbour]:
                    flags["assigned"][neighbour], label[neighbour] = True, root
                    frontier.append(neighbour)
            record()
    return steps


__all__ = ["BFSReachability", "DegreeHeuristic", "KosarajuStep", "ReachabilityRounds", "Traversal", "bfs_tree",
           "decode_prompt", "dfs_tree", "dijkstra_tree", "kosaraju_scc", "kosaraju_steps"]
