"""Tests for the GPT-2-style in-context regression transformer.

No peeking, seeded initialisation, dtypes, bad parameters: tests/test_contracts.py.
"""
from __future__ import annotations

import math

import pytest
import torch

from icl_sim.models.gpt import GPT, SIZES
from icl_sim.params import parameter_table

DIM, POINTS = 4, 10


def tiny(dim: int = DIM, points: int = POINTS, **config) -> GPT:
    """A seeded model, tiny unless ``config`` says otherwise."""
    torch.manual_seed(0)
    return GPT(dim, points, GPT.Config(**config))


def prompt(batch: int = 3, n: int = POINTS, dim: int = DIM, dtype=torch.float32):
    """A fixed random prompt (xs, ys)."""
    generator = torch.Generator().manual_seed(1)
    xs = torch.randn(batch, n, dim, generator=generator, dtype=dtype)
    ys = torch.randn(batch, n, generator=generator, dtype=dtype)
    return xs, ys


@pytest.mark.parametrize("n", [1, 7, POINTS])
def test_shapes_and_layer_readouts(n):
    model = tiny()
    xs, ys = prompt(n=n)
    preds = model(xs, ys)
    assert preds.shape == (3, n)
    layers = model.layer_predictions(xs, ys)
    assert len(layers) == 3 and all(p.shape == (3, n) for p in layers)
    torch.testing.assert_close(layers[-1], preds)
    states = model.hidden_states(xs, ys)
    assert len(states) == 4 and all(s.shape == (3, 2 * n, 64) for s in states)


def test_dimension_one():
    model = tiny(dim=1)
    xs, ys = prompt(dim=1)
    assert model(xs, ys).shape == (3, POINTS)


def test_uses_context():
    """A positive control for the no-peek test: preds[:, 1] depends on y_0."""
    model = tiny()
    xs, ys = prompt()
    changed = ys.clone()
    changed[:, 0] += 5.0
    assert (model.predict(xs, changed)[:, 1] - model.predict(xs, ys)[:, 1]).abs().min() > 1e-4


def expected_parameters(dim: int, points: int, n_embd: int, n_layer: int) -> int:
    """Closed-form count: read-in, positions, blocks (LN, qkv, proj, LN, MLP), final LN, read-out."""
    block = 2 * n_embd + (3 * n_embd**2 + 3 * n_embd) + (n_embd**2 + n_embd) \
        + 2 * n_embd + (4 * n_embd**2 + 4 * n_embd) + (4 * n_embd**2 + n_embd)
    return (dim * n_embd + n_embd) + 2 * points * n_embd + n_layer * block + 2 * n_embd + (n_embd + 1)


@pytest.mark.parametrize("size", list(SIZES))
def test_parameter_counts(size):
    n_embd, n_layer, n_head = SIZES[size]
    model = GPT(20, 41, GPT.Config(size=size))
    assert model.config.dims == (n_embd, n_layer, n_head)
    assert len(model.blocks) == n_layer and model.blocks[0].attn.n_head == n_head
    assert sum(p.numel() for p in model.parameters()) == expected_parameters(20, 41, n_embd, n_layer)


def test_explicit_dimensions_override_size():
    assert GPT.Config(size="standard", n_embd=32, n_head=4).dims == (32, 12, 4)


def test_config_fields_have_help():
    assert all(help_text for *_, help_text in parameter_table(GPT.Config))


# unknown sizes, negative or non-integer widths, NaN, bad dim / points: tests/test_contracts.py, for every model
@pytest.mark.parametrize("kwargs, name", [
    ({"n_embd": 64, "n_head": 3}, "n_head"),
    ({"dropout": -0.1}, "dropout"),
    ({"dropout": 1.5}, "dropout"),
    ({"init_std": 0.0}, "init_std"),
    ({"init_std": -0.1}, "init_std"),
    ({"io_init": "xavier"}, "io_init"),
])
def test_bad_config_raises(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GPT.Config(**kwargs)


def test_bad_prompts_raise():
    model = tiny()
    with pytest.raises(ValueError, match="points"):
        model(*prompt(n=POINTS + 1))
    with pytest.raises(ValueError, match="dim"):
        model(*prompt(dim=DIM + 1))
    xs, ys = prompt()
    with pytest.raises(ValueError, match="ys"):
        model(xs, ys[:, :-1])


def test_init_is_gpt2_scaled():
    model = tiny()
    n_layer = len(model.blocks)
    residual_std = model.blocks[0].mlp.proj.weight.std().item()
    assert residual_std == pytest.approx(0.02 / (2 * n_layer) ** 0.5, rel=0.05)
    assert model.blocks[0].mlp.fc.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_init_std_scales_the_gpt2_init():
    """``init_std`` replaces GPT-2's 0.02 everywhere, residual projections still shrunk by 1/sqrt(2 n_layer);
    the default is GPT-2's, so an unchanged config builds the very same weights."""
    assert GPT.Config().init_std == 0.02
    default, explicit = tiny(), tiny(init_std=0.02)
    assert all(torch.equal(a, b) for a, b in zip(default.state_dict().values(), explicit.state_dict().values()))
    model = tiny(n_embd=128, init_std=0.1)
    n_layer = len(model.blocks)
    assert model.blocks[0].mlp.fc.weight.std().item() == pytest.approx(0.1, rel=0.05)
    assert model.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.1, rel=0.05)
    assert model.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.1 / (2 * n_layer) ** 0.5, rel=0.05)
    assert torch.count_nonzero(model.blocks[0].mlp.fc.bias) == 0


def test_pytorch_io_init_is_nn_linears_default_on_read_in_and_read_out_only():
    """Garg et al.'s read-in and read-out are plain nn.Linear layers outside GPT2Model: weights and biases
    U(−1/√fan_in, 1/√fan_in) (variance 1/(3 fan_in)); the blocks keep GPT-2's init."""
    gpt2, pytorch = tiny(n_embd=256), tiny(n_embd=256, io_init="pytorch")
    for layer, fan_in in ((pytorch.embedding.read_in, DIM), (pytorch.head.read_out, 256)):
        bound = fan_in ** -0.5
        assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
        assert layer.weight.std().item() == pytest.approx(bound / 3 ** 0.5, rel=0.1)
        assert torch.count_nonzero(layer.bias) == layer.bias.numel()
    assert torch.equal(gpt2.blocks[0].mlp.fc.weight, pytorch.blocks[0].mlp.fc.weight)
    assert gpt2.head.read_out.weight.std().item() == pytest.approx(0.02, rel=0.2)


@pytest.mark.parametrize("activation, formula", [
    ("gelu", lambda u: 0.5 * u * (1 + torch.erf(u / math.sqrt(2)))),
    # GPT-2's gelu_new (Hendrycks & Gimpel's tanh approximation), written out
    ("gelu-tanh", lambda u: 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))),
])
def test_the_mlp_activation_is_the_named_gelu(activation, formula):
    mlp = tiny(activation=activation).blocks[0].mlp
    h = torch.randn(5, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    mlp.double()
    torch.testing.assert_close(mlp(h), mlp.proj(formula(mlp.fc(h))), rtol=1e-12, atol=1e-12)


def test_the_gpt_is_garg_et_als_model_on_huggingface_gpt2():
    """Holding the same (random) weights, the GPT with GPT-2's gelu_new computes what Garg et al.'s model
    (a read-in, HuggingFace's GPT2Model, a read-out at the x tokens) computes, at every position."""
    pytest.importorskip("transformers")
    from garg_reference import GargTransformer

    ours = tiny(n_embd=32, n_layer=2, n_head=4, activation="gelu-tanh").double()
    with torch.no_grad():
        for parameter in ours.parameters():  # biases and LayerNorms too, which GPT-2's init sets to 0 and 1
            parameter.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(parameter.numel()))
    reference = GargTransformer(DIM, POINTS, 32, 2, 4).double().load_weights_of(ours)
    xs, ys = prompt(dtype=torch.float64)
    torch.testing.assert_close(ours(xs, ys), reference(xs, ys), rtol=1e-10, atol=1e-10)


def test_dropout_only_in_training():
    model = tiny(dropout=0.5)
    xs, ys = prompt()
    model.eval()
    torch.testing.assert_close(model(xs, ys), model(xs, ys), rtol=0, atol=0)
    model.train()
    assert not torch.equal(model(xs, ys), model(xs, ys))


def test_bfloat16_autocast():
    model = tiny()
    xs, ys = prompt()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        preds = model(xs, ys)
    torch.testing.assert_close(preds.float(), model(xs, ys), atol=0.05, rtol=0.05)


def test_training_lowers_loss():
    """A tiny GPT fits a fixed batch of y = x . w (one shared w) with Adam."""
    model = tiny()
    generator = torch.Generator().manual_seed(2)
    xs = torch.randn(32, POINTS, DIM, generator=generator)
    ys = xs @ torch.randn(DIM, generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(100):
        loss = ((model(xs, ys) - ys) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])


@pytest.mark.parametrize("n", [1, 2, 7, POINTS])
@pytest.mark.parametrize("config, target_dim", [({}, 1), ({"n_layer": 1}, 1), ({"n_head": 4}, 3)], ids=str)
def test_forward_equals_the_read_out_of_the_full_hidden_states(n, config, target_dim):
    """``forward`` skips the last label token and, in the last block, the label tokens' queries and MLP: the same
    function as reading out the last of the full ``hidden_states`` (float64, random weights, in training mode)."""
    torch.manual_seed(3)
    model = GPT(DIM, POINTS, GPT.Config(init_std=0.3, **config), target_dim=target_dim).double()
    xs, ys = prompt(n=n, dtype=torch.float64)
    if target_dim > 1:
        ys = torch.randn(3, n, target_dim, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    full = model.head(model.hidden_states(xs, ys)[-1])
    assert model(xs, ys).shape == full.shape
    torch.testing.assert_close(model(xs, ys), full, atol=1e-12, rtol=1e-12)
