"""ye-2025's closed forms and data: cubing's reach 3^L (against networkx distances), the disentangled transformer's
two channels set by hand — W = I cubes the adjacency matrix (exact within 3 hops, blind at 4), W = J = 11ᵀ is
the degree heuristic exactly — and the paper's graph laws (the diameter filter, the two cliques) against
networkx."""
from __future__ import annotations

import networkx as nx
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.seeding import make_generator
from icl_sim.paper_repro import ye_2025
from icl_sim.paper_repro.connectivity_measures import query_correct
from icl_sim.tasks import GraphConnectivity
from icl_sim.tasks.graph_connectivity import diameters, pair_prompts, within_hops
from icl_sim.theory.graph_algorithms import DegreeHeuristic, ReachabilityRounds, decode_prompt

N = 12


def _networkx_distances(prompt) -> list[float]:
    """Shortest s → t distance per prompt from networkx (inf if unreachable), independent of the task's BFS."""
    adjacency, source, target = decode_prompt(prompt.xs)
    distances = []
    for a, s, t in zip(adjacency, source.tolist(), target.tolist()):
        graph = nx.from_numpy_array(a.numpy().astype(int))
        distances.append(nx.shortest_path_length(graph, s, t) if nx.has_path(graph, s, t) else float("inf"))
    return distances


@pytest.mark.parametrize("rounds", [1, 2])
def test_cubing_answers_exactly_reachability_within_three_to_the_L(rounds):
    hops = 3 ** rounds
    for path in (hops, hops + 1):
        task = GraphConnectivity(nodes=N, generator="chain", path_length=path)
        prompt = task.sample(300, make_generator(0, "eval"), dtype=torch.float64)
        answer = ReachabilityRounds(rounds, 3).predict(prompt.xs, prompt.ys)[:, -1] > 0
        expected = torch.tensor([d <= hops for d in _networkx_distances(prompt)])
        assert torch.equal(answer, expected)
        if path == hops:  # diameter 3^L: cubing is exact reachability
            assert torch.equal(answer, prompt.latent["label"])


def _hand_set(channel: str):
    """One disentangled layer with W = I (``cubing``) or W = J (``degree``) on the adjacency block."""
    task = GraphConnectivity(nodes=N, generator="bounded-diameter", max_diameter=3, components=2)
    model = build_model("disentangled", task.dim, task.points, layers=1).double()
    width = task.dim + 1  # [A_v ; one-hot v ; y]
    eye = torch.eye(N, dtype=torch.float64)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        block = eye if channel == "cubing" else torch.ones(N, N, dtype=torch.float64)
        model.attention[0][:N, :N] = block  # scores A_u W A_vᵀ
        model.read_query[:N, N:] = eye  # x_qᵀ U x_j = one-hot(s) · one-hot(j): read node s
        for offset in (0, width, width + N):  # A, (A W A) A and A W A of node s, at column t
            model.read_value[0, offset:offset + N, N:] = eye
        model.bias.fill_(-0.5 / N ** 2)  # every walk count is a multiple of 1/N²
    return model


def test_identity_channel_cubes_the_adjacency_matrix():
    model = _hand_set("cubing")
    for path in (3, 4):
        task = GraphConnectivity(nodes=N, generator="chain", path_length=path)
        prompt = task.sample(300, make_generator(1, "eval"), dtype=torch.float64)
        answer = model.predict(prompt.xs, prompt.ys)[:, -1] > 0
        assert torch.equal(answer, torch.tensor([d <= 3 for d in _networkx_distances(prompt)]))
    task = GraphConnectivity(nodes=N, generator="bounded-diameter", max_diameter=3, components=2)
    prompt = task.sample(300, make_generator(2, "eval"), dtype=torch.float64)
    assert torch.equal(model.predict(prompt.xs, prompt.ys)[:, -1] > 0, prompt.latent["label"])


def test_all_ones_channel_is_the_degree_heuristic():
    model = _hand_set("degree")
    task = GraphConnectivity(nodes=N, generator="erdos-renyi", average_degree=1.0)
    prompt = task.sample(500, make_generator(3, "eval"), dtype=torch.float64)
    answer = model.predict(prompt.xs, prompt.ys)[:, -1] > 0
    heuristic = DegreeHeuristic().predict(prompt.xs, prompt.ys)[:, -1] > 0
    assert torch.equal(answer, heuristic)
    assert not torch.equal(answer, prompt.latent["label"])  # and it is not reachability


def _networkx_diameter(adjacency) -> int:
    """The longest shortest path between connected nodes (0 without edges), from networkx."""
    graph = nx.from_numpy_array(adjacency.numpy().astype(int))
    return max(max(nx.single_source_shortest_path_length(graph, u).values()) for u in graph.nodes)


def test_diameter_filter_keeps_exactly_the_graphs_within_the_bound():
    er = GraphConnectivity(nodes=20, average_degree=0.08 * 19)
    unfiltered = er.sample(600, make_generator(4, "eval")).latent["adjacency"]
    filtered = GraphConnectivity(nodes=20, average_degree=0.08 * 19, er_max_diameter=9).sample(
        600, make_generator(4, "eval")).latent["adjacency"]
    expected = torch.tensor([_networkx_diameter(a) for a in unfiltered])
    assert torch.equal(diameters(unfiltered), expected)
    assert int((expected > 9).sum()) > 5  # ER(20, 0.08) exceeds the capacity 9 in a few % of graphs
    assert max(_networkx_diameter(a) for a in filtered) <= 9
    kept = expected <= 9  # a graph within the bound is kept as drawn, the others redrawn
    assert torch.equal(filtered[kept], unfiltered[kept])


@pytest.mark.parametrize("hops", [1, 2, 5, 9])
def test_within_hops_is_networkx_distance_at_most_hops(hops):
    adjacency = GraphConnectivity(nodes=12, average_degree=2.0).sample(100, make_generator(5, "eval")).latent[
        "adjacency"]
    for a, reach in zip(adjacency, within_hops(adjacency, hops)):
        lengths = dict(nx.all_pairs_shortest_path_length(nx.from_numpy_array(a.numpy().astype(int))))
        expected = torch.tensor([[lengths[u].get(v, hops + 1) <= hops for v in range(12)] for u in range(12)])
        assert torch.equal(reach, expected)


def test_two_cliques_are_two_complete_blocks():
    prompt = GraphConnectivity(nodes=20, generator="cliques", clique_size=10).sample(200, make_generator(6, "eval"))
    for a, s, t, label in zip(prompt.latent["adjacency"], prompt.latent["source"], prompt.latent["target"],
                              prompt.latent["label"]):
        graph = nx.from_numpy_array(a.numpy().astype(int))
        components = sorted(len(c) for c in nx.connected_components(graph))
        assert components == [10, 10] and graph.number_of_edges() == 2 * 45
        assert bool(label) == nx.has_path(graph, int(s), int(t))


def test_query_answers_from_the_last_position_match_the_full_prediction():
    task = ye_2025.test_tasks()[ye_2025.CHAINS]
    prompt = task.sample(64, make_generator(7, "eval"), dtype=torch.float64)
    model = build_model("disentangled", task.dim, task.points, layers=2)
    assert torch.equal(ye_2025.answers_correct(model, prompt), query_correct(model, prompt))


def test_the_held_out_chains_lie_within_capacity_and_defeat_the_heuristic():
    task = ye_2025.test_tasks()[ye_2025.CHAINS]
    prompt = task.sample(500, make_generator(8, "eval"), dtype=torch.float64)
    assert int(prompt.latent["distance"].max()) == ye_2025.CAPACITY
    assert torch.equal(query_correct(ReachabilityRounds(2, 3), prompt), torch.ones(500, dtype=torch.float64))
    heuristic = query_correct(DegreeHeuristic(), prompt)
    assert torch.equal(heuristic, prompt.latent["label"].to(torch.float64))  # right exactly on the connected pairs


def test_beyond_capacity_law_keeps_exactly_the_graphs_of_larger_diameter():
    adjacency = ye_2025.training_tasks()["beyond"].sample(100, make_generator(9, "eval")).latent["adjacency"]
    assert min(_networkx_diameter(a) for a in adjacency) > ye_2025.CAPACITY


def test_all_pairs_targets_are_networkx_connectivity_off_the_diagonal():
    prompt = GraphConnectivity(nodes=N, average_degree=1.5, all_pairs=True).sample(20, make_generator(10, "eval"))
    for a, labels in zip(prompt.latent["adjacency"], prompt.targets[:, -1]):
        lengths = dict(nx.all_pairs_shortest_path_length(nx.from_numpy_array(a.numpy().astype(int))))
        expected = [1.0 if t in lengths[s] else -1.0 for s in range(N) for t in range(N) if s != t]
        assert labels.tolist() == expected
    assert not prompt.targets[:, :-1].any()


def test_all_pairs_at_once_equal_each_pair_asked_alone():
    """The disentangled model's whole-matrix output, its training prediction and the measure's exactness agree
    with its one-query answer to every pair's own prompt."""
    task = GraphConnectivity(nodes=N, average_degree=1.5, all_pairs=True)
    prompt = task.sample(6, make_generator(11, "eval"), dtype=torch.float64)
    model = build_model("disentangled", task.dim, task.points, layers=2, all_pairs=True, init_scale=0.3).double()
    pairs = pair_prompts(prompt.latent["adjacency"])
    alone = model.last_prediction(pairs.xs, pairs.ys).view(6, -1)
    (together,) = model.training_predictions(prompt.xs, prompt.ys, 0, last_only=True)
    assert torch.allclose(together, alone, rtol=1e-10, atol=1e-12)
    assert torch.equal(ye_2025.pairs_correct(model, pairs, 6), ye_2025.answers_correct(model, pairs))
    assert torch.equal(pairs.latent["label"].view(6, -1), prompt.targets[:, -1] > 0)


def test_a_standard_transformer_answers_every_pair_as_each_pair_alone():
    task = GraphConnectivity(nodes=N, average_degree=1.5)
    pairs = pair_prompts(task.sample(4, make_generator(12, "eval")).latent["adjacency"])
    model = build_model("gpt", task.dim, task.points, n_embd=16, n_layer=2, n_head=1).double()
    assert torch.equal(ye_2025.pairs_correct(model, pairs, 4), ye_2025.answers_correct(model, pairs))
