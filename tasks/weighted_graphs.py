"""Random test graphs for simulated graph algorithms: Erdős–Rényi graphs, optionally directed and weighted, with a
source node each (de Luca & Fountoulakis 2024, arXiv 2402.01107, who test their constructions on CLRS-30's graphs:
Erdős–Rényi with an edge probability drawn per graph from {0.1, …, 0.9}, undirected for BFS and Dijkstra, directed
for DFS and strongly connected components; their own generator, opallab/graphalgosimulation ``ltfs/utils.py``
``generate_A``, draws integer weights uniform on 1..10).

``erdos_renyi_graphs(generator, count, nodes)`` returns ``adjacency`` (count, n, n) float64: entry [u, v] is the
weight of the edge u → v and 0 where there is none (no self-loops; an undirected graph is symmetric, one draw per
unordered pair), and ``source`` (count,) long, uniform over the nodes.  With ``weights = (low, high)`` an edge's
weight is an integer uniform on low..high (an undirected edge has one weight), else 1.  The edge probability of
each graph is uniform on ``edge_probabilities``.  Everything is drawn from the explicit ``generator``, batched.
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_int

#: CLRS-30's edge probabilities for its Erdős–Rényi graphs, one drawn per graph
CLRS_EDGE_PROBABILITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: the integer weights of the authors' generator (``generate_A``: ``randint(1, 10)``)
AUTHORS_WEIGHTS = (1, 10)


def erdos_renyi_graphs(generator: torch.Generator, count: int, nodes: int, *, directed: bool = False,
                       weights: tuple[int, int] | None = None,
                       edge_probabilities: tuple[float, ...] = CLRS_EDGE_PROBABILITIES,
                       device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` graphs on ``nodes`` nodes: (adjacency (count, n, n) float64 of weights, source (count,) long)."""
    check_int("count", count, 1)
    check_int("nodes", nodes, 1)
    if not edge_probabilities or any(not 0.0 <= p <= 1.0 for p in edge_probabilities):
        raise ValueError(f"edge_probabilities must be a nonempty tuple of values in [0, 1]; got {edge_probabilities}")
    if weights is not None:
        check_int("weights low", weights[0], 1)
        check_int("weights high", weights[1], weights[0], maximum_name="weights low")
    table = torch.tensor(edge_probabilities, dtype=torch.float64, device=device)
    p = table[torch.randint(len(edge_probabilities), (count,), generator=generator, device=device)]
    u = torch.rand(count, nodes, nodes, generator=generator, device=device, dtype=torch.float64)
    edge = u < p[:, None, None]
    w = torch.ones(count, nodes, nodes, dtype=torch.float64, device=device)
    if weights is not None:
        w = torch.randint(weights[0], weights[1] + 1, (count, nodes, nodes), generator=generator,
                          device=device).to(torch.float64)
    if not directed:
        upper = torch.triu(torch.ones(nodes, nodes, dtype=torch.bool, device=device), diagonal=1)
        edge = edge & upper
        edge = edge | edge.transpose(1, 2)
        w = torch.where(upper, w, w.transpose(1, 2))
    edge = edge & ~torch.eye(nodes, dtype=torch.bool, device=device)
    source = torch.randint(nodes, (count,), generator=generator, device=device)
    return torch.where(edge, w, torch.zeros_like(w)), source


__all__ = ["AUTHORS_WEIGHTS", "CLRS_EDGE_PROBABILITIES", "erdos_renyi_graphs"]
