"""Sanford, Hsu & Telgarsky 2023 (paper_repro/sanford_hsu_2023.py): the qSA targets against a numpy loop, the
Match2/Match3 labels against brute force over pairs and triples, both constructions against the attention
written out in numpy (float64, to 1e-12), the qSA construction's error bound, the attention unit's causality and
forward pass, and the runs' settings."""
import itertools
import math

import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.models import sparse_attention as construction
from icl_sim.paper_repro import sanford_hsu_2023 as repro
from icl_sim.tasks.matching import Match, match_labels
from icl_sim.tasks.sparse_averaging import SparseAveraging


def test_qsa_targets_and_encoding_against_a_loop():
    task = SparseAveraging(value_dim=3, sparsity=4, tokens=9)
    prompt = task.sample(5, torch.Generator().manual_seed(0), dtype=torch.float64)
    xs, values, subsets = prompt.xs.numpy(), prompt.latent["values"].numpy(), prompt.latent["subsets"].numpy()
    assert xs.shape == (5, 9, 3 + 18) and prompt.targets.shape == (5, 9, 3)
    assert (np.linalg.norm(values, axis=-1) <= 1).all()
    for b in range(5):
        for i in range(9):
            assert len(set(subsets[b, i])) == 4
            expected = sum(values[b, j] for j in subsets[b, i]) / 4
            np.testing.assert_allclose(prompt.targets[b, i].numpy(), expected, atol=1e-12)
            np.testing.assert_array_equal(np.flatnonzero(xs[b, i, 3:12]), np.sort(subsets[b, i]))
            np.testing.assert_array_equal(np.flatnonzero(xs[b, i, 12:]), [i])
            np.testing.assert_allclose(xs[b, i, :3], values[b, i])
    scalar = SparseAveraging(value_dim=1, sparsity=2, tokens=5).sample(3, torch.Generator().manual_seed(1))
    assert scalar.ys.shape == (3, 5)


def test_unit_ball_is_uniform():
    """P(‖z‖ ≤ ½) = 2^(−d') for z uniform in the ball of R^d' (d' = 2: ¼), within 5 standard errors."""
    values = SparseAveraging(value_dim=2, sparsity=1, tokens=2).sample(
        20000, torch.Generator().manual_seed(2), dtype=torch.float64).latent["values"]
    inside = (values.norm(dim=-1) <= 0.5).double().mean().item()
    assert abs(inside - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 40000)


@pytest.mark.parametrize("order", [2, 3])
def test_match_labels_against_brute_force(order):
    numbers = torch.randint(7, (50, 6), generator=torch.Generator().manual_seed(order))
    labels = match_labels(numbers, 7, order)
    for b in range(50):
        row = numbers[b].tolist()
        for i in range(6):
            found = any((row[i] + sum(row[j] for j in others)) % 7 == 0
                        for others in itertools.product(range(6), repeat=order - 1))
            assert bool(labels[b, i]) == found
    prompt = Match(order=order, tokens=6, modulus=7).sample(4, torch.Generator().manual_seed(3))
    assert set(prompt.ys.unique().tolist()) <= {-1.0, 1.0}
    assert torch.equal(prompt.xs.argmax(-1), prompt.latent["numbers"])


def _softmax(scores):
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def test_qsa_construction_against_numpy_attention_and_within_epsilon():
    tokens, q, d = 32, 3, 2
    rank, epsilon = math.ceil(32 * q * math.log(tokens)), 1 / (2 * q)
    generator = torch.Generator().manual_seed(4)
    prompt = SparseAveraging(value_dim=d, sparsity=q, tokens=tokens).sample(2, generator, dtype=torch.float64)
    codes = construction.position_codes(tokens, rank, generator)
    state = construction.qsa_embedding(prompt.latent["values"], prompt.latent["subsets"], codes)
    temperature = construction.qsa_temperature(tokens, q, epsilon)
    assert temperature == pytest.approx(math.log(2 * (tokens - q) / (q * epsilon)) / 0.5)
    model = construction.qsa_construction(d, rank, temperature)
    output = construction.qsa_output(model.run(state, 1)[-1], model.stream).numpy()
    u = codes.numpy()
    for b in range(2):
        queries = np.stack([np.linalg.lstsq(u[prompt.latent["subsets"][b, i].numpy()], np.ones(q), rcond=None)[0]
                            for i in range(tokens)])
        expected = _softmax(temperature * queries @ u.T) @ prompt.latent["values"][b].numpy()
        np.testing.assert_allclose(output[b], expected, atol=1e-12)
    errors = np.linalg.norm(output - prompt.targets.numpy(), axis=-1)
    assert errors.max() <= epsilon
    off, on = construction.incoherence(state[..., model.stream["query"]], prompt.latent["subsets"], codes)
    assert on.max() < 1e-9 and off.max() < 0.5
    # the error bound 2 (N − q) e^{−λ(1 − δ)} / q with the realised δ
    assert errors.max() <= 2 * (tokens - q) * math.exp(-temperature * (1 - off.max().item())) / q + 1e-12
    control = model.random(torch.Generator().manual_seed(5))
    assert np.linalg.norm(construction.qsa_output(control.run(state, 1)[-1], model.stream).numpy()
                          - prompt.targets.numpy(), axis=-1).max() > epsilon


def test_match2_construction_against_numpy_and_exact():
    tokens, modulus = 10, 13
    prompt = Match(order=2, tokens=tokens, modulus=modulus).sample(64, torch.Generator().manual_seed(6),
                                                                   dtype=torch.float64)
    model = construction.match2_construction(tokens, modulus)
    state = model.run(construction.match2_embedding(prompt.latent["numbers"], modulus), 1)[-1]
    scores = state[..., model.stream.column("score")].numpy()
    theta = 2 * np.pi * prompt.latent["numbers"].numpy() / modulus
    pair = np.cos(theta[:, :, None] + theta[:, None, :])
    weights = _softmax(construction.match2_temperature(tokens, modulus) * pair)
    expected = (weights * pair).sum(-1) - (1 + np.cos(2 * np.pi / modulus)) / 2
    np.testing.assert_allclose(scores, expected, atol=1e-9)
    assert ((scores > 0) == (prompt.ys.numpy() > 0)).all()
    assert construction.match2_gap(modulus) == pytest.approx(1 - math.cos(2 * math.pi / modulus))


def test_attention_unit_forward_and_causality():
    torch.manual_seed(7)
    model = build_model("attention-unit", 5, 6, target_dim=2, width=3, hidden=4).double()
    xs = torch.randn(2, 6, 5, dtype=torch.float64)
    ys = torch.zeros(2, 6, 2, dtype=torch.float64)
    preds = model(xs, ys)
    assert preds.shape == (2, 6, 2)
    assert torch.allclose(model.last_prediction(xs, ys), preds[:, -1], atol=1e-12)
    changed = xs.clone()
    changed[:, 4:] += 1.0
    assert torch.allclose(model(changed, ys)[:, :4], preds[:, :4], atol=1e-12)
    p = {name: value.detach().numpy() for name, value in model.named_parameters()}
    x = xs[0].numpy()
    h = np.maximum(x @ p["embed.0.weight"].T + p["embed.0.bias"], 0) @ p["embed.2.weight"].T + p["embed.2.bias"]
    scores = (h @ p["query.weight"].T) @ (h @ p["key.weight"].T).T / math.sqrt(3)
    scores[np.triu_indices(6, 1)] = -np.inf
    mixed = h + _softmax(scores) @ (h @ p["value.weight"].T)
    out = np.maximum(mixed @ p["read_out.0.weight"].T + p["read_out.0.bias"], 0) @ p["read_out.2.weight"].T \
        + p["read_out.2.bias"]
    np.testing.assert_allclose(preds[0].detach().numpy(), out, atol=1e-12)


def test_runs_and_thresholds():
    long = repro.SCALES["long"]
    found = repro.runs(long)
    assert set(found) == {f"qsa-m{w}" for w in (1, 2, 3, 4, 8, 16)} | {"match2", "match3"}
    assert found["qsa-m16"].model_params == {"width": 16, "hidden": 64}
    assert found["qsa-m2"].task_params == {"value_dim": 1, "sparsity": 3, "tokens": 8}
    assert found["match3"].task_params == {"order": 3, "tokens": 8, "modulus": 52}
    assert (found["match2"].steps, found["match2"].batch_size, found["match2"].lr) == (3000, 256, 1e-3)
    assert long.train_epsilon == pytest.approx(1 / 6) and long.small_width < long.train_sparsity
    assert long.rank(64) == math.ceil(32 * 3 * math.log(64))
