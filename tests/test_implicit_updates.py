"""icl_sim.implicit_updates against an independent numpy computation of the ``gpt`` blocks and of the modern blocks.

The reference writes the model out from its weights (interleaved embedding, pre-LN blocks with causal multi-head
softmax attention and an exact-GELU MLP, final LayerNorm and read-out), computes each block's patch by Dherin et al.'s
formula ΔW = (W·Δu) uᵀ/‖u‖² with the query's in-context residual stream, and runs the context-free query through
numpy blocks whose weight matrices are replaced by W + ΔW (one prompt at a time).  The fine-tuning gradient is held
against torch autograd on the model's own parameters, one prompt at a time.  Everything is float64: tolerances 1e-10.

The modern blocks (Goldwaser et al.) are written out in numpy too (RMSNorm / LayerNorm, the four layouts, GELU,
GeGLU, SwiGLU and Mixtral's top-2 mixture); each block's patch is checked against Goldwaser et al.'s formulas
computed from the numpy states (Thm. 1's gate, up and scale patches; the mixture's router and δ / S expert
patches), and the numpy stack whose matrices are W + ΔW (and the Gemma scale patched) on the lone query against
the numpy stack run on context and query.
"""
import numpy as np
import pytest
import torch
from scipy.special import erf

from icl_sim.implicit_updates import (MODERN_BLOCKS, block_patches, context_free_prediction, explicit_fine_tuning,
                                      fine_tuning_gradient, modern_patched, modern_patches, patched_prediction,
                                      random_modern_stack, update_trajectory)
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


def _attention(weights, prefix, tokens, heads, output="proj"):
    """Causal multi-head softmax attention of the normalised tokens (T, E): output at every position (the output
    matrix named ``output``; a missing bias is zero)."""
    width = tokens.shape[1]
    q, k, v = np.split(tokens @ weights[f"{prefix}.qkv.weight"].T + weights.get(f"{prefix}.qkv.bias", 0), 3, axis=1)
    size = width // heads
    out = np.zeros_like(tokens)
    for head in range(heads):
        part = slice(head * size, (head + 1) * size)
        scores = q[:, part] @ k[:, part].T / np.sqrt(size)
        scores[np.triu(np.ones_like(scores, dtype=bool), 1)] = -np.inf
        attention = np.exp(scores - scores.max(1, keepdims=True))
        out[:, part] = attention / attention.sum(1, keepdims=True) @ v[:, part]
    return out @ weights[f"{prefix}.{output}.weight"].T + weights.get(f"{prefix}.{output}.bias", 0)


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
            token = attended + out_matrix @ hidden + weights[f"{block}.mlp.proj.bias"] \
                + (steer if form == "bias" else 0)
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
        first, second = (torch.stack([p.first.dense() for p in block_patches(model, xs[:, :count], ys[:, :count],
                                                                             xs[:, -1], CONTEXT)[0]], 1)
                         for count in (1, 2))
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


MODERN_WIDTH, MODERN_CONTEXT = 8, 5


def _np_norm(weights, name, h):
    """RMSNorm (scale only, eps 1e-6) or LayerNorm (scale and bias, eps 1e-5) of tokens h (..., E)."""
    if f"{name}.bias" not in weights:
        return h / np.sqrt((h ** 2).mean(-1, keepdims=True) + 1e-6) * weights[f"{name}.weight"]
    return _layer_norm(h, weights[f"{name}.weight"], weights[f"{name}.bias"])


def _np_linear(weights, name, u):
    return u @ weights[f"{name}.weight"].T + weights.get(f"{name}.bias", 0)


def _silu(z):
    return z / (1 + np.exp(-z))


def _np_hidden(weights, prefix, kind, u):
    if kind == "gelu":
        return _gelu(_np_linear(weights, f"{prefix}.fc", u))
    act = _gelu if kind == "geglu" else _silu
    return act(_np_linear(weights, f"{prefix}.gate", u)) * _np_linear(weights, f"{prefix}.up", u)


def _np_gates(weights, prefix, u):
    """Mixtral's expert weights: the router's softmax kept on its two largest, renormalised (T, experts)."""
    logits = _np_linear(weights, f"{prefix}.router", u)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    kept = np.where(probabilities >= np.sort(probabilities, -1)[:, -2:-1], probabilities, 0.0)
    return kept / kept.sum(-1, keepdims=True)


def _np_mlp(weights, prefix, kind, u):
    if kind != "moe":
        return _np_linear(weights, f"{prefix}.down", _np_hidden(weights, prefix, kind, u))
    gates = _np_gates(weights, prefix, u)
    return sum(gates[:, [e]] * _np_mlp(weights, f"{prefix}.experts.{e}", "swiglu", u) for e in range(gates.shape[1]))


def _np_states(weights, block, layout, h):
    """The skip stream v and the MLP input u at every token h (T, E) of block ``block`` (a prefix)."""
    if layout == "post":
        v = _np_norm(weights, f"{block}.norm_1", h + _attention(weights, block, h, 2, output="out"))
        return v, v
    attended = _attention(weights, block, _np_norm(weights, f"{block}.norm_1", h), 2, output="out")
    if layout == "parallel":
        return h + attended, _np_norm(weights, f"{block}.norm_1", h)
    v = h + (_np_norm(weights, f"{block}.post_1", attended) if layout == "sandwich" else attended)
    return v, _np_norm(weights, f"{block}.norm_2", v)


def _np_block(weights, block, kind, h):
    _, mlp, layout = MODERN_BLOCKS[kind]
    v, u = _np_states(weights, block, layout, h)
    out = _np_mlp(weights, f"{block}.mlp", mlp, u)
    if layout == "post":
        return _np_norm(weights, f"{block}.norm_2", v + out)
    return v + (_np_norm(weights, f"{block}.post_2", out) if layout == "sandwich" else out)


@pytest.mark.parametrize("kind", list(MODERN_BLOCKS))
def test_modern_patches_against_numpy(kind):
    """Per prompt: the numpy stack on context and query, against the numpy stack on the lone query whose matrices
    are W + ΔW (the torch patches, formed as matrices) and against the torch analyser; each ΔW of rank 1; without
    patches the lone query's output differs (the identity is not vacuous)."""
    generator = torch.Generator().manual_seed(11)
    stack = random_modern_stack(kind, MODERN_WIDTH, generator)
    context = torch.randn(3, MODERN_CONTEXT, MODERN_WIDTH, generator=generator, dtype=torch.float64)
    query = torch.randn(3, MODERN_WIDTH, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        patches, in_context = modern_patches(stack, context, query)
        patched, free = modern_patched(stack, query, patches), modern_patched(stack, query, None)
    weights = {name: value.numpy() for name, value in stack.state_dict().items()}
    for b in range(3):
        h, lone, changed = np.vstack([context[b].numpy(), query[b].numpy()]), query[b].numpy()[None], dict(weights)
        for layer, patch in enumerate(patches):
            block = f"blocks.{layer}"
            for name, change in patch.matrices.items():
                dense = change.dense()[b].numpy()
                changed[f"{block}.mlp.{name}.weight"] = weights[f"{block}.mlp.{name}.weight"] + dense
                assert np.linalg.svd(dense, compute_uv=False)[1] <= 1e-10 * max(np.linalg.norm(dense), 1e-300)
            if patch.scale is not None:
                changed[f"{block}.post_2.weight"] = patch.scale[b].numpy()
            h, lone = _np_block(weights, block, kind, h), _np_block(changed, block, kind, lone)
        np.testing.assert_allclose(in_context[b].numpy(), h[-1], atol=1e-10)
        np.testing.assert_allclose(lone[0], h[-1], atol=1e-10)
        np.testing.assert_allclose(patched[b].numpy(), h[-1], atol=1e-10)
        assert np.abs(free[b].numpy() - h[-1]).max() > 1e-3


def test_gemma_and_mixtral_patches_are_the_papers_formulas():
    """Goldwaser et al. Thm. 1 on the first Gemma block: ΔW = W (z_C − z) zᵀ / ‖z‖² for gate and up, the post-MLP
    scale s + (v_C − v) / f_C, no down patch; the mixture's router patched by the same formula and each expert's
    down by (δ / S) h_eᵀ / ‖h_e‖² where active, zero where not; the parallel block only its down matrix."""
    generator = torch.Generator().manual_seed(12)
    context = torch.randn(2, MODERN_CONTEXT, MODERN_WIDTH, generator=generator, dtype=torch.float64)
    query = torch.randn(2, MODERN_WIDTH, generator=generator, dtype=torch.float64)
    for kind in ("gemma", "mixtral", "gpt-j"):
        stack = random_modern_stack(kind, MODERN_WIDTH, generator)
        with torch.no_grad():
            patch = modern_patches(stack, context, query)[0][0]
        weights = {name: value.numpy() for name, value in stack.state_dict().items()}
        layout = MODERN_BLOCKS[kind][2]
        for b in range(2):
            v_seen, u_seen = (state[-1] for state in _np_states(weights, "blocks.0", layout,
                                                                   np.vstack([context[b].numpy(), query[b].numpy()])))
            v, u = (state[0] for state in _np_states(weights, "blocks.0", layout, query[b].numpy()[None]))
            dense = {name: change.dense()[b].numpy() for name, change in patch.matrices.items()}
            delta = v_seen - v
            if kind == "gpt-j":
                hidden = _np_hidden(weights, "blocks.0.mlp", "gelu", u)
                assert list(dense) == ["down"]
                np.testing.assert_allclose(dense["down"], np.outer(delta, hidden) / (hidden @ hidden), atol=1e-12)
                continue
            inputs = ["gate", "up"] if kind == "gemma" else ["router"]
            for name in inputs:
                matrix = weights[f"blocks.0.mlp.{name}.weight"]
                np.testing.assert_allclose(dense[name], np.outer(matrix @ (u_seen - u), u) / (u @ u), atol=1e-12)
            if kind == "gemma":
                assert "down" not in dense
                out = _np_mlp(weights, "blocks.0.mlp", "geglu", u_seen[None])[0]
                normalised = out / np.sqrt((out ** 2).mean() + 1e-6)
                scale = weights["blocks.0.post_2.weight"] + delta / normalised
                np.testing.assert_allclose(patch.scale[b].numpy(), scale, atol=1e-10)
                continue
            gates = _np_gates(weights, "blocks.0.mlp", u_seen[None])[0]
            for e, gate in enumerate(gates):
                hidden = _np_hidden(weights, f"blocks.0.mlp.experts.{e}", "swiglu", u_seen)
                expected = np.outer(delta / gates.sum(), hidden) / (hidden @ hidden) if gate > 0 else 0 * dense[
                    f"experts.{e}.down"]
                np.testing.assert_allclose(dense[f"experts.{e}.down"], expected, atol=1e-12)
