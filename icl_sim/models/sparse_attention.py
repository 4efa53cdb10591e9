"""Sanford, Hsu & Telgarsky's (2023) one-unit constructions, hand-weighted: q-sparse averaging and Match2.

Both are one softmax attention layer (``icl_sim.models.constructed``: float64, no mask, temperature λ) over an
input embedding φ written out by hand, the paper's arbitrary token-wise φ; the untrained control keeps φ and draws
the layer's weights at random (``LoopedConstruction.random``).

q-sparse averaging (``tasks.sparse_averaging``).  Position j gets a code u_j ∈ R^r (Gaussian, entries N(0, 1/r):
nearly orthogonal), token i the query w_i, the least-norm solution of ⟨w_i, u_j⟩ = 1 for every j ∈ y_i (exact
when r ≥ q and the q codes are independent; a least-squares fit below).  The stream is φ(x_i) = (z_i, w_i, u_i, 0):
embedding dimension m = 2r + 2d' (r + r + d' as the paper counts it, the last d' the output slot).  The head scores
λ⟨w_i, u_j⟩: exactly λ on y_i and at most λδ off it, δ = max_{j ∉ y_i} |⟨w_i, u_j⟩| the codes' incoherence, so the
weight off y_i is at most s = (N − q) e^{−λ(1−δ)} / q and the output (1 − s)·qSA_i + s·(a mean of other z) errs by
at most 2s in ℓ2.  With ``qsa_temperature`` λ = ln(2(N − q)/(q ε)) / (1 − δ₀) the error is at most ε whenever the
realised δ ≤ δ₀ (= ½): the construction works exactly when the random codes are incoherent enough, which r of
order q log N makes likely (a restricted-orthogonality property; the paper's Theorem with m = O(d' + q log N)).

Match2 (``tasks.matching``).  φ(x_i) = (cos θ_i, sin θ_i, one-hot(x_i), 0, 0, 0) with θ_i = 2π x_i / M: the head's
query (cos θ_i, sin θ_i) and key (cos θ_j, −sin θ_j) score cos(θ_i + θ_j), 1 exactly when x_i + x_j ≡ 0 (mod M) and
at most cos(2π/M) otherwise (the paper's trigonometric embedding).  The head copies (cos θ_j, sin θ_j) into a
two-column slot A_i; the MLP's M units h_k = ReLU(⟨A_i, (cos θ_k, −sin θ_k)⟩ + 2·1[x_i = k] − 1) sum to
S_i + 1 with S_i = Σ_j softmax_j · cos(θ_i + θ_j), and the output column is S_i − τ, τ = (1 + cos(2π/M))/2.
Without a match S_i ≤ cos(2π/M) < τ; with one, the weight s off the matches is at most (N − 1)e^{−λΔ},
Δ = 1 − cos(2π/M), and S_i ≥ 1 − 2s > τ at ``match2_temperature``'s λ = ln(8N/Δ)/Δ.
"""
from __future__ import annotations

import math

import torch

from icl_sim.models.constructed import DTYPE, AttentionHead, Layer, LoopedConstruction, ReLUMLP, Stream
from icl_sim.validation import check_float, check_int


def position_codes(tokens: int, rank: int, generator: torch.Generator) -> torch.Tensor:
    """(N, r) float64 codes u_j with i.i.d. N(0, 1/r) entries: nearly orthogonal unit-norm vectors."""
    check_int("tokens", tokens, 1)
    check_int("rank", rank, 1)
    return torch.randn(tokens, rank, generator=generator, dtype=DTYPE, device=generator.device) / math.sqrt(rank)


def selecting_queries(subsets: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """(B, N, r) queries w with ⟨w, u_j⟩ = 1 for j in the token's set (``subsets`` (B, N, q)): the least-norm
    solution pinv(U_yᵀ) 1 (a least-squares fit where r < q)."""
    chosen = codes[subsets]                                          # (B, N, q, r): U_yᵀ
    ones = torch.ones(*chosen.shape[:-1], 1, dtype=DTYPE, device=codes.device)
    return (torch.linalg.pinv(chosen) @ ones)[..., 0]


def qsa_stream(value_dim: int, rank: int) -> Stream:
    return Stream([("z", value_dim), ("query", rank), ("key", rank), ("out", value_dim)])


def qsa_embedding(values: torch.Tensor, subsets: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """φ(X): the stream (B, N, 2r + 2d') of (z_i, w_i, u_i, 0) from a prompt's latent ``values`` z (B, N, d') and
    ``subsets`` (B, N, q), with the position ``codes`` (N, r)."""
    batch, tokens, _ = values.shape
    positions = codes.expand(batch, tokens, codes.shape[1])
    queries = selecting_queries(subsets, codes)
    return torch.cat([values.to(DTYPE), queries, positions, torch.zeros_like(values, dtype=DTYPE)], dim=-1)


def qsa_construction(value_dim: int, rank: int, temperature: float) -> LoopedConstruction:
    """One head: query the w block, key the u block, value z into the output slot; softmax at λ = ``temperature``."""
    check_int("value_dim", value_dim, 1)
    stream = qsa_stream(value_dim, rank)
    head = AttentionHead.zeros(stream, rank)
    head.query[:, stream["query"]] = torch.eye(rank, dtype=DTYPE)
    head.key[:, stream["key"]] = torch.eye(rank, dtype=DTYPE)
    head.value[stream["out"], stream["z"]] = torch.eye(value_dim, dtype=DTYPE)
    return LoopedConstruction(stream, [Layer("average", (head,))], temperature)


def qsa_temperature(tokens: int, sparsity: int, epsilon: float, incoherence: float = 0.5) -> float:
    """λ = ln(2(N − q)/(q ε)) / (1 − δ₀): at most ε of ℓ2 error when every off-set score is at most δ₀."""
    check_int("sparsity", sparsity, 1)
    check_int("tokens", tokens, sparsity + 1)
    check_float("epsilon", epsilon, 0.0, strict=True)
    check_float("incoherence", incoherence, 0.0, maximum=0.999)
    return math.log(2 * (tokens - sparsity) / (sparsity * epsilon)) / (1 - incoherence)


def qsa_output(state: torch.Tensor, stream: Stream) -> torch.Tensor:
    """The output slot (B, N, d') of a state after the layer."""
    return state[..., stream["out"]]


def incoherence(queries: torch.Tensor, subsets: torch.Tensor, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per instance (B,): the largest |⟨w_i, u_j⟩| over positions i and j ∉ y_i (δ), and the largest
    |⟨w_i, u_j⟩ − 1| over j ∈ y_i (0 where the queries are exact)."""
    scores = queries @ codes.T                                       # (B, N, N)
    inside = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, subsets, True)
    off = scores.abs().masked_fill(inside, 0.0).flatten(1).amax(dim=1)
    on = (scores - 1).abs().masked_fill(~inside, 0.0).flatten(1).amax(dim=1)
    return off, on


def match2_stream(modulus: int) -> Stream:
    return Stream([("cos", 1), ("sin", 1), ("number", modulus), ("read", 2), ("score", 1)])


def match2_embedding(numbers: torch.Tensor, modulus: int) -> torch.Tensor:
    """φ(X) (B, N, M + 5): (cos θ_i, sin θ_i, one-hot(x_i), 0, 0, 0), θ_i = 2π x_i / M."""
    angles = 2 * math.pi * numbers.to(DTYPE) / modulus
    zeros = torch.zeros(*numbers.shape, 3, dtype=DTYPE, device=numbers.device)
    return torch.cat([angles.cos()[..., None], angles.sin()[..., None],
                      torch.nn.functional.one_hot(numbers, modulus).to(DTYPE), zeros], dim=-1)


def match2_gap(modulus: int) -> float:
    """Δ = 1 − cos(2π/M): how far below a match's score 1 every other score lies."""
    return 1 - math.cos(2 * math.pi / modulus)


def match2_temperature(tokens: int, modulus: int) -> float:
    """λ = ln(8N/Δ)/Δ: the weight off the matches is below Δ/8 · (N − 1)/N, so a match scores S_i > τ."""
    check_int("tokens", tokens, 1)
    check_int("modulus", modulus, 2)
    gap = match2_gap(modulus)
    return math.log(8 * tokens / gap) / gap


def match2_construction(tokens: int, modulus: int) -> LoopedConstruction:
    """The trigonometric head and the MLP reading S_i − τ into the score column (module docstring)."""
    stream = match2_stream(modulus)
    cos, sin = stream.column("cos"), stream.column("sin")
    head = AttentionHead.zeros(stream, 2)
    head.query[0, cos], head.query[1, sin] = 1.0, 1.0
    head.key[0, cos], head.key[1, sin] = 1.0, -1.0
    head.value[stream.column("read", 0), cos], head.value[stream.column("read", 1), sin] = 1.0, 1.0
    mlp = ReLUMLP.zeros(stream, modulus)
    angles = 2 * math.pi * torch.arange(modulus, dtype=DTYPE) / modulus
    mlp.w1[:, stream.column("read", 0)], mlp.w1[:, stream.column("read", 1)] = angles.cos(), -angles.sin()
    mlp.w1[:, stream["number"]] = 2 * torch.eye(modulus, dtype=DTYPE)
    mlp.b1[:] = -1.0
    mlp.w2[stream.column("score"), :] = 1.0
    mlp.b2[stream.column("score")] = -1.0 - (1 + math.cos(2 * math.pi / modulus)) / 2
    return LoopedConstruction(stream, [Layer("match", (head,), mlp)], match2_temperature(tokens, modulus))


__all__ = ["incoherence", "match2_construction", "match2_embedding", "match2_gap", "match2_stream",
           "match2_temperature", "position_codes", "qsa_construction", "qsa_embedding", "qsa_output",
           "qsa_stream", "qsa_temperature", "selecting_queries"]
