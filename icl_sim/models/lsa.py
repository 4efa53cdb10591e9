"""Linear self-attention (LSA) as in the theory of in-context learning, and its variants.

Tokens are z_j = (x_j, y_j) ∈ R^{d+1}; the query token is (x_i, 0).  Layer ℓ with
merged matrices P = W_PV and Q = W_KQ per head updates every token t by

    z_t ← z_t + (1/n) Σ_h P_h (Σ_{j<n} z_j z_jᵀ) Q_h z_t,

attending to the n context tokens only and normalising by their number (Ahn et
al. 2023; Zhang, Frei & Bartlett 2023; Mahankali et al. 2023).  The prediction is
read from the query's y slot with a minus sign, ŷ = −[z_query]_{d+1}, so that one
layer with P = −η e_{d+1}e_{d+1}ᵀ, Q = [[I, 0], [0, 0]] is one step of gradient
descent with step η from w = 0 (von Oswald et al. 2023).

Because the update of every token is the same linear map M = I + Σ_h P_h Γ Q_h with
Γ = (1/n) Σ_j z_j z_jᵀ, a whole prompt is summarised by Γ: the next layer sees
Γ' = M Γ Mᵀ and the query becomes M z_query.  Predicting every position i (the
prompt cut to its first i points plus query x_i) therefore needs only the prefix
second-moment matrices Γ_i, computed with one cumulative sum: O(N d³) per layer,
exact, with no loop over prefixes.  That Γ recursion is needed only where a layer reads
context tokens that an earlier layer updated within the prefix; with one layer (and in
the causal form below) a single pass over the tokens with causally masked attention
scores z_jᵀ Q_h z_t is the same function, never builds the (B, N, D, D) moments and
trains 7-8× faster (benchmarks/bench_training_step.py).

Variants (fields of :class:`LSAConfig`; the defaults are the plain model above):

* ``parameterisation="diagonal"`` — Vladymyrov et al. 2024 ("Linear transformers are
  versatile in-context learners", NeurIPS), diagonal attention.  Our reading: every
  P_h and Q_h is block-diagonal in the (x, y) split with each block a scalar times the
  identity, P_h = diag(p^x_h I_d, p^y_h I_k), Q_h = diag(q^x_h I_d, q^y_h I_k): four
  scalars per head and layer.  That is the form under which the paper's layer update
  reduces to its four products ω_xx = Σ_h p^x_h q^x_h, ω_xy = Σ_h p^x_h q^y_h,
  ω_yx = Σ_h p^y_h q^x_h, ω_yy = Σ_h p^y_h q^y_h.  (A looser reading, a free diagonal,
  is not offered.)  Still linear, so the fast Γ path applies.
* ``parameterisation="preconditioner"`` — the linearly parameterised single layer of Wu et
  al. 2024 ("How many pretraining tasks are needed for in-context learning of linear
  regression?", ICLR, Sec. 3) and Ahn et al. 2023: P = −[[0, 0], [0, I_k]] fixed and
  Q = [[Γᵀ, 0], [0, 0]] with Γ (d × d) the only parameter per layer and head, so that one
  layer predicts ŷ = x_qᵀ Γ (1/n) Σ_j y_j x_j: one preconditioned GD step, linear in Γ.
  With more layers it is Ahn et al.'s Thm 3 model (their P = [[0, 0], [0, 1]], Q = −[[Γ, 0], [0, 0]]).
* ``parameterisation="sparse"`` — the multi-layer model of Ahn, Cheng, Daneshmand & Sra 2023
  ("Transformers learn to implement preconditioned gradient descent for in-context learning",
  NeurIPS, Sec. 5 and Thm 4), the one the authors train (chengxiang/LinearTransformer,
  ``linear_transformer.py``: ``Transformer_F`` pads its d × d P and Q blocks): per layer and head
  P = [[B, 0], [0, I_k]] and Q = −[[Aᵀ, 0], [0, 0]] with B and A (d × d) the parameters
  (``feature_update``, ``preconditioner``).  In the authors' orientation (their attention
  score is z_tᵀ Q z_j, so their Q is the transpose of ours) this is the paper's P_ℓ = [[B_ℓ, 0], [0, 1]],
  Q_ℓ = −[[A_ℓ, 0], [0, 0]]: the authors' ``allparam[ℓ, h]`` holds (B, −A).  Layer ℓ adds
  x_qᵀ A_ℓ (1/n) Σ_j y_j x_j to the prediction (a step preconditioned by A_ℓ on the current tokens)
  and updates every token's features by x ← x − B_ℓ ((1/n) Σ_j x_j x_jᵀ) A_ℓᵀ x, which changes
  later layers only.  With B = 0 it is ``preconditioner``.  Still linear, so the fast Γ path applies.
* ``layer_norm`` / ``mlp`` — after each attention layer, a LayerNorm over the d + k
  features of every token (learned affine), then a residual two-layer MLP per token,
  z ← z + W₂ σ(W₁ z + b₁) + b₂ (width ``mlp_width``, GELU).  Token updates are no
  longer one linear map, so Γ recursion fails; an exact per-prefix path materialises
  the tokens of every prefix i, (B, prefixes, N, D): the query of prefix i at token i,
  context tokens j < i, the others zero and masked out of the keys.  O(B N² D²) per layer.
* ``causal`` — a real causal (autoregressive) form for sequences (Zheng et al. 2024's layer
  without its conjugate products, which keep a rotated channel: ``complex-lsa`` is theirs): one
  pass over the N context tokens (x_j, y_j), token t attending to the tokens j < t (not
  itself) normalised by max(t, 1); the query (x_i, 0) of position i attends to the
  context tokens j < i of the same layer.  For one layer this is the per-prefix model
  exactly; for more layers it differs, since in the per-prefix model context token j
  at layer 2 has seen all of the prefix's n context tokens (normalised by n) and in the
  causal model only the tokens before j (normalised by j).  It composes with
  layer_norm / mlp (the pass is per token) and costs O(N² D + N D²) per layer.
* ``recurrent`` — one set of weights applied ``layers`` times (von Oswald et al. 2023, Sec. 4,
  their code's ``deq``): the recurrent two-layer LSA whose trained curvature correction γ they
  compare with GD++'s.  It composes with every other variant.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from icl_sim.models.base import InContextModel
from icl_sim.theory.constructions import gd_lsa_weights
from icl_sim.validation import check_choice, check_float, check_int

PARAMETERISATIONS = ("full", "diagonal", "preconditioner", "sparse")
#: initialisations: every entry N(0, init_scale²), or Zhang, Frei & Bartlett 2024's (full parameterisation only)
INITS = ("gaussian", "zfb")


@dataclass(frozen=True)
class LSAConfig:
    """Hyper-parameters of the LSA model."""

    layers: int = field(default=1, metadata={"help": "number of linear self-attention layers"})
    heads: int = field(default=1, metadata={"help": "attention heads per layer"})
    init_scale: float = field(default=0.02, metadata={"help": "standard deviation of the initial weights"})
    parameterisation: str = field(default="full", metadata={
        "help": "full: free P, Q per head; diagonal: P, Q = diag(a I_d, b I_k), 4 scalars per head "
                "(Vladymyrov et al. 2024); preconditioner: ŷ = x_qᵀ Γ (1/n) Σ y_j x_j, Γ the only "
                "parameter (Wu et al. 2024); sparse: P = [[B, 0], [0, I]], Q = −[[Aᵀ, 0], [0, 0]], B and A "
                "per layer (Ahn et al. 2023, Thm 4)"})
    layer_norm: bool = field(default=False, metadata={
        "help": "LayerNorm on every token after each attention layer (exact per-prefix path)"})
    mlp: bool = field(default=False, metadata={
        "help": "residual two-layer GELU MLP per token after each attention layer (exact per-prefix path)"})
    mlp_width: int = field(default=0, metadata={"help": "hidden width of the MLP; 0 means 4 (d + k)"})
    causal: bool = field(default=False, metadata={
        "help": "causal one-pass form (Zheng et al. 2024's layer in real form): token t attends to tokens < t; "
                "equals the per-prefix model for one layer only"})
    recurrent: bool = field(default=False, metadata={
        "help": "every layer shares one set of weights (von Oswald et al. 2023's recurrent LSA)"})
    init: str = field(default="gaussian", metadata={
        "help": "gaussian: every entry N(0, init_scale²); zfb: Zhang, Frei & Bartlett 2024's initialisation, "
                "P = −σ on the label block, Q = σ[[ΘΘᵀ, 0], [0, 0]] with ‖ΘΘᵀ‖_F = 1 (Θ Gaussian), σ = init_scale, "
                "all else 0 (full parameterisation)"})

    def __post_init__(self):
        check_int("layers", self.layers, 1)
        check_int("heads", self.heads, 1)
        check_float("init_scale", self.init_scale, 0.0)
        check_choice("parameterisation", self.parameterisation, PARAMETERISATIONS)
        check_choice("init", self.init, INITS)
        if self.init == "zfb" and self.parameterisation != "full":
            raise ValueError(f"init 'zfb' needs parameterisation 'full', got {self.parameterisation!r}")
        for name in ("layer_norm", "mlp", "causal", "recurrent"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        check_int("mlp_width", self.mlp_width, 0)
        if self.mlp_width and not self.mlp:
            raise ValueError(f"mlp_width applies only with mlp=True, got mlp_width={self.mlp_width}")

    @property
    def stored_layers(self) -> int:
        """How many layers have weights of their own: one when they are all shared."""
        return 1 if self.recurrent else self.layers

    @property
    def nonlinear(self) -> bool:
        """Whether token updates are nonlinear (LayerNorm or MLP), ruling out the Γ recursion."""
        return self.layer_norm or self.mlp


class LinearSelfAttention(InContextModel):
    """L layers of linear self-attention over (x, y) tokens (variants: see the module docstring).

    Labels may be vectors: with ``target_dim`` k > 1 the tokens are (x, y) ∈ R^{d+k}, ys is
    (B, N, k) and the prediction is minus the query's k label slots.  :meth:`attention_weights`
    gives the (P, Q) matrices of every layer and head whatever the parameterisation.
    """

    Config = LSAConfig
    depth_parameter, default_loss_on = "layers", "last"  # the theory papers train on the final query

    def __init__(self, dim: int, points: int, config: LSAConfig = LSAConfig(), target_dim: int = 1):
        super().__init__()
        self.keep_sizes(dim, points, config, target_dim)
        width, layers = dim + target_dim, config.stored_layers
        if config.parameterisation == "full":
            shape = (layers, config.heads, width, width)
            self.value = nn.Parameter(config.init_scale * torch.randn(shape))  # P = W_PV per layer and head
            self.key_query = nn.Parameter(config.init_scale * torch.randn(shape))  # Q = W_KQ per layer and head
            if config.init == "zfb":
                self._zfb_initialisation()
        elif config.parameterisation == "preconditioner":  # Γ per layer and head; P fixed
            self.preconditioner = nn.Parameter(config.init_scale * torch.randn(layers, config.heads, dim, dim))
        elif config.parameterisation == "sparse":  # A (the preconditioner) and B (the feature update) per layer, head
            shape = (layers, config.heads, dim, dim)
            self.preconditioner = nn.Parameter(config.init_scale * torch.randn(shape))
            self.feature_update = nn.Parameter(config.init_scale * torch.randn(shape))
        else:  # (p^x, p^y) and (q^x, q^y) per layer and head
            self.value_scales = nn.Parameter(config.init_scale * torch.randn(layers, config.heads, 2))
            self.key_query_scales = nn.Parameter(config.init_scale * torch.randn(layers, config.heads, 2))
        if config.layer_norm:
            self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(layers))
        if config.mlp:
            hidden = config.mlp_width or 4 * width
            self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))
                                      for _ in range(layers))
            for mlp in self.mlps:
                for linear in (mlp[0], mlp[2]):
                    nn.init.normal_(linear.weight, std=config.init_scale)
                    nn.init.zeros_(linear.bias)

    @torch.no_grad()
    def _zfb_initialisation(self) -> None:
        """Zhang, Frei & Bartlett 2024's initialisation (Sec. 3): W^PV = σ [[0, 0], [0, 1]] and
        W^KQ = σ [[ΘΘᵀ, 0], [0, 0]] with ‖ΘΘᵀ‖_F = 1, here Θ with N(0, 1) entries, per layer and head.  Their
        prediction is +(the query's label slot), ours −: P = −W^PV gives the same predictor, and gradient flow
        (or GD) maps one onto the other."""
        dim, sigma = self.dim, self.config.init_scale
        theta = torch.randn(*self.key_query.shape[:-2], dim, dim)
        gram = theta @ theta.transpose(-1, -2)
        self.value.zero_()
        self.key_query.zero_()
        self.key_query[..., :dim, :dim] = sigma * gram / torch.linalg.matrix_norm(gram, keepdim=True)
        self.value[..., dim:, dim:] = -sigma * torch.eye(self.target_dim)

    def attention_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(P, Q), each (layers, heads, d + k, d + k); a recurrent model repeats its one layer's."""
        shape = (self.config.layers, -1, -1, -1)
        return tuple(weights.expand(shape) for weights in self._stored_attention_weights())

    def _stored_attention_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(P, Q) of the layers with weights of their own, (stored layers, heads, d + k, d + k)."""
        if self.config.parameterisation == "full":
            return self.value, self.key_query
        if self.config.parameterisation == "preconditioner":
            gamma, k = self.preconditioner, self.target_dim
            key_query = torch.nn.functional.pad(gamma.transpose(-1, -2), (0, k, 0, k))  # [[Γᵀ, 0], [0, 0]]
            value = torch.zeros_like(key_query)
            value[..., self.dim:, self.dim:] = -torch.eye(k, dtype=gamma.dtype, device=gamma.device)
            return value, key_query
        if self.config.parameterisation == "sparse":
            k = self.target_dim
            # −[[Aᵀ, 0], [0, 0]]
            key_query = -torch.nn.functional.pad(self.preconditioner.transpose(-1, -2), (0, k, 0, k))
            value = torch.nn.functional.pad(self.feature_update, (0, k, 0, k))  # [[B, 0], [0, I_k]]
            eye = torch.eye(k, dtype=value.dtype, device=value.device)
            value = value + torch.nn.functional.pad(eye, (self.dim, 0, self.dim, 0))
            return value, key_query
        blocks = torch.cat([torch.zeros(self.dim, dtype=torch.long), torch.ones(self.target_dim, dtype=torch.long)])
        blocks = blocks.to(self.value_scales.device)

        def expand(scales):
            return torch.diag_embed(scales[..., blocks])

        return expand(self.value_scales), expand(self.key_query_scales)

    def prefix_moments(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Γ_i = (1/max(i, 1)) Σ_{j<i} z_j z_jᵀ for every position i: (B, N, d+k, d+k)."""
        return _exclusive_moments(_tokens(xs, self._labels(ys)))

    @classmethod
    def activation_floats(cls, dim: int, points: int, config: LSAConfig, target_dim: int = 1) -> int:
        """The prefix moments, (d + k)² per point, and per layer and point about four (d + k)-wide tokens per head
        and four MLP-wide ones (measured on the CPU: a lower estimate)."""
        width = dim + target_dim
        hidden = (config.mlp_width or 4 * width) if config.mlp else 0
        return points * (width ** 2 + 4 * config.layers * (config.heads * width + hidden))

    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        return self._all_positions(xs, ys)

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """The query token z_query after each layer at every position: (B, N, d + k) per layer.

        Its label slots are minus the layer's prediction; every variant is supported.
        """
        return self._all_positions(xs, ys, features=True)

    @property
    def reads_updated_context(self) -> bool:
        """Whether a layer reads context tokens that an earlier layer updated within the same prefix: the
        per-prefix model with more than one layer, which needs the Γ recursion or materialised prefixes."""
        return not self.config.causal and self.config.layers > 1

    def _all_positions(self, xs: torch.Tensor, ys: torch.Tensor, features: bool = False) -> list[torch.Tensor]:
        """Every position by the fastest exact path: the masked token pass unless a layer reads updated context
        tokens, else the Γ recursion (linear layers) or the materialised prefixes (LayerNorm / MLP)."""
        labels = self._labels(ys)
        if not self.reads_updated_context:
            return self._token_pass(xs, labels, features)
        if self.config.nonlinear:
            return self.per_prefix_predictions(xs, ys, features=features)
        return self.moment_predictions(xs, ys, features=features)

    def moment_predictions(self, xs: torch.Tensor, ys: torch.Tensor, *,
                           features: bool = False) -> list[torch.Tensor]:
        """Every position by the Γ recursion on the prefix moments: exact for every linear variant but ``causal``,
        at any depth.  Returns the predictions after each layer, or with ``features`` the query tokens."""
        query = _tokens(xs, torch.zeros_like(self._labels(ys)))
        return self._propagate(self.prefix_moments(xs, ys), query, features)

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The final position only: N times cheaper for training (except in the causal form)."""
        labels = self._labels(ys)
        if self.config.causal:
            return self._token_pass(xs, labels)[-1][:, -1]
        if self.config.nonlinear:
            last = torch.tensor([xs.shape[1] - 1], device=xs.device)
            return self.per_prefix_predictions(xs, ys, last)[-1][:, 0]
        return self.query_predictor(xs[:, :-1], ys[:, :-1])(xs[:, -1:])[-1][:, 0]

    def query_predictor(self, xs: torch.Tensor, ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """Queries against the context's one moment matrix Γ (the Γ recursion); other variants replicate the
        context."""
        if self.config.causal or self.config.nonlinear:
            return super().query_predictor(xs, ys)
        labels = self._labels(ys)
        tokens = _tokens(xs, labels)
        context = tokens.mT @ tokens / max(xs.shape[1], 1)  # Γ = (1/n) Zᵀ Z, no (B, N, D, D) outer products

        def predict(queries: torch.Tensor) -> list[torch.Tensor]:
            query_labels = labels.new_zeros(*queries.shape[:-1], self.target_dim)
            return self._propagate(context[:, None], _tokens(queries, query_labels))

        return predict

    def per_prefix_predictions(self, xs: torch.Tensor, ys: torch.Tensor,
                               positions: torch.Tensor | None = None, *,
                               features: bool = False) -> list[torch.Tensor]:
        """The exact per-prefix model on materialised tokens, for the given ``positions`` (all by default).

        Prompt i is the context tokens (x_j, y_j), j < i, plus the query (x_i, 0); its tokens
        sit in one row of a (B, P, N, D) tensor, the query at index i and the tokens j > i
        zero and never keys.  Valid for every variant but ``causal``; used whenever
        ``layer_norm`` or ``mlp`` is on.  Returns the predictions (B, P) after each layer, or with
        ``features`` the query tokens (B, P, d + k).
        """
        labels = self._labels(ys)
        n = xs.shape[1]
        if positions is None:
            positions = torch.arange(n, device=xs.device)
        index = torch.arange(n, device=xs.device)
        keys = (index[None, :] < positions[:, None]).to(xs.dtype)  # (P, N): context tokens of prompt p
        query = (index[None, :] == positions[:, None]).to(xs.dtype)  # (P, N): the query token of prompt p
        counts = positions.clamp(min=1).to(xs.dtype)
        tokens = _tokens(xs, labels)[:, None]  # (B, 1, N, D)
        keep_label = keys[None, :, :, None]
        tokens = torch.cat([tokens[..., :self.dim] * (keys + query)[None, :, :, None],
                            tokens[..., self.dim:] * keep_label], dim=-1)  # (B, P, N, D)
        value, key_query = self.attention_weights()
        predictions = []
        for layer in range(self.config.layers):
            masked = tokens * keys[None, :, :, None]
            gamma = torch.einsum("bpjk,bpjl->bpkl", masked, masked) / counts[:, None, None]
            keyed = torch.einsum("hkl,bptl->bpthk", key_query[layer], tokens)  # Q_h z
            attended = torch.einsum("bpkl,bpthl->bpthk", gamma, keyed)  # Γ_p Q_h z
            tokens = tokens + torch.einsum("hij,bpthj->bpti", value[layer], attended)
            tokens = self._token_layers(layer, tokens)
            if features:
                predictions.append(torch.einsum("bptk,pt->bpk", tokens, query))
                continue
            out = -torch.einsum("bptk,pt->bpk", tokens[..., self.dim:], query)
            predictions.append(out.squeeze(-1) if self.target_dim == 1 else out)
        return predictions

    def _read_out(self, query: torch.Tensor) -> torch.Tensor:
        """ŷ = −(the query token's label slots), (...) for scalar labels or (..., k)."""
        prediction = -query[..., self.dim:]
        return prediction.squeeze(-1) if self.target_dim == 1 else prediction

    def _token_layers(self, layer: int, tokens: torch.Tensor) -> torch.Tensor:
        """The per-token LayerNorm and residual MLP after attention layer ``layer`` (identity if off)."""
        if self.config.layer_norm:
            tokens = self.norms[layer % self.config.stored_layers](tokens)
        if self.config.mlp:
            tokens = tokens + self.mlps[layer % self.config.stored_layers](tokens)
        return tokens

    def _token_pass(self, xs: torch.Tensor, labels: torch.Tensor, features: bool = False) -> list[torch.Tensor]:
        """One pass over the tokens: context token t and query t both attend to the context tokens j < t.

        This is the causal form at any depth, and the per-prefix model when no layer reads updated context
        tokens (one layer).  Masked attention scores replace the (B, N, D, D) moments Γ_t; the last layer
        updates the queries only, since no later layer reads the context.
        """
        context = _tokens(xs, labels)
        query = _tokens(xs, torch.zeros_like(labels))
        value, key_query = self.attention_weights()
        predictions = []
        n = xs.shape[1]
        for layer in range(self.config.layers):
            context_read_later = layer + 1 < self.config.layers
            tokens = torch.cat([context, query], dim=1) if context_read_later else query  # (B, 2N or N, D)
            tokens = tokens + _masked_attention(tokens, context, value[layer], key_query[layer])
            tokens = self._token_layers(layer, tokens)
            if context_read_later:
                context = tokens[:, :n]
            query = tokens[:, -n:]
            predictions.append(query if features else self._read_out(query))
        return predictions

    def _labels(self, ys: torch.Tensor) -> torch.Tensor:
        """Labels as (..., N, k), whether given as (B, N) scalars or (B, N, k) vectors."""
        labels = ys.unsqueeze(-1) if self.target_dim == 1 and ys.ndim == 2 else ys
        if labels.shape[-1] != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")
        return labels

    def _propagate(self, gamma: torch.Tensor, query: torch.Tensor, features: bool = False) -> list[torch.Tensor]:
        """Run the layers on context moments Γ (..., D, D) and query tokens (..., D); ŷ (or, with
        ``features``, the query token) after each layer."""
        values, key_queries = self.attention_weights()
        predictions = []
        for layer in range(self.config.layers):
            value, key_query = values[layer], key_queries[layer]
            keyed = torch.einsum("hkl,...l->...hk", key_query, query)  # Q_h z per head
            attended = torch.einsum("...jk,...hk->...hj", gamma, keyed)  # Γ Q_h z
            # Σ_h P_h Γ Q_h z as the product einsum makes of it, (..., h·j) @ (h·j, i), written out: its backward
            # gives ``attended`` a contiguous gradient, not einsum's transposed one, which bmm copies per matrix
            update = attended.flatten(-2) @ value.permute(1, 0, 2).flatten(1).mT
            if layer + 1 < self.config.layers:
                step = torch.einsum("hij,...jk,hkl->...il", value, gamma, key_query)
                step = step + torch.eye(self.dim + self.target_dim, device=query.device, dtype=query.dtype)
                gamma = step @ gamma @ step.transpose(-1, -2)
            query = query + update
            predictions.append(query if features else self._read_out(query))
        return predictions


def constructed_lsa(dim: int, points: int, steps: int, lr: float,
                    preconditioner: torch.Tensor | None = None) -> LinearSelfAttention:
    """A float64 LSA (``steps`` layers, one head) whose layers *are* ``steps`` steps of (preconditioned) GD.

    The weights are ``icl_sim.theory.gd_lsa_weights`` (von Oswald et al. 2023, Prop. 1; Ahn et al.
    2023, Lemma 1): layer ℓ predicts x_qᵀ w_ℓ, w_ℓ the ℓ-th GD iterate from 0.
    """
    weights = gd_lsa_weights(dim, steps, lr, preconditioner)
    model = LinearSelfAttention(dim, points, LSAConfig(layers=steps, heads=1, init_scale=0.0)).double()
    model.load_state_dict(weights)
    return model


def _tokens(xs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Tokens z = (x, y): (..., d + k)."""
    return torch.cat([xs, labels], dim=-1)


def _masked_attention(tokens: torch.Tensor, context: torch.Tensor, value: torch.Tensor,
                      key_query: torch.Tensor) -> torch.Tensor:
    """Σ_h P_h Γ_t Q_h z_t for tokens z_t (B, T, D), Γ_t = (1/max(t, 1)) Σ_{j<t} z_j z_jᵀ over the context
    (B, N, D), t counted modulo N (T is a multiple of N): causal attention with scores z_jᵀ Q_h z_t."""
    position = torch.arange(context.shape[1], device=context.device)
    weights = (position[None, :] < position[:, None]).to(context.dtype) / position.clamp(min=1)[:, None]
    weights = weights.repeat(tokens.shape[1] // context.shape[1], 1)  # (T, N): 1/t for j < t, else 0
    keyed = torch.einsum("hkl,btl->bhtk", key_query, tokens)  # Q_h z_t
    scores = keyed @ context[:, None].mT * weights  # (B, H, T, N)
    return torch.einsum("hij,bhtj->bti", value, scores @ context[:, None])


def _outer(tokens: torch.Tensor) -> torch.Tensor:
    return tokens.unsqueeze(-1) * tokens.unsqueeze(-2)


def _exclusive_moments(tokens: torch.Tensor) -> torch.Tensor:
    """(1/max(i, 1)) Σ_{j<i} z_j z_jᵀ for every i of tokens (B, N, D): (B, N, D, D)."""
    outer = _outer(tokens)  # shifted cumulative sum: position i never touches tokens >= i, not even in rounding
    exclusive = torch.cat([torch.zeros_like(outer[:, :1]), torch.cumsum(outer[:, :-1], dim=1)], dim=1)
    counts = torch.arange(tokens.shape[1], device=tokens.device).clamp(min=1).to(tokens.dtype)
    return exclusive / counts[:, None, None]
