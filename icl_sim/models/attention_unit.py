"""One self-attention unit between token-wise networks: the model class of Sanford, Hsu & Telgarsky (2023).

Sanford, Hsu & Telgarsky, "Representational strengths and limitations of transformers" (NeurIPS 2023, arXiv
2306.02896) bound what one attention unit computes by its embedding dimension m: every token passes through an
input network φ into R^m, one softmax head reads the embeddings with query, key and value maps Q, K, V: R^m → R^m,
and an output network ψ reads the result.  Here, for position i,

    h_j = φ(x_j) ∈ R^m,   a_i = Σ_{j ≤ i} softmax_j(⟨Q h_i, K h_j⟩ / √m) V h_j,   f(X)_i = ψ(h_i + a_i),

with φ and ψ one-hidden-layer ReLU networks of width ``hidden`` (the paper's φ and ψ are arbitrary token-wise
functions; ψ reading h_i beside a_i is the transformer layer's residual connection).  Everything a token learns of
the others passes through the m numbers of each embedding: m (``width``) is the quantity the paper's bounds are
about.  Position i attends to the points j ≤ i, as every icl-sim model; the tasks this model was written for
(``sparse-averaging``, ``match``) are evaluated at the last position, which sees every token.  The labels ``ys``
are not read: these tasks carry everything in ``xs``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_int


@dataclass(frozen=True)
class AttentionUnitConfig:
    """Hyper-parameters of :class:`AttentionUnit`."""

    width: int = field(default=8, metadata={"help": "embedding dimension m (the attention's query, key, value width)"})
    hidden: int = field(default=64, metadata={"help": "hidden units of the input network φ and the output network ψ"})

    def __post_init__(self):
        check_int("width", self.width, 1)
        check_int("hidden", self.hidden, 1)

    @property
    def layers(self) -> int:
        """One attention unit (the depth every model reports)."""
        return 1


class AttentionUnit(InContextModel):
    """f(X)_i = ψ(φ(x_i) + one softmax head over φ(x_1..x_i)), embedding dimension m = ``width``."""

    Config = AttentionUnitConfig

    def __init__(self, dim: int, points: int, config: AttentionUnitConfig = AttentionUnitConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width, hidden = config.width, config.hidden
        self.embed = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, width))
        self.query, self.key, self.value = (nn.Linear(width, width, bias=False) for _ in range(3))
        self.read_out = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, target_dim))

    def _outputs(self, xs: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """ψ(h_i + a_i) (B, P, k) at the positions ``queries`` (P,), each attending to the points up to itself."""
        embedded = self.embed(xs)
        asking = embedded[:, queries]
        scores = self.query(asking) @ self.key(embedded).transpose(-1, -2) / math.sqrt(self.config.width)
        later = torch.arange(xs.shape[1], device=xs.device)[None, :] > queries[:, None]
        weights = torch.softmax(scores.masked_fill(later, -math.inf), dim=-1)
        return self.read_out(asking + weights @ self.value(embedded))

    def _shaped(self, outputs: torch.Tensor) -> torch.Tensor:
        return outputs[..., 0] if self.target_dim == 1 else outputs

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._shaped(self._outputs(xs, torch.arange(xs.shape[1], device=xs.device)))]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position's output alone: one query row."""
        return self._shaped(self._outputs(xs, torch.tensor([xs.shape[1] - 1], device=xs.device)))[:, 0]
