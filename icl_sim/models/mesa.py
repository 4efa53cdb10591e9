"""The mesa-layer: causal self-attention that solves a least-squares problem in context at every position.

von Oswald, Schlegel, Meulemans, Kobayashi, Niklasson, Zucchet, Scherrer, Miller, Sandler, Agüera y Arcas,
Vladymyrov, Pascanu & Sacramento, "Uncovering mesa-optimization algorithms in Transformers" (arXiv 2309.05858),
the mesa-layer section, as the authors' code builds it (github.com/mtavit/transformers_mesa_optimization_paper,
``src/mesa.py``, ``src/models/full_fledged_transformer.py``, ``configs/config.py``).  Head h of a layer projects every token e_t to a query, key and value,
q = W^Q_h e_t, k = W^K_h e_t, v = W^V_h e_t, and at position t uses the ridge solution over the tokens so far,

    Φ̂_{h,t} = argmin_Φ ½ Σ_{i≤t} ‖v_i − Φ k_i‖² + (1/(2λ_h)) ‖Φ‖_F²
            = (Σ_{i≤t} v_i k_iᵀ) R_{h,t},      R_{h,t} = (Σ_{i≤t} k_i k_iᵀ + I/λ_h)⁻¹,

to update the token, e_t ← e_t + Σ_h P_h Φ̂_{h,t} q_t.  R_{h,t} follows from R_{h,0} = λ_h I by the
Sherman–Morrison formula, one rank-one update per token (exact recursive least squares),

    R_t = R_{t−1} − (R_{t−1} k_t)(R_{t−1} k_t)ᵀ / (1 + k_tᵀ R_{t−1} k_t),

and then Φ̂_t q_t = Σ_{i≤t} v_i (k_iᵀ R_t q_t) is causal attention with scores k_iᵀ (R_t q_t).  The recursion
runs over positions only; batch and heads are vectorised.  λ_h > 0 is learned per layer and head through
λ = softplus(ρ), started at ``init_lambda`` (the authors store λ itself, started at 1 and left unconstrained:
the positive parameterisation is ours).  No bias, LayerNorm, MLP or activation clipping (the authors clip
the stream to ±1.5 after each layer by default; left out here).  ``attention="linear"`` or ``"softmax"`` swaps the
mesa-layer for the causal attention the paper compares it with, over the same tokens, stream and read-out.

Tokens.  A prompt of the ``autoregressive`` task holds one trajectory: ``xs[:, t] = s_t``, ``ys[:, t] = s_{t+1}``.
Token t is the paper's constructed token (s_t, s_{t−1}) (s_{−1} = 0) followed by a d-wide prediction slot
that starts at 0, so the residual stream is 3d wide; the prediction of s_{t+1} after each layer is the slot.
(The authors' token is [0, s_t, s_t, s_{t−1}], read from its first block, ``src/data/constr_data.py`` and
``src/train.py``: the same up to the order of the blocks and a duplicate of s_t.)
Position t reads the states s_0..s_t, all in ``xs[:, :t+1]``, and never ``ys`` (whose first t entries repeat
them), so no position sees a later point.  With W^Q = W^V = [I 0 0], W^K = [0 I 0] and P writing into the
slot, one layer predicts ridge regression of s_{j+1} on s_j over the t in-context transitions
(:func:`constructed_mesa`): the layer that solves the task's in-context problem exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.validation import check_choice, check_float, check_int

#: the layer's operation: the mesa-layer, or the attention the paper compares it with
ATTENTIONS = ("mesa", "linear", "softmax")


@dataclass(frozen=True)
class MesaConfig:
    """Hyper-parameters of :class:`MesaTransformer`."""

    layers: int = field(default=1, metadata={"help": "number of layers"})
    heads: int = field(default=1, metadata={"help": "heads per layer"})
    attention: str = field(default="mesa", metadata={
        "help": "mesa: the mesa-layer (in-context ridge regression); linear: causal linear attention Σ_{i≤t} "
                "(qᵀk_i) v_i; softmax: causal softmax attention with scores qᵀk_i/√k (the paper's comparison)"})
    key_size: int = field(default=0, metadata={
        "help": "size of each head's queries, keys and values; 0 means d (what the exact construction needs)"})
    init_lambda: float = field(default=1.0, metadata={
        "help": "initial λ of every head: the regulariser is ‖Φ‖²/(2λ), so R_0 = λ I"})
    init_scale: float = field(default=0.0002, metadata={
        "help": "standard deviation of the initial projection weights (the authors' 0.0002)"})

    def __post_init__(self):
        check_int("layers", self.layers, 1)
        check_int("heads", self.heads, 1)
        check_choice("attention", self.attention, ATTENTIONS)
        check_int("key_size", self.key_size, 0)
        check_float("init_lambda", self.init_lambda, 0.0, strict=True)
        check_float("init_scale", self.init_scale, 0.0)


def mesa_solutions(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                   lam: torch.Tensor) -> torch.Tensor:
    """Φ̂_t q_t at every position t by the Sherman–Morrison recursion, for queries, keys, values (..., N, k).

    Φ̂_t is the ridge solution of the values on the keys up to and including t with regulariser ‖Φ‖²/(2λ);
    ``lam`` (...) broadcasts against the leading dimensions (one λ per head).  Returns (..., N, k), in at least
    float32: under bf16 autocast the rank-one downdates would lose R_t's positive definiteness, so they run with
    autocast off.
    """
    with torch.autocast(keys.device.type, enabled=False):
        dtype = torch.promote_types(keys.dtype, torch.float32)
        return _recursive_least_squares(*(tensor.to(dtype) for tensor in (queries, keys, values, lam)))


def _recursive_least_squares(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                             lam: torch.Tensor) -> torch.Tensor:
    """:func:`mesa_solutions` in the inputs' dtype."""
    size, points = keys.shape[-1], keys.shape[-2]
    eye = torch.eye(size, dtype=keys.dtype, device=keys.device)
    inverse = lam[..., None, None] * eye  # R_0 = λ I
    solved = []  # R_t q_t
    for t in range(points):  # the recursion over positions is sequential by nature; each step is batched
        key = keys[..., t, :]
        direction = (inverse @ key[..., None]).squeeze(-1)  # R_{t−1} k_t
        scale = 1.0 + (key * direction).sum(dim=-1)
        inverse = inverse - direction[..., :, None] * direction[..., None, :] / scale[..., None, None]
        solved.append((inverse @ queries[..., t, :, None]).squeeze(-1))
    scores = torch.stack(solved, dim=-2) @ keys.mT  # (..., N, N): k_iᵀ R_t q_t
    causal = torch.ones(points, points, dtype=torch.bool, device=keys.device).tril()
    return scores.masked_fill(~causal, 0.0) @ values


def causal_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, softmax: bool) -> torch.Tensor:
    """The attention the paper compares the mesa-layer with, over tokens i ≤ t as the authors' code has it
    (``src/attn.py``): linear, Σ_{i≤t} (q_tᵀ k_i) v_i, unnormalised; or softmax of q_tᵀ k_i / √k over i ≤ t."""
    points = keys.shape[-2]
    causal = torch.ones(points, points, dtype=torch.bool, device=keys.device).tril()
    scores = queries @ keys.mT
    if softmax:
        return (scores / math.sqrt(keys.shape[-1])).masked_fill(~causal, -math.inf).softmax(dim=-1) @ values
    return scores.masked_fill(~causal, 0.0) @ values


class MesaTransformer(InContextModel):
    """L residual mesa-layers (or linear / softmax attention layers) over constructed tokens (s_t, s_{t−1}, slot);
    the slot after each layer predicts s_{t+1}, (B, N, d) at every position."""

    Config = MesaConfig
    depth_parameter, default_loss_on = "layers", "all"

    def __init__(self, dim: int, points: int, config: MesaConfig = MesaConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        if target_dim != dim:
            raise ValueError(f"target_dim must equal dim={dim} (the next state), got {target_dim}")
        width, size = 3 * dim, config.key_size or dim
        shape = (config.layers, config.heads, size, width)
        self.query = nn.Parameter(config.init_scale * torch.randn(shape))
        self.key = nn.Parameter(config.init_scale * torch.randn(shape))
        self.value = nn.Parameter(config.init_scale * torch.randn(shape))
        self.projection = nn.Parameter(config.init_scale * torch.randn(config.layers, config.heads, width, size))
        if config.attention == "mesa":
            self.lambda_parameter = nn.Parameter(torch.full((config.layers, config.heads),
                                                            inverse_softplus(config.init_lambda)))

    def lambdas(self) -> torch.Tensor:
        """λ (layers, heads) of the mesa-layers, positive: softplus of the stored parameter."""
        return nn.functional.softplus(self.lambda_parameter)

    def tokens(self, xs: torch.Tensor) -> torch.Tensor:
        """The residual stream before the first layer, (B, N, 3d): (s_t, s_{t−1}, 0) with s_{−1} = 0."""
        previous = nn.functional.pad(xs, (0, 0, 1, 0))[:, :-1]
        return torch.cat([xs, previous, torch.zeros_like(xs)], dim=-1)

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream (B, N, 3d) after each layer: what the paper's probes read, position by position."""
        stream, streams = self.tokens(xs), []
        for layer in range(self.config.layers):
            queries, keys, values = (torch.einsum("hkw,bnw->bhnk", weights[layer], stream)
                                     for weights in (self.query, self.key, self.value))
            if self.config.attention == "mesa":
                attended = mesa_solutions(queries, keys, values, self.lambdas()[layer])
            else:
                attended = causal_attention(queries, keys, values, softmax=self.config.attention == "softmax")
            stream = stream + torch.einsum("hwk,bhnk->bnw", self.projection[layer], attended)
            streams.append(stream)
        return streams

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return [stream[..., 2 * self.dim:] for stream in self.layer_features(xs, ys)]

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: MesaConfig, target_dim: int = 1) -> int:
        """Per layer and head, the N inverses R_t (k² each) the recursion keeps for backward and the (N, N)
        scores; per layer, a few 3d-wide streams."""
        size = config.key_size or dim
        return config.layers * points * (config.heads * (size * size + points + 4 * size) + 4 * 3 * dim)


def constructed_mesa(dim: int, points: int, lam: float) -> MesaTransformer:
    """A float64 one-layer, one-head mesa model that predicts s_{t+1} by ridge regression over the transitions.

    W^Q = W^V read s_t, W^K reads s_{t−1} and P writes into the slot, so position t predicts
    (Σ_{j<t} s_{j+1} s_jᵀ)(Σ_{j<t} s_j s_jᵀ + I/λ)⁻¹ s_t (token 0 has key s_{−1} = 0 and adds nothing).
    """
    check_float("lam", lam, 0.0, strict=True)
    model = MesaTransformer(dim, points, MesaConfig(init_lambda=lam, init_scale=0.0), dim).double()
    eye = torch.eye(dim, dtype=torch.float64)
    with torch.no_grad():
        model.query[0, 0, :, :dim] = eye
        model.value[0, 0, :, :dim] = eye
        model.key[0, 0, :, dim:2 * dim] = eye
        model.projection[0, 0, 2 * dim:] = eye
        model.lambda_parameter.fill_(inverse_softplus(lam))  # again in float64: λ exactly, not float32's
    return model


def inverse_softplus(value: float) -> float:
    """ρ with softplus(ρ) = log(1 + e^ρ) = ``value`` > 0: log(e^value − 1), written to stay exact for small
    and large values."""
    return value + math.log(-math.expm1(-value))
