"""The constructed-transformer builder (``icl_sim.models.constructed``) against numpy written the paper's way round.

The numpy reference keeps Giannou et al.'s orientation (eq. 1): the state is X (d, n) with tokens as COLUMNS,
attention X + Σ_h V_h X σ(λ Xᵀ K_hᵀ Q_h X) with the softmax over each column, then X + W₂ ReLU(W₁ X + b₁1ᵀ) + b₂1ᵀ:
the builder's row-token code must give the same numbers.
"""
import math

import numpy as np
import pytest
import torch

from icl_sim.models.constructed import (AttentionHead, ContextHead, Layer, LoopedConstruction, ReLUMLP, Stream,
                                        attention_weights, binary_code, matching_loops, read_binary_code)

STREAM = Stream([("a", 3), ("b", 2), ("c", 4)])


def _numpy_softmax_columns(scores, lam):
    shifted = lam * scores - (lam * scores).max(axis=0, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=0, keepdims=True)


def _numpy_loop(x, layers, lam, context):
    """One loop on X (d, n), tokens as columns."""
    for layer in layers:
        update = np.zeros_like(x)
        for head in layer.heads:
            if isinstance(head, AttentionHead):
                q, k, v = (t.numpy() for t in (head.query, head.key, head.value))
                update += v @ x @ _numpy_softmax_columns(x.T @ k.T @ q @ x, lam)
            else:
                update += head.value.numpy() @ x @ context[head.name].T
        x = x + update
        if layer.mlp is not None:
            m = layer.mlp
            hidden = np.maximum(m.w1.numpy() @ x + m.b1.numpy()[:, None], 0)
            x = x + m.w2.numpy() @ hidden + m.b2.numpy()[:, None]
    return x


def _random_construction(lam=2.0):
    generator = torch.Generator().manual_seed(0)
    shapes = [Layer("one", (AttentionHead.zeros(STREAM, 2), AttentionHead.zeros(STREAM, 3)), ReLUMLP.zeros(STREAM, 5)),
              Layer("two", mlp=ReLUMLP.zeros(STREAM, 4)),
              Layer("three", (ContextHead.zeros(STREAM, "adjacency"),))]
    return LoopedConstruction(STREAM, shapes, lam).random(generator)


def test_loops_match_numpy_in_the_papers_orientation():
    model = _random_construction()
    generator = torch.Generator().manual_seed(1)
    start = torch.randn(2, 6, STREAM.width, generator=generator, dtype=torch.float64)
    adjacency = (torch.rand(2, 6, 6, generator=generator) < 0.4).to(torch.float64)
    states = model.run(start, 3, adjacency=adjacency)
    for batch in range(2):
        x = start[batch].numpy().T
        context = {"adjacency": adjacency[batch].numpy()}
        for loop in range(3):
            x = _numpy_loop(x, model.layers, 2.0, context)
            np.testing.assert_allclose(states[loop][batch].numpy().T, x, rtol=1e-12, atol=1e-12)
    assert [s.dtype for s in model.layer_states(start, adjacency=adjacency)] == [torch.float64] * 3
    torch.testing.assert_close(model.layer_states(start, adjacency=adjacency)[-1], states[0], rtol=0, atol=0)


def test_random_initialisation_is_seeded_and_keeps_the_architecture():
    model = _random_construction()
    again = _random_construction()
    other = model.random(torch.Generator().manual_seed(5))
    assert model.weights().keys() == other.weights().keys()
    for name, tensor in model.weights().items():
        assert torch.equal(tensor, again.weights()[name])
        assert tensor.shape == other.weights()[name].shape and not torch.equal(tensor, other.weights()[name])
        fan_in = tensor.shape[-1] if name.split(".")[-1] not in ("b1", "b2") else None
        if fan_in is not None:  # nn.Linear's law: |w| <= 1/sqrt(fan_in)
            assert float(other.weights()[name].abs().max()) <= 1 / math.sqrt(fan_in)
    assert other.temperature == model.temperature and model.with_temperature(7.0).temperature == 7.0


def test_dtype_option_rounds_weights_once_and_computes_in_that_format():
    """``dtype=``: float64 by default and untouched; float32 rounds every weight once, computes in float32 (close to
    the numpy loop on the rounded weights at float32's tolerance), and keeps the format through ``random``,
    ``with_temperature`` and ``to``."""
    model = _random_construction()
    assert model.dtype == torch.float64 and model.to(torch.float64).layers[0] is model.layers[0]
    single = model.to(torch.float32)
    assert single.dtype == torch.float32 and single.weights().keys() == model.weights().keys()
    for name, tensor in single.weights().items():
        assert tensor.dtype == torch.float32 and torch.equal(tensor, model.weights()[name].to(torch.float32))
        assert model.weights()[name].dtype == torch.float64  # the float64 construction is not changed
    assert torch.equal(single.to(torch.float64).weights()["one.mlp.w1"], single.weights()["one.mlp.w1"].double())
    built = LoopedConstruction(STREAM, model.layers, 2.0, dtype=torch.float32)
    assert all(torch.equal(tensor, single.weights()[name]) for name, tensor in built.weights().items())
    generator = torch.Generator().manual_seed(1)
    start = torch.randn(2, 6, STREAM.width, generator=generator, dtype=torch.float64)
    adjacency = (torch.rand(2, 6, 6, generator=generator) < 0.4).to(torch.float64)
    states = single.run(start, 3, adjacency=adjacency)
    assert [state.dtype for state in states] == [torch.float32] * 3
    for batch in range(2):
        x = start[batch].to(torch.float32).double().numpy().T
        for loop in range(3):
            x = _numpy_loop(x, [layer.to(torch.float64) for layer in single.layers], 2.0,
                            {"adjacency": adjacency[batch].numpy()})
            np.testing.assert_allclose(states[loop][batch].double().numpy().T, x, rtol=1e-5, atol=1e-5)
    assert single.random(torch.Generator().manual_seed(5)).dtype == torch.float32
    assert single.with_temperature(7.0).dtype == torch.float32
    assert STREAM.zeros(1, 2, dtype=torch.float32).dtype == torch.float32
    for bad in (torch.int64, "float32", torch.complex64):
        with pytest.raises(ValueError, match="dtype"):
            model.to(bad)


def test_float32_loses_a_score_gap_below_its_roundoff_that_float64_resolves():
    """Keys 1 + 10⁻⁹ i (i = 0..7) against query 1 at λ = 10¹¹: float64 scores differ by 100 per key and the head
    reads the last key's value 7 (next weight e⁻¹⁰⁰); in float32 every key rounds to 1 (10⁻⁹ < u = 6·10⁻⁸), the
    weights are uniform and the head reads the mean 3.5 exactly."""
    stream = Stream([("one", 1), ("key", 1), ("src", 1), ("dst", 1)])
    head = AttentionHead.zeros(stream, 1)
    head.query[0, stream.column("one")] = 1.0
    head.key[0, stream.column("key")] = 1.0
    head.value[stream.column("dst"), stream.column("src")] = 1.0
    model = LoopedConstruction(stream, [Layer("read", (head,))], 1e11)
    start = stream.zeros(1, 8)
    start[0, :, stream.column("one")] = 1.0
    start[0, :, stream.column("key")] = 1.0 + 1e-9 * torch.arange(8, dtype=torch.float64)
    start[0, :, stream.column("src")] = torch.arange(8, dtype=torch.float64)
    (double,) = model.run(start, 1)
    (single,) = model.to(torch.float32).run(start, 1)
    assert abs(float(double[0, 0, stream.column("dst")]) - 7.0) < 1e-12
    assert float(single[0, 0, stream.column("dst")]) == 3.5


def test_the_docstring_read_copies_the_pointed_token():
    stream = Stream([("src", 1), ("dst", 1), ("ptr", 3), ("pos", 3)])
    head = AttentionHead.zeros(stream, 3)
    head.query[:, stream["ptr"]] = torch.eye(3)
    head.key[:, stream["pos"]] = torch.eye(3)
    head.value[stream["dst"], stream["src"]] = 1.0
    n = 8
    start = stream.zeros(1, n)
    start[0, :, stream["pos"]] = binary_code(torch.arange(n), 3)
    start[0, :, stream["src"]] = torch.arange(n, dtype=torch.float64).unsqueeze(1) * 10
    start[0, 0, stream["ptr"]] = binary_code(torch.tensor(5), 3)  # token 0 points at token 5
    for lam, tolerance in ((10.0, 8 * 70 * math.exp(-20)), (math.inf, 0.0)):
        (state,) = LoopedConstruction(stream, [Layer("read", (head,))], lam).run(start, 1)
        # scores: 3 at the match, at most 1 elsewhere; 7 other tokens weighed e^{-2λ} each, values up to 70
        assert abs(float(state[0, 0, stream.column("dst")]) - 50.0) <= tolerance


def test_hard_attention_splits_over_ties():
    scores = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 0.5, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(attention_weights(scores, math.inf),
                               torch.tensor([[0, 0.5, 0.5, 0], [1.0, 0, 0, 0]], dtype=torch.float64))
    torch.testing.assert_close(attention_weights(scores, 60.0), attention_weights(scores, math.inf), atol=1e-25,
                               rtol=0)


@pytest.mark.parametrize("signed", [False, True])
def test_binary_codes_against_python_formatting(signed):
    bits = 5
    values = torch.arange(-16, 16) if signed else torch.arange(32)
    code = binary_code(values, bits, signed=signed)
    for value, row in zip(values.tolist(), code):
        text = format(value % 32, "05b")  # two's complement for negative values
        assert row.tolist() == [1.0 if digit == "1" else -1.0 for digit in text]
    decoded, valid = read_binary_code(code, signed=signed)
    assert torch.equal(decoded, values) and bool(valid.all())
    noisy, valid = read_binary_code(code * 1.3 + 0.1, signed=signed)
    assert torch.equal(noisy, values) and bool(valid.all())
    broken = code.clone()
    broken[3, 2] = 0.2
    broken[4, 0] = math.nan
    assert read_binary_code(broken, signed=signed)[1].tolist() == [i not in (3, 4) for i in range(len(values))]
    with pytest.raises(ValueError, match="values"):
        binary_code(torch.tensor([32 if not signed else 16]), bits, signed=signed)


def test_matching_loops_compares_every_named_entry():
    def decode(state):
        value, valid = read_binary_code(state[:, :, :3])
        return {"cells": value, "valid": valid.all(dim=1)}

    expected = [{"cells": torch.tensor([[1, 2], [3, 4]])}, {"cells": torch.tensor([[5, 6], [7, 0]])}]
    states = [binary_code(reference["cells"], 3) for reference in expected]
    states[1] = states[1].clone()
    states[1][1, 0] = binary_code(torch.tensor(6), 3)  # instance 1 is wrong after loop 2
    states[0] = states[0].clone()
    states[0][0, 1, 2] = 0.0  # instance 0 holds a non-code after loop 1
    assert matching_loops(states, decode, expected).tolist() == [[False, True], [True, False]]
    with pytest.raises(ValueError, match="same loops"):
        matching_loops(states[:1], decode, expected)


def test_bad_inputs_name_themselves():
    with pytest.raises(ValueError, match="named twice"):
        Stream([("a", 1), ("a", 2)])
    with pytest.raises(ValueError, match="width"):
        Stream([("a", 0)])
    with pytest.raises(ValueError, match="no field"):
        STREAM["z"]
    with pytest.raises(ValueError, match="key"):
        AttentionHead(torch.zeros(2, 9), torch.zeros(3, 9), torch.zeros(9, 9))
    with pytest.raises(ValueError, match="features"):
        LoopedConstruction(STREAM, [Layer("x", mlp=ReLUMLP.zeros(Stream([("a", 2)]), 3))], 1.0)
    with pytest.raises(ValueError, match="temperature"):
        LoopedConstruction(STREAM, [Layer("x", mlp=ReLUMLP.zeros(STREAM, 3))], 0.0)
    with pytest.raises(ValueError, match="neither"):
        Layer("empty")
    model = LoopedConstruction(STREAM, [Layer("x", (ContextHead.zeros(STREAM, "adjacency"),))], 1.0)
    with pytest.raises(ValueError, match="context"):
        model.run(STREAM.zeros(1, 4), 1)
    with pytest.raises(ValueError, match="state"):
        model.run(torch.zeros(1, 4, 3), 1)
    with pytest.raises(ValueError, match="loops"):
        model.run(STREAM.zeros(1, 4), 0, adjacency=torch.zeros(1, 4, 4))


# == a constructed model through the reproduction runner: no training run, the seeds index the instances =========

def _pointer_read(stream):
    head = AttentionHead.zeros(stream, 3)
    head.query[:, stream["ptr"]] = torch.eye(3)
    head.key[:, stream["pos"]] = torch.eye(3)
    head.value[stream["dst"], stream["src"]] = 1.0
    return LoopedConstruction(stream, [Layer("read", (head,))], 10.0)


def _toy_measure(measurement):
    """Per seed: instance k points token 0 at token k mod 7 + 1; the fraction of loops whose read value is right."""
    stream = Stream([("src", 1), ("dst", 1), ("ptr", 3), ("pos", 3)])
    hand = _pointer_read(stream)
    rows, seen = [], {"seeds": measurement.seeds, "control": measurement.control}
    for seed in measurement.seeds:
        model = hand if measurement.control is None else hand.random(torch.Generator().manual_seed(seed))
        start = stream.zeros(1, 8)
        start[0, :, stream["pos"]] = binary_code(torch.arange(8), 3)
        start[0, :, stream["src"]] = torch.arange(8, dtype=torch.float64).unsqueeze(1)
        target = seed % 7 + 1
        start[0, 0, stream["ptr"]] = binary_code(torch.tensor(target), 3)
        (state,) = model.run(start, 1)
        exact = float(torch.round(state[0, 0, stream.column("dst")]) == target)
        rows.append({"seed": seed, "quantity": "exact", "value": exact})
    return {"rows": rows, "seen": seen}


def test_a_construction_runs_through_the_runner_and_its_control_fails_finitely(tmp_path):
    from dataclasses import dataclass

    from icl_sim.checks import claim_check
    from icl_sim.paper_repro.rehearsal import rehearse
    from icl_sim.paper_repro.runner import run_reproduction
    from icl_sim.paper_repro.spec import Claim, Paper, Reproduction
    from icl_sim.plots import Curve, Panel

    @dataclass(frozen=True)
    class Settings:
        size: int

    seen = []

    def measure(measurement):
        results = _toy_measure(measurement)
        seen.append(results["seen"])
        return results

    def checks(results, settings):
        values = [row["value"] for row in results["rows"]]
        return [claim_check("reads", "exact read", 1.0, values, relation="at_least", source="Lemma 1")]

    toy = Reproduction(
        name="toy-construction", paper=Paper("A. Author", "A toy", "nowhere", "0000.00000"), summary="a read",
        claims=[Claim("reads", "a pointer read is exact", "Lemma 1")], caption="a read",
        scales={scale: Settings(1) for scale in ("smoke", "quick", "full")}, runs=lambda settings: {},
        measure=measure, checks=checks, figure=lambda results, settings: [Panel("x", "y", [Curve("c", [0], [1.0])])],
        quick_minutes=0.1)
    held = run_reproduction(toy, "quick", tmp_path, device="cpu", progress=False, first_seed=7, seeds=2)
    control = run_reproduction(toy, "quick", tmp_path, device="cpu", progress=False, first_seed=7, seeds=2,
                               control="untrained")
    assert seen == [{"seeds": (7, 8), "control": None}, {"seeds": (7, 8), "control": "untrained"}]
    assert held[0].per_seed == (1.0, 1.0) and held[0].passed
    assert control[0].per_seed == (0.0, 0.0) and not control[0].passed
    _, rehearsed = rehearse(toy, tmp_path / "rehearsal", device="cpu", first_seed=3)
    assert seen[-1] == {"seeds": (3,), "control": None} and rehearsed[0].per_seed == (1.0,)
