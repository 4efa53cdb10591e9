"""Training an N-layer ReLU network on each prompt by full-batch gradient descent: the "train the network
directly" baseline of Wu, Su, Hu, Song & Liu (ICML 2025, "In-context deep learning via transformer models").

The network f(x) = W_N σ(W_{N−1} … σ(W_1 x)) has N weight matrices, no biases, σ = ReLU, hidden width m and a
scalar output; it is the teacher family of ``icl_sim.tasks.DeepReluTeacher`` and the student the paper's
construction trains in context (its Sec. 3: L steps of GD on the empirical squared loss of an N-layer network).
``NetworkGD`` starts every prompt's network from one fixed He initialisation (``he_network``, seeded) and takes
``steps`` full-batch GD steps of size ``lr`` on L(W) = (1/2n) Σ_{j<i} (f(x_j) − y_j)², then predicts the query.

The gradients are written out (backpropagation over the layers, ``network_gradients``) and batched over prompts
and prefixes: every position i of every prompt trains its own network on the points j < i, in one tensor
program with the points j ≥ i masked out, in float64.  tests/test_network_gd.py holds them equal to autograd.
"""
from __future__ import annotations

import math

import torch

from icl_sim.validation import check_float, check_int

from .baselines import Baseline
from .prefix import context_mask

#: the baseline splits the batch so that one chunk's (B, N, N, width) activations stay under this many bytes
CHUNK_BYTES = 2 ** 24


def layer_sizes(dim: int, depth: int, width: int) -> list[tuple[int, int]]:
    """(fan_out, fan_in) of each of the N = ``depth`` weight matrices: d → m → … → m → 1."""
    check_int("dim", dim, 1)
    check_int("depth", depth, 1)
    check_int("width", width, 1)
    inputs = [dim] + [width] * (depth - 1)
    return [(width if layer < depth - 1 else 1, fan_in) for layer, fan_in in enumerate(inputs)]


def he_network(dim: int, depth: int, width: int, generator: torch.Generator, batch: tuple[int, ...] = (),
               dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    """Weights W_l ~ N(0, 2/fan_in) for the ReLU layers and N(0, 1/fan_in) for the linear read-out (He et al.
    2015), shape ``batch`` + (fan_out, fan_in), drawn from ``generator`` on its device: the second moment of each
    layer's units is that of the input's coordinates, in expectation over the weights."""
    weights = []
    for layer, (fan_out, fan_in) in enumerate(layer_sizes(dim, depth, width)):
        gain = 1.0 if layer == depth - 1 else 2.0
        weights.append(torch.randn(*batch, fan_out, fan_in, generator=generator, device=generator.device,
                                   dtype=dtype) * math.sqrt(gain / fan_in))
    return weights


def network_forward(weights: list[torch.Tensor], xs: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """f(x) for points ``xs`` (..., n, d) and weights (..., fan_out, fan_in) of matching leading shape; returns
    the outputs (..., n) and every layer's pre-activation (..., n, fan_out), which backpropagation reads."""
    hidden, pre_activations = xs, []
    for layer, weight in enumerate(weights):
        pre = hidden @ weight.transpose(-1, -2)
        pre_activations.append(pre)
        hidden = torch.relu(pre) if layer < len(weights) - 1 else pre
    return hidden.squeeze(-1), pre_activations


def network_gradients(weights: list[torch.Tensor], xs: torch.Tensor, ys: torch.Tensor,
                      mask: torch.Tensor) -> list[torch.Tensor]:
    """∇_W of L(W) = (1/2n) Σ_j mask_j (f(x_j) − y_j)², n = Σ_j mask_j (at least 1), written out layer by layer;
    ``xs`` (..., n, d), ``ys`` and ``mask`` (..., n): a zero mask gives zero gradients."""
    outputs, pre_activations = network_forward(weights, xs)
    count = mask.sum(dim=-1, keepdim=True).clamp(min=1.0)
    delta = (mask * (outputs - ys) / count).unsqueeze(-1)  # ∂L/∂(output pre-activation), (..., n, 1)
    gradients = [None] * len(weights)
    for layer in range(len(weights) - 1, -1, -1):
        below = xs if layer == 0 else torch.relu(pre_activations[layer - 1])
        gradients[layer] = delta.transpose(-1, -2) @ below
        if layer:
            delta = (delta @ weights[layer]) * (pre_activations[layer - 1] > 0)
    return gradients


def network_gd(weights: list[torch.Tensor], xs: torch.Tensor, ys: torch.Tensor, mask: torch.Tensor, steps: int,
               lr: float) -> list[torch.Tensor]:
    """``steps`` full-batch GD steps W ← W − lr ∇L(W) from ``weights`` on the masked points."""
    for _ in range(steps):
        weights = [weight - lr * gradient
                   for weight, gradient in zip(weights, network_gradients(weights, xs, ys, mask))]
    return weights


class NetworkGD(Baseline):
    """Train the ``depth``-layer ReLU network of hidden ``width`` on each prefix by ``steps`` full-batch GD steps
    of size ``lr`` from the He initialisation of ``init_seed`` (the same start for every prompt), and predict the
    query with it (Wu et al. 2025's direct training).  Position 0, with no context, predicts with the start."""

    def __init__(self, depth: int, width: int, steps: int, lr: float, init_seed: int = 0):
        check_int("depth", depth, 1)
        check_int("width", width, 1)
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        check_int("init_seed", init_seed, 0)
        self.depth, self.width, self.steps, self.lr, self.init_seed = depth, width, steps, lr, init_seed

    def start(self, dim: int, device=None) -> list[torch.Tensor]:
        """The fixed float64 initialisation for inputs of dimension ``dim`` (drawn on the CPU, then moved)."""
        generator = torch.Generator().manual_seed(self.init_seed)
        return [weight.to(device) for weight in he_network(dim, self.depth, self.width, generator)]

    def fit(self, xs: torch.Tensor, ys: torch.Tensor, mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The trained weights (B, fan_out, fan_in) of each prompt's network on its points ``xs`` (B, n, d), ``ys``
        (B, n) in float64 (``mask`` (B, n): the points to train on; all by default)."""
        mask = torch.ones_like(ys) if mask is None else mask.to(ys.dtype)
        start = [weight.expand(xs.shape[0], *weight.shape) for weight in self.start(xs.shape[-1], xs.device)]
        return network_gd(start, xs, ys, mask, self.steps, self.lr)

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        batch, n, dim = xs.shape
        mask = context_mask(xs).to(xs.dtype)  # (N, N): row i keeps the points j < i
        chunk = max(1, CHUNK_BYTES // (n * n * max(self.width, dim) * xs.element_size()))
        preds = []
        for x, y in zip(xs.split(chunk), ys.split(chunk)):
            b = x.shape[0]
            points = x[:, None].expand(b, n, n, dim)  # [b, i] holds the whole prompt; the mask keeps j < i
            start = [weight.expand(b, n, *weight.shape) for weight in self.start(dim, xs.device)]
            trained = network_gd(start, points, y[:, None].expand(b, n, n), mask.expand(b, n, n), self.steps,
                                 self.lr)
            preds.append(network_forward(trained, x.unsqueeze(-2))[0].squeeze(-1))
        return torch.cat(preds)
