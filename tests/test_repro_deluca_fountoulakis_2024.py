"""deluca-fountoulakis-2024: the traversal references against networkx, the test-graph generator's law, the graph
head against the adjacency product written out, and the constructions exact loop by loop on random graphs, failing
where the positional codes collide (n ≥ 2π/ε) or cannot be told apart in float64, and at random weights."""
from __future__ import annotations

import math

import networkx as nx
import pytest
import torch

from icl_sim.models.constructed import AttentionHead
from icl_sim.models.graph_simulation import (INF, STREAM, GraphHead, decode, decode_scc, graph_construction,
                                             margin_temperature, padded_adjacency, position_codes, simulable_nodes,
                                             simulate)
from icl_sim.paper_repro import deluca_fountoulakis_2024 as repro
from icl_sim.tasks.weighted_graphs import erdos_renyi_graphs
from icl_sim.theory.graph_algorithms import bfs_tree, dfs_tree, dijkstra_tree, kosaraju_scc, kosaraju_steps

N = 12


def _graphs(seed: int, count: int, nodes: int, directed: bool, weights=None, probabilities=(0.1, 0.2, 0.3)):
    generator = torch.Generator().manual_seed(seed)
    return erdos_renyi_graphs(generator, count, nodes, directed=directed, weights=weights,
                              edge_probabilities=probabilities)


def _networkx(adjacency: torch.Tensor, directed: bool):
    graph = nx.DiGraph() if directed else nx.Graph()
    n = adjacency.shape[0]
    graph.add_nodes_from(range(n))
    for u in range(n):  # neighbours inserted in increasing index: networkx scans them in that order
        for v in range(n):
            if adjacency[u, v] != 0:
                graph.add_edge(u, v, weight=float(adjacency[u, v]))
    return graph


@pytest.mark.parametrize("directed", [False, True])
def test_traversal_references_agree_with_networkx(directed):
    adjacency, source = _graphs(0, 60, N, directed, weights=(1, 10))
    for a, s in zip(adjacency, source.tolist()):
        graph = _networkx(a, directed)
        bfs = bfs_tree(a, s)
        assert all(bfs.parent[v] == p for v, p in nx.bfs_predecessors(graph, s, sort_neighbors=sorted))
        assert sorted(bfs.order.tolist()) == sorted(nx.node_connected_component(graph, s) if not directed
                                                    else nx.descendants(graph, s) | {s})
        dfs = dfs_tree(a, s)
        assert dfs.order.tolist() == list(nx.dfs_preorder_nodes(graph, s))
        assert all(dfs.parent[v] == p for v, p in nx.dfs_predecessors(graph, s).items())
        dijkstra = dijkstra_tree(a, s)
        lengths = nx.single_source_dijkstra_path_length(graph, s)
        for v in range(N):
            assert dijkstra.distance[v].item() == lengths.get(v, math.inf)
            if v in lengths and v != s:  # the parent lies on a shortest path
                p = int(dijkstra.parent[v])
                assert lengths[p] + a[p, v].item() == lengths[v]
        components = nx.strongly_connected_components(graph) if directed else nx.connected_components(graph)
        labels = kosaraju_scc(a).parent.tolist()
        assert {frozenset(c) for c in components} == {frozenset(v for v in range(N) if labels[v] == label)
                                                      for label in set(labels)}
        assert all(labels[label] == label for label in labels)  # a label is a member of its component


def test_kosaraju_steps_against_networkx():
    """Pass 1's timestamps are networkx's depth-first discovery and finishing events on one clock; pass 2 starts at
    the unassigned node of latest finish and each expansion assigns exactly the unassigned in-neighbours; the last
    step's labels are the strongly connected components (and ``kosaraju_scc``'s labels)."""
    adjacency, _ = _graphs(6, 40, 9, directed=True)
    for a in adjacency:
        graph, steps = _networkx(a, True), kosaraju_steps(a)
        clock, discovery, finish = 0, {}, {}
        for _, v, kind in nx.dfs_labeled_edges(graph):  # roots in index order, neighbours in insertion order
            if kind in ("forward", "reverse"):
                clock += 1
                (discovery if kind == "forward" else finish)[v] = clock
        last = steps[-1]
        assert last.discovery.tolist() == [discovery[v] for v in range(9)]
        assert last.finish.tolist() == [finish[v] for v in range(9)]
        components = list(nx.strongly_connected_components(graph))
        assert len(steps) == 2 * 9 + 1 + 9 + len(components)
        assert torch.equal(last.label, kosaraju_scc(a).parent)
        assert {frozenset(c) for c in components} == {frozenset((last.label == label).nonzero().flatten().tolist())
                                                      for label in last.label.unique()}
        for before, after in zip(steps[2 * 9:], steps[2 * 9 + 1:]):
            assert after.second_pass and (after.assigned.sum() > before.assigned.sum()
                                          or after.expanded.sum() == before.expanded.sum() + 1)
            if after.expanded.sum() == before.expanded.sum() + 1:  # an expansion: its unassigned in-neighbours join
                node = int((after.expanded & ~before.expanded).nonzero())
                joined = set((after.assigned & ~before.assigned).nonzero().flatten().tolist())
                assert joined == {w for w in graph.predecessors(node) if not before.assigned[w]}
                assert node == min(v for v in range(9) if before.assigned[v] and not before.expanded[v])
            else:  # a start: the unassigned node of latest finish
                root = int((after.assigned & ~before.assigned).nonzero())
                assert root == max((v for v in range(9) if not before.assigned[v]), key=lambda v: finish[v])


def test_scc_checked_loop_by_loop_not_only_its_labels():
    """A construction whose second pass expands the largest index first finds the same components, so its final
    labels are right, but its state after the loops of the second pass is not Kosaraju's step: it fails."""
    adjacency, source = _graphs(7, 16, N, directed=True, probabilities=(0.2, 0.3))
    construction = graph_construction("scc")
    frontier = construction.layers[0].heads[2]  # select: stack top, restart root, pass-2 frontier, pass-2 root
    column = STREAM.column("index")
    assert frontier.key[0, column] == -1e-3
    frontier.key[0, column] = 1e-3
    states = simulate(construction, adjacency, source, repro.loops_for("scc", N))
    labels = decode_scc(states[-1])["label"]
    assert all(torch.equal(labels[b], kosaraju_scc(a).parent) for b, a in enumerate(adjacency))
    exact, loops = repro.exact_graphs(construction, "scc", adjacency, source, 1e-2)
    assert not exact.all() and loops.min() < 1
    assert repro.exact_graphs(graph_construction("scc"), "scc", adjacency, source, 1e-2)[0].all()


def test_float32_breaks_where_its_roundoff_meets_the_code_gap():
    """In float32 (u = 6e-8) a path is simulated exactly at ε = 1e-3 (1 − cos ε = 8.4 u) and not at ε = 1e-4
    (0.084 u), where float64 still is; float64's own break lies near √(2u₆₄) = 1.5e-8."""
    path = torch.zeros(1, 8, 8, dtype=torch.float64)
    for v in range(7):
        path[0, v, v + 1] = path[0, v + 1, v] = 1.0
    source = torch.zeros(1, dtype=torch.long)
    for epsilon, dtype, expected in ((1e-3, torch.float32, True), (1e-4, torch.float32, False),
                                     (1e-4, torch.float64, True)):
        construction = graph_construction("bfs", temperature=margin_temperature(epsilon))
        assert bool(repro.exact_graphs(construction, "bfs", path, source, epsilon, dtype)[0][0]) is expected
    assert repro.resolution_limit("float32") == pytest.approx(3.45e-4, rel=1e-3)
    assert repro.resolution_limit("float64") == pytest.approx(1.49e-8, rel=1e-3)
    with pytest.raises(ValueError, match="dtype"):
        simulate(graph_construction("bfs"), path, source, 1, dtype=torch.float16)


def test_generator_law():
    adjacency, source = _graphs(1, 400, 10, directed=False, weights=(1, 10), probabilities=(0.3,))
    edges = adjacency != 0
    assert torch.equal(adjacency, adjacency.transpose(1, 2))
    assert not edges.diagonal(dim1=1, dim2=2).any()
    assert set(adjacency[edges].unique().tolist()) == set(range(1, 11))
    density = edges.double().sum() / (400 * 10 * 9)  # 18 000 pair draws at p = 0.3: standard error 0.0034
    assert abs(density.item() - 0.3) < 0.015
    directed, _ = _graphs(1, 400, 10, directed=True, probabilities=(0.3,))
    assert not torch.equal(directed, directed.transpose(1, 2)) and set(directed.unique().tolist()) == {0.0, 1.0}
    assert source.min() >= 0 and source.max() < 10
    again, _ = _graphs(1, 400, 10, directed=False, weights=(1, 10), probabilities=(0.3,))
    assert torch.equal(again, adjacency)


def test_graph_head_with_code_attention_is_the_transposed_adjacency_product():
    adjacency, _ = _graphs(2, 3, N, directed=True, weights=(1, 10))
    padded = padded_adjacency(adjacency)
    state = torch.zeros(3, N + 1, STREAM.width, dtype=torch.float64)
    state[:, :, STREAM["code"]] = position_codes(N + 1, 1e-2)
    state[:, :, STREAM.column("current")] = torch.rand(3, N + 1, generator=torch.Generator().manual_seed(0),
                                                       dtype=torch.float64)
    head = GraphHead.zeros(STREAM, 2, "adjacency", transpose=True)
    head.query[:, STREAM["code"]] = torch.eye(2)
    head.key[:, STREAM["code"]] = torch.eye(2)
    head.value[STREAM.column("read"), STREAM.column("current")] = 1.0
    update = head(state, 1e7, {"adjacency": padded})  # the authors' T = 1e-7
    expected = padded.transpose(1, 2) @ state[:, :, STREAM.column("current")].unsqueeze(-1)
    assert torch.allclose(update[:, :, STREAM.column("read")], expected.squeeze(-1), rtol=0, atol=1e-12)
    plain = AttentionHead(head.query, head.key, head.value)  # the same head without the graph mixes nothing
    assert torch.allclose(plain(state, 1e7, {})[:, :, STREAM.column("read")], state[:, :, STREAM.column("current")],
                          atol=1e-12)


@pytest.mark.parametrize("algorithm", ["bfs", "dfs", "dijkstra", "scc"])
def test_construction_is_exact_loop_by_loop(algorithm):
    directed, weights, _ = repro.ALGORITHMS[algorithm]
    adjacency, source = _graphs(3, 24, N, directed, weights, probabilities=(0.1, 0.2, 0.4))
    exact, loops = repro.exact_graphs(graph_construction(algorithm), algorithm, adjacency, source, 1e-2)
    assert exact.all() and (loops == 1).all()


def test_states_equal_the_references_written_out():
    adjacency, source = _graphs(4, 8, N, directed=False, weights=(1, 10))
    states = simulate(graph_construction("dijkstra"), adjacency, source, N + 1)
    out = decode(states[-1])
    for b in range(8):
        reference = dijkstra_tree(adjacency[b], int(source[b]))
        distance = torch.where(reference.distance.isinf(), torch.full_like(reference.distance, INF),
                               reference.distance)
        assert torch.equal(out["parent"][b], reference.parent) and torch.equal(out["distance"][b], distance)
        expanded = [int(decode(state)["last"][b]) for state in states]
        assert expanded == reference.order.tolist() + [-1] * (N + 1 - len(reference.order))


def test_simulable_nodes_closed_form():
    assert simulable_nodes(2 * math.pi / 24) == 23
    assert simulable_nodes(1e-2) == 628  # 2π/0.01 = 628.3
    assert simulable_nodes(3e-9) == 0  # 1 − cos ε = 4.5e-18 below float64's unit roundoff 1.1e-16
    assert simulable_nodes(1e-4, torch.float32) == 0 and simulable_nodes(1e-2, torch.float32) == 628
    assert margin_temperature(1e-2) == pytest.approx(1e-7, rel=1e-4)  # the authors' (ε, T)


def test_exact_up_to_the_code_bound_and_not_beyond():
    epsilon = 2 * math.pi / 8  # n_max = 7
    construction = graph_construction("bfs", temperature=margin_temperature(epsilon))
    path = torch.zeros(1, 11, 11, dtype=torch.float64)  # a path 0 - 1 - ... - 10: every node is expanded
    for v in range(10):
        path[0, v, v + 1] = path[0, v + 1, v] = 1.0
    for nodes, expected in ((7, True), (11, False)):
        exact, _ = repro.exact_graphs(construction, "bfs", path[:, :nodes, :nodes], torch.zeros(1, dtype=torch.long),
                                      epsilon)
        assert bool(exact[0]) is expected
    for epsilon, expected in ((1e-7, True), (3e-9, False)):
        construction = graph_construction("bfs", temperature=margin_temperature(epsilon))
        exact, _ = repro.exact_graphs(construction, "bfs", path[:, :8, :8], torch.zeros(1, dtype=torch.long), epsilon)
        assert bool(exact[0]) is expected


def test_random_weights_simulate_nothing():
    adjacency, source = _graphs(5, 8, N, directed=False)
    construction = graph_construction("bfs").random(torch.Generator().manual_seed(0))
    exact, loops = repro.exact_graphs(construction, "bfs", adjacency, source, 1e-2)
    assert not exact.any() and loops.max() < 1
