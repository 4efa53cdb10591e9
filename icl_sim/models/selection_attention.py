"""One softmax attention layer with a fixed linear head: Tarzanagh et al. 2023's token selector.

For tokens X = (x_1..x_T) and a query z (``icl_sim.tasks.TokenSelection``'s encoding: the query is the prompt's
last point) the model outputs

    f(X, z) = vᵀ Xᵀ softmax(X W z),   token t scoring x_tᵀ W z,

with the value map the identity and the head v a fixed unit vector drawn at initialisation (Tarzanagh, Li,
Thrampoulidis & Oymak, "Transformers as support vector machines", 2023, eq. (1) with cross-attention; their
umich-sota/TF-as-SVM base.py and notebooks, which fix v and train only the attention).  ``head`` "relu" is their
nonlinear head (Sec. 6; base_nonlinear.py and multi_token_converge.ipynb), f(X, z) = 1ᵀ ReLU(Vᵀ Xᵀ softmax(X W z))
with a fixed value matrix V of unit Frobenius norm drawn at initialisation: attention may then keep several
tokens, and W follows the SVM of the selected sets.  ``parameterization``
"W" trains the d × d matrix W itself; "KQ" trains a key and a query matrix, W = Kᵀ Q (score (Q z)ᵀ (K x_t)), whose
implicit bias is the nuclear norm instead of the Frobenius one.  Both start as torch's nn.Linear(d, d) does,
uniform on [−1/√d, 1/√d], as the authors' models.  The parameters are float64, as the authors' runs: the softmax
saturates exponentially in ‖W‖, and in float32 the gradient of a selected prompt underflows within the authors'
2000 normalised steps.  Position j attends, with x_j as its query, to the points before it: the last, the query
z, to the T tokens, and every position sees only its prefix, as every icl-sim model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.models.prefix_attention import prefix_weights
from icl_sim.validation import check_choice

PARAMETERIZATIONS = ("W", "KQ")
#: the prediction heads: vᵀ(selected token), or 1ᵀ ReLU(Vᵀ selected token)
HEADS = ("linear", "relu")


@dataclass(frozen=True)
class SelectionAttentionConfig:
    """Hyper-parameters of :class:`SelectionAttention`."""

    parameterization: str = field(default="W", metadata={
        "help": "W: train the key-query matrix W; KQ: train K and Q with W = KᵀQ"})
    head: str = field(default="linear", metadata={
        "help": "linear: a fixed unit head v; relu: 1ᵀ ReLU(Vᵀ ·) with a fixed V (the authors' nonlinear head)"})

    def __post_init__(self):
        check_choice("parameterization", self.parameterization, PARAMETERIZATIONS)
        check_choice("head", self.head, HEADS)

    @property
    def layers(self) -> int:
        """One attention layer (the depth every model reports)."""
        return 1


class SelectionAttention(InContextModel):
    """f = vᵀ Xᵀ softmax(X W z) over a prompt's T tokens X and query z, with a fixed unit head v (or the ReLU
    head 1ᵀ ReLU(Vᵀ Xᵀ softmax(X W z)))."""

    Config = SelectionAttentionConfig

    def __init__(self, dim: int, points: int, config: SelectionAttentionConfig = SelectionAttentionConfig(),
                 target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        if target_dim != 1:
            raise ValueError(f"target_dim must be 1 (a ±1 label per prompt), got {target_dim}")
        if points < 3:
            raise ValueError(f"points must be at least 3 (two tokens and the query), got {points}")
        bound, shape = 1 / math.sqrt(dim), (dim, dim)
        names = ("weight",) if config.parameterization == "W" else ("key", "query")
        for name in names:
            setattr(self, name, nn.Parameter(torch.empty(shape, dtype=torch.float64).uniform_(-bound, bound)))
        if config.head == "linear":
            head = torch.randn(dim, dtype=torch.float64)
            self.register_buffer("head", head / torch.linalg.vector_norm(head))
        else:
            value = torch.randn(dim, dim, dtype=torch.float64)
            self.register_buffer("value", value / torch.linalg.matrix_norm(value))

    def token_values(self, tokens: torch.Tensor) -> torch.Tensor:
        """What the head makes of each token (..., d) alone, (...,): vᵀx, or 1ᵀ ReLU(Vᵀx); for a label y the token
        attention can best select maximises y times it."""
        return self._head(tokens.to(self._fixed_head))

    @property
    def _fixed_head(self) -> torch.Tensor:
        """The head's fixed buffer, v or V: inputs are brought to its dtype (float64) and device."""
        return self.head if self.config.head == "linear" else self.value

    def _head(self, selected: torch.Tensor) -> torch.Tensor:
        return selected @ self.head if self.config.head == "linear" else torch.relu(selected @ self.value).sum(-1)

    def key_query(self) -> torch.Tensor:
        """The combined d × d matrix W (token t scores x_tᵀ W z): the trained W, or Kᵀ Q."""
        return self.weight if self.config.parameterization == "W" else self.key.T @ self.query

    def attention(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Softmax weights (B, P, N) of the queries at ``positions`` (P,) over the points before each."""
        points = xs.to(self._fixed_head)
        scores = torch.einsum("btk,kl,bpl->bpt", points, self.key_query(), points[:, positions])
        return prefix_weights(scores, positions)

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [self._scores(xs, torch.arange(xs.shape[1], device=xs.device))]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The prompt's score f(X, z): the query's attention over the T tokens."""
        return self._scores(xs, torch.tensor([xs.shape[1] - 1], device=xs.device))[:, 0]

    def _scores(self, xs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """vᵀ Σ_t softmax_t x_t at ``positions``, in the prompts' dtype."""
        selected = torch.einsum("bpt,btk->bpk", self.attention(xs, positions), xs.to(self._fixed_head))
        return self._head(selected).to(xs.dtype)
