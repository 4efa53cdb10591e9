"""What the saparov-2024 reproduction relies on, against independent references.

* the search task (their generator.cpp, ported): each prompt's tokens spell a DAG, a start, a goal and a path from
  the start, and its label set is exactly the current vertex's children from which networkx finds the goal; the
  lookahead is uniform on 0..⌊(n − 1)/2⌋, never more than the distance to the goal, and 0 only where the current
  vertex has one child;
* SophiaG (icl_sim.optimizers) follows Liu et al. 2023's update rule, written out here in numpy: with no Hessian
  estimate (as their train.py runs it) a step is −lr · sign(m) after decoupled weight decay;
* the cross-entropy against a label set is the mean of torch's cross-entropy over the set's labels, and the
  arg-max metric is numpy's;
* the reproduction's chance level is the mean of useful / children, counted with networkx; the search skill
  (learns-to-search's measure, on the prompts of lookahead ≥ 2) is 1 for the exact answer and 0, within its
  binomial error, for a uniform child guess, a rule that takes one step and does not search.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch.nn import functional as F

from icl_sim.evaluation import METRICS
from icl_sim.optimizers import SophiaG
from icl_sim.paper_repro.saparov_2024 import (SCALES, SEARCH_LOOKAHEAD, band_skill, bfs_logits, chance_level,
                                              distances_to_goal, next_vertex_correct, oracle_rate, reach_probe, runs,
                                              search_skill)
from icl_sim.seeding import make_generator
from icl_sim.tasks.graph_search import GraphSearch
from icl_sim.training import cross_entropy_loss


def _parse(tokens: list[int], task: GraphSearch):
    """(graph, start, goal, path) read from one prompt's tokens alone."""
    special = task.tokens
    tokens = [token for token in tokens if token != special["PAD"]]
    query = tokens.index(special["QUERY"])
    graph = nx.DiGraph()
    for k in range(0, query, 3):
        assert tokens[k] == special["EDGE"]
        graph.add_edge(tokens[k + 1], tokens[k + 2])
    start, goal = tokens[query + 1], tokens[query + 2]
    assert tokens[query + 3] == special["PATH"]
    return graph, start, goal, tokens[query + 4:]


@pytest.mark.parametrize("vertices", [5, 9, 17])
def test_prompts_spell_a_dag_search_and_their_labels_lead_to_the_goal(vertices):
    task = GraphSearch(vertices=vertices)
    prompt = task.sample(200, make_generator(0, "eval"), dtype=torch.float64)
    assert prompt.xs.shape == (200, 3 * vertices + 5, vertices + 5)
    assert torch.equal(prompt.xs.sum(-1), torch.ones(200, 3 * vertices + 5, dtype=torch.float64))  # one-hot
    assert not prompt.ys[:, :-1].any()
    for b in range(200):
        graph, start, goal, path = _parse(prompt.xs[b].argmax(-1).tolist(), task)
        assert nx.is_directed_acyclic_graph(graph) and graph.number_of_edges() <= vertices
        assert set(graph.nodes) <= set(range(1, vertices + 1))
        assert path[0] == start and all(graph.has_edge(u, v) for u, v in zip(path, path[1:]))
        current = path[-1]
        useful = {child for child in graph.successors(current) if nx.has_path(graph, child, goal)}
        assert useful and set(np.flatnonzero(prompt.ys[b, -1].numpy())) == useful
        lookahead = int(prompt.latent["lookahead"][b])
        assert lookahead <= nx.shortest_path_length(graph, current, goal)
        assert (lookahead == 0) == (graph.out_degree(current) == 1)
        assert int(prompt.latent["out_degree"][b]) == graph.out_degree(current)


def test_lookahead_is_uniform_up_to_half_the_vertices():
    task = GraphSearch(vertices=9)
    assert task.lookahead == 4
    lookahead = task.sample(2000, make_generator(1, "eval")).latent["lookahead"]
    counts = torch.bincount(lookahead, minlength=5).double()
    expected = 2000 / 5
    # each bucket a binomial(2000, 1/5): within 4 standard errors
    assert ((counts - expected).abs() <= 4 * (2000 * 0.2 * 0.8) ** 0.5).all(), counts


def _sophia_reference(theta, grads, hessians, lr, betas, rho, decay, batch, eps=1e-15):
    """Liu et al. 2023, Algorithm 3 in numpy: m, h moving averages; θ(1 − ηλ) − η sign(m) min(|m|/(ρ B h + ε), 1)."""
    m, h = np.zeros_like(theta), np.zeros_like(theta)
    for g, estimate in zip(grads, hessians):
        if estimate is not None:
            h = betas[1] * h + (1 - betas[1]) * estimate
        theta = theta * (1 - lr * decay)
        m = betas[0] * m + (1 - betas[0]) * g
        theta = theta - lr * np.sign(m) * np.minimum(np.abs(m) / (rho * batch * h + eps), 1.0)
    return theta


@pytest.mark.parametrize("with_hessian", [False, True])
def test_sophiag_follows_its_papers_update_rule(with_hessian):
    rng = np.random.default_rng(0)
    theta0 = rng.normal(size=(3, 4))
    grads = [rng.normal(size=(3, 4)) for _ in range(5)]
    # the squared gradient of a sampled-label loss, given as the gradient held when update_hessian is called
    sampled = [rng.normal(size=(3, 4)) if with_hessian and t % 2 == 0 else None for t in range(5)]
    parameter = torch.nn.Parameter(torch.tensor(theta0))
    optimizer = SophiaG([parameter], lr=0.1, betas=(0.9, 0.95), rho=0.04, weight_decay=0.2, batch_size=8)
    for g, estimate in zip(grads, sampled):
        if estimate is not None:
            parameter.grad = torch.tensor(estimate)
            optimizer.update_hessian()
        parameter.grad = torch.tensor(g)
        optimizer.step()
    reference = _sophia_reference(theta0, grads, [None if s is None else s * s for s in sampled], 0.1, (0.9, 0.95),
                                  0.04, 0.2, 8)
    assert np.allclose(parameter.detach().numpy(), reference, atol=1e-12)
    if not with_hessian:  # their train.py: no estimate, every step −lr·sign(m) after the decay
        assert not np.allclose(reference, theta0)


def test_cross_entropy_against_a_label_set_is_the_mean_over_its_labels():
    generator = torch.Generator().manual_seed(2)
    logits = torch.randn(6, 7, generator=generator, dtype=torch.float64)
    targets = (torch.rand(6, 7, generator=generator) < 0.4).double()
    targets[:, 0] = 1.0  # every set non-empty
    expected = np.mean([np.mean([float(F.cross_entropy(logits[b:b + 1], torch.tensor([c])))
                                 for c in np.flatnonzero(targets[b].numpy())]) for b in range(6)])
    assert float(cross_entropy_loss(logits, targets)) == pytest.approx(expected, rel=1e-12)
    hits = METRICS["next_vertex_accuracy"].function(logits[:, None], targets[:, None], 7)[:, 0].numpy()
    assert np.array_equal(hits, targets.numpy()[np.arange(6), logits.numpy().argmax(-1)])


def test_chance_level_and_the_exact_answer_against_networkx():
    task = GraphSearch(vertices=7)
    prompt = task.sample(300, make_generator(3, "eval"), dtype=torch.float64)
    expected = []
    for b in range(300):
        graph, _, goal, path = _parse(prompt.xs[b].argmax(-1).tolist(), task)
        children = list(graph.successors(path[-1]))
        expected.append(sum(nx.has_path(graph, c, goal) for c in children) / len(children))
    assert np.allclose(chance_level(prompt).numpy(), expected)
    distances = distances_to_goal(prompt)
    for b in range(0, 300, 7):
        graph, _, goal, _ = _parse(prompt.xs[b].argmax(-1).tolist(), task)
        to_goal = nx.single_target_shortest_path_length(graph, goal)
        reference = [dict(to_goal).get(w, -1) if w in graph or w == goal else -1 for w in range(8)]
        assert distances[b].tolist() == reference
    assert bool(next_vertex_correct(bfs_logits(prompt), prompt).eq(1).all())


def test_search_skill_is_one_for_the_exact_answer_and_zero_for_a_uniform_child():
    task = GraphSearch(vertices=9)
    prompt = task.sample(3000, make_generator(4, "eval"), dtype=torch.float64)
    chances, lookahead = chance_level(prompt), prompt.latent["lookahead"]
    exact = next_vertex_correct(bfs_logits(prompt), prompt)
    assert search_skill(exact, chances, lookahead) == pytest.approx(1.0, abs=1e-12)
    guess = oracle_rate(prompt)
    deep = lookahead >= SEARCH_LOOKAHEAD
    chance = float(chances[deep].mean())
    error = float(guess[deep].std()) / deep.sum().item() ** 0.5 / (1 - chance)
    assert abs(search_skill(guess, chances, lookahead)) <= 4 * error


def test_quick_runs_train_the_authors_model_family_with_their_optimiser():
    quick = runs(SCALES["quick"])
    assert set(quick) == {"n-5", "n-7", "n-9", "n-9-layers-4"}
    config = quick["n-9"]
    assert (config.model, config.optimizer, config.betas, config.weight_decay) == ("gpt", "sophiag", (0.965, 0.99), 0.1)
    assert config.model_params["n_embd"] == 14 + 16 + 32 and config.model_params["n_head"] == 1
    full = runs(SCALES["full"])
    assert len(full) == 21 + 3 + 4 and full["n-31"].steps == 1000 * 2**18 // 256


class _ReachEncoder(torch.nn.Module):
    """A stand-in model whose final-token state after 'layer 1' is the reach-to-goal set itself (from the latent
    graph) and after the embedding is noise: the probe must read the first exactly and nothing from the second."""

    def __init__(self, prompts):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones((), dtype=torch.float64))
        self.sets = {id(prompt.xs): (distances_to_goal(prompt) > 0).double() for prompt in prompts}

    def hidden_states(self, xs, ys):
        reach = self.sets[id(xs)]
        noise = torch.randn(reach.shape, generator=torch.Generator().manual_seed(xs.shape[0]), dtype=torch.float64)
        states = [torch.zeros(xs.shape[0], 2 * xs.shape[1], reach.shape[1], dtype=torch.float64) for _ in range(2)]
        states[0][:, -2], states[1][:, -2] = noise, reach
        return states


def test_reach_probe_reads_an_encoded_reachable_set_and_not_noise():
    task = GraphSearch(vertices=9)
    fit, test = (task.sample(count, make_generator(seed, "eval"), dtype=torch.float64)
                 for seed, count in ((5, 600), (6, 400)))
    embedding, layer = reach_probe(_ReachEncoder([fit, test]), fit, test)
    assert all(rate == 1.0 for rate in layer["hits"].values()) and layer["false_alarms"] == 0.0
    assert band_skill(layer, 3, 4) == (1.0, 0.0)
    skill, error = band_skill(embedding, 1, 4)
    assert abs(skill) <= 4 * error  # noise features: hits and false alarms agree within noise
