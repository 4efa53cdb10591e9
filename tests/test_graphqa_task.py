"""The GraphQA connectivity task against independent references: networkx's generators and shortest paths, the
GraphQA size buckets, and closed forms for edge counts.

Monte Carlo comparisons allow 5 standard errors of the difference of two independent means.
"""
from __future__ import annotations

import math
import random

import networkx as nx
import numpy as np
import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.tasks.graphqa import LAWS

Z = 5.0


def sample(count, seed=0, **params):
    return make_task("graphqa-connectivity", **params).sample(count, make_generator(seed, "eval"), dtype=torch.float64)


def one_law(law, count, seed=0, **params):
    return sample(count, seed, generators=law, **params).latent


def undirected_edges(latent) -> np.ndarray:
    return latent["adjacency"].sum(dim=(1, 2)).numpy() / 2


def test_buckets_are_graphqas_for_its_sizes_and_sizes_fill_them():
    task = make_task("graphqa-connectivity")
    assert task.buckets() == [(5, 9), (10, 14), (15, 19)]  # graph_generator_utils._NUMBER_OF_NODES_RANGE
    sizes = sample(3000).latent["size"]
    assert set(sizes.tolist()) == set(range(5, 20))
    for low, high in task.buckets():  # each bucket a third of the graphs
        share = float(((sizes >= low) & (sizes <= high)).double().mean())
        assert abs(share - 1 / 3) <= Z * math.sqrt(2 / 9 / 3000)


def test_labels_and_distances_are_networkx_shortest_paths_and_queries_are_distinct_graph_nodes():
    latent = sample(300, nodes=12, min_nodes=4).latent
    for b in range(300):
        graph = nx.from_numpy_array(latent["adjacency"][b].numpy().astype(int))
        s, t, m = int(latent["source"][b]), int(latent["target"][b]), int(latent["size"][b])
        assert s != t and s < m and t < m
        assert not latent["adjacency"][b, m:].any()  # padding nodes are isolated
        reachable = nx.has_path(graph, s, t)
        assert bool(latent["label"][b]) == reachable
        assert int(latent["distance"][b]) == (nx.shortest_path_length(graph, s, t) if reachable else -1)


@pytest.mark.parametrize("law, reference", [("complete", nx.complete_graph), ("path", nx.path_graph),
                                            ("star", lambda m: nx.star_graph(m - 1))])
def test_deterministic_laws_are_networkxs_graphs(law, reference):
    latent = one_law(law, 50, nodes=9)
    for b in range(50):
        m = int(latent["size"][b])
        expected = nx.to_numpy_array(reference(m), nodelist=range(m)).astype(bool)
        assert np.array_equal(latent["adjacency"][b, :m, :m].numpy(), expected)


def test_erdos_renyi_edge_count_has_its_closed_form_mean():
    latent = one_law("er", 4000, nodes=10, min_nodes=10)  # p ~ U[0, 1]: E edges = C(10, 2) / 2
    edges = undirected_edges(latent)
    assert abs(edges.mean() - 45 / 2) <= Z * edges.std() / math.sqrt(edges.size)


def test_barabasi_albert_has_k_times_m_minus_k_edges_with_k_uniform_and_is_connected():
    latent = one_law("ba", 4000, nodes=10, min_nodes=10)
    edges = undirected_edges(latent)
    assert set(edges.tolist()) <= {k * (10 - k) for k in range(1, 10)}  # networkx: star of k, then k per new node
    assert abs(edges.mean() - 10 * 11 / 6) <= Z * edges.std() / math.sqrt(edges.size)  # E k(m − k), k ~ U{1..m−1}
    assert bool(latent["label"].all())  # connected: every pair reachable


def test_barabasi_albert_degrees_match_networkx():
    latent = one_law("ba", 3000, nodes=10, min_nodes=10)
    ours = np.sort(latent["adjacency"].sum(dim=2).numpy(), axis=1).mean(axis=0)
    rng = random.Random(3)
    theirs = np.mean([sorted(d for _, d in nx.barabasi_albert_graph(10, rng.randint(1, 9), seed=rng.randrange(2**31))
                                .degree()) for _ in range(3000)], axis=0)
    spread = np.sort(latent["adjacency"].sum(dim=2).numpy(), axis=1).std(axis=0) * math.sqrt(2 / 3000)
    assert np.all(np.abs(ours - theirs) <= Z * spread + 1e-9)


def networkx_scale_free_edges(m: int, seed: int) -> int:
    graph = nx.Graph(nx.scale_free_graph(m, seed=seed))
    graph.remove_edges_from(nx.selfloop_edges(graph))
    return graph.number_of_edges()


def test_scale_free_edge_count_matches_networkx():
    ours = undirected_edges(one_law("sfn", 3000, nodes=12, min_nodes=12))
    theirs = np.array([networkx_scale_free_edges(12, seed) for seed in range(3000)])
    error = math.sqrt(ours.var() / ours.size + theirs.var() / theirs.size)
    assert abs(ours.mean() - theirs.mean()) <= Z * error


def networkx_graphqa_sbm_edges(m: int, communities_range: tuple[int, int], rng: random.Random) -> int:
    """GraphQA's SBM recipe (graph_generator_utils.generate_graphs, algorithm "sbm") for one graph of m nodes."""
    c = rng.randint(*communities_range)
    sizes = []
    for _ in range(c - 1):
        sizes.append(rng.randint(1, max(1, m - sum(sizes) - (c - 1))))
    sizes.append(m - sum(sizes))
    p = np.array([[rng.random() for _ in range(c)] for _ in range(c)])
    p = np.maximum(p, p.T) if rng.random() < 0.5 else np.minimum(p, p.T)
    return nx.stochastic_block_model(sizes, p.tolist(), seed=rng.randrange(2**31)).number_of_edges()


def test_stochastic_block_model_edge_count_matches_graphqas_recipe():
    ours = undirected_edges(one_law("sbm", 3000, nodes=14, min_nodes=14))  # m = 14: GraphQA's medium bucket, c 2..7
    rng = random.Random(5)
    theirs = np.array([networkx_graphqa_sbm_edges(14, (2, 7), rng) for _ in range(3000)])
    error = math.sqrt(ours.var() / ours.size + theirs.var() / theirs.size)
    assert abs(ours.mean() - theirs.mean()) <= Z * error


def test_laws_are_equally_likely():
    law = sample(7000, nodes=8).latent["law"]
    for index in range(len(LAWS)):
        share = float((law == index).double().mean())
        assert abs(share - 1 / 7) <= Z * math.sqrt((1 / 7) * (6 / 7) / 7000)


def test_finite_training_set_is_fixed_by_pool_seed_and_shared_by_every_stream():
    params = dict(nodes=8, examples=5)
    seen = {tuple(p.xs[b].flatten().tolist()) for seed in (0, 1) for p in [sample(200, seed, **params)]
            for b in range(200)}
    assert len(seen) <= 5
    other = {tuple(p.xs[b].flatten().tolist()) for p in [sample(200, 0, pool_seed=1, **params)] for b in range(200)}
    assert not seen & other


@pytest.mark.parametrize("bad, named", [(dict(generators="er,er"), "generators"), (dict(generators="grid"),
                                                                                  "generators"),
                                        (dict(min_nodes=20), "min_nodes"), (dict(examples=-1), "examples")])
def test_bad_parameters_name_themselves(bad, named):
    with pytest.raises(ValueError, match=named):
        make_task("graphqa-connectivity", **bad)
