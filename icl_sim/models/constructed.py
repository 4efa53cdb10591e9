"""Constructed looped transformers: frozen, hand-weighted blocks over a residual stream with named columns, run in
float64 (or another floating-point format, to see where precision limits a construction) and checked loop by loop
against the algorithm they encode.

A construction (Giannou et al. 2023, "Looped transformers as programmable computers"; de Luca & Fountoulakis 2024,
"Simulation of graph algorithms with looped transformers") writes every weight matrix of a transformer by hand so
that one pass of its layers performs one step of an algorithm on a state held in the tokens, and loops the pass.
This module holds what every such construction shares; a new one fits in a page:

* ``Stream``: the residual stream's features as named column ranges, ``Stream([("mem", 8), ("pc", 5), ...])``;
  ``stream["pc"]`` is the slice of those columns, so weights are written as ``W[stream["buf"], stream["mem"]]``.
  A state is a tensor (B, n, d) in the construction's dtype: B instances, n tokens, d = ``stream.width`` features.
* blocks, each returning the update it adds to the state (residual connections are the layer's):

  - ``AttentionHead(query, key, value)``: q_j = Q x_j, k_i = K x_i (Q, K: (r, d)), weights
    w_ji = softmax_i(λ ⟨k_i, q_j⟩) over all n tokens (no mask, no 1/√r: the constructions' attention with
    temperature λ), update_j = Σ_i w_ji V x_i (V: (d, d)); λ = ``math.inf`` is hard attention (the weights split
    evenly over the keys within ``TIE_TOLERANCE`` of the best score);
  - ``ContextHead(name, value)``: update_j = Σ_i M_ji V x_i with M an (B, n, n) matrix given per instance at run
    time (``context[name]``: an adjacency matrix, a fixed mixing): for constructions that read a graph;
  - ``ReLUMLP(w1, b1, w2, b2)``: update = W₂ ReLU(W₁ x + b₁) + b₂ per token (W₁: (h, d), W₂: (d, h)); a bias
    that only some tokens may receive is a weight on an indicator feature of those tokens.

  Each has ``zeros(stream, size)`` to start from, ``random(generator)`` (below) and ``to(dtype)``: the block
  with its weights rounded to ``dtype`` (itself when they already are).  Blocks are written in float64; a block
  of another module (a graph head, a ReLU attention head) needs the same four: ``width``, ``__call__(state,
  temperature, context)``, ``random`` and ``to``.
* ``Layer(name, heads, mlp)``: x ← x + Σ_h head_h(x), then x ← x + mlp(x) (Giannou et al., eq. 1; either part
  may be absent).  ``LoopedConstruction(stream, layers, temperature, dtype=torch.float64)`` applies its layers
  in order once per loop: ``run(state, loops, **context)`` returns the state after each loop, ``layer_states`` the
  state after each layer of one loop (to debug a construction block by block).
* precision: a construction computes in its ``dtype``, float64 by default (the constructions' authors' format).
  ``LoopedConstruction(..., dtype=torch.float32)`` or ``construction.to(torch.float32)`` rounds every weight to
  float32 once, and ``run`` rounds the input state to it and computes every step in it, so a construction's
  finite-precision limit (a code comparison whose gap falls under the unit roundoff) can be seen move with the
  format.  The hard-attention tie tolerance is float64's; ``binary_code`` and ``Stream.zeros`` give float64 unless
  told otherwise, and ``run`` rounds what it is given.
* the exact-state measure: ``read_binary_code`` decodes the ±1 binary codes such constructions keep their
  integers in (``binary_code`` encodes them: MSB first, bit 1 ↦ +1, 0 ↦ −1; two's complement when ``signed``)
  and reports whether every entry rounds to ±1; ``matching_loops(states, decode, expected)`` compares a decoded
  state with the algorithm's after every loop, giving (B, T) booleans whose mean is the fraction of loops whose
  state is the algorithm's, exactly: 1 for a working construction, 0 for one whose first loop goes wrong.

The untrained control (``icl-sim repro run NAME --control untrained``).  A construction is not trained, so its
reproduction declares no training runs (``runs`` returns ``{}``) and builds its models in ``measure`` from
``measurement.seeds`` (the seed block: seed k indexes the k-th random instance, e.g. a random program) and
``measurement.control``: None for the reproduction proper, which builds the hand-written weights, and
``"untrained"`` for the control, which runs the same architecture at a random initialisation
(``construction.random(generator)``: every matrix and bias drawn as torch's ``nn.Linear`` initialises them,
U(−1/√fan_in, 1/√fan_in), from a generator seeded by the seed) through the same measure.  Random weights compute
nothing: their fraction of exact loops is 0, a finite value that fails every exactness claim.

Example, a one-layer construction that copies column "src" of the token whose position code matches the
query's "ptr" into its "dst" (a read, Giannou et al. Lemma 1's pattern)::

    stream = Stream([("src", 1), ("dst", 1), ("ptr", 3), ("pos", 3)])
    head = AttentionHead.zeros(stream, 3)
    head.query[:, stream["ptr"]] = torch.eye(3)
    head.key[:, stream["pos"]] = torch.eye(3)
    head.value[stream["dst"], stream["src"]] = 1.0
    model = LoopedConstruction(stream, [Layer("read", (head,))], temperature=10.0)
    states = model.run(start, loops=1)              # start: (B, n, 4 + 3 + 3) float64
    random = model.random(torch.Generator().manual_seed(seed))   # the control's model
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Callable, Mapping, Sequence

import torch

from icl_sim.validation import check_float, check_int

#: hard attention (λ = inf) splits its weight over the keys whose score is within this of the best one
TIE_TOLERANCE = 1e-9
#: the default format of weights and states (a construction's ``dtype``)
DTYPE = torch.float64


class Stream:
    """The residual stream's features as named, contiguous column ranges, in the order given."""

    def __init__(self, fields: Sequence[tuple[str, int]]):
        self._slices: dict[str, slice] = {}
        start = 0
        for name, width in fields:
            if not isinstance(name, str) or not name:
                raise ValueError(f"stream field names must be non-empty strings, got {name!r}")
            if name in self._slices:
                raise ValueError(f"stream field {name!r} is named twice")
            check_int(f"width of stream field {name!r}", width, 1)
            self._slices[name] = slice(start, start + width)
            start += width
        if not self._slices:
            raise ValueError("a stream needs at least one field")
        self.width = start

    def __getitem__(self, name: str) -> slice:
        if name not in self._slices:
            raise ValueError(f"stream has no field {name!r}; fields are {', '.join(self._slices)}")
        return self._slices[name]

    def __contains__(self, name: str) -> bool:
        return name in self._slices

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._slices)

    def size(self, name: str) -> int:
        """The number of columns of field ``name``."""
        columns = self[name]
        return columns.stop - columns.start

    def column(self, name: str, index: int = 0) -> int:
        """The column of entry ``index`` of field ``name``."""
        check_int("index", index, 0, self.size(name) - 1, maximum_name=f"the width of {name!r} minus 1")
        return self[name].start + index

    def zeros(self, batch: int, tokens: int, *, device=None, dtype: torch.dtype = DTYPE) -> torch.Tensor:
        """An all-zero state (batch, tokens, width), float64 unless ``dtype`` says otherwise."""
        return torch.zeros(batch, tokens, self.width, dtype=_check_dtype(dtype), device=device)

    def __repr__(self) -> str:
        return "Stream([" + ", ".join(f"({name!r}, {self.size(name)})" for name in self._slices) + "])"


def _check_dtype(dtype) -> torch.dtype:
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point and not dtype.is_complex):
        raise ValueError(f"dtype must be a real floating-point torch dtype (torch.float64, torch.float32, ...), "
                         f"got {dtype!r}")
    return dtype


def _converted(block, dtype: torch.dtype):
    """``block`` (a dataclass) itself when every tensor field already has ``dtype``, else a shallow copy with those
    fields rounded to ``dtype`` (a copy keeps the block's class; its other fields are shared)."""
    dtype = _check_dtype(dtype)
    tensors = {field.name: getattr(block, field.name) for field in dataclasses.fields(block)
               if isinstance(getattr(block, field.name), torch.Tensor)}
    if all(tensor.dtype == dtype for tensor in tensors.values()):
        return block
    block = copy.copy(block)
    for name, tensor in tensors.items():
        setattr(block, name, tensor.to(dtype))
    return block


def _uniform(shape, fan_in: int, generator: torch.Generator) -> torch.Tensor:
    """torch's nn.Linear initialisation law, U(−1/√fan_in, 1/√fan_in), in float64."""
    bound = 1.0 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=generator, dtype=DTYPE) * 2 - 1) * bound


def _matrix(name: str, value, shape: tuple[int, ...]) -> torch.Tensor:
    tensor = torch.as_tensor(value, dtype=DTYPE)
    if tuple(tensor.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(tensor.shape)}")
    return tensor


def attention_weights(scores: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(λ · scores) over the last axis; λ = inf: uniform over the entries within ``TIE_TOLERANCE`` (relative
    to the best score's size) of the maximum."""
    if math.isinf(temperature):
        best = scores.amax(dim=-1, keepdim=True)
        ties = (scores >= best - TIE_TOLERANCE * (1 + best.abs())).to(scores.dtype)
        return ties / ties.sum(dim=-1, keepdim=True)
    return torch.softmax(temperature * scores, dim=-1)


@dataclasses.dataclass
class AttentionHead:
    """A softmax attention head: update_j = Σ_i softmax_i(λ ⟨K x_i, Q x_j⟩) V x_i (``query``, ``key``: (r, d);
    ``value``: (d, d); the query token j reads the key tokens i)."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor

    def __post_init__(self):
        self.query = torch.as_tensor(self.query, dtype=DTYPE)
        if self.query.ndim != 2:
            raise ValueError(f"query must be a matrix (r, d), got shape {tuple(self.query.shape)}")
        rank, width = self.query.shape
        self.key = _matrix("key", self.key, (rank, width))
        self.value = _matrix("value", self.value, (width, width))

    @property
    def width(self) -> int:
        return self.value.shape[0]

    @classmethod
    def zeros(cls, stream: Stream, rank: int) -> "AttentionHead":
        """All-zero weights with ``rank`` query/key rows, to be written in."""
        check_int("rank", rank, 1)
        width = stream.width
        return cls(torch.zeros(rank, width, dtype=DTYPE), torch.zeros(rank, width, dtype=DTYPE),
                   torch.zeros(width, width, dtype=DTYPE))

    def random(self, generator: torch.Generator) -> "AttentionHead":
        """The same shapes at a random initialisation."""
        width = self.value.shape[0]
        return AttentionHead(_uniform(self.query.shape, width, generator), _uniform(self.key.shape, width, generator),
                             _uniform(self.value.shape, width, generator))

    def to(self, dtype: torch.dtype) -> "AttentionHead":
        """The head with its weights rounded to ``dtype`` (itself when they already are)."""
        return _converted(self, dtype)

    def weights(self, state: torch.Tensor, temperature: float) -> torch.Tensor:
        """The attention weights (B, n, n): row j (query token) over columns i (key tokens)."""
        scores = (state @ self.query.T) @ (state @ self.key.T).transpose(-1, -2)
        return attention_weights(scores, temperature)

    def __call__(self, state: torch.Tensor, temperature: float, context: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return self.weights(state, temperature) @ (state @ self.value.T)


@dataclasses.dataclass
class ContextHead:
    """A head whose mixing matrix is given per instance: update_j = Σ_i M_ji V x_i with M = ``context[name]``
    (B, n, n), e.g. a graph's adjacency matrix; ``value``: (d, d)."""

    name: str
    value: torch.Tensor

    def __post_init__(self):
        self.value = torch.as_tensor(self.value, dtype=DTYPE)
        if self.value.ndim != 2 or self.value.shape[0] != self.value.shape[1]:
            raise ValueError(f"value must be a square matrix (d, d), got shape {tuple(self.value.shape)}")

    @property
    def width(self) -> int:
        return self.value.shape[0]

    @classmethod
    def zeros(cls, stream: Stream, name: str) -> "ContextHead":
        return cls(name, torch.zeros(stream.width, stream.width, dtype=DTYPE))

    def random(self, generator: torch.Generator) -> "ContextHead":
        return ContextHead(self.name, _uniform(self.value.shape, self.value.shape[0], generator))

    def to(self, dtype: torch.dtype) -> "ContextHead":
        """The head with its value matrix rounded to ``dtype`` (itself when it already is)."""
        return _converted(self, dtype)

    def __call__(self, state: torch.Tensor, temperature: float, context: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.name not in context:
            raise ValueError(f"a ContextHead reads context[{self.name!r}]: pass {self.name}=... to run")
        matrix = torch.as_tensor(context[self.name], dtype=state.dtype, device=state.device)
        if matrix.shape != state.shape[:-1] + state.shape[-2:-1]:
            raise ValueError(f"context[{self.name!r}] must have shape (B, n, n) = "
                             f"{tuple(state.shape[:-1] + state.shape[-2:-1])}, got {tuple(matrix.shape)}")
        return matrix @ (state @ self.value.T)


@dataclasses.dataclass
class ReLUMLP:
    """A token-wise ReLU network: update = W₂ ReLU(W₁ x + b₁) + b₂ (``w1``: (h, d), ``b1``: (h,), ``w2``: (d, h),
    ``b2``: (d,))."""

    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor

    def __post_init__(self):
        self.w1 = torch.as_tensor(self.w1, dtype=DTYPE)
        if self.w1.ndim != 2:
            raise ValueError(f"w1 must be a matrix (h, d), got shape {tuple(self.w1.shape)}")
        hidden, width = self.w1.shape
        self.b1 = _matrix("b1", self.b1, (hidden,))
        self.w2 = _matrix("w2", self.w2, (width, hidden))
        self.b2 = _matrix("b2", self.b2, (width,))

    @property
    def width(self) -> int:
        return self.w1.shape[1]

    @classmethod
    def zeros(cls, stream: Stream, hidden: int) -> "ReLUMLP":
        """All-zero weights with ``hidden`` units, to be written in."""
        check_int("hidden", hidden, 1)
        width = stream.width
        return cls(torch.zeros(hidden, width, dtype=DTYPE), torch.zeros(hidden, dtype=DTYPE),
                   torch.zeros(width, hidden, dtype=DTYPE), torch.zeros(width, dtype=DTYPE))

    def random(self, generator: torch.Generator) -> "ReLUMLP":
        hidden, width = self.w1.shape
        return ReLUMLP(_uniform(self.w1.shape, width, generator), _uniform(self.b1.shape, width, generator),
                       _uniform(self.w2.shape, hidden, generator), _uniform(self.b2.shape, hidden, generator))

    def to(self, dtype: torch.dtype) -> "ReLUMLP":
        """The MLP with its weights and biases rounded to ``dtype`` (itself when they already are)."""
        return _converted(self, dtype)

    def __call__(self, state: torch.Tensor) -> torch.Tensor:
        return torch.relu(state @ self.w1.T + self.b1) @ self.w2.T + self.b2


Head = AttentionHead | ContextHead


@dataclasses.dataclass
class Layer:
    """One transformer layer: x ← x + Σ_h head_h(x), then x ← x + mlp(x); ``heads`` may be empty, ``mlp`` None."""

    name: str
    heads: Sequence[Head] = ()
    mlp: ReLUMLP | None = None

    def __post_init__(self):
        self.heads = tuple(self.heads)
        if not self.heads and self.mlp is None:
            raise ValueError(f"layer {self.name!r} has neither heads nor an MLP")

    def random(self, generator: torch.Generator) -> "Layer":
        return Layer(self.name, tuple(head.random(generator) for head in self.heads),
                     None if self.mlp is None else self.mlp.random(generator))

    def to(self, dtype: torch.dtype) -> "Layer":
        """The layer with every block's weights rounded to ``dtype`` (itself when they already are)."""
        heads = tuple(head.to(dtype) for head in self.heads)
        mlp = None if self.mlp is None else self.mlp.to(dtype)
        if mlp is self.mlp and all(new is old for new, old in zip(heads, self.heads)):
            return self
        return Layer(self.name, heads, mlp)

    def __call__(self, state: torch.Tensor, temperature: float, context: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.heads:
            state = state + sum(head(state, temperature, context) for head in self.heads)
        if self.mlp is not None:
            state = state + self.mlp(state)
        return state


class LoopedConstruction:
    """A frozen looped transformer: ``layers`` applied in order once per loop, attention at temperature λ
    (``temperature``; ``math.inf``: hard attention), over the residual ``stream``, computed in ``dtype`` (float64
    by default; the layers' weights are rounded to it once, here)."""

    def __init__(self, stream: Stream, layers: Sequence[Layer], temperature: float, *, dtype: torch.dtype = DTYPE):
        self.dtype = _check_dtype(dtype)
        self.stream, self.layers = stream, [layer.to(dtype) for layer in layers]
        if not self.layers:
            raise ValueError("a construction needs at least one layer")
        names = [layer.name for layer in self.layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layer names must be distinct, got {names}")
        if not (math.isinf(temperature) and temperature > 0):
            check_float("temperature", temperature, 0.0, strict=True)
        self.temperature = float(temperature)
        for layer in self.layers:
            blocks = list(layer.heads) + ([layer.mlp] if layer.mlp is not None else [])
            widths = {block.width for block in blocks}
            if widths != {stream.width}:
                raise ValueError(f"layer {layer.name!r} reads {sorted(widths)} features, the stream has "
                                 f"{stream.width}")

    def with_temperature(self, temperature: float) -> "LoopedConstruction":
        """The same weights at another softmax temperature λ (in the same dtype)."""
        return LoopedConstruction(self.stream, self.layers, temperature, dtype=self.dtype)

    def to(self, dtype: torch.dtype) -> "LoopedConstruction":
        """The same construction computed in ``dtype``: its weights rounded to it (from this construction's own,
        so float64 → float32 → float64 keeps float32's rounding)."""
        return LoopedConstruction(self.stream, self.layers, self.temperature, dtype=dtype)

    def random(self, generator: torch.Generator) -> "LoopedConstruction":
        """The same architecture (stream, layers, heads, widths, temperature) at a random initialisation: every
        matrix and bias U(−1/√fan_in, 1/√fan_in), drawn in float64 from ``generator`` (the untrained control) and
        rounded to the construction's dtype."""
        return LoopedConstruction(self.stream, [layer.random(generator) for layer in self.layers], self.temperature,
                                  dtype=self.dtype)

    def weights(self) -> dict[str, torch.Tensor]:
        """Every weight by name, ``LAYER.head{h}.query`` ... ``LAYER.mlp.b2``."""
        return {f"{layer.name}.{label}": tensor for layer in self.layers for label, tensor in _layer_tensors(layer)}

    def _check_state(self, state: torch.Tensor) -> torch.Tensor:
        if not isinstance(state, torch.Tensor) or state.ndim != 3 or state.shape[-1] != self.stream.width:
            shape = tuple(state.shape) if isinstance(state, torch.Tensor) else type(state).__name__
            raise ValueError(f"state must be a tensor (B, n, {self.stream.width}), got {shape}")
        return state.to(self.dtype)

    def layer_states(self, state: torch.Tensor, **context) -> list[torch.Tensor]:
        """The state after each layer of one loop, first to last, in the construction's dtype (the input state is
        rounded to it)."""
        state = self._check_state(state)
        states = []
        for layer in self.layers:
            state = layer(state, self.temperature, context)
            states.append(state)
        return states

    def loop(self, state: torch.Tensor, **context) -> torch.Tensor:
        """One loop: every layer once."""
        return self.layer_states(state, **context)[-1]

    @torch.no_grad()
    def run(self, state: torch.Tensor, loops: int, **context) -> list[torch.Tensor]:
        """The state after each of ``loops`` loops (the input state is not included), in the construction's dtype
        (the input state is rounded to it)."""
        check_int("loops", loops, 1)
        states = []
        for _ in range(loops):
            state = self.loop(state, **context)
            states.append(state)
        return states


def _layer_tensors(layer: Layer) -> list[tuple[str, torch.Tensor]]:
    tensors = []
    for index, head in enumerate(layer.heads):
        names = ("query", "key", "value") if isinstance(head, AttentionHead) else ("value",)
        tensors += [(f"head{index}.{name}", getattr(head, name)) for name in names]
    if layer.mlp is not None:
        tensors += [(f"mlp.{name}", getattr(layer.mlp, name)) for name in ("w1", "b1", "w2", "b2")]
    return tensors


def binary_code(values: torch.Tensor, bits: int, *, signed: bool = False) -> torch.Tensor:
    """The ±1 binary code of integers (..., ) → (..., bits) float64, most significant bit first, bit 1 ↦ +1 and
    0 ↦ −1 (Giannou et al.'s positional codes and memory); ``signed``: ``bits``-bit two's complement."""
    check_int("bits", bits, 1, 62)
    values = torch.as_tensor(values, dtype=torch.int64)
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if values.numel() and (int(values.min()) < low or int(values.max()) > high):
        raise ValueError(f"values must lie in [{low}, {high}] for a {bits}-bit {'signed' if signed else 'unsigned'} "
                         f"code, got [{int(values.min())}, {int(values.max())}]")
    unsigned = values % (1 << bits)
    shifts = torch.arange(bits - 1, -1, -1, device=values.device)
    return ((unsigned.unsqueeze(-1) >> shifts) & 1).to(DTYPE) * 2 - 1


def read_binary_code(code: torch.Tensor, *, signed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode ±1 codes (..., bits) → (integers (...,), valid (...,)): each entry rounded to the nearest integer,
    bit 1 where it is +1; ``valid`` is False where some entry does not round to ±1 (0, far off, NaN), and then the
    integer is meaningless."""
    rounded = torch.round(code)
    valid = ((rounded == 1) | (rounded == -1)).all(dim=-1)
    bits = code.shape[-1]
    ones = (rounded == 1).to(torch.int64)
    weights = 1 << torch.arange(bits - 1, -1, -1, device=code.device)
    value = (ones * weights).sum(dim=-1)
    if signed:
        value = torch.where(value >= 1 << (bits - 1), value - (1 << bits), value)
    return value, valid


def matching_loops(states: Sequence[torch.Tensor], decode: Callable[[torch.Tensor], Mapping[str, torch.Tensor]],
                   expected: Sequence[Mapping[str, torch.Tensor]]) -> torch.Tensor:
    """The exact-state measure: (B, T) booleans, True where the state after loop t, decoded by ``decode`` into
    named integer tensors (B, ...) together with a ``"valid"`` boolean (B,) (every code read rounds to ±1), equals
    the algorithm's state after step t (``expected[t]``: the same names, without ``"valid"``) in every entry."""
    if len(states) != len(expected):
        raise ValueError(f"states and expected must cover the same loops, got {len(states)} and {len(expected)}")
    columns = []
    for state, reference in zip(states, expected):
        decoded = decode(state)
        match = decoded["valid"].clone()
        for name, value in reference.items():
            got = decoded[name]
            match &= (got == value.to(got.device)).reshape(got.shape[0], -1).all(dim=1)
        columns.append(match)
    return torch.stack(columns, dim=1)


__all__ = ["AttentionHead", "ContextHead", "Layer", "LoopedConstruction", "ReLUMLP", "Stream", "attention_weights",
           "binary_code", "matching_loops", "read_binary_code"]
