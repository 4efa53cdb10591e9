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

The gradients are explicit tensor expressions, so the outer loss differentiates through the inner steps, and
``predict`` runs under ``no_grad``.  The projections start N(0, init_scale²/fan-in) (mttt's variance scaling by
fan-in).  Not modelled: the 2024 paper's online and mini-batch TTT over a sequence (one step per token or per
mini-batch, with LayerNorm and a residual inside f, and its learned token-dependent η): in-context regression asks
each position to learn from all the pairs before it, which is mttt's batch GD.
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

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: TTTConfig, target_dim: int = 1) -> int:
        """Per step, the prefix statistics (linear: two w × w per position) or every prefix's hidden activations over
        its points (mlp: N² h, a few times), or the N × N kernel weights."""
        width = config.width or dim + target_dim
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

    def _readout(self, output: torch.Tensor) -> torch.Tensor:
        prediction = output @ self.output.T
        return prediction.squeeze(-1) if self.target_dim == 1 else prediction


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
