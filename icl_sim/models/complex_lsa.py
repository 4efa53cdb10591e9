"""One complex causal linear self-attention layer: Zheng et al. 2024's model of autoregressive ICL.

Zheng, Huang, Wang, Wu, Zhu & Li, "On mesa-optimization in autoregressively trained transformers:
emergence and capability" (NeurIPS 2024, arXiv 2405.16845), Sec. 3, as their code builds it
(github.com/ML-GSAI/MesaOpt-AR-Transformer, ``models/lsa.py`` and ``main_train_ar.py``).  A sequence
x_1, x_2, ... ∈ C^D is embedded as tokens e_j = (x_j, x_{j−1}) ∈ C^{2D} (x_0 = 0), and after t tokens
the layer predicts

    ŷ_t = W^PV (Σ_{j≤t} e_j e_jᴴ) W^KQ e_t / (t − 1),

with full complex matrices W^KQ (2D × 2D) and W^PV (D × 2D) and the conjugate transpose ᴴ.  The
paper's initialisation puts a·I in the lower-left block of W^KQ and b·I in the left block of W^PV and
zero elsewhere; on that set ŷ_t = (ab/(t−1)) Σ_{j=2}^{t} x_j x_{j−1}ᴴ x_t, one GD step of size ab from 0
on the in-context OLS problem Σ_j ‖x_j − W x_{j−1}‖².

The product e_jᴴ q is complex: in real coordinates it holds the inner product of the real forms and
that of e_j rotated by i.  A real model that keeps only xᵀx (``lsa`` with ``causal=True``) drops the
rotated channel, which changes what the layer can learn (with a sparse initial token this model
recovers W exactly; the real form cannot).

Prompts come in icl-sim's real form (the ``autoregressive`` task): coordinates (2k, 2k+1) are the real
and imaginary parts of x_k, on which the task's rotation blocks act as multiplication by e^{iθ_k};
an odd d gets a zero imaginary part, dropped from the output.  Position i of a prompt has seen the
states xs[:, :i+1] (i transitions, the authors' t − 1) and predicts x_{i+1} (``ys[:, i]``); position 0
has seen no transition and predicts 0 (the authors start at t = 2).  The parameters are the real and
imaginary parts as real tensors, so that any real optimiser takes torch's complex step: the gradient
of a real loss with respect to (Re z, Im z) is torch's complex gradient ∂L/∂Re z + i ∂L/∂Im z
(2 ∂L/∂z̄, twice the conjugate-Wirtinger derivative), and plain SGD on them is the authors' SGD on
complex parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_float


@dataclass(frozen=True)
class ComplexLSAConfig:
    """Hyper-parameters of :class:`ComplexCausalLSA`: the paper's diagonal start (a, b), and optional noise."""

    init_kq: float = field(default=0.1, metadata={"help": "a: the lower-left block of W^KQ starts at a·I"})
    init_pv: float = field(default=0.1, metadata={"help": "b: the left block of W^PV starts at b·I"})
    init_noise: float = field(default=0.0, metadata={
        "help": "standard deviation of independent complex Gaussian noise added to every entry at the start "
                "(0: the paper's start, which involves no randomness)"})

    def __post_init__(self):
        check_float("init_kq", self.init_kq)
        check_float("init_pv", self.init_pv)
        check_float("init_noise", self.init_noise, 0.0)

    @property
    def layers(self) -> int:
        """One attention layer."""
        return 1


def complex_form(xs: torch.Tensor) -> torch.Tensor:
    """Real-form states (..., d) as complex states (..., ⌈d/2⌉): coordinates (2k, 2k+1) are Re and Im of x_k."""
    if xs.shape[-1] % 2:
        xs = nn.functional.pad(xs, (0, 1))
    return torch.complex(xs[..., 0::2], xs[..., 1::2])


def real_form(zs: torch.Tensor, dim: int) -> torch.Tensor:
    """Complex states (..., D) in the real form (..., dim): Re and Im interleaved, a padded last one dropped."""
    return torch.stack([zs.real, zs.imag], dim=-1).flatten(-2)[..., :dim]


class ComplexCausalLSA(InContextModel):
    """ŷ_i = W^PV (Σ_{j≤i} e_j e_jᴴ) W^KQ e_i / i at every position i ≥ 1 (0 at i = 0), as (B, N, d)."""

    Config = ComplexLSAConfig
    depth_parameter, default_loss_on = "layers", "all"

    def __init__(self, dim: int, points: int, config: ComplexLSAConfig = ComplexLSAConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        if target_dim != dim:
            raise ValueError(f"target_dim must equal dim={dim} (the next state), got {target_dim}")
        states = (dim + 1) // 2  # D complex coordinates
        self.states = states
        key_query = torch.zeros(2 * states, 2 * states, dtype=torch.complex64)
        key_query[states:, :states] = config.init_kq * torch.eye(states)
        value = torch.zeros(states, 2 * states, dtype=torch.complex64)
        value[:, :states] = config.init_pv * torch.eye(states)
        if config.init_noise:
            key_query += config.init_noise * torch.randn(key_query.shape, dtype=torch.complex64)
            value += config.init_noise * torch.randn(value.shape, dtype=torch.complex64)
        self.key_query_parts = nn.Parameter(torch.view_as_real(key_query).clone())  # (2D, 2D, 2): Re, Im
        self.value_parts = nn.Parameter(torch.view_as_real(value).clone())  # (D, 2D, 2)

    def key_query(self) -> torch.Tensor:
        """W^KQ (2D, 2D), complex."""
        return torch.complex(self.key_query_parts[..., 0], self.key_query_parts[..., 1])

    def projection_value(self) -> torch.Tensor:
        """W^PV (D, 2D), complex."""
        return torch.complex(self.value_parts[..., 0], self.value_parts[..., 1])

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        states = complex_form(xs)  # (B, N, D): x_0 .. x_{N-1}
        previous = nn.functional.pad(states, (0, 0, 1, 0))[:, :-1]  # x_{j-1}, 0 before the first
        tokens = torch.cat([states, previous], dim=-1)  # e_j (B, N, 2D)
        grams = (tokens[..., :, None] * tokens.conj()[..., None, :]).cumsum(dim=1)  # (B, N, 2D, 2D): Σ_{j≤i} e_j e_jᴴ
        context = (grams @ (tokens @ self.key_query().mT)[..., None]).squeeze(-1)  # Σ_j e_j e_jᴴ W^KQ e_i
        counts = torch.arange(xs.shape[1], device=xs.device, dtype=xs.dtype)
        scale = torch.where(counts > 0, 1.0 / counts.clamp(min=1), torch.zeros_like(counts))  # 1/i, 0 at i = 0
        preds = context @ self.projection_value().mT * scale[:, None]
        return [real_form(preds, self.dim)]

    @classmethod
    def activation_floats(cls, dim: int, points: int, config, target_dim: int = 1) -> int:
        """The prefix Gram matrices (N, 2D, 2D), complex (two floats an entry), twice, and a few token arrays."""
        width = 2 * ((dim + 1) // 2)
        return 4 * points * width * width + 16 * points * width
