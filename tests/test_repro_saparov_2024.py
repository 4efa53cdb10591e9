"""What the saparov-2024 checks rely on, against networkx.

* on balanced DAGs, L rounds of squaring (path merging over 2^L hops) are right on every query within 2^L hops or
  unreachable and wrong on every reachable query beyond, with the split taken from networkx's distances;
* the degree heuristic, the chance line of the figure, answers +1 on every balanced-DAG query (both ends have
  edges), so its accuracy is the label rate;
* the quick scale's model class searches by path merging on these directed graphs: a disentangled transformer set by
  hand (each layer squares the reachability relation) is exact within 2^L hops and blind beyond, so the quick sizes
  (lookahead ≤ 3 ≤ 2²) are within the capacity of the 2 layers it trains.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from icl_sim.paper_repro.connectivity_measures import query_correct, rounds_accuracy
from icl_sim.models import build_model
from icl_sim.paper_repro.saparov_2024 import MERGING_NODES, SCALES, Settings
from icl_sim.seeding import make_generator
from icl_sim.theory.graph_algorithms import DegreeHeuristic, ReachabilityRounds


def _networkx_distances(prompt, nodes: int) -> np.ndarray:
    """Directed s → t distance per prompt from networkx (−1 if unreachable), independent of the task's BFS."""
    distance = []
    for b in range(prompt.xs.shape[0]):
        g = nx.DiGraph()
        g.add_nodes_from(range(nodes))
        g.add_edges_from(zip(*np.nonzero(prompt.latent["adjacency"][b].numpy())))
        s, t = int(prompt.latent["source"][b]), int(prompt.latent["target"][b])
        distance.append(nx.shortest_path_length(g, s, t) if nx.has_path(g, s, t) else -1)
    return np.array(distance)


def test_path_merging_is_exact_within_two_to_the_l_hops_on_balanced_dags():
    prompt = Settings.task(MERGING_NODES).sample(300, make_generator(0, "eval"), dtype=torch.float64)
    distance = _networkx_distances(prompt, MERGING_NODES)
    assert distance.max() > 16  # the beyond side of L = 4 is exercised
    for rounds in (1, 2, 3, 4):
        correct = query_correct(ReachabilityRounds(rounds, 2), prompt).numpy()
        inside = (distance < 0) | (distance <= 2**rounds)
        assert (correct[inside] == 1).all() and (correct[~inside] == 0).all()
        found = rounds_accuracy(prompt, rounds, 2)
        assert (found["inside"], found["beyond"]) == (1.0, 0.0)
        assert found["beyond_count"] == (~inside).sum()


def test_degree_heuristic_is_the_label_rate_on_balanced_dags():
    prompt = Settings.task(9).sample(2000, make_generator(1, "eval"), dtype=torch.float64)
    correct = query_correct(DegreeHeuristic(), prompt)
    assert torch.equal(correct, prompt.latent["label"].double())


def _squaring_disentangled(nodes: int, layers: int):
    """A disentangled transformer set by hand to square the reachability relation in each layer (L = 1 or 2).

    Node token [A_v ; one-hot v ; 0], width w = 2n + 1.  Layer 1 scores A_u · e_v = A_uv and appends
    Σ_v A_uv [A_v ; e_v] / n = [A²_u ; A_u] / n; layer 2 scores S_uv = (I + A + A²)_uv from the stream and appends
    (S A)_u / n and (S A²)_u / n².  The read-out attends to node s (one-hot s against one-hot j) and reads column t, so
    the output is P_st / n − 1/(2n) with P = A + A² (L = 1) or S (A + A²) = A + 2A² + 2A³ + A⁴ (L = 2): positive iff
    a walk of 1..2^L edges leads from s to t.
    """
    task = Settings.task(nodes)
    model = build_model("disentangled", task.dim, task.points, layers=layers).double()
    n, w = nodes, task.dim + 1
    eye = torch.eye(n, dtype=torch.float64)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.attention[0][:n, n:2 * n] = eye  # adjacency block of u against the id block of v: A_uv
        model.read_query[:n, n:] = eye  # the query's one-hot s against the node's one-hot j: attend to node s
        if layers == 1:
            model.read_value[0, :n, n:] = eye  # A_st
            model.read_value[0, w:w + n, n:] = n * eye  # (A²)_st
        else:
            for rows, scale in ((slice(n, 2 * n), 1.0), (slice(0, n), 1.0), (slice(w, w + n), float(n))):
                model.attention[1][rows, n:2 * n] = scale * eye  # S = I + A + A²
            model.read_value[0, 2 * w:2 * w + n, n:] = n * eye  # (S A)_st
            model.read_value[0, 3 * w:3 * w + n, n:] = n * n * eye  # (S A²)_st
        model.bias.fill_(-0.5 / n)
    return model, task


@pytest.mark.parametrize("layers", [1, 2])
def test_disentangled_transformer_merges_paths_over_two_to_the_l_hops(layers):
    nodes = 17  # lookahead up to 7: both sides of 2^L for L = 1, 2
    model, task = _squaring_disentangled(nodes, layers)
    prompt = task.sample(400, make_generator(4, "eval"), dtype=torch.float64)
    distance = _networkx_distances(prompt, nodes)
    answer = (model.predict(prompt.xs, prompt.ys)[:, -1] > 0).numpy()
    assert np.array_equal(answer, (distance > 0) & (distance <= 2 ** layers))
    assert (distance > 2 ** layers).any() and (distance == 2 ** layers).any()


def test_quick_sizes_are_within_the_capacity_of_the_quick_model():
    quick = SCALES["quick"]
    assert quick.model == "disentangled" and 2 ** quick.n_layer >= Settings.task(max(quick.node_counts)).lookahead
    model, task = _squaring_disentangled(max(quick.node_counts), quick.n_layer)
    prompt = task.sample(500, make_generator(5, "eval"), dtype=torch.float64)
    assert torch.equal(model.predict(prompt.xs, prompt.ys)[:, -1] > 0, prompt.latent["label"])
