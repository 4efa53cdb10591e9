"""A GPT-2-style softmax transformer for in-context regression (Garg et al. 2022).

The prompt (x_0, y_0, x_1, y_1, ...) is fed as one interleaved sequence of 2N tokens:
x_i as is and y_i as the d-vector (y_i, 0, ..., 0). A linear read-in and learned
positions embed it, pre-LN causal blocks process it, and a final LayerNorm plus a
linear read-out at each x_i token give the prediction for y_i. Causal attention makes
that prediction depend on (x_j, y_j), j < i, and x_i only.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from icl_sim.models.base import InContextModel
from icl_sim.predictor import check_prompt_shapes
from icl_sim.validation import check_choice, check_float, check_int

#: Garg et al.'s model sizes: name -> (n_embd, n_layer, n_head).
SIZES = {"tiny": (64, 3, 2), "small": (128, 6, 4), "standard": (256, 12, 8)}
#: initialisations of the read-in and read-out (``GPTConfig.io_init``)
IO_INITS = ("gpt2", "pytorch")
#: the MLP's activation (``GPTConfig.activation``) -> ``F.gelu``'s ``approximate``
ACTIVATIONS = {"gelu": "none", "gelu-tanh": "tanh"}


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """Architecture of a :class:`GPT`; explicit dimensions override the named size."""

    size: str = dataclasses.field(
        default="tiny",
        metadata={"help": f"preset (n_embd, n_layer, n_head): {', '.join(f'{k}={v}' for k, v in SIZES.items())}"})
    n_embd: int = dataclasses.field(default=0, metadata={"help": "embedding width; 0 takes it from size"})
    n_layer: int = dataclasses.field(default=0, metadata={"help": "number of transformer blocks; 0 takes it from size"})
    n_head: int = dataclasses.field(default=0, metadata={"help": "attention heads per block; 0 takes it from size"})
    dropout: float = dataclasses.field(default=0.0, metadata={"help": "dropout probability, active in training only"})
    init_std: float = dataclasses.field(
        default=0.02, metadata={"help": "std of the normal initial weights (GPT-2: 0.02; residual projections "
                                        "get std/sqrt(2 n_layer))"})
    io_init: str = dataclasses.field(
        default="gpt2", metadata={"help": "read-in and read-out initialisation: gpt2 (like every other layer) or "
                                          "pytorch (nn.Linear's default, as in Garg et al.'s code, where they sit "
                                          "outside HuggingFace's GPT2Model)"})
    activation: str = dataclasses.field(
        default="gelu", metadata={"help": "the MLP's activation: gelu (exact, with erf) or gelu-tanh (its tanh "
                                          "approximation: GPT-2's gelu_new, as in Garg et al.'s model)"})

    def __post_init__(self):
        check_choice("size", self.size, SIZES)
        for name in ("n_embd", "n_layer", "n_head"):
            check_int(name, getattr(self, name), 0)
        check_float("dropout", self.dropout, 0.0, maximum=1.0)
        check_float("init_std", self.init_std, 0.0, strict=True)
        check_choice("io_init", self.io_init, IO_INITS)
        check_choice("activation", self.activation, ACTIVATIONS)
        n_embd, _, n_head = self.dims
        if n_embd % n_head:
            raise ValueError(f"n_embd ({n_embd}) must be divisible by n_head ({n_head})")

    @property
    def dims(self) -> tuple[int, int, int]:
        """(n_embd, n_layer, n_head) after filling zeros from ``size``."""
        explicit = (self.n_embd, self.n_layer, self.n_head)
        return tuple(value or preset for value, preset in zip(explicit, SIZES[self.size]))


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where each token sees itself and earlier tokens only."""

    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.with_memory(h)[0]

    def with_memory(self, h: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Causal attention over h (B, T, E), and h's keys and values per head: what later queries attend to."""
        q, k, v = self._heads(h)
        return self._merge(self.attend(q, k, v)), (k, v)

    def recall(self, queries: torch.Tensor, memory: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Attention of query tokens (B, Q, E) to a context's keys and values and to themselves, never each other."""
        keys, values = memory
        q, k, v = self._heads(queries)
        context, count = keys.shape[2], queries.shape[1]
        mask = torch.cat([torch.ones(count, context, dtype=torch.bool, device=queries.device),
                          torch.eye(count, dtype=torch.bool, device=queries.device)], dim=1)
        return self._merge(self.attend(q, torch.cat([keys, k], dim=2), torch.cat([values, v], dim=2), mask))

    def at_even_positions(self, h: torch.Tensor) -> torch.Tensor:
        """Causal attention over h (B, T, E) computed at the even positions only (the x tokens): (B, ⌈T/2⌉, E)."""
        q, k, v = self._heads(h)
        position = torch.arange(h.shape[1], device=h.device)
        return self._merge(self.attend(q[:, :, ::2], k, v, position[None, :] <= position[::2, None]))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor | None = None) -> torch.Tensor:
        """Softmax attention per head, (B, H, T, h) -> (B, H, T, h): causal, or where ``mask`` (T, S) is true."""
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                              dropout_p=self.dropout if self.training else 0.0)

    def _heads(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values per head: (B, T, E) -> 3 x (B, H, T, E/H)."""
        batch, length, width = h.shape
        return tuple(t.view(batch, length, self.n_head, width // self.n_head).transpose(1, 2)
                     for t in self.qkv(h).split(width, dim=2))

    def _merge(self, out: torch.Tensor) -> torch.Tensor:
        """Heads joined and projected: (B, H, T, E/H) -> (B, T, E)."""
        batch, _, length, _ = out.shape
        return self.resid_dropout(self.proj(out.transpose(1, 2).reshape(batch, length, -1)))


class MLP(nn.Module):
    """Position-wise feed-forward layer, 4x wide with GELU (exact, or its tanh approximation: ``ACTIVATIONS``)."""

    def __init__(self, n_embd: int, dropout: float, activation: str = "gelu"):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)
        self.approximate = ACTIVATIONS[activation]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(h), approximate=self.approximate)))


class Block(nn.Module):
    """Pre-LN transformer block: h + attn(LN(h)), then h + mlp(LN(h))."""

    def __init__(self, n_embd: int, n_head: int, dropout: float, activation: str = "gelu"):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout, activation)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.with_memory(h)[0]

    def with_memory(self, h: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """The block's output on h, and the keys and values its attention gives later query tokens."""
        attended, memory = self.attn.with_memory(self.ln_1(h))
        return self._feed_forward(h + attended), memory

    def recall(self, queries: torch.Tensor, memory: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """The block's output on query tokens that see a context's ``memory`` and themselves only."""
        return self._feed_forward(queries + self.attn.recall(self.ln_1(queries), memory))

    def at_x_tokens(self, h: torch.Tensor) -> torch.Tensor:
        """The block's output at the x tokens (even positions) of h only: what the last block must compute."""
        return self._feed_forward(h[:, ::2] + self.attn.at_even_positions(self.ln_1(h)))

    def _feed_forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.mlp(self.ln_2(h))


class InterleavedEmbedding(nn.Module):
    """Garg et al.'s prompt embedding: x_0, y_0, x_1, y_1, ... zero-padded to one width, read in, plus positions.

    Labels may be scalars (B, N) or vectors (B, N, k); y_i becomes (y_i, 0, ..., 0).
    """

    def __init__(self, dim: int, points: int, target_dim: int, n_embd: int, dropout: float):
        super().__init__()
        check_int("dim", dim, 1)
        check_int("points", points, 1)
        check_int("target_dim", target_dim, 1)
        self.dim, self.points, self.target_dim = dim, points, target_dim
        self.width = max(dim, target_dim)
        self.read_in = nn.Linear(self.width, n_embd)
        self.positions = nn.Embedding(2 * points, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """(B, 2N, n_embd): token 2i is x_i, token 2i + 1 is y_i."""
        check_prompt_shapes(xs, ys)
        batch, n, dim = xs.shape
        if dim != self.dim:
            raise ValueError(f"xs must have {self.dim} features (dim), got {dim}")
        if n > self.points:
            raise ValueError(f"prompt has {n} points but the model was built for at most points={self.points}")
        labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
        if labels.shape[-1] != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")
        xs_wide = F.pad(xs, (0, self.width - dim))
        ys_wide = F.pad(labels, (0, self.width - self.target_dim))
        tokens = torch.stack((xs_wide, ys_wide), dim=2).reshape(batch, 2 * n, self.width)
        return self.dropout(self.read_in(tokens) + self.positions.weight[: 2 * n])

    def queries(self, queries: torch.Tensor, index: int) -> torch.Tensor:
        """(B, Q, n_embd): query points (B, Q, d), each embedded as the x token of point ``index``."""
        if queries.shape[-1] != self.dim:
            raise ValueError(f"queries must have {self.dim} features (dim), got {queries.shape[-1]}")
        if index >= self.points:
            raise ValueError(f"prompt has {index + 1} points but the model was built for at most points={self.points}")
        tokens = self.read_in(F.pad(queries, (0, self.width - self.dim)))
        return self.dropout(tokens + self.positions.weight[2 * index])


class XTokenReadOut(nn.Module):
    """Final LayerNorm and a linear read-out at the x tokens: (B, 2N, n_embd) -> (B, N) or (B, N, k)."""

    def __init__(self, n_embd: int, target_dim: int):
        super().__init__()
        self.ln_f = nn.LayerNorm(n_embd)
        self.read_out = nn.Linear(n_embd, target_dim)

    def forward(self, h: torch.Tensor, last_only: bool = False, normalised: bool = False) -> torch.Tensor:
        return self.read(h[:, -2] if last_only else h[:, ::2], normalised)

    def read(self, tokens: torch.Tensor, normalised: bool = False) -> torch.Tensor:
        """The prediction read out of each given x token: (..., n_embd) -> (...) or (..., k); ``normalised``: the
        tokens have been through ``ln_f`` already (a looped model that normalises its state after every loop)."""
        out = self.read_out(tokens if normalised else self.ln_f(tokens))
        return out.squeeze(-1) if out.shape[-1] == 1 else out


def gpt2_init(model: nn.Module, residual_projections, n_layer: int, std: float = 0.02) -> None:
    """GPT-2 init (std 0.02 in GPT-2): N(0, std) weights, zero biases, residual projections std/sqrt(2 n_layer)."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=std)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
    for projection in residual_projections:
        nn.init.normal_(projection.weight, std=std / math.sqrt(2 * n_layer))


def transformer_block_floats(tokens: int, n_embd: int, n_head: int, *, scores: bool = False) -> int:
    """Floats one pre-LN block holds for backward per prompt of ``tokens`` tokens: about 16 n_embd-wide tensors per
    token (attention, MLP, norms; measured on the CPU: a lower estimate), and if ``scores`` are materialised, each
    head's tokens × tokens of them, twice (scores and weights)."""
    return tokens * (16 * n_embd + 2 * n_head * tokens * scores)


class GPT(InContextModel):
    """Garg et al.'s in-context regression transformer for prompts of up to ``points`` pairs in ``dim`` dims."""

    Config = GPTConfig
    depth_parameter, default_loss_on = "n_layer", "all"  # Garg et al. train on every position

    def __init__(self, dim: int, points: int, config: GPTConfig = GPTConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        n_embd, n_layer, n_head = config.dims
        self.embedding = InterleavedEmbedding(dim, points, target_dim, n_embd, config.dropout)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, config.dropout, config.activation) for _ in range(n_layer))
        self.head = XTokenReadOut(n_embd, target_dim)
        gpt2_init(self, [p for block in self.blocks for p in (block.attn.proj, block.mlp.proj)], n_layer,
                  config.init_std)
        if config.io_init == "pytorch":
            self.embedding.read_in.reset_parameters()
            self.head.read_out.reset_parameters()

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: GPTConfig, target_dim: int = 1) -> int:
        """Per block, :func:`transformer_block_floats` over the 2N tokens (scaled_dot_product_attention's fused
        kernels keep no attention scores)."""
        n_embd, n_layer, n_head = config.dims
        return n_layer * transformer_block_floats(2 * points, n_embd, n_head)

    def hidden_states(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """Residual stream (B, 2N, n_embd) after the embedding and after each block (n_layer + 1 entries)."""
        h = self.embedding(xs, ys)
        states = [h]
        for block in self.blocks:
            h = block(h)
            states.append(h)
        return states

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream at the x tokens after each block: (B, N, n_embd) per layer."""
        return [h[:, ::2] for h in self.hidden_states(xs, ys)[1:]]

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """Logit-lens predictions (B, N) read out after each block; the last is the model's output."""
        return [self.head(h) for h in self.hidden_states(xs, ys)[1:]]

    def query_predictor(self, xs: torch.Tensor, ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """The context's 2n tokens run once; a query token, at the x position of point n, then attends to
        their keys and values in every block and to itself."""
        h, memories = self.embedding(xs, ys), []
        for block in self.blocks:
            h, memory = block.with_memory(h)
            memories.append(memory)

        def predict(queries: torch.Tensor) -> list[torch.Tensor]:
            tokens, predictions = self.embedding.queries(queries, xs.shape[1]), []
            for block, memory in zip(self.blocks, memories):
                tokens = block.recall(tokens, memory)
                predictions.append(self.head.read(tokens))
            return predictions

        return predict

    def forward(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Predictions (B, N): preds[:, i] from (x_j, y_j), j < i, and x_i.

        The read-out of :meth:`hidden_states`, computing only what it reads: no x token follows the last
        label token, so it is dropped, and the last block runs its queries and MLP at the x tokens alone.
        """
        h = self.embedding(xs, ys)[:, :-1]
        for block in self.blocks[:-1]:
            h = block(h)
        return self.head.read(self.blocks[-1].at_x_tokens(h))
