"""Tests for the graph-connectivity task and its baselines, against networkx as the reference.

networkx (a dev dependency) computes every reference here: reachability (``has_path``),
shortest-path lengths, degrees, components and diameters, one graph at a time, with
no code shared with the vectorised sampler or baselines.  Monte Carlo checks allow
``Z = 5`` standard errors (false alarm ≈ 6e-7 per check; the seeds are fixed anyway).
No peeking, determinism, dtypes, generic bad parameters: tests/test_contracts.py.
"""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch
from tiny_runs import train_and_evaluate
from icl_sim.tasks import TASKS, GraphConnectivity, make_task
from icl_sim.tasks.graph_connectivity import reachability, within_hops
from icl_sim.theory.graph_algorithms import (
    BFSReachability,
    DegreeHeuristic,
    ReachabilityRounds,
    decode_prompt,
)

from icl_sim.params import parse_parameters
from icl_sim.seeding import make_generator

Z = 5.0

CONFIGS = [
    {"generator": "erdos-renyi", "nodes": 10, "min_nodes": 4, "average_degree": 1.5},
    {"generator": "erdos-renyi", "nodes": 10, "directed": True, "average_degree": 2.0},
    {"generator": "chain", "nodes": 11, "path_length": 3},
    {"generator": "chain", "nodes": 11, "path_length": 4, "directed": True},
    {"generator": "bounded-diameter", "nodes": 12, "max_diameter": 3, "components": 2, "extra_edges": 0.2},
    {"generator": "bounded-diameter", "nodes": 12, "max_diameter": 4, "components": 3, "directed": True,
     "extra_edges": 0.3},
]


def draw(task, batch, seed=0, dtype=torch.float64):
    return task.sample(batch, make_generator(seed, "eval"), dtype=dtype)


def to_graph(adjacency: np.ndarray, directed: bool):
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(range(adjacency.shape[0]))
    graph.add_edges_from(zip(*np.nonzero(adjacency)))
    return graph


def last_correct(predictor, prompt) -> np.ndarray:
    preds = predictor.predict(prompt.xs, prompt.ys)
    assert preds.shape == prompt.ys.shape and preds.dtype == torch.float64
    assert set(preds.unique().tolist()) <= {-1.0, 1.0}
    return (preds[:, -1] == prompt.ys[:, -1]).numpy()


# -- encoding, labels and distances -----------------------------------------------------------
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: f"{p['generator']}-{'dir' if p.get('directed') else 'undir'}")
def test_labels_distances_and_encoding_match_networkx(params):
    task = GraphConnectivity(**params)
    n = task.nodes
    prompt = draw(task, 150, seed=1)
    assert prompt.xs.shape == (150, n + 1, 2 * n) and prompt.ys.shape == (150, n + 1)
    assert (task.dim, task.points) == (2 * n, n + 1)
    latent = {k: v.numpy() for k, v in prompt.latent.items()}
    assert latent["adjacency"].dtype == bool and latent["label"].dtype == bool
    assert prompt.latent["source"].dtype == torch.long and prompt.latent["distance"].dtype == torch.long
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    eye = np.eye(n)
    for b in range(150):
        a, s, t = latent["adjacency"][b], latent["source"][b], latent["target"][b]
        assert not a.diagonal().any()
        if not task.directed:
            np.testing.assert_array_equal(a, a.T)
        # tokens: [adjacency row ; one-hot(v)] then [one-hot(s) ; one-hot(t)], labels only at the end
        np.testing.assert_array_equal(xs[b, :n, :n], a.astype(float))
        np.testing.assert_array_equal(xs[b, :n, n:], eye)
        np.testing.assert_array_equal(xs[b, n], np.concatenate([eye[s], eye[t]]))
        np.testing.assert_array_equal(ys[b, :n], 0.0)
        graph = to_graph(a, task.directed)
        connected = nx.has_path(graph, s, t)
        assert s != t
        assert latent["label"][b] == connected
        assert ys[b, n] == (1.0 if connected else -1.0)
        expected = nx.shortest_path_length(graph, s, t) if connected else -1
        assert latent["distance"][b] == expected


def test_float32_prompt_equals_float64_prompt():
    task = GraphConnectivity(nodes=9)
    p64, p32 = draw(task, 32, seed=3), draw(task, 32, seed=3, dtype=torch.float32)
    assert p32.xs.dtype == torch.float32 and p32.ys.dtype == torch.float32
    torch.testing.assert_close(p32.xs.double(), p64.xs, rtol=0, atol=0)
    torch.testing.assert_close(p32.ys.double(), p64.ys, rtol=0, atol=0)
    for key in p64.latent:
        assert torch.equal(p32.latent[key], p64.latent[key])


def test_reachability_squaring_is_exact_on_long_paths_and_never_overflows():
    # the path 0 - 1 - ... - 511: distances up to 511, where A^511 in float32 would overflow
    n = 512
    a = torch.zeros(1, n, n, dtype=torch.bool)
    idx = torch.arange(n - 1)
    a[0, idx, idx + 1] = True
    expected = torch.ones(n, n, dtype=torch.bool).triu()  # directed: v reachable from u iff v >= u
    assert torch.equal(reachability(a)[0], expected)
    assert torch.equal(reachability(a | a.transpose(1, 2))[0], torch.ones(n, n, dtype=torch.bool))
    # within k hops: 0 <= v - u <= k, for k a power of two and not
    diff = idx.new_tensor(range(n))[None, :] - idx.new_tensor(range(n))[:, None]
    for hops in (8, 9, 511):
        assert torch.equal(within_hops(a, hops)[0], (diff >= 0) & (diff <= hops))


def test_sampling_at_512_nodes_runs_and_matches_bfs():
    for params in ({"nodes": 512}, {"nodes": 512, "generator": "chain", "path_length": 300}):
        task = GraphConnectivity(**params)
        prompt = task.sample(3, make_generator(0, "eval"))
        assert torch.isfinite(prompt.xs).all() and torch.isfinite(prompt.ys).all()
        assert last_correct(BFSReachability(), prompt).all()
        graphs = [to_graph(a.numpy(), False) for a in prompt.latent["adjacency"]]
        for b, graph in enumerate(graphs):
            s, t = int(prompt.latent["source"][b]), int(prompt.latent["target"][b])
            expected = nx.shortest_path_length(graph, s, t) if nx.has_path(graph, s, t) else -1
            assert int(prompt.latent["distance"][b]) == expected


# -- generators -------------------------------------------------------------------------------
def test_erdos_renyi_sizes_padding_and_edge_density():
    task = GraphConnectivity(nodes=12, min_nodes=5, average_degree=2.0)
    prompt = draw(task, 800, seed=4)
    size = prompt.latent["size"].numpy()
    a = prompt.latent["adjacency"].numpy()
    assert size.min() == 5 and size.max() == 12  # the whole range is used (8 values, 800 draws)
    for b in range(len(size)):
        m = size[b]
        assert not a[b, m:].any() and not a[b, :, m:].any()  # padding is isolated
    assert (prompt.latent["source"].numpy() < size).all() and (prompt.latent["target"].numpy() < size).all()
    # edge count: sum over prompts of Binomial(C(m, 2), p_m) with p_m = 2/(m - 1)
    edges = a.sum() / 2
    pairs = size * (size - 1) / 2
    p = 2.0 / (size - 1)
    mean, var = (pairs * p).sum(), (pairs * p * (1 - p)).sum()
    assert abs(edges - mean) <= Z * math.sqrt(var), (edges, mean)
    # size law: uniform on {5..12}; each count ~ Binomial(800, 1/8)
    counts = np.bincount(size, minlength=13)[5:]
    assert np.all(np.abs(counts - 100) <= Z * math.sqrt(800 / 8 * 7 / 8))


@pytest.mark.parametrize("directed", [False, True])
def test_chains_have_the_given_path_length(directed):
    n, length = 17, 4  # three chains of 5 nodes, two isolated nodes
    task = GraphConnectivity(nodes=n, generator="chain", path_length=length, directed=directed)
    prompt = draw(task, 60, seed=5)
    for a in prompt.latent["adjacency"].numpy():
        graph = to_graph(a, directed)
        undirected = graph.to_undirected() if directed else graph
        sizes = sorted(len(c) for c in nx.connected_components(undirected))
        assert sizes == [1, 1, 5, 5, 5]
        for component in nx.connected_components(undirected):
            if len(component) == 1:
                continue
            sub = graph.subgraph(component)
            assert sub.number_of_edges() == length
            if directed:  # one directed path: its longest shortest path has `length` edges
                assert nx.is_directed_acyclic_graph(sub) and nx.dag_longest_path_length(sub) == length
            else:
                assert nx.diameter(sub) == length and max(d for _, d in sub.degree()) == 2


@pytest.mark.parametrize("diameter", [1, 2, 3, 4, 5])
def test_bounded_diameter_generator_respects_the_bound(diameter):
    components = 2
    task = GraphConnectivity(nodes=14, generator="bounded-diameter", max_diameter=diameter,
                             components=components, extra_edges=0.3)
    prompt = draw(task, 60, seed=6)
    largest = 0
    for a in prompt.latent["adjacency"].numpy():
        graph = to_graph(a, False)
        parts = [graph.subgraph(c) for c in nx.connected_components(graph)]
        if diameter == 1:  # only the central edges: `components` edges, every other node isolated
            assert sorted(len(p) for p in parts if len(p) > 1) == [2] * components
        else:
            assert len(parts) == components
        for part in parts:
            d = nx.diameter(part)
            assert d <= diameter
            largest = max(largest, d)
    assert largest >= diameter - 1
    # without extra edges (which only shorten paths) the bound is attained somewhere in 60 trees
    trees = GraphConnectivity(nodes=14, generator="bounded-diameter", max_diameter=diameter, components=components)
    attained = max(nx.diameter(graph.subgraph(c))
                   for a in draw(trees, 60, seed=6).latent["adjacency"].numpy()
                   for graph in [to_graph(a, False)] for c in nx.connected_components(graph))
    assert attained == diameter
    # directed: every shortest path (reachable pair) is at most D long
    directed = GraphConnectivity(nodes=14, generator="bounded-diameter", max_diameter=diameter, directed=True,
                                 extra_edges=0.3)
    for a in draw(directed, 30, seed=7).latent["adjacency"].numpy():
        lengths = dict(nx.all_pairs_shortest_path_length(to_graph(a, True)))
        assert max(max(row.values()) for row in lengths.values()) <= diameter


def test_balanced_labels_within_monte_carlo_tolerance():
    batch = 4000
    for fraction in (0.5, 0.2):
        # chains: every node has a reachable (its chain) and an unreachable (another chain) partner,
        # so the wanted label is always available and P(label) = fraction exactly
        task = GraphConnectivity(nodes=15, generator="chain", path_length=4, reachable_fraction=fraction)
        observed = draw(task, batch, seed=8).latent["label"].double().mean().item()
        assert abs(observed - fraction) <= Z * math.sqrt(fraction * (1 - fraction) / batch), (fraction, observed)
    # extremes are honoured exactly
    assert draw(GraphConnectivity(nodes=10, reachable_fraction=1.0, generator="chain"), 200).latent["label"].all()
    assert not draw(GraphConnectivity(nodes=10, reachable_fraction=0.0, generator="chain"), 200).latent["label"].any()
    # Erdős–Rényi: the label flips only where the wanted kind is absent (here: connected graphs)
    prompt = draw(GraphConnectivity(nodes=6, average_degree=3.0, reachable_fraction=0.0), 300, seed=8)
    flipped = prompt.latent["label"].numpy()
    assert 0 < flipped.sum() < 300
    for a, label in zip(prompt.latent["adjacency"].numpy(), flipped):
        assert label == nx.is_connected(to_graph(a, False))


def test_sources_are_uniform_over_symmetric_nodes():
    # three chains of 4 nodes and no left-over: every node has both kinds of partner, so the
    # source is uniform over the 12 nodes; each count ~ Binomial(6000, 1/12)
    task = GraphConnectivity(nodes=12, generator="chain", path_length=3)
    prompt = draw(task, 6000, seed=9)
    sources = prompt.latent["source"].numpy()
    counts = np.bincount(sources, minlength=12)
    expected = 6000 / 12
    assert np.all(np.abs(counts - expected) <= Z * math.sqrt(expected * 11 / 12))


# -- baselines --------------------------------------------------------------------------------
@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: f"{p['generator']}-{'dir' if p.get('directed') else 'undir'}")
def test_bfs_is_exact_and_decoding_reads_the_tokens(params):
    task = GraphConnectivity(**params)
    prompt = draw(task, 300, seed=10)
    assert last_correct(BFSReachability(), prompt).all()
    adjacency, source, target = decode_prompt(prompt.xs)
    assert torch.equal(adjacency, prompt.latent["adjacency"])
    assert torch.equal(source, prompt.latent["source"]) and torch.equal(target, prompt.latent["target"])


@pytest.mark.parametrize("power", [2, 3])
@pytest.mark.parametrize("rounds", [0, 1, 2])
def test_reachability_rounds_exact_within_power_hops_and_wrong_beyond(rounds, power):
    hops = power**rounds
    predictor = ReachabilityRounds(rounds, power)
    assert predictor.hops == hops
    task = GraphConnectivity(nodes=28, generator="chain", path_length=13, directed=False)
    prompt = draw(task, 600, seed=11)
    correct = last_correct(predictor, prompt)
    preds = predictor.predict(prompt.xs, prompt.ys)[:, -1].numpy()
    for b, a in enumerate(prompt.latent["adjacency"].numpy()):
        s, t = int(prompt.latent["source"][b]), int(prompt.latent["target"][b])
        within = nx.single_source_shortest_path_length(to_graph(a, False), s, cutoff=hops)
        assert preds[b] == (1.0 if t in within else -1.0)  # independent reference: BFS with a cutoff
    distance = prompt.latent["distance"].numpy()
    near = distance <= hops  # includes unreachable (-1)
    far = distance > hops
    assert correct[near].all()
    assert far.sum() > 20 and not correct[far].any()  # every farther reachable pair is missed


def test_degree_heuristic_on_chains_and_the_hard_slice():
    task = GraphConnectivity(nodes=17, generator="chain", path_length=4)
    prompt = draw(task, 2000, seed=12)
    correct = last_correct(DegreeHeuristic(), prompt)
    hard = task.slices(prompt)["hard"].numpy()
    reference_correct, reference_hard = [], []
    for b, a in enumerate(prompt.latent["adjacency"].numpy()):
        graph = to_graph(a, False)
        s, t = int(prompt.latent["source"][b]), int(prompt.latent["target"][b])
        guess = graph.degree(s) > 0 and graph.degree(t) > 0
        connected = nx.has_path(graph, s, t)
        reference_correct.append(guess == connected)
        distance = nx.shortest_path_length(graph, s, t) if connected else -1
        reference_hard.append(distance >= 4 or (not connected and guess))
    np.testing.assert_array_equal(correct, reference_correct)
    np.testing.assert_array_equal(hard, reference_hard)
    all_accuracy, hard_accuracy = correct.mean(), correct[hard].mean()
    # chains of 5 nodes: disconnected pairs mostly lie on two chains, which fools the heuristic;
    # on the hard slice it is right only on the reachable pairs at distance 4
    label = prompt.latent["label"].numpy()
    assert hard_accuracy == pytest.approx(label[hard].mean(), abs=0)
    assert hard_accuracy < all_accuracy - 0.2
    assert all_accuracy > 0.6


# -- registry, parameters, training ----------------------------------------------------------
def test_registered_with_cli_dimension_and_typed_parameters():
    assert TASKS["graph-connectivity"] is GraphConnectivity
    assert GraphConnectivity.dim_parameter == "nodes"
    params = parse_parameters(GraphConnectivity, ["directed=true", "generator=chain", "path_length=2"])
    task = make_task("graph-connectivity", **params)
    assert task.directed is True and task.dim == 32 and task.points == 17


# unknown choices, non-booleans, NaN, non-integer sizes: tests/test_contracts.py, for every task
@pytest.mark.parametrize("params, name", [
    ({"nodes": 1}, "nodes"), ({"reachable_fraction": 1.5}, "reachable_fraction"),
    ({"min_nodes": 1}, "min_nodes"), ({"nodes": 8, "min_nodes": 9}, "min_nodes"),
    ({"average_degree": -1.0}, "average_degree"),
    ({"generator": "chain", "nodes": 8, "path_length": 8}, "path_length"),
    ({"path_length": 0}, "path_length"), ({"max_diameter": 0}, "max_diameter"),
    ({"generator": "bounded-diameter", "nodes": 8, "max_diameter": 3, "components": 5}, "components"),
    ({"components": 0}, "components"),
    ({"extra_edges": 2.0}, "extra_edges"),
])
def test_invalid_parameters_name_the_parameter(params, name):
    with pytest.raises(ValueError, match=name):
        make_task("graph-connectivity", **params)


@pytest.mark.parametrize("nodes", [2, 3])
def test_small_graphs_are_not_refused_for_another_generators_defaults(nodes):
    """path_length (chain) and components (bounded-diameter) bound only their own generator's graphs."""
    task = make_task("graph-connectivity", nodes=nodes, max_diameter=3)
    assert task.path_length > nodes - 1 and task.components > nodes // 2
    adjacency, _ = task.sample_graphs(4, torch.Generator().manual_seed(0))
    assert adjacency.shape == (4, nodes, nodes)


def test_invalid_sample_arguments_and_baseline_parameters():
    task = GraphConnectivity(nodes=6)
    generator = make_generator(0, "eval")
    with pytest.raises(ValueError, match="points"):
        task.sample(4, generator, points=5)
    with pytest.raises(ValueError, match="active_dims"):
        task.sample(4, generator, active_dims=6)
    with pytest.raises(ValueError, match="power"):
        ReachabilityRounds(1, 4)
    with pytest.raises(ValueError, match="rounds"):
        ReachabilityRounds(-1)
    with pytest.raises(ValueError, match="graph prompts"):
        BFSReachability().predict(torch.zeros(2, 6, 8), torch.zeros(2, 6))
    with pytest.raises(ValueError, match="points"):
        make_task("graph-connectivity", points=7)


def test_tiny_gpt_trains_and_evaluation_reports_the_hard_slice(tmp_path):
    # Erdős–Rényi on 6 nodes, average degree 1.5: the degree heuristic scores ≈ 0.93 here
    records = train_and_evaluate(tmp_path / "run", "graph-connectivity", {"nodes": 6}, steps=300, num_prompts=256)
    slices = {(r["predictor"], r["slice"]) for r in records}
    assert ("gpt (trained)", "hard") in slices and ("BFS", "hard") in slices
    by_key = {(r["predictor"], r["slice"]): r for r in records}
    assert all(r["position"] == 6 for r in records)
    assert by_key[("BFS", "all")]["mean"] == 1.0 and by_key[("BFS", "hard")]["mean"] == 1.0
    model = by_key[("gpt (trained)", "all")]["mean"]
    assert math.isfinite(model) and 0.0 <= model <= 1.0
    # above chance (labels are ≈ balanced; 0.5 + 5 standard errors at 256 prompts is 0.66) after 300 steps
    assert model > 0.7


def test_a_diameter_bound_the_law_almost_never_meets_is_refused_not_looped_on():
    """Diameter ≤ 1 asks every component of G(12, 4/11) to be a clique: refused after the redraws, in one line."""
    task = GraphConnectivity(nodes=12, average_degree=4.0, er_max_diameter=1)
    with pytest.raises(ValueError, match="er_max_diameter=1: after 1000 redraws"):
        task.sample(8, torch.Generator().manual_seed(0))
