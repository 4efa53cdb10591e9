"""A test-time-training (TTT) layer: per prompt, a few steps of gradient descent on a fast-weight learner.

Sun et al., "Learning to (learn at test time)" (arXiv 2310.13807, 2023; their test-time-training/mttt,
``inner_loop.py``) and "Learning to (learn at test time): RNNs with expressive hidden states" (arXiv 2407.04620,
2024, Sec. 2; test-time-training/ttt-lm-pytorch, ``ttt.py``) make a layer's state a model f(·; W) that is trained
on the sequence itself: the inner loop takes gradient steps on a self-supervised loss, the outer loop (icl-sim's
training) learns that loss's views and the inner learning rate.

Tokens are z_j = (x_j, y_j) ∈ R^{d+k}; the query of position i is (x_i, 0), as in :mod:`icl_sim.models.lsa`.
With learned projections θ_K, θ_V, θ_Q (w × (d + k)) the keys k_j = θ_K z_j, values v_j = θ_V z_j and the query
q_i = θ_Q (x_i, 0) give position i's inner loss over the pairs before it, the 2024 paper's multi-view
reconstruction ℓ(W; z) = ‖f(θ_K z; W) − θ_V z‖² (its Sec. 2.3) averaged as mttt averages it (½ and the mean over
tokens and the w output coordinates, its ``inner_loss_fn``):

    L_i(W) = 1/(2 i w) Σ_{j<i} ‖f(k_j; W) − v_j‖²,   W^(s) = W^(s−1) − η ∇L_i(W^(s−1)),  s = 1..S,

full-batch GD over the prefix (mttt's batch-GD branch, ``inner_itr`` = S steps at one rate, ``inner_lr`` =
(1., 1., 1., 1.) for S = 4).  Here the rate η, the same for every step, is learned (ttt-lm-pytorch learns its rate),
starting at ``inner_lr``: rates of their own per step, started equal, would stay equal, since GD steps on one
quadratic commute and the outer gradient is the same for each.  Position i predicts ŷ_i = θ_O f(q_i; W^(S))
(θ_O: k × w, mttt's output projection h), so it sees only the pairs before it; position 0 predicts f(q_0; W^(0)).
The prediction after each step s is the model's "layer" s (``layer_predictions``), so ``icl_sim.probing`` matches
step s with GD's step s.  The inner learners (``inner``):

* ``linear``: f(k; W) = W k from W^(0) = 0 (mttt's MTTT-Linear: ``inner_encoder=mlp_1``, zero init, no bias, the
  start not trained).  ∇L_i(W) = (W C_i − B_i)/w with C_i = (1/i) Σ k_j k_jᵀ and B_i = (1/i) Σ v_j k_jᵀ: every
  prefix costs O(w³) per step.  One step is (η/w) B_i q_i = (η/(i w)) Σ_j v_j k_jᵀ q_i, linear attention with
  keys k_j, values v_j and query q_i (the 2024 paper's Thm 1, the 2023 paper's Sec. 4): :func:`attention_equivalent`
  builds that ``lsa`` layer.
* ``mlp``: f(k) = W₂ gelu(W₁ k + b₁) + b₂, hidden width 4w and tanh-approximated GELU (ttt-lm-pytorch's TTT-MLP,
  mttt's ``mlp_2``), its start (W₁, b₁, W₂, b₂) trained by the outer loop and drawn Xavier-uniform (mttt's
  ``train_init``, ``inner_encoder_init``).  The gradients are written out (backpropagation by hand, as
  ttt-lm-pytorch's ``gelu_bwd``), per prefix over the points before it: O(N w h) per prefix and step.
* ``kernel``: the Nadaraya–Watson estimator f(q) = Σ_j κ(k_j, q) v_j / Σ_j κ(k_j, q), κ = exp(k_jᵀq), a learner
  with nothing to step (``inner_steps`` = 1): softmax attention (the 2024 paper's Thm 2), the ``softmax-attention``
  layer :func:`attention_equivalent` builds.

Mini-batch TTT (``mini_batch`` = b > 0, the 2024 paper's Sec. 2.4-2.5 and ttt-lm-pytorch's ``TTTLinear``), linear
learner only: one pass over the pairs in order instead of batch GD on each prefix.  The pairs are cut into
mini-batches of b; every gradient G_s = ∇ℓ(W_m; z_s) of a mini-batch is taken at its start weights W_m, position i
(pairs m..i−1 of its mini-batch seen) reads W_i = W_m − (1/(i − m)) Σ_{s=m}^{i−1} η_s G_s, and the next mini-batch
starts from the weights after all b.  The 1/(i − m) is ttt-lm's ``token_idx`` (1/t within a mini-batch, its
learnable offset not modelled): the step of a mini-batch is its mean gradient, so b = 1 is online GD (W_{s+1} =
W_s − η_s G_s, one step per pair) and b ≥ N one batch-GD step on each whole prefix, the batch learner above with
``inner_steps`` = 1 (linear attention).  :meth:`TestTimeTraining.mini_batch_outputs` computes it in the "primal"
form (every W_i written out) or the "dual" form the model runs (never a W_i: the residuals of the mini-batch at W_m
times the masked b × b matrix η_s qᵢᵀk_s/(i − m), ttt-lm's ``Attn1``; only each mini-batch's end weights are
formed), the same function, faster.  Two options of the 2024 paper's TTT-Linear go with it:

* ``inner_norm``: f(k) = k + LN(W k + b) (LayerNorm with learned γ, β, ε = 1e-6, and a residual), the inner loss
  ½‖LN(W k_s + b) − (v_s − k_s)‖² (ttt-lm's target ``XV − XK``, its ``ln_fused_l2_bwd`` written out here), and the
  output q + LN(W_i q + b_i); the start W₀ ~ N(0, 0.02²), b₀ = 0 is trained (ttt-lm's ``W1``, ``b1``).  Without it
  f(k) = W k from W₀ = 0, as the batch learner.
* ``token_lr``: η_s = η σ(θ_lr·z_s + c), the rate of each pair from its own token (the paper's learnable η(x) =
  η_base σ(θ_lr·x), ttt-lm's ``get_eta``: θ_lr ~ N(0, 0.02²), c = 0; the division by the head width is the loss's
  1/w here); without it η_s = η.

The gradients are explicit tensor expressions, so the outer loss differentiates through the inner steps, and
``predict`` runs under ``no_grad``.  The projections start N(0, init_scale²/fan-in) (mttt's variance scaling by
fan-in).  Not modelled: mini-batch TTT of the MLP learner (ttt-lm's ``TTTMLP``), the 2024 paper's output LayerNorm,
gate, rotary positions and Mamba backbone around the layer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.lsa import LinearSelfAttention, LSAConfig
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.models.softmax_attention import SoftmaxAttention, SoftmaxAttentionConfig
from icl_sim.validation import check_choice, check_float, check_int

INNER_LEARNERS = ("linear", "mlp", "kernel")
#: √(2/π) and the cubic coefficient of the tanh approximation of GELU (ttt-lm-pytorch: approximate="tanh")
_GELU_SCALE, _GELU_CUBIC = math.sqrt(2 / math.pi), 0.044715
#: ttt-lm-pytorch's start of the inner weights and of the rate gate, N(0, 0.02²), and its LayerNorm ε
_START_SCALE, _NORM_EPSILON = 0.02, 1e-6
MINI_BATCH_FORMS = ("dual", "primal")


@dataclass(frozen=True)
class TTTConfig:
    """Hyper-parameters of :class:`TestTimeTraining`."""

    inner: str = field(default="linear", metadata={
        "help": "the inner learner: linear (f = Wk from W = 0), mlp (W₂ gelu(W₁k + b₁) + b₂, trained start) or "
                "kernel (Nadaraya–Watson, exp(kᵀq) weights)"})
    inner_steps: int = field(default=1, metadata={"help": "full-batch GD steps of the inner loop (kernel: 1)"})
    width: int = field(default=0, metadata={"help": "width w of keys, values and queries (0: the token width d + k)"})
    hidden: int = field(default=0, metadata={"help": "hidden width of the mlp learner (0: 4w, ttt-lm's TTT-MLP)"})
    inner_lr: float = field(default=1.0, metadata={
        "help": "initial inner learning rate η, one for every step (mttt: 1)"})
    init_scale: float = field(default=1.0, metadata={
        "help": "the projections θ_K, θ_V, θ_Q, θ_O start N(0, init_scale²/fan-in)"})
    mini_batch: int = field(default=0, metadata={
        "help": "inner mini-batch size b of the 2024 paper's mini-batch TTT, one pass over the pairs (linear learner, "
                "one step per mini-batch; b = 1 online GD); 0: batch GD on each position's whole prefix"})
    inner_norm: bool = field(default=False, metadata={
        "help": "mini-batch TTT's inner model f(k) = k + LN(W k + b), W and b started N(0, 0.02²) and 0 and trained "
                "(ttt-lm-pytorch's TTT-Linear); off: f(k) = W k from W = 0"})
    token_lr: bool = field(default=False, metadata={
        "help": "mini-batch TTT's token-dependent rate η(z) = η σ(θ_lr·z + c), θ_lr started N(0, 0.02²), c at 0"})

    def __post_init__(self):
        check_choice("inner", self.inner, INNER_LEARNERS)
        check_int("inner_steps", self.inner_steps, 1)
        if self.inner == "kernel" and self.inner_steps != 1:
            raise ValueError(f"inner_steps must be 1 for the kernel learner (it takes no steps), "
                             f"got {self.inner_steps}")
        check_int("width", self.width, 0)
        check_int("hidden", self.hidden, 0)
        if self.hidden and self.inner != "mlp":
            raise ValueError(f"hidden applies only to the mlp learner, got hidden={self.hidden} with {self.inner!r}")
        check_float("inner_lr", self.inner_lr)
        check_float("init_scale", self.init_scale, 0.0)
        check_int("mini_batch", self.mini_batch, 0)
        if self.mini_batch and (self.inner != "linear" or self.inner_steps != 1):
            raise ValueError(f"mini_batch applies to the linear learner with inner_steps=1 (one step per mini-batch), "
                             f"got mini_batch={self.mini_batch} with inner={self.inner!r}, "
                             f"inner_steps={self.inner_steps}")
        for name in ("inner_norm", "token_lr"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")  # noqa: TRY004
            if getattr(self, name) and not self.mini_batch:
                raise ValueError(f"{name} applies only to mini-batch TTT (mini_batch > 0)")


class TestTimeTraining(InContextModel):
    """ŷ_i = θ_O f(θ_Q (x_i, 0); W_i), W_i after ``inner_steps`` GD steps on the pairs before position i."""

    Config = TTTConfig
    depth_parameter, default_loss_on = "inner_steps", "last"
    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, dim: int, points: int, config: TTTConfig = TTTConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        tokens = dim + target_dim
        self.width = width = config.width or tokens
        scale = config.init_scale
        self.key = nn.Parameter(scale / math.sqrt(tokens) * torch.randn(width, tokens))
        self.value = nn.Parameter(scale / math.sqrt(tokens) * torch.randn(width, tokens))
        self.query = nn.Parameter(scale / math.sqrt(tokens) * torch.randn(width, tokens))
        self.output = nn.Parameter(scale / math.sqrt(width) * torch.randn(target_dim, width))
        if config.inner != "kernel":
            self.inner_lr = nn.Parameter(torch.tensor(float(config.inner_lr)))
        if config.inner == "mlp":
            hidden = config.hidden or 4 * width
            bound = math.sqrt(6 / (width + hidden))  # Xavier uniform, fan-in + fan-out = w + h either way
            self.w1 = nn.Parameter(bound * (2 * torch.rand(width, hidden) - 1))
            self.b1 = nn.Parameter(torch.zeros(hidden))
            self.w2 = nn.Parameter(bound * (2 * torch.rand(hidden, width) - 1))
            self.b2 = nn.Parameter(torch.zeros(width))
        if config.inner_norm:  # ttt-lm-pytorch's TTT-Linear: W1 ~ N(0, 0.02²), b1 = 0, the LayerNorm's γ = 1, β = 0
            self.w0 = nn.Parameter(_START_SCALE * torch.randn(width, width))
            self.b0 = nn.Parameter(torch.zeros(width))
            self.norm_weight = nn.Parameter(torch.ones(width))
            self.norm_bias = nn.Parameter(torch.zeros(width))
        if config.token_lr:  # ttt-lm-pytorch's learnable_ttt_lr_weight ~ N(0, 0.02²) and its bias at 0
            self.rate_weight = nn.Parameter(_START_SCALE * torch.randn(tokens))
            self.rate_bias = nn.Parameter(torch.zeros(()))

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: TTTConfig, target_dim: int = 1) -> int:
        """Per step, the prefix statistics (linear: two w × w per position) or every prefix's hidden activations over
        its points (mlp: N² h, a few times), or the N × N kernel weights."""
        width = config.width or dim + target_dim
        if config.mini_batch:  # the dual form: per pair residuals, b × b scores, and W at each mini-batch's start
            mini_batch = min(config.mini_batch, points)
            return points * (6 * width + mini_batch) + (points // mini_batch + 1) * width ** 2
        if config.inner == "linear":
            return 2 * points * width ** 2 * config.inner_steps
        if config.inner == "mlp":
            return 4 * points ** 2 * (config.hidden or 4 * width) * config.inner_steps
        return 2 * points ** 2 + points * width

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The prediction after each inner step (the kernel learner: its one prediction), every position."""
        return [self._readout(output) for output in self.step_outputs(xs, ys)]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position's prediction, from its prefix alone (what training on the last query needs)."""
        last = torch.tensor([xs.shape[1] - 1], device=xs.device)
        return self._readout(self.step_outputs(xs, ys, last)[-1])[:, 0]

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The learner's output f(q_i; W^(s)) (B, N, w) after each step s."""
        return self.step_outputs(xs, ys)

    def step_outputs(self, xs: torch.Tensor, ys: torch.Tensor,
                     positions: torch.Tensor | None = None) -> list[torch.Tensor]:
        """f(q_p; W_p^(s)) (B, P, w) for s = 1..S at ``positions`` (P,) (all by default), each from its prefix."""
        labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
        if positions is None:
            positions = torch.arange(xs.shape[1], device=xs.device)
        context = torch.cat([xs, labels], dim=-1)  # (B, N, d + k)
        queries = torch.cat([xs[:, positions], torch.zeros_like(labels[:, positions])], dim=-1) @ self.query.T
        keys, values = context @ self.key.T, context @ self.value.T  # (B, N, w)
        if self.config.inner == "kernel":
            scores = torch.einsum("bpw,bjw->bpj", queries, keys)
            return [torch.einsum("bpj,bjw->bpw", prefix_weights(scores, positions), values)]
        if self.config.mini_batch:  # one pass over the pairs: every position's output, then those asked for
            every = torch.cat([xs, torch.zeros_like(labels)], dim=-1) @ self.query.T
            logits = context @ self.rate_weight + self.rate_bias if self.config.token_lr else None
            return [self.mini_batch_outputs(keys, values, every, logits)[:, positions]]
        before = torch.arange(xs.shape[1], device=xs.device)[None, :] < positions[:, None]  # (P, N)
        # the inner loss's weights 1/(i w) on the points j < i of position i's prefix
        weights = before.to(xs.dtype) / (positions.clamp(min=1)[:, None].to(xs.dtype) * self.width)
        if self.config.inner == "linear":
            return self._linear_steps(keys, values, queries, weights)
        return self._mlp_steps(keys, values, queries, weights)

    def _linear_steps(self, keys, values, queries, weights) -> list[torch.Tensor]:
        """W ← W − η (W C − B)/w per prefix, from W = 0; C, B carry the 1/(i w) weights."""
        second = torch.einsum("pj,bjk,bjl->bpkl", weights, keys, keys)  # C/w
        cross = torch.einsum("pj,bjv,bjk->bpvk", weights, values, keys)  # B/w
        fast = torch.zeros_like(cross)
        outputs = []
        for _ in range(self.config.inner_steps):
            fast = fast - self.inner_lr * (fast @ second - cross)
            outputs.append(torch.einsum("bpvk,bpk->bpv", fast, queries))
        return outputs

    def _mlp_steps(self, keys, values, queries, weights) -> list[torch.Tensor]:
        """Full-batch GD on the two-layer MLP of every prefix, its gradients backpropagated by hand."""
        batch, positions = queries.shape[:2]
        w1 = self.w1.expand(batch, positions, *self.w1.shape)
        b1 = self.b1.expand(batch, positions, *self.b1.shape)
        w2 = self.w2.expand(batch, positions, *self.w2.shape)
        b2 = self.b2.expand(batch, positions, *self.b2.shape)
        outputs, lr = [], self.inner_lr
        for _ in range(self.config.inner_steps):
            pre = torch.einsum("bjk,bpkh->bpjh", keys, w1) + b1[:, :, None]  # (B, P, N, h)
            hidden = gelu(pre)
            residual = torch.einsum("bpjh,bphv->bpjv", hidden, w2) + b2[:, :, None] - values[:, None]
            delta2 = residual * weights[None, :, :, None]  # ∂L/∂(output) of each point
            delta1 = torch.einsum("bpjv,bphv->bpjh", delta2, w2) * gelu_derivative(pre)
            w1 = w1 - lr * torch.einsum("bjk,bpjh->bpkh", keys, delta1)
            b1 = b1 - lr * delta1.sum(dim=2)
            w2 = w2 - lr * torch.einsum("bpjh,bpjv->bphv", hidden, delta2)
            b2 = b2 - lr * delta2.sum(dim=2)
            outputs.append(torch.einsum("bph,bphv->bpv", gelu(torch.einsum("bpk,bpkh->bph", queries, w1) + b1), w2)
                           + b2)
        return outputs

    def mini_batch_outputs(self, keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor,
                           rate_logits: torch.Tensor | None = None, form: str = "dual") -> torch.Tensor:
        """Mini-batch TTT over the pairs, f(q_i; W_i) (B, N, w) at every position i: one pass, the pairs cut into
        mini-batches of b in order; within a mini-batch every gradient is taken at its start weights W_m, and position
        i (the pairs m..i−1 of its mini-batch seen) reads W_i = W_m − (1/(i − m)) Σ_{s=m}^{i−1} η_s ∇ℓ(W_m; z_s), the
        next mini-batch starting from the weights after all b (ttt-lm-pytorch ``TTTLinear.ttt``: ``token_idx`` 1/t,
        ``eta`` the source token's rate).  ``form`` "primal" writes every W_i out (a w × w gradient per pair),
        "dual" never does (the 2024 paper's dual form: the residuals times a masked b × b matrix of qᵢᵀk_s, as
        ``compute_mini_batch``'s ``Attn1``); the two are the same function.  ``rate_logits`` (B, N): θ_lr·z_s + c
        (η_s = η σ(·)), or None for η_s = η."""
        check_choice("form", form, MINI_BATCH_FORMS)
        batch, points, width = keys.shape
        norm, size = self.config.inner_norm, self.config.mini_batch
        rates = self.inner_lr.expand(batch, points) if rate_logits is None else self.inner_lr * torch.sigmoid(
            rate_logits)
        # position i's weight η_s/((i − m) w) on pair s, m ≤ s < i, m the start of the mini-batch of pair i − 1
        index = torch.arange(points, device=keys.device)
        start = torch.div((index - 1).clamp(min=0), size, rounding_mode="floor") * size
        reads = (index[None, :] >= start[:, None]) & (index[None, :] < index[:, None])  # (N, N), row 0 empty
        seen = (index - start).clamp(min=1).to(keys.dtype)
        weights = rates[:, None, :] * (reads.to(keys.dtype) / (seen[:, None] * width))  # (B, N, N)
        if form == "dual":
            scaled = weights * (torch.einsum("bik,bsk->bis", queries, keys) + (1.0 if norm else 0.0))
        fast = (self.w0 if norm else keys.new_zeros(width, width)).expand(batch, width, width)
        bias = (self.b0 if norm else keys.new_zeros(width)).expand(batch, width)
        outputs = [torch.einsum("bvk,bk->bv", fast, queries[:, 0])[:, None] + bias[:, None]]
        for first in range(0, points - 1, size):
            last = min(first + size, points - 1)
            pairs, rows = slice(first, last), slice(first + 1, last + 1)  # the mini-batch's pairs and positions
            key, query = keys[:, pairs], queries[:, rows]
            # ∂ℓ/∂(W k_s + b) of each pair at the start weights W_m (B, b, w)
            residual = self._residual_gradient(torch.einsum("bvk,bsk->bsv", fast, key) + bias[:, None], key,
                                               values[:, pairs])
            if form == "dual":
                outputs.append(torch.einsum("bvk,brk->brv", fast, query) + bias[:, None]
                               - scaled[:, rows, pairs] @ residual)
            else:
                gradients = torch.einsum("bsv,bsk->bsvk", residual, key)  # ∇_W ℓ(W_m; z_s), one per pair
                fasts = fast[:, None] - torch.einsum("brs,bsvk->brvk", weights[:, rows, pairs], gradients)
                biases = bias[:, None] - (weights[:, rows, pairs] @ residual if norm else 0.0)
                outputs.append(torch.einsum("brvk,brk->brv", fasts, query) + biases)  # W_i q_i + b_i
            update = weights[:, last, pairs]  # the mini-batch's last position's weights: its step
            fast = fast - torch.einsum("bs,bsv,bsk->bvk", update, residual, key)
            if norm:
                bias = bias - torch.einsum("bs,bsv->bv", update, residual)
        return self._inner_output(queries, torch.cat(outputs, dim=1))

    def _residual_gradient(self, inner: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """∂/∂z of ½‖g(z) − t‖² at z = W k_s + b: g the identity and t = v_s, or (``inner_norm``) g the LayerNorm
        and t = v_s − k_s, so that f(k) = k + LN(z) reconstructs v_s (ttt-lm-pytorch's ``ln_fused_l2_bwd``)."""
        if not self.config.inner_norm:
            return inner - values
        centred = inner - inner.mean(dim=-1, keepdim=True)
        deviation = (centred.square().mean(dim=-1, keepdim=True) + _NORM_EPSILON).sqrt()
        normal = centred / deviation
        upstream = (self.norm_weight * normal + self.norm_bias - (values - keys)) * self.norm_weight
        return (upstream - upstream.mean(dim=-1, keepdim=True)
                - normal * (upstream * normal).mean(dim=-1, keepdim=True)) / deviation

    def _inner_output(self, queries: torch.Tensor, inner: torch.Tensor) -> torch.Tensor:
        """f(q) from z = W q + b: z itself, or q + LN(z) (``inner_norm``)."""
        if not self.config.inner_norm:
            return inner
        return queries + self.norm_weight * layer_norm(inner) + self.norm_bias

    def _readout(self, output: torch.Tensor) -> torch.Tensor:
        prediction = output @ self.output.T
        return prediction.squeeze(-1) if self.target_dim == 1 else prediction


def layer_norm(z: torch.Tensor) -> torch.Tensor:
    """(z − mean)/√(var + ε) over the last axis (the biased variance, ttt-lm-pytorch's ``ln_fwd``), no affine."""
    centred = z - z.mean(dim=-1, keepdim=True)
    return centred / (centred.square().mean(dim=-1, keepdim=True) + _NORM_EPSILON).sqrt()


def gelu(z: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation, ½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))."""
    return 0.5 * z * (1 + torch.tanh(_GELU_SCALE * (z + _GELU_CUBIC * z ** 3)))


def gelu_derivative(z: torch.Tensor) -> torch.Tensor:
    """d gelu/dz of the tanh approximation."""
    inner = torch.tanh(_GELU_SCALE * (z + _GELU_CUBIC * z ** 3))
    return 0.5 * (1 + inner) + 0.5 * z * (1 - inner ** 2) * _GELU_SCALE * (1 + 3 * _GELU_CUBIC * z ** 2)


@torch.no_grad()
def attention_equivalent(model: TestTimeTraining) -> LinearSelfAttention | SoftmaxAttention:
    """The attention layer whose predictions equal the TTT layer's, in ``model``'s dtype and device.

    One step of the linear learner from W = 0 is linear attention (Sun et al. 2024, Thm 1): ŷ_i =
    (η/(i w)) Σ_j (θ_O θ_V z_j)(z_jᵀ θ_Kᵀ θ_Q z_i), icl-sim's ``lsa`` layer ŷ = −(1/i) Σ_j (P z_j)_y z_jᵀ Q z_i with
    Q = θ_Kᵀ θ_Q and P's label rows −(η/w) θ_O θ_V.  The kernel learner is softmax attention (Thm 2):
    ``softmax-attention``'s ŷ = −(P Σ_j softmax_j(z_jᵀ Q z_i) z_j)_y with Q = θ_Kᵀ θ_Q and P's label rows −θ_O θ_V.
    Other learners (more steps, an MLP) are no attention layer: a ``ValueError``.
    """
    config = model.config
    if not (config.inner == "kernel" or (config.inner == "linear" and config.inner_steps == 1)):
        raise ValueError(f"only one step of the linear learner or the kernel learner is an attention layer; got "
                         f"inner={config.inner!r} with inner_steps={config.inner_steps}")
    tokens = model.dim + model.target_dim
    reference = model.key
    key_query = (model.key.T @ model.query).reshape(1, 1, tokens, tokens)
    value = torch.zeros_like(key_query)
    value[0, 0, model.dim:] = -(model.output @ model.value)
    if config.inner == "linear":
        value = value * model.inner_lr / model.width
        attention = LinearSelfAttention(model.dim, model.points, LSAConfig(layers=1, heads=1), model.target_dim)
        attention = attention.to(reference)
        attention.load_state_dict({"value": value, "key_query": key_query})
    else:
        attention = SoftmaxAttention(model.dim, model.points, SoftmaxAttentionConfig(layers=1, heads=1),
                                     model.target_dim).to(reference)
        attention.load_state_dict({"value": value, "score": key_query})
    return attention.eval()
