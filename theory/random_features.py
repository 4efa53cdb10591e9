"""Random-feature models fitted in closed form: the random-feature attention layer and a two-layer random-feature
network on the flattened input, each with frozen random first-layer weights and a linear read-out fitted by ridge
regression in float64.

Fu, Guo, Bai & Mei, "What can a single attention layer learn? A study through the random features lens" (NeurIPS
2023, arXiv 2307.11353) study one multi-head attention layer whose query-key matrices are random and frozen and
whose value vectors alone are trained: a linear model on random features, fitted by (ridge) least squares.  The
inputs here are those of :class:`icl_sim.tasks.key_average.KeyAverage`: ``xs`` (B, N + 1, d), the N keys first and
the query x_0 last, tokens on the sphere of radius √d.

* :class:`RandomFeatureAttention`: M heads, head m with a frozen W_m (d, d) and a trained value vector v_m, over the
  value token x̃_i = (x_i/√d, 1) (the constant lets a head carry a function of its scores alone),

      f(x_0, X) = Σ_m ⟨v_m, φ_m⟩,   φ_m = (1/(N√M)) Σ_i ReLU(x_0ᵀ W_m x_i / d) x̃_i,

  the ReLU attention of the NeurIPS abstract ("activation replaced by ReLU"), keys averaged, and 1/√M so that the
  features' scale and a ridge penalty do not depend on the number of heads.  W_m = μ√d I + G_m with G_m of i.i.d.
  N(0, 1) entries: the score is then μ z_i + g with z_i = ⟨x_0, x_i⟩/√d and g ~ N(0, 1) for every pair, so μ = 0
  is the zero-mean sampling and μ = 1 the non-zero-mean one whose mean term is as large as its noise.  These scalings
  are this module's: the paper's own could not be read (the reproduction ``fu-guo-2023`` says what could).
* :class:`RandomFeatureNetwork`: K features ReLU(⟨w_k, u⟩/√D)/√K of the flattened input u = vec(x_0, ..., x_N)
  ∈ R^D, D = (N + 1)d, w_k ~ N(0, I_D): the standard two-layer random-feature network the paper compares with.

:func:`ridge_path` solves ridge regression for a list of penalties at once (an eigendecomposition of the smaller of
the two Gram matrices, primal or dual), :func:`fit_ridge` keeps the penalty with the least held-out error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from icl_sim.tensor_validation import check_generator
from icl_sim.validation import check_int

#: prompts whose features are computed at once (the attention scores take (chunk, M, N) numbers)
CHUNK = 2048


def _check_tokens(xs: torch.Tensor, dim: int) -> None:
    if xs.ndim != 3 or xs.shape[-1] != dim or xs.shape[1] < 2:
        raise ValueError(f"xs must be (B, N + 1, {dim}) with at least one key before the query, got "
                         f"{tuple(xs.shape)}")


@dataclass(frozen=True)
class RandomFeatureAttention:
    """A random-feature attention layer (module docstring): frozen query-key matrices ``weights`` (M, d, d)."""

    weights: torch.Tensor

    @classmethod
    def draw(cls, heads: int, dim: int, generator: torch.Generator, *, mean: float = 0.0) -> RandomFeatureAttention:
        """M = ``heads`` matrices W_m = ``mean``·√d I + G_m, G_m i.i.d. N(0, 1), float64, from ``generator``."""
        check_int("heads", heads, 1)
        check_int("dim", dim, 1)
        check_generator("generator", generator)
        if not math.isfinite(mean):
            raise ValueError(f"mean must be finite, got {mean}")
        noise = torch.randn(heads, dim, dim, generator=generator, device=generator.device, dtype=torch.float64)
        return cls(noise + mean * math.sqrt(dim) * torch.eye(dim, dtype=torch.float64, device=generator.device))

    @property
    def size(self) -> int:
        """M(d + 1): the trained value parameters, one feature each."""
        heads, dim, _ = self.weights.shape
        return heads * (dim + 1)

    def features(self, xs: torch.Tensor) -> torch.Tensor:
        """(B, M(d + 1)) float64: the heads' φ_m side by side, query ``xs[:, -1]``, keys ``xs[:, :-1]``."""
        heads, dim, _ = self.weights.shape
        _check_tokens(xs, dim)
        return torch.cat([self._features(chunk.to(torch.float64)) for chunk in xs.split(CHUNK)])

    def _features(self, xs: torch.Tensor) -> torch.Tensor:
        heads, dim, _ = self.weights.shape
        keys, query = xs[:, :-1], xs[:, -1]
        scores = torch.einsum("bj,mjl,bil->bmi", query, self.weights, keys) / dim
        values = torch.cat([keys / math.sqrt(dim), torch.ones_like(keys[..., :1])], dim=-1)
        pooled = torch.einsum("bmi,bie->bme", scores.relu(), values) / (keys.shape[1] * math.sqrt(heads))
        return pooled.reshape(len(xs), -1)


@dataclass(frozen=True)
class RandomFeatureNetwork:
    """A two-layer random-feature ReLU network on the flattened tokens: frozen first layer ``weights`` (K, D)."""

    weights: torch.Tensor

    @classmethod
    def draw(cls, width: int, input_dim: int, generator: torch.Generator) -> RandomFeatureNetwork:
        """K = ``width`` rows w_k ~ N(0, I_D), D = ``input_dim`` ((N + 1)d), float64, from ``generator``."""
        check_int("width", width, 1)
        check_int("input_dim", input_dim, 1)
        check_generator("generator", generator)
        return cls(torch.randn(width, input_dim, generator=generator, device=generator.device, dtype=torch.float64))

    @property
    def size(self) -> int:
        """K: the trained read-out weights."""
        return self.weights.shape[0]

    def features(self, xs: torch.Tensor) -> torch.Tensor:
        """(B, K) float64: ReLU(⟨w_k, u⟩/√D)/√K for u the prompt's tokens flattened."""
        flat = xs.reshape(len(xs), -1).to(torch.float64)
        if flat.shape[1] != self.weights.shape[1]:
            raise ValueError(f"xs must flatten to {self.weights.shape[1]} numbers per prompt, got {flat.shape[1]}")
        width, dim = self.weights.shape
        return (flat @ self.weights.T / math.sqrt(dim)).relu() / math.sqrt(width)


def ridge_path(features: torch.Tensor, targets: torch.Tensor, ridges: Sequence[float]) -> torch.Tensor:
    """(len(ridges), P) float64: for each λ of ``ridges`` the v minimising (1/n)‖y − Φv‖² + λ s ‖v‖², where
    s = tr(ΦᵀΦ/n)/P is the mean feature second moment (so λ is relative to the features' scale).  One
    eigendecomposition serves every λ: of ΦᵀΦ/n when n ≥ P, else of ΦΦᵀ/n with v = Φᵀα (the same solution)."""
    phi, y = features.to(torch.float64), targets.to(torch.float64)
    if phi.ndim != 2 or y.shape != phi.shape[:1]:
        raise ValueError(f"features must be (n, P) and targets (n,), got {tuple(phi.shape)} and {tuple(y.shape)}")
    if not ridges or any(not (ridge > 0 and math.isfinite(ridge)) for ridge in ridges):
        raise ValueError(f"ridges must be positive and finite, got {list(ridges)}")
    count, size = phi.shape
    scale = float(phi.square().sum()) / (count * size)
    penalties = torch.tensor([ridge * scale for ridge in ridges], dtype=torch.float64, device=phi.device)
    if count >= size:
        eigenvalues, vectors = torch.linalg.eigh(phi.T @ phi / count)
        projected = vectors.T @ (phi.T @ y) / count
        return (projected / (eigenvalues + penalties[:, None])) @ vectors.T
    eigenvalues, vectors = torch.linalg.eigh(phi @ phi.T / count)
    projected = vectors.T @ y / count
    return ((projected / (eigenvalues + penalties[:, None])) @ vectors.T) @ phi


def fit_ridge(features: torch.Tensor, targets: torch.Tensor, tuning_features: torch.Tensor,
              tuning_targets: torch.Tensor, ridges: Sequence[float]) -> tuple[torch.Tensor, float]:
    """The ridge solution (P,) of :func:`ridge_path` whose held-out squared error on (``tuning_features``,
    ``tuning_targets``) is least, and its λ."""
    path = ridge_path(features, targets, ridges)
    errors = (tuning_features.to(torch.float64) @ path.T - tuning_targets.to(torch.float64)[:, None]).square()
    best = int(errors.mean(dim=0).argmin())
    return path[best], float(ridges[best])
