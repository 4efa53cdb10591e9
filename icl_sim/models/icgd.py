"""Wu, Su, Hu, Song & Liu's (2N + 4)L-layer ReLU transformer that runs L gradient-descent steps on an N-layer ReLU
network in context ("In-context deep learning via transformer models", ICML 2025, Theorem 1 and App. C), written
out over the residual stream of ``icl_sim.models.constructed`` and run in float64.

The student is ``icl_sim.theory.network_gd``'s network f(x) = W_N σ(W_{N−1} … σ(W_1 x)) (no biases, hidden width K,
a scalar output: the paper's App. D form with d_y = 1, as its Definition 1's output activation is the identity
here), trained on the empirical risk L_n(w) = (1/2n) Σ_{i≤n} ℓ(f(x_i), y_i) with ℓ(t, y) = (t − y)², eq. (2.2).
A prompt is the paper's H (eq. 2.1): one token per point, the query last, each token holding

    x (d), y (1)      the point (the query's y is 0)
    w1 … wN           every weight matrix, row-major (the paper's w = [v_11; …; v_NK], eq. 3.2), the same in
                      every token
    p1 … pN           p_i(j): the network's layer-j outputs on the token's x (Definition 1, Remark 1)
    r1 … rN           r'_i(j − 1): the activation's derivative at layer j's pre-activation (Definition 2)
    g (1)             u(p_i(N), y_i) = ∂ℓ/∂t = 2 (f(x_i) − y_i) on context tokens, 0 on the query (Lemma 4)
    sN … s1           s_i(j): the chain-rule terms s_i(N) = r'_i(N − 1) ⊙ g_i, s_i(j) = r'_i(j − 1) ⊙ (V_{j+1}ᵀ
                      s_i(j + 1)) (Definition 3, eq. 3.6): backpropagation's δ of layer j
    one (1), t (1)    the constant 1 and t_i = 1(i ≤ n), the context indicator (eq. 2.1)

One loop is one GD step, the paper's block TF^{N+2} ∘ EWML^N ∘ TF² (Figure 1), 2N + 4 layers:

1. ``forward1`` … ``forwardN`` (Lemma 2, eqs. C.7-C.8): ReLU attention (Definition 7: update_i = (1/n_tokens)
   Σ_s σ(⟨Q h_i, K h_s⟩) V h_s); per unit k of layer j a head whose query reads p_i(j − 1) and key the weight row
   v_jk, so the score v_jkᵀ p_i(j − 1) is the same for every key token s (w is in all of them) and the average is
   r(v_jkᵀ p_i(j − 1)) written into p_j[k].  r is a sum of ReLUs: σ itself for the hidden layers, σ(t) − σ(−t) = t
   for the linear output.
2. ``derivative`` (Lemma 3, eq. C.12): one ReLU attention layer writes r'(v_jkᵀ p_i(j − 1)) for every layer j: the
   read-out's derivative is 1 (a head of score 1), the ReLU's derivative, a step, by the ramp
   (σ(t) − σ(t − δ))/δ: two heads, equal to 1(t > 0) except for t in (0, δ).
3. ``loss-derivative`` (Lemma 4, eq. C.14): an MLP writes g = σ(2(p_N − y) − R(1 − t)) − σ(−2(p_N − y) − R(1 − t)):
   2(f(x_i) − y_i) on context tokens, 0 on the query when |2(p_N − y)| ≤ R.
4. ``chain-rule-N`` … ``chain-rule-1`` (Lemma 5, eq. C.15): element-wise multiplication layers (Definition 6:
   update_i = Σ_m ⟨Q_m h_i, K_m h_i⟩ V_m h_i, a token times itself); per unit k of layer j the query reads column
   k of V_{j+1}, the key s_i(j + 1), the value r'_i(j − 1)[k], giving s_i(j)[k].
5. ``update`` (Theorem 1's proof, eq. C.16): a ReLU attention layer adds −η/(2n) Σ_t s_t(j)[k] p_t(j − 1) to
   v_jk in every token: per (j, k) two heads of scores ±s_t(j)[k] (σ(s) − σ(−s) = s, the query's s is 0) and
   values ∓η(n + 1)/(2n) p_t(j − 1), so that the 1/(n + 1) of the attention cancels.
6. ``project`` (Theorem 1's last MLP): Proj_W onto the box |w| ≤ B, w − σ(w − B) + σ(−w − B), an MLP as the
   theorem assumes (the paper leaves it unwritten; a box is the W an MLP projects onto exactly), and p, r', g, s
   cleared to 0 (v − σ(v) + σ(−v)) for the next loop.

Every weight is a number from Lemmas 2-5 and eq. C.16; the constants the paper leaves free are ours: the ramp's δ
(``RAMP``), the loss MLP's bound R (``LOSS_BOUND``) and the box B (``BOX``).  With σ exact for the forward pass,
the identity for the read-out and the squared loss's u linear, the ramp is the construction's one approximation
(the paper's ε_{r'}; its Theorem 1 assumes r' C⁴-smooth, which the ReLU's is not): a step equals GD's whenever
no pre-activation of a context point lies in (0, δ), up to rounding, about 1e-16 |t| / δ in r'.  The paper starts
from w⁽⁰⁾ = 0, a stationary point of a bias-free ReLU network (every gradient vanishes there); the construction
is the same for any start, which ``prompt_state`` writes into the tokens.
"""
from __future__ import annotations

import torch

from icl_sim.models.constructed import AttentionHead, Layer, LoopedConstruction, ReLUMLP, Stream
from icl_sim.theory.network_gd import layer_sizes
from icl_sim.validation import check_float, check_int

#: δ of the ramp (σ(t) − σ(t − δ))/δ that stands for the ReLU's derivative 1(t > 0)
RAMP = 1e-7
#: R of the loss MLP: it zeroes the query's g when |2(f(x) − y)| ≤ R (the paper's R₃)
LOSS_BOUND = 1e3
#: B of the box W = {|w| ≤ B} the last MLP projects onto (large: GD's iterates stay inside)
BOX = 1e6


class ReLUAttentionHead(AttentionHead):
    """The paper's ReLU attention head (Definition 7, after Bai et al. 2023): update_i = (1/n) Σ_s σ(⟨Q h_i,
    K h_s⟩) V h_s over the n tokens (no softmax, no temperature)."""

    def random(self, generator: torch.Generator) -> "ReLUAttentionHead":
        head = super().random(generator)
        return type(self)(head.query, head.key, head.value)

    def __call__(self, state, temperature, context):
        scores = (state @ self.query.T) @ (state @ self.key.T).transpose(-1, -2)
        return torch.relu(scores) @ (state @ self.value.T) / state.shape[-2]


class ProductHead(ReLUAttentionHead):
    """One head of the paper's element-wise multiplication layer (Definition 6): update_i = ⟨Q h_i, K h_i⟩ V h_i,
    each token with itself."""

    def __call__(self, state, temperature, context):
        return ((state @ self.query.T) * (state @ self.key.T)).sum(-1, keepdim=True) * (state @ self.value.T)


def icgd_stream(dim: int, depth: int, width: int) -> Stream:
    """The tokens' features for inputs of dimension d = ``dim`` and an N = ``depth``-layer network of hidden
    ``width`` K (the module docstring's table)."""
    sizes = layer_sizes(dim, depth, width)
    fields = [("x", dim), ("y", 1)] + [(f"w{j + 1}", out * fan_in) for j, (out, fan_in) in enumerate(sizes)]
    fields += [(f"p{j + 1}", out) for j, (out, _) in enumerate(sizes)]
    fields += [(f"r{j + 1}", out) for j, (out, _) in enumerate(sizes)]
    fields += [("g", 1)] + [(f"s{j}", sizes[j - 1][0]) for j in range(depth, 0, -1)] + [("one", 1), ("t", 1)]
    return Stream(fields)


def _below(stream: Stream, layer: int) -> slice:
    """The features of p_i(layer − 1): x for the first layer."""
    return stream["x"] if layer == 1 else stream[f"p{layer - 1}"]


def _row(stream: Stream, layer: int, unit: int, fan_in: int) -> slice:
    """The features of v_{layer, unit}, row ``unit`` of W_layer."""
    start = stream[f"w{layer}"].start + unit * fan_in
    return slice(start, start + fan_in)


def _unit_head(stream: Stream, layer: int, unit: int, fan_in: int, shift: float, target: str,
               coefficient: float) -> AttentionHead:
    """A head adding coefficient · σ(v_{layer,unit}ᵀ p_i(layer − 1) − shift) to ``target``[unit] of token i (eq.
    C.7: the query reads p_i(layer − 1) and −shift on the constant, the key v_{layer,unit} and 1)."""
    one = stream.column("one")
    made = ReLUAttentionHead.zeros(stream, fan_in + 1)
    made.query[:fan_in, _below(stream, layer)] = torch.eye(fan_in, dtype=torch.float64)
    made.query[fan_in, one] = -shift
    made.key[:fan_in, _row(stream, layer, unit, fan_in)] = torch.eye(fan_in, dtype=torch.float64)
    made.key[fan_in, one] = 1.0
    made.value[stream.column(target, unit), one] = coefficient
    return made


def _forward_layer(stream: Stream, layer: int, sizes: list[tuple[int, int]]) -> Layer:
    """Lemma 2: p_i(layer) from p_i(layer − 1) and W_layer: σ per hidden unit, σ(t) − σ(−t) for the read-out."""
    out, fan_in = sizes[layer - 1]
    heads = []
    for unit in range(out):
        if layer < len(sizes):
            heads.append(_unit_head(stream, layer, unit, fan_in, 0.0, f"p{layer}", 1.0))
        else:
            plus = _unit_head(stream, layer, unit, fan_in, 0.0, f"p{layer}", 1.0)
            minus = _unit_head(stream, layer, unit, fan_in, 0.0, f"p{layer}", -1.0)
            minus.query[:fan_in] *= -1.0
            heads += [plus, minus]
    return Layer(f"forward{layer}", heads)


def _derivative_layer(stream: Stream, sizes: list[tuple[int, int]], ramp: float) -> Layer:
    """Lemma 3: r'_i(j − 1)[k] for every layer j: the ramp (σ(t) − σ(t − δ))/δ for ReLU units, 1 for the read-out."""
    heads = []
    for layer, (out, fan_in) in enumerate(sizes, start=1):
        for unit in range(out):
            if layer < len(sizes):
                heads += [_unit_head(stream, layer, unit, fan_in, 0.0, f"r{layer}", 1.0 / ramp),
                          _unit_head(stream, layer, unit, fan_in, ramp, f"r{layer}", -1.0 / ramp)]
            else:
                constant = ReLUAttentionHead.zeros(stream, 1)
                constant.query[0, stream.column("one")] = 1.0
                constant.key[0, stream.column("one")] = 1.0
                constant.value[stream.column(f"r{layer}", unit), stream.column("one")] = 1.0
                heads.append(constant)
    return Layer("derivative", heads)


def _loss_layer(stream: Stream, bound: float) -> Layer:
    """Lemma 4 for ℓ(t, y) = (t − y)²: g = σ(z − R(1 − t)) − σ(−z − R(1 − t)) with z = 2(p_N − y)."""
    mlp = ReLUMLP.zeros(stream, 2)
    depth = sum(1 for name in stream.names if name.startswith("p"))
    for unit, sign in enumerate((1.0, -1.0)):
        mlp.w1[unit, stream.column(f"p{depth}")] = 2.0 * sign
        mlp.w1[unit, stream.column("y")] = -2.0 * sign
        mlp.w1[unit, stream.column("t")] = bound
        mlp.w1[unit, stream.column("one")] = -bound
        mlp.w2[stream.column("g"), unit] = sign
    return Layer("loss-derivative", mlp=mlp)


def _chain_rule_layer(stream: Stream, layer: int, sizes: list[tuple[int, int]]) -> Layer:
    """Lemma 5: s_i(N) = r'_i(N − 1) ⊙ g_i, s_i(j)[k] = ⟨V_{j+1}[:, k], s_i(j + 1)⟩ · r'_i(j − 1)[k]."""
    depth = len(sizes)
    heads = []
    if layer == depth:
        head = ProductHead.zeros(stream, 1)
        head.query[0, stream.column("g")] = 1.0
        head.key[0, stream.column(f"r{depth}")] = 1.0
        head.value[stream.column(f"s{depth}"), stream.column("one")] = 1.0
        return Layer(f"chain-rule-{layer}", [head])
    above_out, above_in = sizes[layer]
    for unit in range(sizes[layer - 1][0]):
        head = ProductHead.zeros(stream, above_out)
        columns = [stream[f"w{layer + 1}"].start + row * above_in + unit for row in range(above_out)]
        head.query[range(above_out), columns] = 1.0
        head.key[:, stream[f"s{layer + 1}"]] = torch.eye(above_out, dtype=torch.float64)
        head.value[stream.column(f"s{layer}", unit), stream.column(f"r{layer}", unit)] = 1.0
        heads.append(head)
    return Layer(f"chain-rule-{layer}", heads)


def _update_layer(stream: Stream, sizes: list[tuple[int, int]], points: int, lr: float) -> Layer:
    """Eq. C.16: v_jk ← v_jk − η/(2n) Σ_t s_t(j)[k] p_t(j − 1), over the n = ``points`` context tokens."""
    scale = lr * (points + 1) / (2 * points)
    heads = []
    for layer, (out, fan_in) in enumerate(sizes, start=1):
        for unit in range(out):
            for sign in (1.0, -1.0):
                head = ReLUAttentionHead.zeros(stream, 1)
                head.query[0, stream.column("one")] = sign
                head.key[0, stream.column(f"s{layer}", unit)] = 1.0
                head.value[_row(stream, layer, unit, fan_in), _below(stream, layer)] = -sign * scale * torch.eye(
                    fan_in, dtype=torch.float64)
                heads.append(head)
    return Layer("update", heads)


def _project_layer(stream: Stream, depth: int, box: float) -> Layer:
    """Proj_W onto |w| ≤ B entry by entry, and p, r', g, s back to 0."""
    weights = range(stream["w1"].start, stream[f"w{depth}"].stop)
    scratch = range(stream["p1"].start, stream["one"].start)
    mlp = ReLUMLP.zeros(stream, 2 * (len(weights) + len(scratch)))
    one = stream.column("one")
    unit = 0
    for column in weights:  # w − σ(w − B) + σ(−w − B)
        for sign in (1.0, -1.0):
            mlp.w1[unit, column], mlp.w1[unit, one], mlp.w2[column, unit] = sign, -box, -sign
            unit += 1
    for column in scratch:  # v − σ(v) + σ(−v) = 0
        for sign in (1.0, -1.0):
            mlp.w1[unit, column], mlp.w2[column, unit] = sign, -sign
            unit += 1
    return Layer("project", mlp=mlp)


def icgd_construction(dim: int, depth: int, width: int, points: int, lr: float, *, ramp: float = RAMP,
                      loss_bound: float = LOSS_BOUND, box: float = BOX) -> LoopedConstruction:
    """The (2N + 4)-layer block whose every loop is one GD step of size η = ``lr`` on the squared loss of the
    N = ``depth``-layer ReLU network of hidden ``width`` over the n = ``points`` context tokens of a prompt of
    dimension ``dim`` (the query is token n + 1)."""
    for name, value in (("dim", dim), ("depth", depth), ("width", width), ("points", points)):
        check_int(name, value, 1)
    for name, value in (("lr", lr), ("ramp", ramp), ("loss_bound", loss_bound), ("box", box)):
        check_float(name, value, 0.0, strict=True)
    if depth < 2:
        raise ValueError(f"the construction needs a hidden layer: depth must be at least 2, got {depth}")
    stream, sizes = icgd_stream(dim, depth, width), layer_sizes(dim, depth, width)
    layers = [_forward_layer(stream, layer, sizes) for layer in range(1, depth + 1)]
    layers += [_derivative_layer(stream, sizes, ramp), _loss_layer(stream, loss_bound)]
    layers += [_chain_rule_layer(stream, layer, sizes) for layer in range(depth, 0, -1)]
    layers += [_update_layer(stream, sizes, points, lr), _project_layer(stream, depth, box)]
    return LoopedConstruction(stream, layers, temperature=1.0)  # ReLU attention: the temperature is unused


def prompt_state(stream: Stream, xs: torch.Tensor, ys: torch.Tensor, weights: list[torch.Tensor]) -> torch.Tensor:
    """H (eq. 2.1) for context points ``xs`` (B, n, d), ``ys`` (B, n) and query ``xs[:, -1]`` (its y is not
    read: 0 in the state), with the start ``weights`` (each (fan_out, fan_in) or (B, fan_out, fan_in)) in every
    token: (B, n, stream.width) float64."""
    batch, tokens, _ = xs.shape
    state = stream.zeros(batch, tokens, device=xs.device)
    state[..., stream["x"]] = xs.to(state.dtype)
    state[:, :-1, stream.column("y")] = ys[:, :-1].to(state.dtype)
    for layer, weight in enumerate(weights, start=1):
        state[..., stream[f"w{layer}"]] = weight.to(state.dtype).reshape(-1, 1, weight.shape[-2] * weight.shape[-1]
                                                                         ).expand(batch, tokens, -1)
    state[..., stream.column("one")] = 1.0
    state[:, :-1, stream.column("t")] = 1.0
    return state


def read_weights(stream: Stream, state: torch.Tensor, dim: int, depth: int, width: int,
                 token: int = -1) -> list[torch.Tensor]:
    """The weight matrices (B, fan_out, fan_in) held by ``token`` (the query by default)."""
    return [state[:, token, stream[f"w{layer}"]].reshape(-1, out, fan_in)
            for layer, (out, fan_in) in enumerate(layer_sizes(dim, depth, width), start=1)]


def construction_prediction(model: LoopedConstruction, state: torch.Tensor, depth: int) -> torch.Tensor:
    """f(w, x_query) (B,) for the weights w held in ``state``: the block's first N (forward) layers on it."""
    for layer in model.layers[:depth]:
        state = layer(state, model.temperature, {})
    return state[:, -1, model.stream.column(f"p{depth}")]


def layer_count(depth: int, steps: int) -> int:
    """(2N + 4) L: the layers of L loops (Theorem 1)."""
    return (2 * depth + 4) * steps


__all__ = ["BOX", "LOSS_BOUND", "ProductHead", "RAMP", "ReLUAttentionHead", "construction_prediction",
           "icgd_construction", "icgd_stream", "layer_count", "prompt_state", "read_weights"]
