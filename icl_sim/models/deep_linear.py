"""A deep linear network ŷ = W_L ⋯ W2·W1·x of the query alone: Saxe et al.'s deep linear network.

Saxe, McClelland & Ganguli, "Exact solutions to the nonlinear dynamics of learning in deep
linear neural networks" (ICLR 2014, arXiv 1312.6120): a network N1 → N2 → ⋯ with no
non-linearity, W1 (h × d), then L − 2 hidden maps (h × h), then W_L (k × h); L = ``depth`` weight
layers, two in their Sec. 2, more in Secs. 3–4.  It is not an in-context learner: position i
predicts from x_i only and never reads the context (``reads_context`` is False), so a
training run is ordinary supervised learning on the prompt's pairs, through icl-sim's own
training loop.

Initialisation (``init_scale`` = σ): W1 = σ R and W2 = σ E Rᵀ, with R (h × d) orthonormal
columns (QR of a Gaussian; h = ``width`` ≥ d) and E the k × d rectangular identity, so
W2·W1 = σ² E (for k = d, σ² I) and, for k ≥ d, W1 W1ᵀ = W2ᵀ W2 = σ² R Rᵀ (balanced).
Against a symmetric input–output map M = Q S Qᵀ (``icl_sim.tasks.LinearMap``) this is the
decoupled start of their exact solution, W1 = R Q A Qᵀ and W2 = Q A Qᵀ Rᵀ with A = σ I: every
mode i starts at strength u_i = σ² and follows τ u̇ = 2u(s_i − u) on its own.

Past two layers the decoupled start puts a = σ^{2/L} on every layer (W1 = aR, the hidden maps aRRᵀ,
W_L = aERᵀ), so again W_L ⋯ W1 = σ² E, every mode starts at σ², and consecutive layers stay balanced.

``init="random"`` is instead the paper's random start: every entry of every layer drawn independently
from N(σ²) (σ small in their Sec. 2 simulations; σ = 1/√h is their Sec. 4 "scaled random Gaussian").
``init="orthogonal"`` is their Sec. 4 random orthogonal start: every layer σ times a Haar-random
orthogonal matrix (for the rectangular first and last layers, orthonormal columns and rows), so for
h = d = k and σ = 1 the product is orthogonal: every singular value of the network's map is 1.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_choice, check_float, check_int

#: the initialisations: the decoupled balanced start, or independent Gaussian entries
INITS = ("decoupled", "random", "orthogonal")


@dataclass(frozen=True)
class DeepLinearConfig:
    """Hyper-parameters of :class:`DeepLinear`."""

    width: int = field(default=0, metadata={"help": "hidden width h (0: the input dimension d); h >= d"})
    depth: int = field(default=2, metadata={"help": "weight layers L (2: W2·W1; more: L − 2 hidden h × h maps)"})
    init_scale: float = field(default=0.03, metadata={
        "help": "σ: W1 = σR, W2 = σERᵀ (R orthonormal columns), so W2·W1 = σ² I: every mode starts at σ²"})
    init: str = field(default="decoupled", metadata={
        "help": "decoupled: the balanced start above; random: every entry drawn from N(0, σ²); orthogonal: every "
                "layer σ times a Haar-random orthogonal matrix"})

    def __post_init__(self):
        check_int("width", self.width, 0)
        check_int("depth", self.depth, 2)
        check_float("init_scale", self.init_scale, 0.0)
        check_choice("init", self.init, INITS)

    @property
    def layers(self) -> int:
        """One read-out: the output of the last weight layer."""
        return 1


class DeepLinear(InContextModel):
    """ŷ_i = W_L ⋯ W1 x_i at every position i, (B, N) for k = 1 or (B, N, k)."""

    Config = DeepLinearConfig
    depth_parameter, default_loss_on = "layers", "all"
    reads_context = False

    def __init__(self, dim: int, points: int, config: DeepLinearConfig = DeepLinearConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width = config.width or dim
        if width < dim:
            raise ValueError(f"width must be 0 or at least dim={dim}, got {config.width}")
        shapes = [(width, dim)] + [(width, width)] * (config.depth - 2) + [(target_dim, width)]
        layers = _initial_layers(config, shapes)
        self.input_layer = nn.Parameter(layers[0])  # W1 (h, d)
        self.hidden_layers = nn.ParameterList(layers[1:-1])  # W2 … W_{L−1} (h, h); none for L = 2
        self.output_layer = nn.Parameter(layers[-1])  # W_L (k, h)

    def product(self) -> torch.Tensor:
        """The network's map W_L ⋯ W1 (k, d)."""
        product = self.input_layer
        for layer in self.hidden_layers:
            product = layer @ product
        return self.output_layer @ product

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        preds = xs @ self.product().T
        return [preds.squeeze(-1) if self.target_dim == 1 else preds]


def _haar(rows: int, columns: int) -> torch.Tensor:
    """A Haar-random matrix with orthonormal columns (rows ≥ columns) or rows (rows < columns)."""
    tall = torch.randn(max(rows, columns), min(rows, columns))
    frame, triangle = torch.linalg.qr(tall)
    frame = frame * torch.sign(torch.diagonal(triangle))  # QR's sign convention made uniform: Haar
    return frame if rows >= columns else frame.T


def _initial_layers(config: DeepLinearConfig, shapes: list[tuple[int, int]]) -> list[torch.Tensor]:
    """The layers of ``shapes`` (first to last) at ``config.init``."""
    sigma = config.init_scale
    if config.init == "random":
        return [sigma * torch.randn(rows, columns) for rows, columns in shapes]
    if config.init == "orthogonal":
        return [sigma * _haar(rows, columns) for rows, columns in shapes]
    (width, dim), (target_dim, _) = shapes[0], shapes[-1]
    frame, _ = torch.linalg.qr(torch.randn(width, dim))  # orthonormal columns R (h, d)
    scale = sigma ** (2 / len(shapes))  # a per layer: the product a^L = σ²
    return ([scale * frame] + [scale * frame @ frame.T] * (len(shapes) - 2)  # hidden aRRᵀ: balanced for h > d
            + [scale * torch.eye(target_dim, dim) @ frame.T])
