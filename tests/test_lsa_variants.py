"""LSA variants: diagonal parameterisation, LayerNorm / MLP (exact per-prefix path), causal form.

No peeking for every variant: tests/test_contracts.py.
"""
import re

import pytest
import torch
from contract import gaussian_prompt
from lsa_reference import assert_matches_reference, per_prefix_reference, token_layers

from icl_sim.models import build_model
from icl_sim.models.lsa import LSAConfig
from icl_sim.theory import GD


@torch.no_grad()
def causal_reference(model, xs, ys):
    """Literal causal form: token t (and query t) attend to the tokens j < t of the same layer, one at a time."""
    value, key_query = (w.detach() for w in model.attention_weights())
    layers, heads = value.shape[:2]
    d, n = xs.shape[-1], xs.shape[1]
    labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
    out = torch.zeros(layers, *labels.shape, dtype=xs.dtype)
    for b in range(xs.shape[0]):
        context = torch.cat([xs[b], labels[b]], dim=1).T  # D x N
        queries = torch.cat([xs[b], torch.zeros_like(labels[b])], dim=1).T
        for layer in range(layers):
            new_context, new_queries = context.clone(), queries.clone()
            for t in range(n):
                keys = context[:, :t]
                for h in range(heads):
                    moments = keys @ keys.T / max(t, 1)
                    new_context[:, t] += value[layer, h] @ moments @ key_query[layer, h] @ context[:, t]
                    new_queries[:, t] += value[layer, h] @ moments @ key_query[layer, h] @ queries[:, t]
            context, queries = token_layers(model, layer, new_context), token_layers(model, layer, new_queries)
            out[layer, b] = -queries[d:].T
    return out if ys.ndim == 3 else out.squeeze(-1)


@pytest.fixture
def prompt64():
    return gaussian_prompt(3, 7, 4)


def _model(seed, **params):
    torch.manual_seed(seed)
    params = {"layers": 3, "heads": 2, "init_scale": 0.3, **params}
    return build_model("lsa", 4, 7, **params).double()


def _perturb_token_layers(model, seed):
    """Non-trivial LayerNorm affine parameters and MLP biases (they start at 1 and 0)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.startswith(("norms", "mlps")):
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype))


def test_defaults_are_the_plain_model():
    config = LSAConfig()
    assert (config.parameterisation, config.layer_norm, config.mlp, config.causal) == ("full", False, False, False)
    assert set(build_model("lsa", 3, 5).state_dict()) == {"value", "key_query"}


@pytest.mark.parametrize("parameterisation", ["full", "diagonal"])
@pytest.mark.parametrize("target_dim", [1, 3])
def test_per_prefix_path_equals_fast_path(prompt64, parameterisation, target_dim):
    xs, ys = prompt64
    if target_dim > 1:
        ys = torch.randn(*xs.shape[:2], target_dim, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    torch.manual_seed(1)
    model = build_model("lsa", 4, 7, target_dim=target_dim, layers=3, heads=2, init_scale=0.3,
                        parameterisation=parameterisation).double()
    fast = model.layer_predictions(xs, ys)
    exact = model.per_prefix_predictions(xs, ys)
    for layer in range(3):
        torch.testing.assert_close(exact[layer], fast[layer], atol=1e-12, rtol=1e-12)
    last = model.per_prefix_predictions(xs, ys, torch.tensor([6]))[-1][:, 0]
    torch.testing.assert_close(last, fast[-1][:, -1], atol=1e-12, rtol=1e-12)


def test_diagonal_weights_are_scalar_blocks(prompt64):
    model = _model(2, parameterisation="diagonal")
    assert sum(p.numel() for p in model.parameters()) == 2 * 3 * 2 * 2  # P and Q: 2 scalars, 3 layers, 2 heads
    value, key_query = model.attention_weights()
    d = 4
    for weights, scales in ((value, model.value_scales), (key_query, model.key_query_scales)):
        assert weights.shape == (3, 2, 5, 5)
        expected = torch.zeros_like(weights)
        expected[..., :d, :d] = scales[..., 0, None, None] * torch.eye(d, dtype=torch.float64)
        expected[..., d, d] = scales[..., 1]
        torch.testing.assert_close(weights, expected, atol=0, rtol=0)
    expected = per_prefix_reference(model, *prompt64)
    for layer, preds in enumerate(model.layer_predictions(*prompt64)):
        torch.testing.assert_close(preds, expected[layer], atol=1e-11, rtol=1e-11)


def test_diagonal_can_be_one_gd_step(prompt64):
    """P = diag(0·I, −η), Q = diag(I, 0) is von Oswald et al.'s GD construction within the diagonal family."""
    xs, ys = prompt64
    model = build_model("lsa", 4, 7, parameterisation="diagonal").double()
    with torch.no_grad():
        model.value_scales.copy_(torch.tensor([[[0.0, -0.7]]], dtype=torch.float64))
        model.key_query_scales.copy_(torch.tensor([[[1.0, 0.0]]]))
    torch.testing.assert_close(model.predict(xs, ys), GD(steps=1, lr=0.7).predict(xs, ys), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("params", [{"layer_norm": True}, {"mlp": True}, {"layer_norm": True, "mlp": True},
                                    {"layer_norm": True, "mlp": True, "parameterisation": "diagonal",
                                     "mlp_width": 6}])
def test_layer_norm_and_mlp_match_per_prefix_reference(prompt64, params):
    xs, ys = prompt64
    model = _model(3, **params)
    _perturb_token_layers(model, 4)
    assert_matches_reference(model, xs, ys)


def test_layer_norm_and_mlp_with_vector_labels(prompt64):
    xs, _ = prompt64
    ys = torch.randn(*xs.shape[:2], 2, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    torch.manual_seed(7)
    model = build_model("lsa", 4, 7, target_dim=2, layers=2, heads=2, init_scale=0.3, layer_norm=True,
                        mlp=True).double()
    _perturb_token_layers(model, 8)
    assert_matches_reference(model, xs, ys)


@pytest.mark.parametrize("params", [{}, {"layer_norm": True, "mlp": True}, {"parameterisation": "diagonal"}])
def test_causal_matches_causal_reference(prompt64, params):
    xs, ys = prompt64
    model = _model(9, causal=True, **params)
    _perturb_token_layers(model, 10)
    expected = causal_reference(model, xs, ys)
    for layer, preds in enumerate(model.layer_predictions(xs, ys)):
        torch.testing.assert_close(preds, expected[layer], atol=1e-11, rtol=1e-11)
    torch.testing.assert_close(model.last_prediction(xs, ys), expected[-1][:, -1], atol=1e-11, rtol=1e-11)


@pytest.mark.parametrize("params", [{}, {"layer_norm": True, "mlp": True}])
def test_causal_equals_per_prefix_for_one_layer_only(prompt64, params):
    xs, ys = prompt64
    for layers in (1, 2):
        per_prefix = _model(11, layers=layers, **params)
        _perturb_token_layers(per_prefix, 12)
        causal = build_model("lsa", 4, 7, layers=layers, heads=2, causal=True, **params).double()
        causal.load_state_dict(per_prefix.state_dict())
        first_causal, first_prefix = causal.layer_predictions(xs, ys)[0], per_prefix.layer_predictions(xs, ys)[0]
        torch.testing.assert_close(first_causal, first_prefix, atol=1e-12, rtol=1e-12)
        if layers == 2:
            second_causal, second_prefix = causal(xs, ys), per_prefix(xs, ys)
            # position 0 (no context) agrees; from position 1 on, the per-prefix context token j has attended
            # to all i context tokens (itself included), the causal one to the j tokens before it
            torch.testing.assert_close(second_causal[:, 0], second_prefix[:, 0], atol=1e-12, rtol=1e-12)
            assert ((second_causal - second_prefix)[:, 1:].abs() > 1e-6).all()


# an unknown choice and non-booleans: tests/test_contracts.py, for every config field of every model
@pytest.mark.parametrize("params, parameter", [({"mlp_width": -1, "mlp": True}, "mlp_width"),
                                               ({"mlp_width": 8}, "mlp_width")])
def test_bad_parameters_name_the_parameter(params, parameter):
    with pytest.raises(ValueError, match=parameter):
        build_model("lsa", 3, 5, **params)


@pytest.mark.parametrize("params", [{"layer_norm": True, "mlp": True}, {"causal": True},
                                    {"parameterisation": "diagonal"}])
def test_variants_backpropagate(params):
    torch.manual_seed(0)
    model = build_model("lsa", 3, 6, layers=2, **params)
    xs, ys = torch.randn(4, 6, 3), torch.randn(4, 6)
    (model(xs, ys).square().mean() + model.last_prediction(xs, ys).square().mean()).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("params", [{}, {"parameterisation": "sparse"}, {"layer_norm": True, "mlp": True}])
def test_recurrent_model_is_one_layer_repeated(prompt64, params):
    """A recurrent model stores one layer's weights and predicts as the unshared model with those weights in
    every layer, by its fast and its per-prefix path (the unshared model is checked against the literal
    reference above)."""
    xs, ys = prompt64
    recurrent = _model(9, recurrent=True, **params)
    unshared = _model(10, **params)
    assert sum(p.numel() for p in unshared.parameters()) == 3 * sum(p.numel() for p in recurrent.parameters())
    with torch.no_grad():
        for name, parameter in unshared.named_parameters():
            source = dict(recurrent.named_parameters())[re.sub(r"^(norms|mlps)\.\d+", r"\1.0", name)]
            parameter.copy_(source.expand_as(parameter) if source.shape != parameter.shape else source)
    torch.testing.assert_close(recurrent.predict(xs, ys), unshared.predict(xs, ys), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(recurrent.per_prefix_predictions(xs, ys)[-1], recurrent.predict(xs, ys), atol=1e-12,
                               rtol=1e-12)
