"""Looped transformers: one block applied again and again, read out after every loop.

``looped`` (Yang, Lee, Nowak & Papailiopoulos, "Looped transformers are better at learning
learning algorithms", ICLR 2024; reference code github.com/Leiay/looped_transformer):
the prompt is embedded as in :mod:`icl_sim.models.gpt` (x/y interleaved tokens, linear
read-in plus learned positions) into e, and one block is iterated with input injection

    h_0 = 0,    h_{t+1} = Block(h_t + e),    ŷ_t = read_out(LN_f(h_t)) at the x tokens.

Training (``training_predictions``) runs b loops, the first b − T under ``torch.no_grad``
and the last T with autograd, and the loss averages over those T read-outs, so training
memory is O(T) whatever b is.  A loop curriculum grows b from ``loops_start`` by one every
``loops_interval`` optimiser steps up to ``loops``.  ``predict(xs, ys, loops=K)`` evaluates
after any number of loops, also far beyond the trained b.  Differences from the reference
code, by choice: positions are part of e (their backbone adds them inside every loop, the
same thing), and by default the final LayerNorm is applied at read-out only; with
``state_norm`` it normalises the state after every loop, as their backbone does (it ends each
call in ``ln_f``): h_{t+1} = LN_f(Block(h_t + e)), ŷ_t = read_out(h_t).

``looped-lsa-ln`` (Wu, Zhang & Cao, "Looped transformers with layer normalization provably
learn the power method", arXiv 2606.00605, 2026): a looped *linear* self-attention layer
with shared merged matrices P = W_PV, Q = W_KQ (per head), a residual connection and a
normalisation of the token after every loop, for in-context principal-component
prediction.  We had no access to the paper's text; our reading of it, from its abstract and
a third-party summary (J-shang/looped-transformer, papers/11-layernorm-power-method.md): no
softmax, residual, column-wise ℓ2 normalisation (LayerNorm without mean centring or affine
parameters: RMSNorm up to a constant), weights shared across loops, the data columns acting
as unchanged data carriers and the query column carrying the power iterate.  Here:

    context tokens z_j = (x_j, y_j), j < i (fixed: they are not updated across loops),
    query token    z⁰ = (0, s),  s = 1_k/√k  (the paper's query column; s is the start of
                   icl_sim.theory.PowerMethod, so the prediction at i uses the points j < i only),
    one loop       z ← Norm(z + Σ_h P_h Γ_i Q_h z),   Γ_i = (1/i) Σ_{j<i} z_j z_jᵀ,
    read-out       ŷ = the query's k label slots (no sign flip),

with Norm(z) = z/‖z‖ when ``layer_norm`` (else the identity: the paper's comparison model).
With P_h writing Ĝq into the label slots and Q_h reading them, one loop is one power
iteration q ← (q + ηĜq)/‖·‖: the normalisation lets η grow, so (I + ηĜ)^k tends to Ĝ^k,
which an unnormalised loop cannot do without its output norm exploding.  Because the
context tokens are fixed, every position is computed at once from the prefix moments Γ_i.
"""
from __future__ import annotations

import abc
import dataclasses
import math

import torch
from torch import nn
from torch.nn import functional as F

from icl_sim.models.base import InContextModel, meta_parameter_count
from icl_sim.models.gpt import (Block, CausalSelfAttention, InterleavedEmbedding, XTokenReadOut, gpt2_init,
                                transformer_block_floats)
from icl_sim.predictor import check_prompt_shapes
from icl_sim.validation import check_choice, check_float, check_int

BLOCKS = ("softmax", "linear")
LSA_INITS = ("random", "block")


def _field(default, help_text: str):
    return dataclasses.field(default=default, metadata={"help": help_text})


def _check_loops(config) -> None:
    """Validation of the loop parameters shared by both looped configs."""
    check_int("loops", config.loops, 1)
    check_int("loop_window", config.loop_window, 0, config.loops)
    check_int("loops_start", config.loops_start, 0, config.loops)
    check_int("loops_interval", config.loops_interval, 0)


def loops_at(config, step: int) -> int:
    """The loop curriculum: b at optimiser step ``step`` (``loops`` throughout without a curriculum)."""
    if config.loops_interval == 0:
        return config.loops
    return min(config.loops, max(1, config.loops_start or 1) + step // config.loops_interval)


def window_at(config, loops: int) -> int:
    """T: the number of final loops the loss averages over (0 means all of them)."""
    return loops if config.loop_window == 0 else min(config.loop_window, loops)


class LoopedModel(InContextModel, abc.ABC):
    """A model whose depth is a loop count: ``_start`` a state, ``_loop`` it, ``_read`` predictions from it."""

    @classmethod
    def parameter_count(cls, dim: int, points: int, config, target_dim: int = 1) -> int:
        """Every loop reuses the same weights: counted on the meta device at ``config`` itself."""
        return meta_parameter_count(cls, dim, points, config, target_dim)

    @abc.abstractmethod
    def _start(self, xs: torch.Tensor, ys: torch.Tensor):
        """(state, context): the state before the first loop and whatever every loop re-reads."""

    @abc.abstractmethod
    def _loop(self, state, context):
        """The state after one more loop."""

    @abc.abstractmethod
    def _read(self, state, context, last_only: bool) -> torch.Tensor:
        """Predictions (B, N[, k]), or (B[, k]) at the final position if ``last_only``."""

    @abc.abstractmethod
    def _features(self, state, context) -> torch.Tensor:
        """The state at every query: (B, N, width)."""

    def run_loops(self, xs: torch.Tensor, ys: torch.Tensor, loops: int, *, read: int | None = None,
                  grad: int | None = None, last_only: bool = False, features: bool = False) -> list[torch.Tensor]:
        """Read-outs (``features``: the states at the queries) after each of the last ``read`` (default all) of
        ``loops`` loops.

        Only the last ``grad`` loops (default all) are recorded by autograd; the others run
        under ``torch.no_grad``, so the graph, and the memory it holds, is O(grad).
        """
        check_int("loops", loops, 1)
        read = loops if read is None else read
        grad = loops if grad is None else grad
        state, context = self._start(xs, ys)
        outputs = []
        for index in range(loops):
            with torch.set_grad_enabled(torch.is_grad_enabled() and index >= loops - grad):
                state = self._loop(state, context)
                if index >= loops - read:
                    outputs.append(self._features(state, context) if features else self._read(state, context,
                                                                                               last_only))
        return outputs

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """One prediction per loop for the trained b = ``config.loops`` loops."""
        return self.run_loops(xs, ys, self.config.loops)

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The state at every query after each of the trained b loops: (B, N, width) per loop."""
        return self.run_loops(xs, ys, self.config.loops, features=True)

    def forward(self, xs: torch.Tensor, ys: torch.Tensor, loops: int | None = None) -> torch.Tensor:
        """Predictions after ``loops`` loops (default the trained b), differentiable through all of them."""
        return self.run_loops(xs, ys, self.config.loops if loops is None else loops, read=1)[0]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return self.run_loops(xs, ys, self.config.loops, read=1, last_only=True)[0]

    def training_predictions(self, xs: torch.Tensor, ys: torch.Tensor, step: int,
                             last_only: bool) -> list[torch.Tensor]:
        """The last T loops' predictions at the curriculum's b for ``step``; the first b − T carry no gradient."""
        loops = loops_at(self.config, step)
        window = window_at(self.config, loops)
        return self.run_loops(xs, ys, loops, read=window, grad=window, last_only=last_only)

    def predict(self, xs: torch.Tensor, ys: torch.Tensor, *, loops: int | None = None) -> torch.Tensor:
        """Predictor contract, after ``loops`` loops (default the trained b; any count ≥ 1, also beyond b)."""
        return super().predict(xs, ys, loops=loops)


# --------------------------------------------------------------------------- looped (Yang et al.)

@dataclasses.dataclass(frozen=True)
class LoopedConfig:
    """A looped transformer (Yang et al. 2024); their linear-regression script trains b = 30, T = 15."""

    block: str = _field("softmax", f"the looped block: {', '.join(BLOCKS)} (linear: causal attention without "
                                   "softmax, scores averaged over the attended tokens)")
    n_embd: int = _field(64, "embedding width")
    n_head: int = _field(2, "attention heads")
    loops: int = _field(20, "b: loops in training (at the end of the loop curriculum) and by default at prediction")
    loop_window: int = _field(15, "T: the loss averages over the last T loops, the first b − T run without "
                                  "gradient (0: all loops)")
    loops_start: int = _field(0, "loop curriculum: b at step 0 (0 = 1), growing by 1 every loops_interval steps")
    loops_interval: int = _field(0, "loop curriculum: steps between increments of b (0 = no curriculum)")
    dropout: float = _field(0.0, "dropout probability, active in training only")
    state_norm: bool = _field(False, "apply the final LayerNorm to the state after every loop, as the authors' "
                                     "backbone (false: at read-out only)")

    def __post_init__(self):
        check_choice("block", self.block, BLOCKS)
        check_int("n_embd", self.n_embd, 1)
        check_int("n_head", self.n_head, 1)
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        _check_loops(self)
        check_float("dropout", self.dropout, 0.0, maximum=1.0)
        if not isinstance(self.state_norm, bool):
            raise ValueError(f"state_norm must be true or false, got {self.state_norm!r}")


class CausalLinearAttention(CausalSelfAttention):
    """Multi-head causal attention without softmax: token t gets (1/(t+1)) Σ_{s≤t} (q_t·k_s/√h) v_s."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor | None = None) -> torch.Tensor:
        """Averaged over the allowed keys: the causal ones, or where ``mask`` (T, S) is true."""
        length = q.shape[-2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        allowed = torch.ones(length, length, dtype=torch.bool, device=q.device).tril() if mask is None else mask
        counts = allowed.sum(dim=-1, keepdim=True).to(scores.dtype)
        return (scores.masked_fill(~allowed, 0.0) / counts) @ v


class LinearBlock(Block):
    """The GPT pre-LN block with :class:`CausalLinearAttention` in place of softmax attention."""

    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__(n_embd, n_head, dropout)
        self.attn = CausalLinearAttention(n_embd, n_head, dropout)


class LoopedTransformer(LoopedModel):
    """Yang et al.'s looped transformer over interleaved (x, y) tokens; read-out after every loop."""

    Config = LoopedConfig
    depth_parameter, default_loss_on = "loops", "all"  # Yang et al. train on every position

    def __init__(self, dim: int, points: int, config: LoopedConfig = LoopedConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        self.embedding = InterleavedEmbedding(dim, points, target_dim, config.n_embd, config.dropout)
        block = Block if config.block == "softmax" else LinearBlock
        self.block = block(config.n_embd, config.n_head, config.dropout)
        self.head = XTokenReadOut(config.n_embd, target_dim)
        gpt2_init(self, [self.block.attn.proj, self.block.mlp.proj], n_layer=1)  # one block, however often looped

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: LoopedConfig, target_dim: int = 1) -> int:
        """A GPT block's (:func:`~icl_sim.models.gpt.transformer_block_floats`) per loop with gradient (the last T);
        the linear block's scores are materialised."""
        block = transformer_block_floats(2 * points, config.n_embd, config.n_head, scores=config.block == "linear")
        return window_at(config, config.loops) * block

    def embed(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """e: interleaved (x_i, y_i) tokens read in, plus positions: (B, 2N, n_embd)."""
        return self.embedding(xs, ys)

    def _start(self, xs, ys):
        embedded = self.embed(xs, ys)
        return torch.zeros_like(embedded), embedded

    def _loop(self, state, embedded):
        state = self.block(state + embedded)
        return self.head.ln_f(state) if self.config.state_norm else state

    def _read(self, state, embedded, last_only):
        return self.head(state, last_only, normalised=self.config.state_norm)

    def _features(self, state, embedded):
        return state[:, ::2]  # the x tokens, where the head reads


# --------------------------------------------------------------------------- looped-lsa-ln (Wu et al.)

@dataclasses.dataclass(frozen=True)
class LoopedLSAConfig:
    """A looped linear self-attention layer with (or without) normalisation (Wu, Zhang & Cao 2026)."""

    loops: int = _field(4, "b: loops (power iterations) in training and by default at prediction")
    loop_window: int = _field(1, "T: the loss averages over the last T loops (1: the final output only, as in "
                                 "the paper's end-to-end training; 0: all loops)")
    loops_start: int = _field(0, "loop curriculum: b at step 0 (0 = 1), growing by 1 every loops_interval steps")
    loops_interval: int = _field(0, "loop curriculum: steps between increments of b (0 = no curriculum)")
    heads: int = _field(1, "attention heads")
    layer_norm: bool = _field(True, "normalise the query token to unit ℓ2 norm after every loop "
                                    "(false: the paper's comparison model without normalisation)")
    init_scale: float = _field(0.02, "standard deviation of the initial weights (block: the scale of the blocks)")
    init: str = _field("random", "random: Gaussian weights; block: Wu et al.'s sparse start, P's label×x block and "
                                 "Q's x×label block init_scale·I, the rest 0")

    def __post_init__(self):
        _check_loops(self)
        check_int("heads", self.heads, 1)
        if not isinstance(self.layer_norm, bool):
            raise ValueError(f"layer_norm must be true or false, got {self.layer_norm!r}")
        check_float("init_scale", self.init_scale, 0.0)
        check_choice("init", self.init, LSA_INITS)


class LoopedLSA(LoopedModel):
    """Looped linear self-attention with a normalisation each loop; the query's label slots are the prediction."""

    Config = LoopedLSAConfig
    depth_parameter, default_loss_on = "loops", "last"  # Wu et al.: the query of the whole prompt

    def __init__(self, dim: int, points: int, config: LoopedLSAConfig = LoopedLSAConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        shape = (config.heads, dim + target_dim, dim + target_dim)
        self.value = nn.Parameter(config.init_scale * torch.randn(shape))  # P_h = W_PV, shared by all loops
        self.key_query = nn.Parameter(config.init_scale * torch.randn(shape))  # Q_h = W_KQ, shared by all loops
        if config.init == "block":
            self._block_start(dim, config.init_scale)

    @torch.no_grad()
    def _block_start(self, dim: int, scale: float) -> None:
        """Wu et al.'s start: P writes c·Ĝ(x part) into the label slots, Q reads the label slots, c = ``scale``."""
        eye = scale * torch.eye(dim, self.target_dim)
        self.value.zero_()
        self.key_query.zero_()
        self.value[:, dim:, :dim] = eye.T
        self.key_query[:, :dim, dim:] = eye

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: LoopedLSAConfig, target_dim: int = 1) -> int:
        """The prefix moments Γ_i, (d + k)² per point, and about twelve (d + k)-wide tensors per head, point and loop
        with gradient (the last T; measured on the CPU: a lower estimate)."""
        width = dim + target_dim
        return points * (width ** 2 + 12 * window_at(config, config.loops) * config.heads * width)

    def _labels(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        check_prompt_shapes(xs, ys)
        if xs.shape[-1] != self.dim:
            raise ValueError(f"xs must have {self.dim} features (dim), got {xs.shape[-1]}")
        labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
        if labels.shape[-1] != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")
        return labels

    def _start(self, xs, ys):
        labels = self._labels(xs, ys)
        tokens = torch.cat([xs, labels], dim=-1)
        outer = tokens.unsqueeze(-1) * tokens.unsqueeze(-2)
        counts = torch.arange(xs.shape[1], device=xs.device).clamp(min=1).to(tokens.dtype)
        exclusive = F.pad(torch.cumsum(outer[:, :-1], dim=1), (0, 0, 0, 0, 1, 0))  # Σ_{j<i}, exact in the future
        gamma = exclusive / counts[:, None, None]  # Γ_i
        start = torch.full_like(labels, self.target_dim ** -0.5)
        return torch.cat([torch.zeros_like(xs), start], dim=-1), gamma

    def _loop(self, query, gamma):
        keyed = torch.einsum("hkl,bnl->bnhk", self.key_query, query)  # Q_h z
        attended = torch.einsum("bnjk,bnhk->bnhj", gamma, keyed)  # Γ_i Q_h z
        query = query + torch.einsum("hij,bnhj->bni", self.value, attended)  # z + Σ_h P_h Γ_i Q_h z
        if self.config.layer_norm:
            query = query / torch.linalg.vector_norm(query, dim=-1, keepdim=True).clamp(min=1e-12)
        return query

    def _features(self, query, gamma):
        return query  # z at every position: (x slots, label slots)

    def _read(self, query, gamma, last_only):
        labels = query[..., self.dim:]
        labels = labels[:, -1] if last_only else labels
        return labels.squeeze(-1) if self.target_dim == 1 else labels
