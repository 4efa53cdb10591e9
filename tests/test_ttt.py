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
                                           (dict(inner="mlp", mini_batch=4), "mini_batch"),
                                           (dict(inner="linear", inner_steps=2, mini_batch=4), "mini_batch"),
                                           (dict(inner="linear", inner_norm=True), "inner_norm"),
                                           (dict(inner="linear", mini_batch=4, token_lr=1), "token_lr"),
                                           (dict(inner="rnn"), "inner")])
def test_bad_configurations_name_their_parameter(params, named):
    with pytest.raises(ValueError, match=named):
        build_model("ttt", DIM, POINTS, **params)


def _layer_norm_residual_gradient(weights, key, value, fast, bias):
    """∂/∂(W, b) of ½‖LN(W k + b) γ + β − (v − k)‖²/w, by torch's autograd through ``torch.nn.functional.layer_norm``
    (not the model's hand-written backward)."""
    fast, bias = (torch.tensor(p, requires_grad=True) for p in (fast, bias))
    inner = fast @ torch.from_numpy(key) + bias
    normal = torch.nn.functional.layer_norm(inner, inner.shape, torch.from_numpy(weights["norm_weight"]),
                                            torch.from_numpy(weights["norm_bias"]), eps=1e-6)
    loss = 0.5 * (normal - torch.from_numpy(value - key)).square().sum() / len(key)
    return [g.numpy() for g in torch.autograd.grad(loss, (fast, bias))]


def _numpy_mini_batch(weights, x, y, size, norm, token_lr):
    """Mini-batch TTT written out pair by pair: the pairs in order, mini-batches of ``size``; each pair's gradient
    taken at its mini-batch's start weights and added to a running sum; position i reads the start weights minus the
    mean of its mini-batch's rate-weighted gradients so far; a mini-batch's end starts the next."""
    width = weights["key"].shape[0]
    tokens = np.concatenate([x, y[:, None]], axis=1)
    keys, values = tokens @ weights["key"].T, tokens @ weights["value"].T
    queries = np.concatenate([x, np.zeros((POINTS, 1))], axis=1) @ weights["query"].T
    rates = weights["inner_lr"] * (1 / (1 + np.exp(-(tokens @ weights["rate_weight"] + weights["rate_bias"])))
                                   if token_lr else np.ones(POINTS))
    fast = weights["w0"].copy() if norm else np.zeros((width, width))
    bias = weights["b0"].copy() if norm else np.zeros(width)

    def output(query, fast, bias):
        inner = fast @ query + bias
        if not norm:
            return inner
        normal = (inner - inner.mean()) / np.sqrt(inner.var() + 1e-6)
        return query + normal * weights["norm_weight"] + weights["norm_bias"]

    predictions, start_fast, start_bias, sums = [weights["output"] @ output(queries[0], fast, bias)], fast, bias, None
    for pair in range(POINTS - 1):
        if pair % size == 0:  # a new mini-batch starts from the weights the last one left
            start_fast, start_bias = fast, bias
            sums, seen = [np.zeros_like(fast), np.zeros_like(bias)], 0
        if norm:
            gradient = _layer_norm_residual_gradient(weights, keys[pair], values[pair], start_fast, start_bias)
        else:
            gradient = [np.outer(start_fast @ keys[pair] - values[pair], keys[pair]) / width, 0.0]
        sums = [total + rates[pair] * piece for total, piece in zip(sums, gradient)]
        seen += 1
        fast, bias = start_fast - sums[0] / seen, start_bias - sums[1] / seen
        predictions.append(weights["output"] @ output(queries[pair + 1], fast, bias))
    return np.concatenate(predictions)


@pytest.mark.parametrize("size, norm, token_lr", [(1, False, False), (3, False, True), (1, True, False),
                                                  (4, True, True)])
def test_mini_batch_ttt_is_the_loop_over_pairs_written_out(size, norm, token_lr):
    """b = 1 is online GD (each pair's step from the weights the one before left); b = 3, 4 cut the 6 pairs into
    mini-batches (the last one short when b = 4); with ``inner_norm`` f(k) = k + LN(W k + b) (its gradient by
    autograd here, by hand in the model)."""
    model, (xs, ys) = _model(5, inner="linear", mini_batch=size, inner_norm=norm, token_lr=token_lr), _prompt(5)
    with torch.no_grad():  # away from the start (γ = 1, β = 0, W = 0.02 noise, rate gate at 0), every term exercised
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    predictions = model(xs, ys).detach().numpy()
    for b in range(xs.shape[0]):
        expected = _numpy_mini_batch(_weights(model), xs[b].numpy(), ys[b].numpy(), size, norm, token_lr)
        np.testing.assert_allclose(predictions[b], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("norm", [False, True])
def test_the_dual_form_is_the_primal_form_and_a_whole_prefix_mini_batch_is_batch_gd(norm):
    """Sun et al. 2024, Sec. 2.5: the dual form computes the primal form's outputs without the per-pair W_i; with
    b ≥ N (one mini-batch) and no norm, mini-batch TTT is the one batch-GD step on each prefix, linear attention."""
    model, (xs, ys) = _model(6, inner="linear", mini_batch=3, inner_norm=norm, token_lr=True), _prompt(6)
    context = torch.cat([xs, ys[..., None]], dim=-1)
    views = (context @ model.key.T, context @ model.value.T,
             torch.cat([xs, torch.zeros_like(ys[..., None])], dim=-1) @ model.query.T,
             context @ model.rate_weight + model.rate_bias)
    torch.testing.assert_close(model.mini_batch_outputs(*views, form="primal"),
                               model.mini_batch_outputs(*views, form="dual"), rtol=0, atol=1e-12)
    whole, batch = _model(7, inner="linear", mini_batch=POINTS - 1), _model(7, inner="linear")
    torch.testing.assert_close(whole(xs, ys), batch(xs, ys), rtol=0, atol=1e-14)
