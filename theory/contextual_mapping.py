"""Kajitsuka & Sato's contextual mapping (ICLR 2024, arXiv 2307.14023): one softmax attention layer with rank-1
weights, written out, its separation margin, and the ceiling of a predictor blind to the context.

A map q is an (r, δ)-contextual mapping of input sequences X^(1..N) (their Definition) when every output token has
norm at most r and two output tokens q(X^(i))_k, q(X^(j))_l lie at least δ apart whenever their sequences' token sets
V^(i), V^(j) or the tokens x_k^(i), x_l^(j) themselves differ.  Their Theorem (softmax attention is a contextual
mapping) builds it from one head whose key, query and value weights have rank 1, through the Boltzmann operator
boltz(s) = Σ_j s_j e^{s_j} / Σ_j e^{s_j} that a softmax computes:

    q(X)_k = x_k + γ v · Σ_l softmax_l(a u_k u_l) u_l,    u_l = vᵀx_l,

i.e. W^K ᵀW^Q = a v vᵀ, W^V = vᵀ, W^O = γ v.  Here, as their proof goes: v is a unit direction along which the
vocabulary and the origin stay apart (the random projection lemma of Park et al. 2021 that their proof uses gives
one for most directions, |vᵀ(x_a − x_b)| ≥ c ‖x_a − x_b‖ with 0 < c < 1; this one keeps the best of
``candidates`` seeded draws); a makes every two scores of one query, the entries of a (vᵀX)ᵀ(vᵀx_k), at least
2 log n + 3 apart, the separation their Boltzmann lemma (Lemma 1) asks of its argument (δ > 2 log n + 3; here
met with equality by the closest pair of the least-projected query, at most); and γ = ε / (4 max |u|) keeps the
attention term within ε/4, so outputs stay within r = r_max + ε/4 and distinct query tokens at least ε/2 apart.  Two
sequences with the same query token and different sets then differ by γ |B(S) − B(S')|, B the Boltzmann value of
the query's scores over the set, a difference that is exponentially small in the scores: this module computes its
logarithm exactly (the double sum of B(S) − B(S') with its cancelling terms removed, scaled by its largest one), as
the float64 outputs themselves cannot resolve it.

What of the paper could be read (the search corpus stores its abstract and introduction only; arXiv 2307.14023,
its HTML and markdown copies and the third-party summaries on sciencestack.ai, chatpaper.com, liner.com,
emergentmind.com, arxivlens.com and openreview.net were tried, each stored from its beginning only): a public
machine-written review of the ICLR version, which quotes its body, stored in the code index (found by its
phrase "tokenwise separatedness"; its repository is not named there), gives Lemma 1's condition δ > 2 log n + 3 on
the Boltzmann operator's argument a = (wᵀX)ᵀ(wᵀx_k), the projection w's two-sided bound above, Definition 1's
tokenwise (r_min, r_max, ε)-separatedness and Corollary 1's parameter count 4(s + d) + d(2nN + d); the ICLR
reviews (stored there too) confirm the rank-1 head with one direction for keys, queries and values.  Until
2026-12-05 the score gap here was 4 log n, a recollection (it is 6.44 against 6.22 at n = 5, 4.39 against 5.20
at n = 3, where it broke the lemma's condition); the margins it gave are recorded in
:mod:`icl_sim.paper_repro.kajitsuka_sato_2024`.  The margin bound :func:`theorem_margin_log10` (the Theorem's δ)
is still as recalled: its (2 log n + 3) factor agrees with the lemma's condition, but the formula itself could not
be read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from icl_sim.validation import check_int

#: pairs of sets whose Boltzmann differences are computed at once (each a |V| × |V| array)
PAIRS_AT_ONCE = 1024


@dataclass(frozen=True)
class RankOneConstruction:
    """The construction's weights for one vocabulary: direction v (d,), score scale a, output scale γ."""

    direction: np.ndarray
    score_scale: float
    output_scale: float

    def projections(self, tokens: np.ndarray) -> np.ndarray:
        """u = vᵀx for tokens (..., d)."""
        return tokens @ self.direction

    def outputs(self, tokens: np.ndarray) -> np.ndarray:
        """q(X) (N, n, d) for sequences X (N, n, d): every token attends to the whole sequence, itself included."""
        u = self.projections(tokens)  # (N, n)
        scores = self.score_scale * u[:, :, None] * u[:, None, :]
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        return tokens + self.output_scale * (weights @ u[:, :, None]) * self.direction


def score_gap(length: int) -> float:
    """2 log n + 3: the separation Lemma 1 asks of the scores of one query over a sequence of n = ``length``
    tokens (module docstring)."""
    check_int("length", length, 2)
    return 2.0 * math.log(length) + 3.0


def build_construction(vocabulary: np.ndarray, length: int, generator: torch.Generator,
                       candidates: int = 64) -> RankOneConstruction:
    """The rank-1 construction (module docstring) for ``vocabulary`` (|V|, d) and sequences of ``length`` tokens,
    its direction the best of ``candidates`` unit directions drawn from ``generator``."""
    check_int("length", length, 2)
    check_int("candidates", candidates, 1)
    vocabulary = np.asarray(vocabulary, dtype=np.float64)
    draws = torch.randn(candidates, vocabulary.shape[1], generator=generator, dtype=torch.float64).numpy()
    draws /= np.linalg.norm(draws, axis=1, keepdims=True)
    with_origin = np.concatenate([vocabulary @ draws.T, np.zeros((1, candidates))])  # (|V| + 1, candidates)
    gaps = np.diff(np.sort(with_origin, axis=0), axis=0).min(axis=0)
    direction = draws[int(np.argmax(gaps))]
    u = vocabulary @ direction
    least_gap = float(np.diff(np.sort(u)).min())
    score_scale = score_gap(length) / (float(np.abs(u).min()) * least_gap)
    distances = np.linalg.norm(vocabulary[:, None] - vocabulary[None], axis=-1)
    separation = float(distances[np.triu_indices(len(vocabulary), 1)].min())
    return RankOneConstruction(direction, score_scale, separation / (4.0 * float(np.abs(u).max())))


def context_margin_log10(construction: RankOneConstruction, vocabulary: np.ndarray, token_ids: np.ndarray) -> float:
    """log10 of the least distance between the construction's outputs at one token in two sequences of different
    token sets (``token_ids`` (N, n) into ``vocabulary``): γ min |B(S) − B(S')| over every token and every two sets
    holding it, computed in log space (−inf if two sets coincide)."""
    token_ids = np.asarray(token_ids)
    u = construction.projections(np.asarray(vocabulary, dtype=np.float64))
    count, vocabulary_size = token_ids.shape[0], len(u)
    member = np.zeros((count, vocabulary_size), dtype=bool)
    member[np.arange(count)[:, None], token_ids] = True
    least = math.inf
    for token in range(vocabulary_size):  # each token's sets, their pairs at once
        sets = np.nonzero(member[:, token])[0]
        if len(sets) < 2:
            continue
        first, second = np.triu_indices(len(sets), 1)
        for start in range(0, len(first), PAIRS_AT_ONCE):
            block = slice(start, start + PAIRS_AT_ONCE)
            logs = _log_boltzmann_differences(construction.score_scale * u[token], u, member[sets[first[block]]],
                                              member[sets[second[block]]])
            least = min(least, float(logs.min()))
    return (least + math.log(construction.output_scale)) / math.log(10)


def _log_boltzmann_differences(beta: float, u: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """log |B(S) − B(S')| for pairs of sets given as membership rows (P, |V|), B(S) = Σ_{j∈S} e^{βu_j} u_j / Z(S).

    B(S) − B(S') = Σ_{j∈S, l∈S'} e^{β(u_j + u_l)} (u_j − u_l) / (Z(S) Z(S')); the terms with j and l both in S ∩ S'
    cancel in pairs (and j = l vanishes), so they are left out, and the rest is summed scaled by its largest term."""
    exponents = beta * (u[:, None] + u[None, :])  # (|V|, |V|)
    pair = left[:, :, None] & right[:, None, :]
    common = left & right
    pair &= ~(common[:, :, None] & common[:, None, :])
    masked = np.where(pair, exponents[None], -np.inf)
    top = masked.max(axis=(1, 2))
    total = (np.exp(masked - top[:, None, None]) * (u[:, None] - u[None, :])[None]).sum(axis=(1, 2))
    log_partition = [np.logaddexp.reduce(np.where(rows, beta * u[None], -np.inf), axis=1) for rows in (left, right)]
    with np.errstate(divide="ignore"):
        return top + np.log(np.abs(total)) - log_partition[0] - log_partition[1]


def theorem_margin_log10(tokens: int, vocabulary: int, dim: int, r_min: float, r_max: float,
                         separation: float) -> float:
    """log10 of the Theorem's margin δ for sequences of n = ``tokens`` tokens over a vocabulary of |V| tokens in R^d,
    tokenwise (r_min, r_max, ε)-separated (as recalled; module docstring):

        δ = 2 (log n)² ε² r_min / (r_max² (|V| + 1)⁴ (2 log n + 3) π d)
            · exp(−(|V| + 1)⁴ (2 log n + 3) π d r_max² / (4 ε r_min)),

    in log10, as δ itself underflows float64 at every size of interest."""
    check_int("tokens", tokens, 2)
    growth = (vocabulary + 1) ** 4 * (2 * math.log(tokens) + 3) * math.pi * dim
    log_delta = (math.log(2 * math.log(tokens) ** 2 * separation ** 2 * r_min / (r_max ** 2 * growth))
                 - growth * r_max ** 2 / (4 * separation * r_min))
    return log_delta / math.log(10)


def context_blind_ceiling(last_ids: torch.Tensor, labels: torch.Tensor) -> tuple[float, torch.Tensor]:
    """The best training accuracy of any predictor that sees a sequence's last token alone (``last_ids`` (N,)),
    on ±1 ``labels`` (N,): each token's majority label; and the mask (N,) of the ambiguous sequences, those whose
    last token also ends a sequence of the other label (where such a predictor is right at most half the time)."""
    tokens = int(last_ids.max()) + 1
    positive = torch.zeros(tokens, dtype=torch.float64).index_add_(0, last_ids, (labels > 0).double())
    negative = torch.zeros(tokens, dtype=torch.float64).index_add_(0, last_ids, (labels < 0).double())
    ceiling = float(torch.maximum(positive, negative).sum() / len(labels))
    return ceiling, (torch.minimum(positive, negative) > 0)[last_ids]
