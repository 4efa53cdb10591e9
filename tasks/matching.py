"""Match2 and Match3: does a token's number complete a zero sum mod M with one (two) of the prompt's numbers?

The detection tasks of Sanford, Hsu & Telgarsky, "Representational strengths and limitations of transformers"
(NeurIPS 2023, arXiv 2306.02896): N numbers x_1..x_N of Z_M and, at every i,

    Match2(X)_i = 1 if some j ∈ [N] has x_i + x_j ≡ 0 (mod M),
    Match3(X)_i = 1 if some j, k ∈ [N] have x_i + x_j + x_k ≡ 0 (mod M)

(j, k range over all of [N], repeats and i itself included).  One attention unit with trigonometric embeddings
decides Match2 (its score cos(2π(x_i + x_j)/M) is 1 exactly at a match); one layer of pairwise attention needs
size linear in N for Match3, a triple relation.

Encoding: x_i as a one-hot row of M entries, so ``xs`` is (B, N, M); labels ±1 at every position (``ys``, (B, N)),
the last evaluated (a causal model's last position sees every number).  x_i is uniform on Z_M; choose M for a
label rate near ½ (P(no Match2) ≈ (1 − 1/M)^(N−1)).  Latent: ``numbers`` (B, N).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_int


@dataclass(frozen=True)
class Match(TaskFamily):
    """MatchK for K = ``order`` ∈ {2, 3}: ±1 at i as x_i completes a zero sum mod M with K − 1 of the numbers."""

    name: ClassVar[str] = "match"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "modulus"

    order: int = parameter("K: 2 (Match2, pairs) or 3 (Match3, triples)", 2)
    tokens: int = parameter("numbers N per prompt", 8)
    modulus: int = parameter("M: the numbers are drawn uniformly from Z_M", 10)

    def __post_init__(self):
        check_int("order", self.order, 2, 3)
        check_int("tokens", self.tokens, 1)
        check_int("modulus", self.modulus, 2)

    @property
    def points(self) -> int:
        return self.tokens

    @property
    def dim(self) -> int:
        return self.modulus

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; a curriculum is refused (the one-hot code has M entries)."""
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points) or active_dims not in (None, self.dim):
            raise ValueError(f"match prompts have {self.points} points and {self.dim} features; a curriculum "
                             f"(points={points}, active_dims={active_dims}) is not supported")
        numbers = torch.randint(self.modulus, (batch_size, self.tokens), generator=generator,
                                device=generator.device)
        xs = torch.nn.functional.one_hot(numbers, self.modulus).to(dtype)
        labels = match_labels(numbers, self.modulus, self.order).to(dtype) * 2 - 1
        return Prompt(xs, labels, {"numbers": numbers})

    def baselines(self):
        """None: the reference is the labels' own brute force and the paper's Match2 construction."""
        return {}

    def slices(self, prompt: Prompt) -> dict:
        return {}

    def trivial_error(self) -> float:
        """1/2: a coin's accuracy."""
        return 0.5


def match_labels(numbers: torch.Tensor, modulus: int, order: int) -> torch.Tensor:
    """(B, N) booleans: MatchK at every position, from the residue counts c_r (B, M) of each prompt: Match2 reads
    c at −x_i, Match3 the circular self-convolution of c (the sums x_j + x_k) at −x_i."""
    counts = torch.nn.functional.one_hot(numbers, modulus).sum(dim=1)
    if order == 3:
        shifts = (torch.arange(modulus, device=numbers.device)[:, None]
                  - torch.arange(modulus, device=numbers.device)[None, :]) % modulus  # (s, r) -> s − r
        counts = (counts[:, None, :] * counts[:, shifts]).sum(dim=-1)              # Σ_r c_r c_{s−r}
    return counts.gather(1, (-numbers) % modulus) > 0
