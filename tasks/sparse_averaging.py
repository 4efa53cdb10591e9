"""q-sparse averaging (qSA): each token names q positions, and its output is the average of their vectors.

The task of Sanford, Hsu & Telgarsky, "Representational strengths and limitations of transformers" (NeurIPS 2023,
arXiv 2306.02896): N tokens x_i = (z_i, y_i, i) with a vector z_i in the unit ball of R^{d'} and a set y_i of q
positions of [N]; the target at i is qSA(X)_i = (1/q) Σ_{j ∈ y_i} z_j.  One self-attention unit of embedding
dimension O(d' + q log N) approximates it, and none of embedding dimension below about q (at bounded precision)
does; recurrent and fully connected networks need size polynomial in N.

Encoding: z_i, y_i as a multi-hot row of N entries (1 at the q positions), and i as a one-hot row of N entries, so
``xs`` is (B, N, d' + 2N): the paper lists y_i as q integers and i as an integer; the rows here carry the same
information, and a token-wise input network (the paper's φ) maps one to the other.  Here z_i is drawn uniformly
from the unit ball and y_i uniformly among the q-subsets of [N] (the paper's bounds hold for every input; this
law is ours).  Every position has its target (``ys`` = ``targets``, (B, N, d'), or (B, N) where d' = 1), and the
evaluated one is the last: a causal model's last position sees every token, so it computes qSA at N as the
paper's unmasked attention does at any position.  Latent: ``values`` z (B, N, d'), ``subsets`` (B, N, q).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_int


@dataclass(frozen=True)
class SparseAveraging(TaskFamily):
    """qSA: tokens (z_i, y_i, i); the target at i is the mean of z_j over the q positions j of y_i."""

    name: ClassVar[str] = "sparse-averaging"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "value_dim"

    value_dim: int = parameter("dimension d' of the averaged vectors z_i (in the unit ball)", 2)
    sparsity: int = parameter("positions q each token averages over", 3)
    tokens: int = parameter("tokens N per prompt", 12)

    def __post_init__(self):
        check_int("value_dim", self.value_dim, 1)
        check_int("tokens", self.tokens, 2)
        check_int("sparsity", self.sparsity, 1, self.tokens, maximum_name="tokens")

    @property
    def points(self) -> int:
        return self.tokens

    @property
    def dim(self) -> int:
        """d' + 2N features: z, the multi-hot set y and the one-hot position."""
        return self.value_dim + 2 * self.tokens

    @property
    def target_dim(self) -> int:
        return self.value_dim

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts; a curriculum is refused (the positions' code has N entries)."""
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points) or active_dims not in (None, self.dim):
            raise ValueError(f"sparse-averaging prompts have {self.points} points and {self.dim} features; a "
                             f"curriculum (points={points}, active_dims={active_dims}) is not supported")
        device, n, q = generator.device, self.tokens, self.sparsity
        values = unit_ball(batch_size, n, self.value_dim, generator).to(dtype)
        subsets = torch.rand(batch_size, n, n, generator=generator, device=device).argsort(dim=-1)[..., :q]
        members = torch.zeros(batch_size, n, n, device=device, dtype=dtype).scatter_(-1, subsets, 1.0)
        position = torch.eye(n, device=device, dtype=dtype).expand(batch_size, n, n)
        xs = torch.cat([values, members, position], dim=-1)
        targets = members @ values / q
        if self.value_dim == 1:  # scalar targets are (B, N), as every task's
            targets = targets[..., 0]
        return Prompt(xs, targets, {"values": values, "subsets": subsets}, targets)

    def baselines(self):
        """None: the references are the paper's constructions (``icl_sim.models.sparse_attention``)."""
        return {}

    def slices(self, prompt: Prompt) -> dict:
        return {}

    def trivial_error(self) -> float:
        """The zero predictor's ‖qSA(X)_N‖² / d (the squared-error metric's normalisation by the d = d' + 2N input
        features): E‖z‖²/q = d'/(q (d' + 2)) for z uniform in the ball, over d."""
        return self.value_dim / (self.sparsity * (self.value_dim + 2) * self.dim)


def unit_ball(batch: int, tokens: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    """(batch, tokens, dim) float64 points uniform in the unit ball of R^dim: a uniform direction times U^(1/dim)."""
    options = dict(generator=generator, device=generator.device, dtype=torch.float64)
    direction = torch.randn(batch, tokens, dim, **options)
    direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True)
    return direction * torch.rand(batch, tokens, 1, **options) ** (1.0 / dim)
