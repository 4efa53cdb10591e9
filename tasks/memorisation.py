"""Memorisation of labelled sequences: N distinct sequences of tokens from one finite vocabulary, each labelled ±1.

The setting of Kajitsuka & Sato, "Are transformers with one layer self-attention using low-rank weight matrices
universal approximators?" (ICLR 2024, arXiv 2307.14023): a vocabulary V of |V| word tokens in R^d, input sequences
of n tokens with no token twice in a sequence, and labels consistent with what a permutation-equivariant layer can
see (two sequences with the same set of tokens and the same token at the labelled position carry the same label).
Here the vocabulary is |V| points uniform on the unit sphere (r_min = r_max = 1, the tokenwise separation ε their
least distance), the N sequences have distinct token sets (so they are consistent whatever their labels), each in a
uniformly random order, and the label, a fair coin, sits at the last token: the query, whose prediction reads the
other n − 1 tokens and itself, the whole sequence.

One ``sample`` call draws one data set: a vocabulary shared by its ``batch_size`` sequences, so a run trained on
batch 0 alone (``batch_redraw_every`` = steps) memorises one set of N = ``batch_size`` sequences, fixed by the
run's seed.  The labels are random, so nothing but memorisation fits them; and |V| < N, so many sequences share
their last token with sequences of the other label: a predictor blind to the context cannot fit those
(:func:`icl_sim.theory.contextual_mapping.context_blind_ceiling`).

Encoding: ``xs`` (B, n, d) the tokens; ``ys`` (B, n) 0 at the context tokens, which carry no label, and the label
at the last.  Latent: ``token_ids`` (B, n) long, indices into ``vocabulary`` (B, |V|, d), the same for every prompt
of a call, and ``label`` (B,).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_int

#: token sets are kept as bit masks in int64
LARGEST_VOCABULARY = 62


@dataclass(frozen=True)
class Memorisation(TaskFamily):
    """N distinct sequences over one vocabulary on the unit sphere, a fair ±1 label at each one's last token."""

    name: ClassVar[str] = "memorisation"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    evaluated_positions: ClassVar[str] = "last"

    dim: int = parameter("token dimension d", 6)
    length: int = parameter("tokens per sequence n (the last one labelled)", 5)
    vocabulary: int = parameter(f"vocabulary size |V| (at most {LARGEST_VOCABULARY}); one call draws at most "
                                "C(|V|, n) sequences", 20)

    def __post_init__(self):
        check_int("dim", self.dim, 1)
        check_int("length", self.length, 2)
        check_int("vocabulary", self.vocabulary, self.length, LARGEST_VOCABULARY)

    @property
    def points(self) -> int:
        """The n tokens of a sequence."""
        return self.length

    def capacity(self) -> int:
        """C(|V|, n): the distinct token sets, the most sequences one call can draw."""
        return math.comb(self.vocabulary, self.length)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """One data set of ``batch_size`` sequences (see the module docstring); no curriculum."""
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points) or active_dims not in (None, self.dim):
            raise ValueError(f"memorisation prompts have {self.points} points and {self.dim} dimensions; a "
                             f"curriculum (points={points}, active_dims={active_dims}) is not supported")
        if batch_size > self.capacity():
            raise ValueError(f"batch_size must be at most C(vocabulary, length) = {self.capacity()} distinct "
                             f"sequences, got {batch_size}")
        device = generator.device
        vocabulary = torch.randn(self.vocabulary, self.dim, generator=generator, device=device, dtype=torch.float64)
        vocabulary = vocabulary / torch.linalg.vector_norm(vocabulary, dim=-1, keepdim=True)
        ids = distinct_sequences(batch_size, self.length, self.vocabulary, generator)
        labels = torch.where(torch.rand(batch_size, generator=generator, device=device) < 0.5, 1.0, -1.0)
        ys = torch.zeros(batch_size, self.points, device=device, dtype=dtype)
        ys[:, -1] = labels.to(dtype)
        latent = {"token_ids": ids, "vocabulary": vocabulary.to(dtype).expand(batch_size, -1, -1),
                  "label": labels.to(dtype)}
        return Prompt(vocabulary[ids].to(dtype), ys, latent)

    def baselines(self):
        """None: the reference is the context-blind ceiling of the data set itself, not a per-prompt predictor."""
        return {}

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """1/2: the accuracy of a fair coin (or of any predictor blind to the prompt)."""
        return 0.5


def distinct_sequences(count: int, length: int, vocabulary: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` orderings (count, length) of distinct ``length``-subsets of range(``vocabulary``), each uniform in
    order: the first ``length`` entries of a random permutation per row, rows whose set repeats an earlier row's
    drawn again (in rounds, all of them at once) until every set is new."""
    device = generator.device
    ids = torch.empty(count, length, dtype=torch.long, device=device)
    pending = torch.arange(count, device=device)
    powers = 2 ** torch.arange(vocabulary, device=device, dtype=torch.long)
    while pending.numel():
        keys = torch.rand(pending.numel(), vocabulary, generator=generator, device=device)
        ids[pending] = keys.argsort(dim=-1)[:, :length]
        masks = powers[ids].sum(dim=-1)
        _, inverse = torch.unique(masks, return_inverse=True)
        first = torch.full((count,), count, dtype=torch.long, device=device).scatter_reduce(
            0, inverse, torch.arange(count, device=device), reduce="amin")
        pending = torch.nonzero(first[inverse] != torch.arange(count, device=device)).flatten()
    return ids
