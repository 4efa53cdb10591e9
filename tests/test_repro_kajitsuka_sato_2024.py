"""Kajitsuka & Sato 2024 (paper_repro/kajitsuka_sato_2024.py): the memorisation task against its definition, the
rank-1 head with its feed-forward read-out against a numpy computation of the paper's layer, the construction's
margin against mpmath at high precision, the Theorem's δ against mpmath, the context-blind ceiling against a count
by hand, and the runs against the module's settings."""
import math
from collections import Counter

import mpmath
import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.paper_repro import kajitsuka_sato_2024 as module
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory.contextual_mapping import (build_construction, context_blind_ceiling, context_margin_log10,
                                               theorem_margin_log10)


def test_sequences_are_distinct_sets_over_one_vocabulary():
    task = make_task("memorisation", dim=4, length=4, vocabulary=9)
    prompt = task.sample(120, make_generator(3, "train"), dtype=torch.float64)
    ids, vocabulary = prompt.latent["token_ids"], prompt.latent["vocabulary"]
    assert len({frozenset(row) for row in ids.tolist()}) == 120  # distinct token sets
    assert all(len(set(row)) == 4 for row in ids.tolist())  # no token twice in a sequence
    assert (vocabulary == vocabulary[:1]).all()  # one vocabulary per call
    torch.testing.assert_close(prompt.xs, vocabulary[0][ids])
    torch.testing.assert_close(torch.linalg.vector_norm(vocabulary[0], dim=-1), torch.ones(9, dtype=torch.float64))
    assert (prompt.ys[:, :-1] == 0).all() and set(prompt.ys[:, -1].tolist()) == {-1.0, 1.0}
    assert (ids[:, 0] == 0).double().mean() == pytest.approx(1 / 9, abs=0.1)  # orders uniform: no sorted sets
    with pytest.raises(ValueError, match="batch_size"):
        task.sample(math.comb(9, 4) + 1, make_generator(3, "train"))
    full = task.sample(math.comb(9, 4), make_generator(4, "train"))  # every set, drawn by rejection
    assert len({frozenset(row) for row in full.latent["token_ids"].tolist()}) == math.comb(9, 4)


def _softmax(scores):
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def test_rank_one_head_is_the_papers_layer():
    """ŷ = FF(z_q + W_o Σ_{j<q} softmax_j(q·k_j/√D) v_j) with one-row W_q, W_k, W_v, written out in numpy."""
    torch.manual_seed(0)
    model = build_model("projected-attention", 3, 5, rank=1, feedforward=6).double()
    xs = torch.randn(2, 5, 3, dtype=torch.float64)
    ys = torch.randn(2, 5, dtype=torch.float64)
    w = {name: parameter.detach().numpy() for name, parameter in model.named_parameters()}
    assert w["q_proj.weight"].shape == w["k_proj.weight"].shape == w["v_proj.weight"].shape == (1, 4)
    scores_matrix, _ = model.merged()
    assert np.linalg.matrix_rank(scores_matrix.detach().numpy()) == 1
    tokens = np.concatenate([xs.numpy(), ys.numpy()[..., None]], axis=-1)
    for position in range(1, 5):
        query = np.concatenate([xs.numpy()[:, position], np.zeros((2, 1))], axis=-1)
        scores = (query[:, None] @ w["q_proj.weight"].T) @ (tokens[:, :position] @ w["k_proj.weight"].T).transpose(0, 2, 1)
        attended = (_softmax(scores / 2.0) @ (tokens[:, :position] @ w["v_proj.weight"].T))[:, 0]
        hidden = query + attended @ w["o_proj.weight"].T
        expected = np.maximum(hidden @ w["feedforward.0.weight"].T + w["feedforward.0.bias"], 0)
        expected = expected @ w["feedforward.2.weight"].T + w["feedforward.2.bias"]
        np.testing.assert_allclose(model(xs, ys)[:, position].detach().numpy(), expected[:, 0], rtol=1e-12)
        np.testing.assert_allclose(model.layer_features(xs, ys)[0][:, position].detach().numpy(), hidden,
                                   rtol=1e-12)


def test_default_head_keeps_its_parameters():
    """rank 0 and no feed-forward network: Boursier & Boyer's D × D projections, unchanged."""
    model = build_model("projected-attention", 3, 5)
    assert [tuple(p.shape) for p in model.parameters()] == [(4, 4), (4, 4), (4, 4), (1, 4)]
    with pytest.raises(ValueError, match="rank"):
        build_model("projected-attention", 3, 5, rank=-1)


def test_context_blind_ceiling_counts_majorities():
    last = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3])
    labels = torch.tensor([1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0])
    ceiling, ambiguous = context_blind_ceiling(last, labels)
    groups = Counter(zip(last.tolist(), labels.tolist()))
    majority = sum(max(groups[(token, 1.0)], groups[(token, -1.0)]) for token in range(4))
    assert ceiling == majority / 8 == 0.75
    assert ambiguous.tolist() == [True] * 5 + [False] * 3


def _boltzmann(beta, values):
    weights = [mpmath.exp(beta * value) for value in values]
    return mpmath.fsum(w * v for w, v in zip(weights, values)) / mpmath.fsum(weights)


def test_construction_margin_against_mpmath():
    """log10 of γ min |B(S) − B(S')| from the cancelled log-space sum, against the Boltzmann values themselves at
    4000 digits; and the construction keeps outputs within r_max + ε/4 and distinct tokens ε/2 apart."""
    task = make_task("memorisation", dim=3, length=3, vocabulary=7)
    prompt = task.sample(20, make_generator(5, "train"), dtype=torch.float64)
    vocabulary, ids = prompt.latent["vocabulary"][0].numpy(), prompt.latent["token_ids"].numpy()
    construction = build_construction(vocabulary, 3, make_generator(5, "pool", 1))
    with mpmath.workdps(4000):
        u = [mpmath.mpf(float(value)) for value in vocabulary @ construction.direction]
        least = None
        for token in range(7):
            holding = [set(row) for row in ids.tolist() if token in row]
            beta = mpmath.mpf(construction.score_scale) * u[token]
            values = [_boltzmann(beta, [u[j] for j in sorted(members)]) for members in holding]
            for i in range(len(values)):
                for j in range(i + 1, len(values)):
                    gap = abs(values[i] - values[j])
                    least = gap if least is None else min(least, gap)
        expected = float(mpmath.log10(least * mpmath.mpf(construction.output_scale)))
    assert expected < -20  # far below float64's resolution of the outputs
    assert context_margin_log10(construction, vocabulary, ids) == pytest.approx(expected, abs=1e-6)
    outputs = construction.outputs(vocabulary[ids]).reshape(-1, 3)
    distances = np.linalg.norm(vocabulary[:, None] - vocabulary[None], axis=-1)
    separation = distances[np.triu_indices(7, 1)].min()
    assert np.linalg.norm(outputs, axis=-1).max() <= 1 + separation / 4
    tokens = ids.reshape(-1)
    apart = np.linalg.norm(outputs[:, None] - outputs[None], axis=-1)[tokens[:, None] != tokens[None, :]]
    assert apart.min() >= separation / 2


def test_construction_separates_every_querys_scores_by_lemma_1s_gap():
    """Lemma 1 asks the scores of one query, a (vᵀx_q)(vᵀx_k) over the vocabulary, to lie more than 2 log n + 3
    apart: the least such gap, written out over every query and pair, is 2 log n + 3 (the scale sets it so)."""
    task = make_task("memorisation", dim=3, length=3, vocabulary=7)
    vocabulary = task.sample(4, make_generator(5, "train"), dtype=torch.float64).latent["vocabulary"][0].numpy()
    construction = build_construction(vocabulary, 3, make_generator(5, "pool", 1))
    u = vocabulary @ construction.direction
    least = min(abs(construction.score_scale * u[q] * (u[k] - u[l]))
                for q in range(7) for k in range(7) for l in range(k + 1, 7))
    assert least == pytest.approx(2 * math.log(3) + 3, rel=1e-12)


def test_theorem_margin_against_mpmath():
    n, vocabulary, dim, r_min, r_max, eps = 5, 20, 6, 0.9, 1.0, 0.3
    growth = (vocabulary + 1) ** 4 * (2 * mpmath.log(n) + 3) * mpmath.pi * dim
    delta = (2 * mpmath.log(n) ** 2 * eps ** 2 * r_min / (r_max ** 2 * growth)
             * mpmath.exp(-growth * r_max ** 2 / (4 * eps * r_min)))
    assert theorem_margin_log10(n, vocabulary, dim, r_min, r_max, eps) == pytest.approx(float(mpmath.log10(delta)),
                                                                                        rel=1e-12)


def test_runs_are_the_modules_settings():
    quick = module.SCALES["quick"]
    configs = module.runs(quick)
    assert set(configs) == {"rank1-N32", "rank1-N64", "rank1-N128"}
    for size, config in zip(quick.sizes, configs.values()):
        assert (config.model, config.model_params) == ("projected-attention", {"rank": 1, "feedforward": 128})
        assert config.batch_size == size and config.batch_redraw_every == config.steps == 3000  # full batch, fixed
        assert config.task == "memorisation" and config.task_params == dict(dim=6, length=5, vocabulary=20)
        assert (config.optimizer, config.lr) == ("adam", 0.01)
        assert size <= make_task("memorisation", **config.task_params).capacity()
    full = module.runs(module.SCALES["full"])
    for config in full.values():
        assert config.batch_size <= make_task("memorisation", **config.task_params).capacity()
        assert config.model_params["feedforward"] >= config.batch_size  # a hidden unit per sequence
