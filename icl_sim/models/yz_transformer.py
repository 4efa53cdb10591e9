"""Tian et al. 2023's 1-layer transformer in its reparameterised form: a decoder Y and pairwise attention logits Z.

Tian, Wang, Chen & Du, "Scan and snap: understanding training dynamics and token composition in 1-layer
transformer" (NeurIPS 2023, arXiv 2305.16380, Sec. 4) write a 1-layer transformer without positional encoding on
one-hot tokens through two M × M matrices over the vocabulary: Z, whose entry z_{ml} is the attention logit of a key
token l under the query token m (their Z = U_Cᵀ W_Q W_Kᵀ U_C), and Y, the decoder (Y = U_Cᵀ W_V U_O in theirs).  For
a query x_T = m and keys x_1..x_{T−1} the model outputs the logits

    Y f,   f = g / ‖g‖₂,   g = Σ_{t<T} softmax_t(z_{m, x_t}) e_{x_t},

the attended mix of the keys' one-hot vectors, ℓ2-normalised (the paper's normalisation, standing for LayerNorm).
This is the model the authors train (facebookresearch/luckmatters, ``ssl/real-dataset/decoder_only.py``,
``Model2`` with ``normalize=true``, ``residual=false``, ``attn_include_base_token=false``): ``attention`` is their
``K2.weight`` (row m, column l) and ``decoder`` their ``K1.weight``, k × M for k = ``target_dim`` logits (k = M on
the ``sequence-class`` task; the model reads any prompt, as the contract tests do with real-valued tokens).  ``init`` "uniform" starts both as their
``nn.Linear(M, M, bias=False)`` does, uniform on [−1/√M, 1/√M] (their ``zero_init=false``, Fig. 6's sweep); "zero"
starts both at 0 (their default, Fig. 4's run).  Every position t reads its own token as the query and the tokens
before it as keys; position 0 has no key and outputs 0 logits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.validation import check_choice

INITS = ("uniform", "zero")


@dataclass(frozen=True)
class YZTransformerConfig:
    """Hyper-parameters of :class:`YZTransformer`."""

    init: str = field(default="uniform", metadata={
        "help": "uniform: Y and Z uniform on [−1/√M, 1/√M] (nn.Linear's, the authors' zero_init=false); zero: both 0"})

    def __post_init__(self):
        check_choice("init", self.init, INITS)

    @property
    def layers(self) -> int:
        """One attention layer (the depth every model reports)."""
        return 1


class YZTransformer(InContextModel):
    """Logits Y f of the ℓ2-normalised attended key mix f, attention logits z_{ml} = Z[m, l] (Tian et al. 2023)."""

    Config = YZTransformerConfig

    def __init__(self, dim: int, points: int, config: YZTransformerConfig = YZTransformerConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        bound = 1 / math.sqrt(dim) if config.init == "uniform" else 0.0
        self.attention = nn.Parameter(torch.empty(dim, dim).uniform_(-bound, bound))
        self.decoder = nn.Parameter(torch.empty(target_dim, dim).uniform_(-bound, bound))

    def attention_weights(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Softmax weights (B, P, N) of the queries at ``positions`` (P,) over the tokens before each."""
        scores = torch.einsum("bpm,ml,btl->bpt", xs[:, positions], self.attention, xs)
        return prefix_weights(scores, positions)

    def _logits(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Y f at ``positions``, (B, P, k), or (B, P) for one label."""
        mix = torch.einsum("bpt,btl->bpl", self.attention_weights(xs, positions), xs)
        features = mix / torch.linalg.vector_norm(mix, dim=-1, keepdim=True).clamp(min=torch.finfo(mix.dtype).tiny)
        logits = features @ self.decoder.T
        return logits[..., 0] if self.target_dim == 1 else logits

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._logits(xs, torch.arange(xs.shape[1], device=xs.device))]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The logits at the query (the prompt's last token), (B, k) or (B,)."""
        return self._logits(xs, torch.tensor([xs.shape[1] - 1], device=xs.device))[:, 0]
