"""The ``ttt`` model (icl_sim/models/ttt.py) against a numpy computation written apart from it: per prompt and
per position, the inner loss over the pairs before the position, its gradient by hand, the steps one by one; the
Nadaraya–Watson estimator as a weighted mean; and the attention layers of Sun et al. 2024's Thm 1 and 2.
Everything runs in float64, so agreement is to rounding (1e-12)."""
import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.models.lsa import LinearSelfAttention
from icl_sim.models.softmax_attention import SoftmaxAttention
from icl_sim.models.ttt import attention_equivalent

DIM, POINTS = 3, 7


def _prompt(seed=0, batch=3):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, POINTS, DIM, generator=generator, dtype=torch.float64),
            torch.randn(batch, POINTS, generator=generator, dtype=torch.float64))


def _model(seed=0, **params):
    torch.manual_seed(seed)
    model = build_model("ttt", DIM, POINTS, **params).double()
    if "inner_lr" in dict(model.named_parameters()):
        with torch.no_grad():
            model.inner_lr.fill_(0.7)
    return model


def _weights(model):
    return {name: value.detach().numpy() for name, value in model.named_parameters()}


def _views(weights, x, y, i):
    """Keys and values of the points before position i, and the query of position i, as numpy arrays."""
    tokens = np.concatenate([x, y[:, None]], axis=1)
    query = np.concatenate([x[i], [0.0]]) @ weights["query"].T
    return tokens[:i] @ weights["key"].T, tokens[:i] @ weights["value"].T, query


def _gelu(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))


def _gelu_slope(z, step=1e-6):
    return (_gelu(z + step) - _gelu(z - step)) / (2 * step)  # a central difference, accurate to ~1e-11


def _numpy_linear(weights, x, y, steps):
    """Per position i: W ← W − η ∇(1/(2 i w)) Σ_{j<i} ‖W k_j − v_j‖², from W = 0; ŷ after each step."""
    width = weights["key"].shape[0]
    predictions = np.zeros((steps, POINTS))
    for i in range(POINTS):
        keys, values, query = _views(weights, x, y, i)
        fast = np.zeros((width, width))
        for step in range(steps):
            gradient = sum(np.outer(fast @ k - v, k) for k, v in zip(keys, values)) / (max(i, 1) * width)
            fast = fast - weights["inner_lr"] * gradient
            predictions[step, i] = (weights["output"] @ fast @ query)[0]
    return predictions


def _numpy_mlp(weights, x, y, steps):
    """The same for f(k) = W₂ gelu(W₁ k + b₁) + b₂, each point's gradient backpropagated on its own."""
    width = weights["key"].shape[0]
    predictions = np.zeros((steps, POINTS))
    for i in range(POINTS):
        keys, values, query = _views(weights, x, y, i)
        w1, b1, w2, b2 = (weights[name].copy() for name in ("w1", "b1", "w2", "b2"))
        for step in range(steps):
            grads = [np.zeros_like(p) for p in (w1, b1, w2, b2)]
            for k, v in zip(keys, values):
                pre = k @ w1 + b1
                error = (_gelu(pre) @ w2 + b2 - v) / (max(i, 1) * width)
                back = (w2 @ error) * _gelu_slope(pre)
                for total, piece in zip(grads, (np.outer(k, back), back, np.outer(_gelu(pre), error), error)):
                    total += piece
            w1, b1, w2, b2 = (p - weights["inner_lr"] * g for p, g in zip((w1, b1, w2, b2), grads))
            predictions[step, i] = (weights["output"] @ (_gelu(query @ w1 + b1) @ w2 + b2))[0]
    return predictions


def _numpy_kernel(weights, x, y):
    """Nadaraya–Watson: Σ_j e^{k_jᵀq} v_j / Σ_j e^{k_jᵀq} over j < i; nothing before position 0 predicts 0."""
    predictions = np.zeros(POINTS)
    for i in range(1, POINTS):
        keys, values, query = _views(weights, x, y, i)
        kernel = np.exp(keys @ query)
        predictions[i] = (weights["output"] @ (kernel @ values / kernel.sum()))[0]
    return predictions


@pytest.mark.parametrize("steps", [1, 3])
def test_linear_learner_is_gradient_descent_on_each_prefix(steps):
    model, (xs, ys) = _model(inner="linear", inner_steps=steps), _prompt()
    layers = torch.stack(model.layer_predictions(xs, ys)).detach().numpy()
    for b in range(xs.shape[0]):
        expected = _numpy_linear(_weights(model), xs[b].numpy(), ys[b].numpy(), steps)
        np.testing.assert_allclose(layers[:, b], expected, rtol=0, atol=1e-12)
    assert np.all(layers[:, :, 0] == 0)  # nothing before position 0: W stays 0


def test_mlp_learner_is_gradient_descent_on_each_prefix():
    model, (xs, ys) = _model(inner="mlp", inner_steps=2, hidden=5), _prompt(1)
    with torch.no_grad():  # a start away from zero biases, so that every gradient term is exercised
        model.b1.normal_()
        model.b2.normal_()
    layers = torch.stack(model.layer_predictions(xs, ys)).detach().numpy()
    for b in range(xs.shape[0]):
        expected = _numpy_mlp(_weights(model), xs[b].numpy(), ys[b].numpy(), 2)
        np.testing.assert_allclose(layers[:, b], expected, rtol=0, atol=1e-9)


def test_kernel_learner_is_the_nadaraya_watson_estimator():
    model, (xs, ys) = _model(inner="kernel"), _prompt(2)
    (predictions,) = model.layer_predictions(xs, ys)
    for b in range(xs.shape[0]):
        np.testing.assert_allclose(predictions[b].detach().numpy(),
                                   _numpy_kernel(_weights(model), xs[b].numpy(), ys[b].numpy()), rtol=0, atol=1e-12)


@pytest.mark.parametrize("inner, attention", [("linear", LinearSelfAttention), ("kernel", SoftmaxAttention)])
def test_one_linear_step_is_linear_attention_and_the_kernel_learner_softmax_attention(inner, attention):
    """Sun et al. 2024, Thm 1 and 2: the layers built from the TTT layer's weights predict as it does."""
    model, (xs, ys) = _model(3, inner=inner), _prompt(3, batch=8)
    equivalent = attention_equivalent(model)
    assert isinstance(equivalent, attention)
    torch.testing.assert_close(equivalent(xs, ys), model(xs, ys), rtol=0, atol=1e-12)


@pytest.mark.parametrize("params", [dict(inner="linear", inner_steps=2), dict(inner="mlp")])
def test_more_steps_or_an_mlp_are_no_attention_layer(params):
    with pytest.raises(ValueError, match="attention layer"):
        attention_equivalent(_model(**params))


def test_training_on_the_last_query_sees_the_same_prediction_and_gradients_pass_through_the_steps():
    model, (xs, ys) = _model(inner="mlp", inner_steps=2), _prompt(4)
    torch.testing.assert_close(model.last_prediction(xs, ys), model(xs, ys)[:, -1], rtol=0, atol=1e-12)
    model.last_prediction(xs, ys).square().sum().backward()
    assert all(parameter.grad is not None and parameter.grad.abs().sum() > 0 for parameter in model.parameters())


@pytest.mark.parametrize("params, named", [(dict(inner="kernel", inner_steps=2), "inner_steps"),
                                           (dict(inner="linear", hidden=8), "hidden"),
                                           (dict(inner="rnn"), "inner")])
def test_bad_configurations_name_their_parameter(params, named):
    with pytest.raises(ValueError, match=named):
        build_model("ttt", DIM, POINTS, **params)
