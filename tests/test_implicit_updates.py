"""icl_sim.implicit_updates against an independent numpy computation of the ``gpt`` blocks.

The reference writes the model out from its weights (interleaved embedding, pre-LN blocks with causal multi-head
softmax attention and an exact-GELU MLP, final LayerNorm and read-out), computes each block's patch by Dherin et al.'s
formula ΔW = (W·Δu) uᵀ/‖u‖² with the query's in-context residual stream, and runs the context-free query through
numpy blocks whose weight matrices are replaced by W + ΔW (one prompt at a time).  The fine-tuning gradient is held
against torch autograd on the model's own parameters, one prompt at a time.  Everything is float64: tolerances 1e-10.
"""
import numpy as np
import pytest
import torch
from scipy.special import erf

from icl_sim.implicit_updates import (block_patches, context_free_prediction, explicit_fine_tuning,
                                      fine_tuning_gradient, patched_prediction, update_trajectory)
from icl_sim.models.gpt import GPT, GPTConfig

DIM, POINTS, CONTEXT = 2, 5, 4


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(7)
    return GPT(DIM, POINTS, GPTConfig(n_embd=8, n_layer=2, n_head=2, init_std=0.3)).double().eval()


@pytest.fixture(scope="module")
def prompt():
    generator = torch.Generator().manual_seed(3)
    xs = torch.randn(3, CONTEXT + 1, DIM, generator=generator, dtype=torch.float64)
    ys = xs @ torch.randn(DIM, generator=generator, dtype=torch.float64)
    return xs, ys


def _weights(model):
    return {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}


def _layer_norm(h, weight, bias):
    centred = h - h.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * weight + bias


def _attention(weights, prefix, tokens, heads):
    """Causal multi-head softmax attention of the normalised tokens (T, E): output at every position."""
    width = tokens.shape[1]
    q, k, v = np.split(tokens @ weights[f"{prefix}.qkv.weight"].T + weights[f"{prefix}.qkv.bias"], 3, axis=1)
    size = width // heads
    out = np.zeros_like(tokens)
    for head in range(heads):
        part = slice(head * size, (head + 1) * size)
        scores = q[:, part] @ k[:, part].T / np.sqrt(size)
        scores[np.triu(np.ones_like(scores, dtype=bool), 1)] = -np.inf
        attention = np.exp(scores - scores.max(1, keepdims=True))
        out[:, part] = attention / attention.sum(1, keepdims=True) @ v[:, part]
    return out @ weights[f"{prefix}.proj.weight"].T + weights[f"{prefix}.proj.bias"]


def _gelu(z):
    return 0.5 * z * (1 + erf(z / np.sqrt(2)))


def _tokens(weights, xs, ys):
    """Interleaved x / y tokens of one prompt (numpy): read in, plus positions."""
    count = len(ys)
    raw = np.zeros((2 * count, DIM))
    raw[0::2], raw[1::2, 0] = xs, ys
    return raw @ weights["embedding.read_in.weight"].T + weights["embedding.read_in.bias"] \
        + weights["embedding.positions.weight"][: 2 * count]


def _query_token(weights, query, slot):
    return query @ weights["embedding.read_in.weight"].T + weights["embedding.read_in.bias"] \
        + weights["embedding.positions.weight"][2 * slot]


def _reference(weights, xs, ys, query, slot, layers=2, heads=2):
    """One prompt: the context (xs, ys) at its points and the query as the x token of point ``slot``: the in-context
    prediction and every block's (ΔW_fc, δ, ΔW_proj) by the formula, then the context-free query through blocks
    whose matrices are W + ΔW (bias form) and W_out + ΔW_out (output form)."""
    h = np.vstack([_tokens(weights, xs, ys), _query_token(weights, query, slot)])
    patches = []
    for layer in range(layers):
        block = f"blocks.{layer}"
        last = h[-1]
        lone = _attention(weights, f"{block}.attn", _layer_norm(last[None], weights[f"{block}.ln_1.weight"],
                                                                  weights[f"{block}.ln_1.bias"]), heads)[0]
        attended = h + _attention(weights, f"{block}.attn", _layer_norm(h, weights[f"{block}.ln_1.weight"],
                                                                          weights[f"{block}.ln_1.bias"]), heads)
        seen = _layer_norm(attended[-1], weights[f"{block}.ln_2.weight"], weights[f"{block}.ln_2.bias"])
        alone = _layer_norm(last + lone, weights[f"{block}.ln_2.weight"], weights[f"{block}.ln_2.bias"])
        first = weights[f"{block}.mlp.fc.weight"]
        delta = np.outer(first @ (seen - alone), alone) / (alone @ alone)
        steer = attended[-1] - last - lone
        hidden = _gelu(first @ seen + weights[f"{block}.mlp.fc.bias"])
        patches.append((delta, steer, np.outer(steer, hidden) / (hidden @ hidden)))
        normalised = _layer_norm(attended, weights[f"{block}.ln_2.weight"], weights[f"{block}.ln_2.bias"])
        h = attended + _gelu(normalised @ first.T + weights[f"{block}.mlp.fc.bias"]) \
            @ weights[f"{block}.mlp.proj.weight"].T + weights[f"{block}.mlp.proj.bias"]
    read = _layer_norm(h[-1], weights["head.ln_f.weight"], weights["head.ln_f.bias"])
    in_context = float(read @ weights["head.read_out.weight"][0] + weights["head.read_out.bias"][0])
    predictions = {}
    for form in ("bias", "output"):
        token = _query_token(weights, query, slot)
        for layer, (delta, steer, output) in enumerate(patches):
            block = f"blocks.{layer}"
            lone = _attention(weights, f"{block}.attn", _layer_norm(token[None], weights[f"{block}.ln_1.weight"],
                                                                      weights[f"{block}.ln_1.bias"]), heads)[0]
            attended = token + lone
            normalised = _layer_norm(attended, weights[f"{block}.ln_2.weight"], weights[f"{block}.ln_2.bias"])
            hidden = _gelu((weights[f"{block}.mlp.fc.weight"] + delta) @ normalised + weights[f"{block}.mlp.fc.bias"])
            out_matrix = weights[f"{block}.mlp.proj.weight"] + (output if form == "output" else 0)
            token = attended + out_matrix @ hidden + weights[f"{block}.mlp.proj.bias"] + (steer if form == "bias" else 0)
        read = _layer_norm(token, weights["head.ln_f.weight"], weights["head.ln_f.bias"])
        predictions[form] = float(read @ weights["head.read_out.weight"][0] + weights["head.read_out.bias"][0])
    return in_context, patches, predictions


def test_patches_and_identity_against_numpy(model, prompt):
    xs, ys = prompt
    weights = _weights(model)
    with torch.no_grad():
        patches, in_context = block_patches(model, xs[:, :-1], ys[:, :-1], xs[:, -1])
        patched = {form: patched_prediction(model, xs[:, -1], CONTEXT, patches, form) for form in ("bias", "output")}
        assert torch.allclose(in_context, model(xs, ys)[:, -1], atol=1e-12)
    for b in range(xs.shape[0]):
        expected, reference, predictions = _reference(weights, xs[b, :-1].numpy(), ys[b, :-1].numpy(),
                                                      xs[b, -1].numpy(), CONTEXT)
        assert in_context[b].item() == pytest.approx(expected, abs=1e-10)
        for patch, (delta, steer, output) in zip(patches, reference):
            np.testing.assert_allclose(patch.first.dense()[b].numpy(), delta, atol=1e-10)
            np.testing.assert_allclose(patch.steer[b].numpy(), steer, atol=1e-10)
            np.testing.assert_allclose(patch.output.dense()[b].numpy(), output, atol=1e-10)
            assert np.linalg.svd(delta, compute_uv=False)[1] <= 1e-10 * np.linalg.norm(delta)
        for form in ("bias", "output"):  # the numpy model with its matrices replaced predicts the in-context value
            assert predictions[form] == pytest.approx(expected, abs=1e-10)
            assert patched[form][b].item() == pytest.approx(expected, abs=1e-10)


def test_without_patches_the_context_free_model_differs(model, prompt):
    """The identity is not vacuous: the context moves this random model's prediction."""
    xs, ys = prompt
    with torch.no_grad():
        free = context_free_prediction(model, xs[:, -1], CONTEXT)
        assert (free - model(xs, ys)[:, -1]).abs().min() > 1e-3


def test_trajectory_telescopes_and_steps_are_differences(model, prompt):
    """Implicit GD: the patches after i examples, applied at every i, give the model's prediction with those i
    examples and the same query token (point n: numpy, the context at its points and the query after a gap); the
    steps are the norms of the successive differences."""
    xs, ys = prompt
    weights = _weights(model)
    with torch.no_grad():
        trajectory = update_trajectory(model, xs[:, :-1], ys[:, :-1], xs[:, -1])
        first = torch.stack([p.first.dense() for p in block_patches(model, xs[:, :1], ys[:, :1], xs[:, -1], CONTEXT)[0]], 1)
        second = torch.stack([p.first.dense() for p in block_patches(model, xs[:, :2], ys[:, :2], xs[:, -1], CONTEXT)[0]], 1)
    for b in range(xs.shape[0]):
        for count in range(1, CONTEXT + 1):
            expected, patches, _ = _reference(weights, xs[b, :count].numpy(), ys[b, :count].numpy(),
                                              xs[b, -1].numpy(), CONTEXT)
            assert trajectory["in_context"][b, count - 1].item() == pytest.approx(expected, abs=1e-10)
            if count == 1:
                norm = np.sqrt(sum(np.sum(delta ** 2) for delta, _, _ in patches))
                assert trajectory["norm"][b, 0].norm().item() == pytest.approx(norm, abs=1e-10)
    assert torch.allclose(trajectory["patched"], trajectory["in_context"], atol=1e-10)
    assert torch.allclose(trajectory["patched_output"], trajectory["in_context"], atol=1e-10)
    assert torch.allclose(trajectory["step"][:, 0], (second - first).flatten(2).norm(dim=-1), atol=1e-12)
    assert torch.allclose(trajectory["norm"][:, 0], first.flatten(2).norm(dim=-1), atol=1e-12)


def _lone(model, point, slot):
    """The model's own blocks on the single x token of ``point`` at point ``slot``: its context-free prediction."""
    h = model.embedding.queries(point[None, None], slot)
    for block in model.blocks:
        h = block(h)
    return model.head.read(h)[0, 0]


def test_fine_tuning_gradient_against_autograd(model, prompt):
    """Per prompt, the gradient of ½ Σ_j (f(x_j alone at point j) − y_j)² with respect to each block's MLP first
    matrix, by autograd through the model's own forward on each lone token; and one explicit step of it."""
    xs, ys = prompt
    grads = [grad.dense() for grad in fine_tuning_gradient(model, xs, ys)]
    for b in range(xs.shape[0]):
        model.zero_grad()
        loss = sum(0.5 * (_lone(model, xs[b, j], j) - ys[b, j]) ** 2 for j in range(xs.shape[1]))
        loss.backward()
        for grad, block in zip(grads, model.blocks):
            assert torch.allclose(grad[b], block.mlp.fc.weight.grad, atol=1e-10)
    model.zero_grad()
    lr = 0.05
    stepped = explicit_fine_tuning(model, xs[:, :-1], ys[:, :-1], xs[:, -1], lr, 1)
    original = [block.mlp.fc.weight.detach().clone() for block in model.blocks]
    gradients = [grad.dense() for grad in fine_tuning_gradient(model, xs[:, :-1], ys[:, :-1])]
    for b in range(xs.shape[0]):
        with torch.no_grad():
            for block, weight, grad in zip(model.blocks, original, gradients):
                block.mlp.fc.weight.copy_(weight - lr * grad[b])
            expected = _lone(model, xs[b, -1], CONTEXT)
            for block, weight in zip(model.blocks, original):
                block.mlp.fc.weight.copy_(weight)
        assert stepped[b].item() == pytest.approx(expected.item(), abs=1e-10)


def test_bad_input(model, prompt):
    xs, ys = prompt
    with pytest.raises(ValueError, match="xs"):
        block_patches(model, xs[:, :0], ys[:, :0], xs[:, -1])
    with pytest.raises(ValueError, match="form"):
        patched_prediction(model, xs[:, -1], 1, block_patches(model, xs[:, :1], ys[:, :1], xs[:, -1])[0], "gate")
    with pytest.raises(ValueError, match="slot"):
        block_patches(model, xs[:, :2], ys[:, :2], xs[:, -1], 1)
    with pytest.raises(ValueError, match="steps"):
        explicit_fine_tuning(model, xs[:, :1], ys[:, :1], xs[:, -1], 0.1, -1)


def test_explicit_fine_tuning_steps_against_autograd(model, prompt):
    """Two explicit steps, each the autograd gradient of the lone-token loss at the weights the step before left,
    on the model's own modules, for one prompt."""
    xs, ys = prompt
    lr, original = 0.05, [block.mlp.fc.weight.detach().clone() for block in model.blocks]
    stepped = explicit_fine_tuning(model, xs[:1, :-1], ys[:1, :-1], xs[:1, -1], lr, 2)
    for _ in range(2):
        model.zero_grad()
        sum(0.5 * (_lone(model, xs[0, j], j) - ys[0, j]) ** 2 for j in range(CONTEXT)).backward()
        with torch.no_grad():
            for block in model.blocks:
                block.mlp.fc.weight -= lr * block.mlp.fc.weight.grad
    with torch.no_grad():
        expected = _lone(model, xs[0, -1], CONTEXT).item()
        for block, weight in zip(model.blocks, original):
            block.mlp.fc.weight.copy_(weight)
    model.zero_grad()
    assert stepped[0].item() == pytest.approx(expected, abs=1e-10)
