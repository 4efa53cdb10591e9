"""The GraphQA-style and balanced-DAG generators of graph-connectivity, and the hard slice, against networkx.

networkx computes every reference one graph at a time (reachability, shortest paths, acyclicity,
simple-path lengths, degrees), sharing no code with the vectorised sampler.  Monte Carlo checks
allow ``Z = 5`` standard errors (seeds fixed).
"""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.tasks.graph_connectivity import HARD_DISTANCE, hard_pairs

Z = 5.0


def draw(batch, seed=0, **params):
    task = make_task("graph-connectivity", **params)
    return task, task.sample(batch, make_generator(seed, "eval"), dtype=torch.float64)


def graph(adjacency, directed):
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_nodes_from(range(adjacency.shape[0]))
    g.add_edges_from(zip(*np.nonzero(adjacency)))
    return g


def within(measured, expected, count):
    standard_error = math.sqrt(max(expected * (1 - expected), 1e-12) / count)
    return abs(measured - expected) <= Z * standard_error


# -- graphqa --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("directed", [False, True])
def test_graphqa_labels_distances_and_padding_match_networkx(directed):
    task, prompt = draw(300, nodes=12, min_nodes=3, generator="graphqa", directed=directed,
                        edge_probability_min=0.05, edge_probability_max=0.6)
    latent = prompt.latent
    for b in range(300):
        adjacency, size = latent["adjacency"][b].numpy(), int(latent["size"][b])
        s, t = int(latent["source"][b]), int(latent["target"][b])
        assert 3 <= size <= 12 and s != t and s < size and t < size
        assert not adjacency[size:].any() and not adjacency[:, size:].any()  # padding is isolated
        assert not np.diag(adjacency).any()
        if not directed:
            assert (adjacency == adjacency.T).all()
        g = graph(adjacency, directed)
        assert bool(latent["label"][b]) == nx.has_path(g, s, t)
        expected = nx.shortest_path_length(g, s, t) if nx.has_path(g, s, t) else -1
        assert int(latent["distance"][b]) == expected
        assert prompt.ys[b, -1] == (1.0 if nx.has_path(g, s, t) else -1.0)


def test_graphqa_sizes_come_from_power_of_two_buckets_uniformly():
    _, prompt = draw(20_000, nodes=20, min_nodes=5, generator="graphqa")
    size = prompt.latent["size"]
    buckets = [(5, 7), (8, 15), (16, 20)]  # [2^k, 2^(k+1) - 1] ∩ [5, 20]
    for low, high in buckets:
        inside = (size >= low) & (size <= high)
        assert within(float(inside.float().mean()), 1 / 3, 20_000)
        for m in range(low, high + 1):  # uniform inside the bucket
            assert within(float((size == m).float().mean()), 1 / 3 / (high - low + 1), 20_000)
    assert int(size.min()) >= 5 and int(size.max()) <= 20


def test_graphqa_edge_probability_is_uniform_per_graph_and_pairs_are_uniform():
    count = 20_000
    _, prompt = draw(count, nodes=6, generator="graphqa", edge_probability_min=0.2, edge_probability_max=0.8)
    adjacency = prompt.latent["adjacency"]
    density = adjacency.triu(1).sum(dim=(1, 2)).double() / 15  # m = 6: 15 pairs
    # E[density] = E[p] = 0.5 and Var[density] = Var[p] + E[p(1 - p)]/15 with p ~ U(0.2, 0.8)
    var_p = 0.6**2 / 12
    expected_var = var_p + (0.5 - (var_p + 0.25)) / 15
    assert abs(float(density.mean()) - 0.5) <= Z * math.sqrt(expected_var / count)
    assert abs(float(density.var()) - expected_var) <= 0.1 * expected_var
    pairs = prompt.latent["source"] * 6 + prompt.latent["target"]
    frequencies = torch.bincount(pairs, minlength=36).double() / count
    for s in range(6):
        for t in range(6):
            assert within(float(frequencies[s * 6 + t]), 0.0 if s == t else 1 / 30, count)


# -- balanced-dag ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("params", [dict(nodes=16), dict(nodes=13, branches=3, average_degree=2.5),
                                    dict(nodes=9, max_lookahead=2, reachable_fraction=0.3)])
def test_balanced_dag_is_a_layered_dag_with_exact_labels(params):
    task, prompt = draw(300, generator="balanced-dag", directed=True, **params)
    latent = prompt.latent
    for b in range(300):
        adjacency = latent["adjacency"][b].numpy()
        g = graph(adjacency, True)
        s, t = int(latent["source"][b]), int(latent["target"][b])
        assert nx.is_directed_acyclic_graph(g)
        reachable = nx.has_path(g, s, t)
        assert bool(latent["label"][b]) == reachable
        # every path from s to t has the same length: the distance is the level difference
        lengths = {len(path) - 1 for path in nx.all_simple_paths(g, s, t)}
        assert len(lengths) == (1 if reachable else 0)
        if reachable:
            assert lengths == {int(latent["distance"][b])}
            assert 1 <= int(latent["distance"][b]) <= task.lookahead
        else:
            assert int(latent["distance"][b]) == -1
        # the source is a branch head: its single parent (the start) has `branches` children, all heads
        parents = list(g.predecessors(s))
        assert g.out_degree(s) >= 1 and g.in_degree(t) >= 1
        assert any(g.out_degree(p) >= task.branches for p in parents)


def test_balanced_dag_balances_distances_and_labels():
    count = 20_000
    task, prompt = draw(count, generator="balanced-dag", directed=True, nodes=16)
    latent = prompt.latent
    assert task.lookahead == 6  # (16 - 1) // 2 - 1
    assert within(float(latent["label"].double().mean()), 0.5, count)  # every distractor query is negative
    positives = latent["distance"][latent["label"]]
    for distance in range(1, 7):
        assert within(float((positives == distance).double().mean()), 1 / 6, positives.numel())
    # ids carry no structure: the goal is uniform over the nodes
    goal = torch.bincount(latent["target"], minlength=16).double() / count
    assert all(within(float(f), 1 / 16, count) for f in goal)
    # no shortcut: the degree heuristic is at chance (both ends of every query have edges)
    degree = task.baselines()["Degree heuristic"].predict(prompt.xs, prompt.ys)[:, -1]
    assert torch.equal(degree, torch.ones(count, dtype=torch.float64))


def test_balanced_dag_is_seeded_and_validated():
    task = make_task("graph-connectivity", generator="balanced-dag", directed=True, nodes=10)
    first = task.sample(8, make_generator(4, "train", 2))
    again = task.sample(8, make_generator(4, "train", 2))
    assert torch.equal(first.xs, again.xs) and torch.equal(first.ys, again.ys)
    assert not torch.equal(first.xs, task.sample(8, make_generator(5, "train", 2)).xs)
    with pytest.raises(ValueError, match="directed"):
        make_task("graph-connectivity", generator="balanced-dag", nodes=10)
    with pytest.raises(ValueError, match="branches"):  # a start and k branches of ≥ 2 nodes need n ≥ 2k + 1
        make_task("graph-connectivity", generator="balanced-dag", directed=True, nodes=10, branches=5)
    with pytest.raises(ValueError, match="max_lookahead"):
        make_task("graph-connectivity", generator="balanced-dag", directed=True, nodes=10, max_lookahead=4)
    with pytest.raises(ValueError, match="edge_probability_max"):
        make_task("graph-connectivity", generator="graphqa", edge_probability_min=0.5, edge_probability_max=0.2)


# -- the hard slice -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("params", [dict(generator="erdos-renyi", nodes=12, min_nodes=5),
                                    dict(generator="graphqa", nodes=12, edge_probability_max=0.3, directed=True),
                                    dict(generator="balanced-dag", nodes=14, directed=True)])
def test_hard_pairs_against_networkx(params):
    task, prompt = draw(400, seed=3, **params)
    latent, hard = prompt.latent, hard_pairs(prompt.latent)
    assert torch.equal(hard, task.slices(prompt)["hard"])
    for b in range(400):
        g = graph(latent["adjacency"][b].numpy(), task.directed)
        s, t = int(latent["source"][b]), int(latent["target"][b])
        if nx.has_path(g, s, t):
            expected = nx.shortest_path_length(g, s, t) >= HARD_DISTANCE
        else:
            expected = g.degree(s) > 0 and g.degree(t) > 0
        assert bool(hard[b]) == expected
