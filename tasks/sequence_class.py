"""Sequence classes: a query token at the end, a next token to predict, and a bag of contextual tokens before it.

The data of Tian, Wang, Chen & Du, "Scan and snap: understanding training dynamics and token composition in 1-layer
transformer" (NeurIPS 2023, arXiv 2305.16380, Sec. 3), as the authors' generator draws it (facebookresearch/
luckmatters, ``ssl/real-dataset/decoder_only.py``, ``Dataset2``).  Each of ``queries`` query (last) tokens m has
``next_per_query`` next tokens n; a class is a pair (m, n), chosen uniformly.  Its contextual tokens l are drawn
i.i.d. from P(l | m, n), whose support is

* ``common`` tokens shared by every class (weight ``common_weight`` each),
* ``common_per_query`` tokens shared by the classes of one query (weight ``common_weight`` each),
* ``distinct`` tokens of the class alone, with weights evenly spaced from ``distinct_min`` to ``distinct_max``
  (``torch.linspace``, as the authors'),

the weights normalised to a distribution.  The vocabulary is laid out as theirs: the common tokens first, then the
per-query common ones, the distinct ones class by class, the query tokens and last the next tokens; ``dim`` is its
size M.  A prompt is ``points`` = T tokens: T − 1 contextual tokens, then the class's query, each one-hot in ``xs``
(B, T, M).  The label is the next token, one-hot in ``ys[:, -1]`` (B, M) (every other position's ``ys`` is 0), so
a model answers with M logits (``target_dim``), trained by cross-entropy and scored by whether its arg-max is the
next token.  Latent: ``class`` (B,) the class index, ``query`` and ``next`` (B,) its tokens.

Distinct tokens co-occur with one next token only, common ones with several: the paper's discriminative
(distinct) and common tokens.  :meth:`SequenceClass.conditional_probabilities` gives the table P(l | m, n) that the
paper's attention c_{l|n} ∝ P(l | m, n) exp(z_{ml}) is formed from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_float, check_int


@dataclass(frozen=True)
class SequenceClass(TaskFamily):
    """Tian et al.'s sequence classes: contextual tokens drawn from P(l | m, n), the query m last, n the label."""

    name: ClassVar[str] = "sequence-class"
    metric: ClassVar[str] = "next_vertex_accuracy"
    loss: ClassVar[str] = "cross_entropy"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "distinct"

    queries: int = parameter("query (last) tokens m (the authors' num_last)", 1)
    next_per_query: int = parameter("next tokens n per query (num_next_per_last)", 2)
    common: int = parameter("tokens common to every class (num_common)", 10)
    common_per_query: int = parameter("tokens common to the classes of one query (num_common_per_last)", 0)
    distinct: int = parameter("distinct tokens per class (num_unique_per_next)", 10)
    points: int = parameter("tokens per prompt T, the query last (the authors' L)", 128)
    common_weight: float = parameter("unnormalised probability of each common token", 1.0)
    distinct_min: float = parameter("unnormalised probability of the rarest distinct token", 0.1)
    distinct_max: float = parameter("unnormalised probability of the most frequent distinct token", 1.0)

    def __post_init__(self):
        check_int("queries", self.queries, 1)
        check_int("next_per_query", self.next_per_query, 1)
        check_int("common", self.common, 0)
        check_int("common_per_query", self.common_per_query, 0)
        check_int("distinct", self.distinct, 1)
        check_int("points", self.points, 2)
        check_float("common_weight", self.common_weight, 0.0, strict=True)
        check_float("distinct_min", self.distinct_min, 0.0, strict=True)
        check_float("distinct_max", self.distinct_max, self.distinct_min)

    @property
    def classes(self) -> int:
        """The classes (m, n): one per next token."""
        return self.queries * self.next_per_query

    @property
    def dim(self) -> int:
        """The vocabulary M: common, per-query common, distinct, query and next tokens."""
        return (self.common + self.queries * self.common_per_query + self.classes * self.distinct
                + self.queries + self.classes)

    @property
    def target_dim(self) -> int:
        return self.dim

    def class_tokens(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(query token, next token) of each class, two (K,) long tensors; class k belongs to query k // n."""
        query_start = self.dim - self.queries - self.classes
        classes = torch.arange(self.classes)
        return query_start + classes // self.next_per_query, query_start + self.queries + classes

    def conditional_probabilities(self) -> torch.Tensor:
        """P(l | m, n) of each class (K, M) float64: a distribution over the vocabulary, zero off its support."""
        table = torch.zeros(self.classes, self.dim, dtype=torch.float64)
        table[:, :self.common] = self.common_weight
        classes = torch.arange(self.classes)
        per_query = self.common + (classes // self.next_per_query)[:, None] * self.common_per_query
        table[classes[:, None], per_query + torch.arange(self.common_per_query)] = self.common_weight
        table[classes[:, None], self.distinct_tokens()] = torch.linspace(
            self.distinct_min, self.distinct_max, self.distinct, dtype=torch.float64)
        return table / table.sum(dim=1, keepdim=True)

    def distinct_tokens(self) -> torch.Tensor:
        """The distinct tokens of each class (K, ``distinct``), rarest first."""
        start = self.common + self.queries * self.common_per_query
        return start + torch.arange(self.classes)[:, None] * self.distinct + torch.arange(self.distinct)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts, a class uniformly each; ``points`` may shorten them (at least 2)."""
        check_draw(batch_size, generator, dtype)
        count = self.points if points is None else points
        check_int("points", count, 2)
        if active_dims not in (None, self.dim):
            raise ValueError(f"active_dims must be {self.dim} (the vocabulary), got {active_dims}")
        device = generator.device
        classes = torch.randint(self.classes, (batch_size,), generator=generator, device=device)
        probabilities = self.conditional_probabilities().to(device)[classes]
        context = torch.multinomial(probabilities, count - 1, replacement=True, generator=generator)
        query, next_token = (tokens.to(device)[classes] for tokens in self.class_tokens())
        sequences = torch.cat([context, query[:, None]], dim=1)
        xs = torch.nn.functional.one_hot(sequences, self.dim).to(dtype)
        ys = torch.zeros_like(xs)
        ys[torch.arange(batch_size, device=device), -1, next_token] = 1
        return Prompt(xs, ys, {"class": classes, "query": query, "next": next_token})

    def baselines(self) -> dict:
        """None: the reference is the attention the paper derives (c_{l|n} from P(l | m, n))."""
        return {}

    def slices(self, prompt: Prompt) -> dict[str, torch.Tensor]:
        """The prompts of each class."""
        return {f"class {k}": prompt.latent["class"] == k for k in range(self.classes)}
