"""A two-layer linear network ŷ = W2·W1·x of the query alone: Saxe et al.'s deep linear network.

Saxe, McClelland & Ganguli, "Exact solutions to the nonlinear dynamics of learning in deep
linear neural networks" (ICLR 2014, arXiv 1312.6120), Sec. 2: a network N1 → N2 → N3 with no
non-linearity, W1 (h × d) then W2 (k × h).  It is not an in-context learner: position i
predicts from x_i only and never reads the context (``reads_context`` is False), so a
training run is ordinary supervised learning on the prompt's pairs, through icl-sim's own
training loop.

Initialisation (``init_scale`` = σ): W1 = σ R and W2 = σ E Rᵀ, with R (h × d) orthonormal
columns (QR of a Gaussian; h = ``width`` ≥ d) and E the k × d rectangular identity, so
W2·W1 = σ² E (for k = d, σ² I) and, for k ≥ d, W1 W1ᵀ = W2ᵀ W2 = σ² R Rᵀ (balanced).
Against a symmetric input–output map M = Q S Qᵀ (``icl_sim.tasks.LinearMap``) this is the
decoupled start of their exact solution, W1 = R Q A Qᵀ and W2 = Q A Qᵀ Rᵀ with A = σ I: every
mode i starts at strength u_i = σ² and follows τ u̇ = 2u(s_i − u) on its own.

``init="random"`` is instead the paper's small random start (their Sec. 2 simulations): every
entry of W1 and W2 drawn independently from N(0, σ²), so the modes start coupled and unaligned.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_choice, check_float, check_int

#: the initialisations: the decoupled balanced start, or independent Gaussian entries
INITS = ("decoupled", "random")


@dataclass(frozen=True)
class DeepLinearConfig:
    """Hyper-parameters of :class:`DeepLinear`."""

    width: int = field(default=0, metadata={"help": "hidden width h (0: the input dimension d); h >= d"})
    init_scale: float = field(default=0.03, metadata={
        "help": "σ: W1 = σR, W2 = σERᵀ (R orthonormal columns), so W2·W1 = σ² I: every mode starts at σ²"})
    init: str = field(default="decoupled", metadata={
        "help": "decoupled: the balanced start above; random: every entry of W1, W2 drawn from N(0, σ²)"})

    def __post_init__(self):
        check_int("width", self.width, 0)
        check_float("init_scale", self.init_scale, 0.0)
        check_choice("init", self.init, INITS)

    @property
    def layers(self) -> int:
        """One read-out: the output of the second weight layer."""
        return 1


class DeepLinear(InContextModel):
    """ŷ_i = W2 W1 x_i at every position i, (B, N) for k = 1 or (B, N, k)."""

    Config = DeepLinearConfig
    depth_parameter, default_loss_on = "layers", "all"
    reads_context = False

    def __init__(self, dim: int, points: int, config: DeepLinearConfig = DeepLinearConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width = config.width or dim
        if width < dim:
            raise ValueError(f"width must be 0 or at least dim={dim}, got {config.width}")
        sigma = config.init_scale
        if config.init == "random":
            self.input_layer = nn.Parameter(sigma * torch.randn(width, dim))  # W1 (h, d)
            self.output_layer = nn.Parameter(sigma * torch.randn(target_dim, width))  # W2 (k, h)
        else:
            frame, _ = torch.linalg.qr(torch.randn(width, dim))  # orthonormal columns
            self.input_layer = nn.Parameter(sigma * frame)
            self.output_layer = nn.Parameter(sigma * torch.eye(target_dim, dim) @ frame.T)

    def product(self) -> torch.Tensor:
        """The network's map W2 W1 (k, d)."""
        return self.output_layer @ self.input_layer

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        preds = xs @ self.product().T
        return [preds.squeeze(-1) if self.target_dim == 1 else preds]
