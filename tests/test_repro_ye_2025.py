"""ye-2025's closed forms: cubing's reach 3^L (against networkx distances), and the disentangled transformer's
two channels set by hand — W = I cubes the adjacency matrix (exact within 3 hops, blind at 4), W = J = 11ᵀ is
the degree heuristic exactly."""
from __future__ import annotations

import networkx as nx
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.seeding import make_generator
from icl_sim.tasks import GraphConnectivity
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
