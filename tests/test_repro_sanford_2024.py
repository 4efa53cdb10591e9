"""What the sanford-2024 checks rely on, against independent references (networkx, the ⌈log₂⌉ formula).

* ``rounds_accuracy`` splits queries at power^L hops exactly as networkx's shortest paths do, and L rounds of
  squaring / cubing are right on every query inside and wrong on every reachable one beyond;
* ``rounds_needed`` is ⌈log₂ d⌉ of the networkx distance d (0 for adjacent or unreachable pairs), so its maximum
  over graphs of m nodes is at most ⌈log₂(m − 1)⌉;
* the reproduction's size buckets are exactly the sizes the GraphQA generator draws.
"""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from icl_sim.paper_repro.connectivity_measures import accuracy_band, rounds_accuracy, rounds_needed
from icl_sim.paper_repro.sanford_2024 import SCALES, size_buckets
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task


def sample(count, seed=0, **params):
    return make_task("graph-connectivity", **params).sample(count, make_generator(seed, "eval"), dtype=torch.float64)


def networkx_distances(prompt, directed=False):
    out = []
    for b in range(prompt.xs.shape[0]):
        adjacency = prompt.latent["adjacency"][b].numpy()
        g = nx.DiGraph() if directed else nx.Graph()
        g.add_nodes_from(range(adjacency.shape[0]))
        g.add_edges_from(zip(*np.nonzero(adjacency)))
        s, t = int(prompt.latent["source"][b]), int(prompt.latent["target"][b])
        out.append(nx.shortest_path_length(g, s, t) if nx.has_path(g, s, t) else -1)
    return np.array(out)


def test_rounds_accuracy_splits_at_power_hops_like_networkx():
    prompt = sample(400, nodes=17, generator="chain", path_length=16)
    distance = networkx_distances(prompt)
    for rounds, power in ((1, 2), (2, 2), (3, 2), (1, 3), (2, 3)):
        found = rounds_accuracy(prompt, rounds, power)
        inside = (distance < 0) | (distance <= power**rounds)
        assert found["inside_count"] == inside.sum() and found["beyond_count"] == (~inside).sum()
        assert found["inside"] == 1.0
        assert found["beyond_count"] == 0 or found["beyond"] == 0.0


def test_rounds_needed_is_the_ceiling_of_log2_distance():
    prompt = sample(600, nodes=12, min_nodes=4, generator="graphqa", edge_probability_max=0.4)
    distance = networkx_distances(prompt)
    expected = [math.ceil(math.log2(d)) if d > 1 else 0 for d in distance]
    assert rounds_needed(prompt).tolist() == expected
    size = prompt.latent["size"].numpy()
    for m in np.unique(size):
        assert max(e for e, s in zip(expected, size) if s == m) <= math.ceil(math.log2(m - 1))


def test_size_buckets_are_the_generators_support():
    for settings in SCALES.values():
        prompt = sample(4000, nodes=settings.nodes, min_nodes=settings.min_nodes, generator="graphqa")
        sizes = set(prompt.latent["size"].tolist())
        covered = {m for low, high in size_buckets(settings) for m in range(low, high + 1)}
        assert sizes == covered


def test_accuracy_band_is_the_mean_with_a_band_around_it():
    correct = torch.tensor([1.0, 0.0, 1.0, 1.0])
    band = accuracy_band(correct)
    assert band["mean"] == 0.75 and band["count"] == 4 and band["ci_low"] <= 0.75 <= band["ci_high"]
    assert math.isnan(accuracy_band(correct, torch.zeros(4, dtype=torch.bool))["mean"])


def test_the_depth_claim_is_the_hard_slice_gap_seed_by_seed():
    from icl_sim.paper_repro import sanford_2024

    settings = SCALES["smoke"]
    hard = {(1, 0): 0.50, (1, 1): 0.60, (2, 0): 0.55, (2, 1): 0.58}
    rows = [{"predictor": "trained GPT", "depth": depth, "seed": seed, "slice": "hard", "mean": value}
            for (depth, seed), value in hard.items()]
    results = {"rows": rows, "exactness": [], "by_size": [{"size": 5, "rounds_needed": 2, "bound": 2}]}
    checks = sanford_2024.checks(results, settings)
    (claim,) = [check for check in checks if check.kind == "claim"]
    assert claim.claim == "depth-helps-hard"
    assert claim.per_seed == pytest.approx((0.05, -0.02)) and not claim.passed
    assert [check.kind for check in checks if check.kind != "claim"] == ["sanity"]
