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
"""
from __future__ import annotations

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


__all__ = ["BFSReachability", "DegreeHeuristic", "ReachabilityRounds", "decode_prompt"]
