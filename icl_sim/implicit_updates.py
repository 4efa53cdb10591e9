"""The context of a transformer block as a rank-1 patch of its MLP (Dherin et al. 2025; Goldwaser et al. 2025):
icl-sim's ``gpt`` blocks and the modern block types of Goldwaser et al.

Dherin, Munn, Mazzawi, Wunder & Gonzalvo, "Learning without training: the implicit dynamics of in-context
learning" (arXiv 2507.16003, Thm. 2.2): a block whose MLP reads the attention output A through a first matrix W,
M(A) = f(W A + b), gives with a context C the output it gives without it once W becomes W + ΔW,

    ΔW = (W · Δa) A(x)ᵀ / ‖A(x)‖²,   Δa = A(C, x) − A(x),

a rank-1 matrix: W A(x) + ΔW A(x) = W A(C, x).  In icl-sim's pre-LN ``gpt`` block (h ↦ h' = h + attn(LN₁ h),
h' ↦ h' + mlp(LN₂ h')) the MLP reads LN₂(h'), so A(x) is the lone query's LN₂(h + attn(LN₁ h)) and Δa the change
of that input; the skip connection carries the attention's change δ = attn(C, x) − attn(x) past the MLP, which
the patch must add too: as a bias on the MLP's output (Dherin et al.'s steering vector for pre-LN stacks,
``form="bias"``) or, in the bias-free form of Goldwaser, Munn, Gonzalvo & Dherin, "Equivalence of context and
parameter updates in modern transformer blocks" (arXiv 2511.17864; output controllability), as a second rank-1
patch of the MLP's output matrix, δ gᵀ / ‖g‖² with g the MLP's hidden activation (``form="output"``).  Layer by
layer (Goldwaser et al.'s multi-layer construction) the query's residual stream without context then equals the
one with context at every block, so the patched context-free model predicts what the model predicts in context,
to rounding.

The query is the x token of a point (by default point n, its learned position 2n), the context the n pairs before
it; "context-free" is that token alone.  :func:`update_trajectory` grows the context one example at a time for
one query token, Dherin et al.'s implicit learning dynamics W_i = W_{i−1} + (ΔW_i − ΔW_{i−1});
:func:`fine_tuning_gradient` is the explicit counterpart, the gradient of the context-free model's squared error
on the context's examples.

Modern blocks (Goldwaser, Munn, Gonzalvo & Dherin, arXiv 2511.17864; read through its abstract and introduction
and a third-party audit that quotes its theorems).  Their Thm. 1 (Sec. 3.1): in a Gemma block, RMSNorm before and
after each sublayer and a gated MLP, the context is rank-1 patches of the gate and up projections, each
ΔW = W (z_C − z) zᵀ / ‖z‖² with z, z_C the pre-MLP RMSNorm of the lone and the in-context attention state, plus
a patch of the post-MLP RMSNorm's scale, Δs = (v_C − v) / f_C (f_C the in-context MLP output normalised without
its scale, nonzero in every coordinate), which absorbs the skip connection's change v_C − v.  Thm. 2 and
Algorithm 1 (Sec. 3.2): block by block, each patch computed from the patched stream the blocks below leave.
Their general form (Thm. 5, Defs. 3-4): a residual block y = v + g(f(u)) is patched exactly when its inner
function f is input-controllable (a linear map's rank-1 patch sends the lone input u to u_C: every input
projection, a gated MLP's gate and up, a mixture's router and every expert's gate and up) and its outer g
output-controllable (the skip's change δ = v_C − v absorbed by a bias, a rank-1 patch δ hᵀ / ‖h‖² of the output
matrix, an elementwise norm scale, or, in a mixture, a rank-1 patch (δ / S) h_eᵀ / ‖h_e‖² of each active expert's
output matrix, S the active gates' sum); in a parallel block (GPT-J) the MLP's input does not see the context and
only its output matrix is patched.  :data:`MODERN_BLOCKS` holds one block of each such form (small modules here,
not icl-sim models: nothing trains them), :func:`modern_patches` builds the patches block by block and
:func:`modern_patched` runs the lone query through the patched stack.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from icl_sim.models.gpt import GPT, Block
from icl_sim.validation import check_choice, check_int

#: where a patch puts the attention's change that the skip connection carries past the MLP
FORMS = ("bias", "output")


@dataclass(frozen=True)
class LowRank:
    """Per-prompt matrices kept as sums of outer products: Σ_k ``columns[:, k]`` ⊗ ``rows[:, k]``, columns (B, K, m),
    rows (B, K, n).  The implicit patch has K = 1; n explicit gradient steps on n examples have K ≤ n · steps."""

    columns: torch.Tensor
    rows: torch.Tensor

    def dense(self) -> torch.Tensor:
        """The matrices (B, m, n)."""
        return torch.einsum("bkm,bkn->bmn", self.columns, self.rows)

    def apply(self, vectors: torch.Tensor) -> torch.Tensor:
        """Each prompt's matrix times its vectors (B, [T,] n) -> (B, [T,] m)."""
        weights = torch.einsum("bkn,b...n->b...k", self.rows, vectors)
        return torch.einsum("bkm,b...k->b...m", self.columns, weights)

    def norm(self) -> torch.Tensor:
        """Frobenius norms (B,), from the factors' Gram matrices (no m × n matrix is formed)."""
        gram = (self.columns @ self.columns.transpose(1, 2)) * (self.rows @ self.rows.transpose(1, 2))
        return gram.sum((1, 2)).clamp_min(0).sqrt()

    def __sub__(self, other: "LowRank") -> "LowRank":
        return LowRank(torch.cat([self.columns, -other.columns], 1), torch.cat([self.rows, other.rows], 1))


def least_norm_map(column: torch.Tensor, row: torch.Tensor) -> LowRank:
    """column rowᵀ / ‖row‖², batched ((B, m), (B, n)): the least-norm matrix mapping ``row`` to ``column``."""
    return LowRank(column[:, None], (row / row.pow(2).sum(-1, keepdim=True))[:, None])


@dataclass(frozen=True)
class BlockPatch:
    """One block's patch for a batch of queries: ``first`` (B, 4E, E), the rank-1 update of the MLP's first matrix;
    ``steer`` (B, E), the attention output's change (added to the MLP's output in the bias form); ``output``
    (B, E, 4E), its rank-1 update of the MLP's output matrix (the bias-free form)."""

    first: LowRank
    steer: torch.Tensor
    output: LowRank


def _lone_attention(block: Block, residual: torch.Tensor) -> torch.Tensor:
    """The attention output of query tokens (..., E) that see only themselves."""
    width = residual.shape[-1]
    return block.attn(block.ln_1(residual).reshape(-1, 1, width)).reshape(residual.shape)


def _mlp(block: Block, inputs: torch.Tensor, first: LowRank | None = None, steer: torch.Tensor | None = None,
         output: LowRank | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The MLP on normalised inputs (B, [T,] E), prompt b's first matrix changed by ``first``, ``steer`` added to
    its output or its output matrix changed by ``output``; and its pre-activations (B, [T,] 4E)."""
    mlp = block.mlp
    pre = mlp.fc(inputs) + (0 if first is None else first.apply(inputs))
    hidden = F.gelu(pre, approximate=mlp.approximate)
    out = mlp.proj(hidden) + (0 if output is None else output.apply(hidden))
    if steer is not None:
        out = out + steer.reshape(steer.shape[0], *[1] * (out.ndim - 2), -1)
    return out, pre


def _block(block: Block, residual: torch.Tensor, **changes) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One block on lone query tokens (B, [T,] E), its MLP changed by ``changes`` (as :func:`_mlp`): the block's
    output, the MLP's normalised input and its pre-activations."""
    attended = residual + _lone_attention(block, residual)
    normalised = block.ln_2(attended)
    out, pre = _mlp(block, normalised, **changes)
    return attended + out, normalised, pre


def query_tokens(model: GPT, queries: torch.Tensor, slot: int) -> torch.Tensor:
    """Query points (B, d) embedded as the x token of point ``slot``: (B, E)."""
    return model.embedding.queries(queries[:, None], slot)[:, 0]


def block_patches(model: GPT, xs: torch.Tensor, ys: torch.Tensor, queries: torch.Tensor,
                  slot: int | None = None) -> tuple[list[BlockPatch], torch.Tensor]:
    """Every block's patch for queries (B, d) at point ``slot`` (default n, right after the context) seeing the
    context (xs (B, n, d), ys (B, n)), and the model's in-context prediction (B,) for them.

    Block by block, the query's residual stream is the in-context one (which the patches of the blocks below
    reproduce without context); the block's patch maps the lone query's MLP input to its in-context input.
    """
    if xs.shape[1] == 0:
        raise ValueError("xs: the context needs at least one example")
    slot = xs.shape[1] if slot is None else slot
    if slot < xs.shape[1]:
        raise ValueError(f"slot must be at least the context's {xs.shape[1]} points, got {slot}")
    h, residual, patches = model.embedding(xs, ys), query_tokens(model, queries, slot), []
    for block in model.blocks:
        h, memory = block.with_memory(h)
        lone = _lone_attention(block, residual)
        in_context = block.attn.recall(block.ln_1(residual)[:, None], memory)[:, 0]
        alone, seen = block.ln_2(residual + lone), block.ln_2(residual + in_context)
        hidden = F.gelu(block.mlp.fc(seen), approximate=block.mlp.approximate)
        steer = in_context - lone
        patches.append(BlockPatch(least_norm_map((seen - alone) @ block.mlp.fc.weight.T, alone), steer,
                                  least_norm_map(steer, hidden)))
        residual = block.recall(residual[:, None], memory)[:, 0]
    return patches, model.head.read(residual)


def patched_prediction(model: GPT, queries: torch.Tensor, slot: int, patches: list[BlockPatch],
                       form: str = "bias") -> torch.Tensor:
    """The context-free model's prediction (B,) for queries (B, d) at point ``slot``, every block's MLP patched in
    ``form``: ``bias`` (first matrix and steering vector) or ``output`` (first and output matrices)."""
    check_choice("form", form, FORMS)
    if len(patches) != len(model.blocks):
        raise ValueError(f"patches: one per block ({len(model.blocks)}), got {len(patches)}")
    residual = query_tokens(model, queries, slot)
    for block, patch in zip(model.blocks, patches):
        extra = {"steer": patch.steer} if form == "bias" else {"output": patch.output}
        residual = _block(block, residual, first=patch.first, **extra)[0]
    return model.head.read(residual)


def context_free_prediction(model: GPT, queries: torch.Tensor, slot: int,
                            first: list[LowRank] | None = None) -> torch.Tensor:
    """The model's prediction (B,) for queries (B, d) at point ``slot`` with no context at all, each block's MLP
    first matrix changed by ``first`` (None: unchanged)."""
    residual = query_tokens(model, queries, slot)
    for index, block in enumerate(model.blocks):
        residual = _block(block, residual, first=None if first is None else first[index])[0]
    return model.head.read(residual)


def update_trajectory(model: GPT, xs: torch.Tensor, ys: torch.Tensor,
                      queries: torch.Tensor) -> dict[str, torch.Tensor]:
    """Dherin et al.'s implicit dynamics for one query per prompt: the context grows one example at a time,
    x_1 … x_i at their points, while the query stays the same token, the x token of point n (xs (B, n, d)), so that
    the context-free A(x) of every patch is the same.  Returns, for i = 1 … n, ``norm`` (B, n, L): ‖ΔW_i‖_F of each
    block's first-matrix patch; ``step`` (B, n − 1, L): ‖ΔW_{i+1} − ΔW_i‖_F, the implicit update token by token;
    ``in_context`` and ``patched`` (B, n): the model's prediction after i examples and the patched context-free
    model's (``patched_output``: the bias-free form)."""
    slot = xs.shape[1]
    norms, steps, in_context, patched, patched_output, previous = [], [], [], [], [], None
    for count in range(1, slot + 1):
        patches, prediction = block_patches(model, xs[:, :count], ys[:, :count], queries, slot)
        norms.append(torch.stack([patch.first.norm() for patch in patches], 1))
        if previous is not None:
            steps.append(torch.stack([(now.first - then.first).norm() for now, then in zip(patches, previous)], 1))
        previous = patches
        in_context.append(prediction)
        patched.append(patched_prediction(model, queries, slot, patches, "bias"))
        patched_output.append(patched_prediction(model, queries, slot, patches, "output"))
    return {"norm": torch.stack(norms, 1), "step": torch.stack(steps, 1), "in_context": torch.stack(in_context, 1),
            "patched": torch.stack(patched, 1), "patched_output": torch.stack(patched_output, 1)}


def fine_tuning_gradient(model: GPT, xs: torch.Tensor, ys: torch.Tensor,
                         first: list[LowRank] | None = None) -> list[LowRank]:
    """Per prompt and block, the gradient of the context-free model's squared error ½ Σ_j (f(x_j) − y_j)² on the
    context's examples (xs (B, n, d), ys (B, n)) with respect to the block's MLP first matrix, that matrix already
    changed by ``first`` (None: unchanged): Σ_j δ_j u_jᵀ, δ_j the error's gradient at the pre-activations and u_j
    the MLP's input, as n rank-1 terms.  Each x_j is its lone x token at point j: the example as the context-free
    model sees it.  One explicit gradient-descent step of fine-tuning moves W along its negative."""
    with torch.enable_grad():
        residual, inputs, pres = model.embedding(xs, ys)[:, ::2], [], []
        for index, block in enumerate(model.blocks):
            residual, normalised, pre = _block(block, residual, first=None if first is None else first[index])
            inputs.append(normalised.detach())
            pres.append(pre)
        loss = 0.5 * (model.head.read(residual) - ys).pow(2).sum()
        grads = torch.autograd.grad(loss, pres)
    return [LowRank(grad, normalised) for grad, normalised in zip(grads, inputs)]


def explicit_fine_tuning(model: GPT, xs: torch.Tensor, ys: torch.Tensor, queries: torch.Tensor, lr: float,
                         steps: int, slot: int | None = None) -> torch.Tensor:
    """The explicit baseline: the context-free model's MLP first matrices fine-tuned per prompt by ``steps`` steps
    of gradient descent at ``lr`` on the squared error over the context's examples (xs (B, n, d), ys (B, n)), then
    its prediction (B,) for queries (B, d) at point ``slot`` (default n)."""
    check_int("steps", steps, 0)
    first = [LowRank(xs.new_zeros(xs.shape[0], 0, block.mlp.fc.out_features),
                     xs.new_zeros(xs.shape[0], 0, block.mlp.fc.in_features)) for block in model.blocks]
    for _ in range(steps):
        gradients = fine_tuning_gradient(model, xs, ys, first)
        first = [LowRank(torch.cat([update.columns, -lr * grad.columns], 1), torch.cat([update.rows, grad.rows], 1))
                 for update, grad in zip(first, gradients)]
    with torch.no_grad():
        return context_free_prediction(model, queries, xs.shape[1] if slot is None else slot, first)


#: Goldwaser et al.'s block forms (Table 1), each as (norm, MLP, layout): ``gemma`` RMSNorm before and after each
#: sublayer and a GeGLU MLP (Thm. 1); ``llama`` (also Mistral, Qwen) pre-RMSNorm and SwiGLU, no biases; ``mixtral``
#: pre-RMSNorm and a top-2 mixture of 4 SwiGLU experts; ``gpt-j`` (also Falcon) attention and MLP in parallel on
#: one LayerNorm; ``post-ln`` the original transformer's LayerNorm after each residual sum.
MODERN_BLOCKS = {"gemma": ("rms", "geglu", "sandwich"), "llama": ("rms", "swiglu", "pre"),
                 "mixtral": ("rms", "moe", "pre"), "gpt-j": ("layer", "gelu", "parallel"),
                 "post-ln": ("layer", "gelu", "post")}
#: the activation of each MLP kind (the mixture's experts are SwiGLU)
_ACTIVATIONS = {"gelu": F.gelu, "geglu": F.gelu, "swiglu": F.silu, "moe": F.silu}


class RMSNorm(nn.Module):
    """x / rms(x) ⊙ scale (Zhang & Sennrich 2019), the norm of Gemma, Llama and Mixtral."""

    def __init__(self, width: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def unscaled(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        """``scale`` (B, E), per prompt, replaces the learned one (a patch of it) on its tokens x (B, [T,] E)."""
        if scale is None:
            return self.unscaled(x) * self.weight
        return self.unscaled(x) * scale.reshape(scale.shape[0], *[1] * (x.ndim - 2), -1)


def _linear(layer: nn.Linear, x: torch.Tensor, change: LowRank | None) -> torch.Tensor:
    """``layer`` on x (B, [T,] n), its matrix changed per prompt by ``change`` (None: unchanged)."""
    return layer(x) + (0 if change is None else change.apply(x))


class ModernMLP(nn.Module):
    """A block's MLP of ``kind``: ``gelu`` down(gelu(fc u)); ``geglu`` / ``swiglu`` down(act(gate u) ⊙ up u);
    ``moe`` Σ_e w_e(u) expert_e(u) over SwiGLU experts, w the router's softmax kept on its ``top_k`` largest and
    renormalised (Mixtral).  ``changes`` maps a matrix's name (``fc``, ``gate``, ``up``, ``down``, ``router``,
    ``experts.E.gate`` ...) to its per-prompt change."""

    def __init__(self, width: int, hidden: int, kind: str, bias: bool, experts: int = 4, top_k: int = 2):
        super().__init__()
        check_choice("kind", kind, _ACTIVATIONS)
        self.kind, self.top_k = kind, top_k
        if kind == "moe":
            self.router = nn.Linear(width, experts, bias=False)
            self.experts = nn.ModuleList(ModernMLP(width, hidden, "swiglu", bias) for _ in range(experts))
            return
        names = ("fc",) if kind == "gelu" else ("gate", "up")
        for name in names:
            setattr(self, name, nn.Linear(width, hidden, bias=bias))
        self.down = nn.Linear(hidden, width, bias=bias)

    def inputs(self) -> dict[str, nn.Linear]:
        """The matrices that read the MLP's input, by name."""
        if self.kind == "moe":
            return {"router": self.router, **{f"experts.{e}.{name}": layer for e, expert in enumerate(self.experts)
                                              for name, layer in expert.inputs().items()}}
        return {"fc": self.fc} if self.kind == "gelu" else {"gate": self.gate, "up": self.up}

    def hidden(self, u: torch.Tensor, changes: dict, prefix: str = "") -> torch.Tensor:
        """A dense MLP's hidden activation, the output matrix's input."""
        act = _ACTIVATIONS[self.kind]
        if self.kind == "gelu":
            return act(_linear(self.fc, u, changes.get(prefix + "fc")))
        gate = act(_linear(self.gate, u, changes.get(prefix + "gate")))
        return gate * _linear(self.up, u, changes.get(prefix + "up"))

    def gates(self, u: torch.Tensor, changes: dict) -> torch.Tensor:
        """A mixture's expert weights (B, [T,] experts): zero but on the top-k, which sum to one."""
        probabilities = torch.softmax(_linear(self.router, u, changes.get("router")), -1)
        kept = probabilities.topk(self.top_k, -1)
        weights = torch.zeros_like(probabilities).scatter(-1, kept.indices, kept.values)
        return weights / weights.sum(-1, keepdim=True)

    def forward(self, u: torch.Tensor, changes: dict | None = None, prefix: str = "") -> torch.Tensor:
        changes = changes or {}
        if self.kind == "moe":
            weights = self.gates(u, changes)
            return sum(weights[..., e:e + 1] * expert(u, changes, f"experts.{e}.")
                       for e, expert in enumerate(self.experts))
        return _linear(self.down, self.hidden(u, changes, prefix), changes.get(prefix + "down"))


@dataclass(frozen=True)
class ModernPatch:
    """One modern block's patch for a batch of queries: ``matrices``, a matrix's name (as :class:`ModernMLP`) ->
    its rank-1 change (B, m, n); ``scale`` (B, E), the post-MLP RMSNorm's patched scale (``gemma``), or None."""

    matrices: dict
    scale: torch.Tensor | None = None


class ModernBlock(nn.Module):
    """A block of one of :data:`MODERN_BLOCKS`' forms: causal multi-head softmax attention (no positions: the
    tokens carry them) and a :class:`ModernMLP`, arranged by ``layout``:

    * ``pre``: v = h + attn(N₁ h), y = v + mlp(N₂ v);
    * ``sandwich`` (Gemma): v = h + P₁(attn(N₁ h)), y = v + P₂(mlp(N₂ v)), P the post-sublayer RMSNorms;
    * ``parallel`` (GPT-J): v = h + attn(N₁ h), y = v + mlp(N₁ h);
    * ``post``: v = N₁(h + attn(h)), y = N₂(v + mlp(v)).

    v is the stream the MLP's output joins (the skip), u the MLP's input (:meth:`states`)."""

    def __init__(self, kind: str, width: int, heads: int):
        super().__init__()
        check_choice("kind", kind, MODERN_BLOCKS)
        norm, mlp, self.layout = MODERN_BLOCKS[kind]
        bias = norm == "layer"  # the RMSNorm families have no biases
        make = (lambda: RMSNorm(width)) if norm == "rms" else (lambda: nn.LayerNorm(width))
        self.norm_1 = make()
        if self.layout != "parallel":  # a parallel block's attention and MLP read one norm
            self.norm_2 = make()
        if self.layout == "sandwich":
            self.post_1, self.post_2 = RMSNorm(width), RMSNorm(width)
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.out = nn.Linear(width, width, bias=bias)
        self.mlp = ModernMLP(width, 4 * width, mlp, bias)

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        """Causal softmax attention over tokens (B, T, E)."""
        batch, length, width = h.shape
        q, k, v = (part.reshape(batch, length, self.heads, -1).transpose(1, 2) for part in self.qkv(h).split(width, -1))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        mask = torch.ones(length, length, dtype=torch.bool, device=h.device).triu(1)
        mixed = scores.masked_fill(mask, -math.inf).softmax(-1) @ v
        return self.out(mixed.transpose(1, 2).reshape(batch, length, width))

    def states(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """At every token of h (B, T, E): the skip stream v and the MLP's input u."""
        if self.layout == "post":
            v = self.norm_1(h + self.attention(h))
            return v, v
        attended = self.attention(self.norm_1(h))
        if self.layout == "parallel":
            return h + attended, self.norm_1(h)
        v = h + (self.post_1(attended) if self.layout == "sandwich" else attended)
        return v, self.norm_2(v)

    def forward(self, h: torch.Tensor, patch: ModernPatch | None = None) -> torch.Tensor:
        """The block on tokens h (B, T, E), its MLP (and post-MLP norm) patched per prompt by ``patch``."""
        patch = patch or ModernPatch({})
        v, u = self.states(h)
        out = self.mlp(u, patch.matrices)
        if self.layout == "post":
            return self.norm_2(v + out)
        return v + (self.post_2(out, patch.scale) if self.layout == "sandwich" else out)

    def patch(self, lone: tuple[torch.Tensor, torch.Tensor], seen: tuple[torch.Tensor, torch.Tensor]) -> ModernPatch:
        """The patch that makes the block on the lone query, states (v, u) (B, E), give its output with the
        context, states (v_C, u_C): rank-1 input patches W (u_C − u) uᵀ / ‖u‖² (none in a parallel block, whose
        MLP input is the same), then the skip's change δ = v_C − v absorbed by the output (Goldwaser et al.)."""
        (v, u), (v_seen, u_seen) = lone, seen
        mlp, matrices = self.mlp, {}
        if self.layout != "parallel":
            matrices = {name: least_norm_map((u_seen - u) @ layer.weight.T, u) for name, layer in mlp.inputs().items()}
        steer = v_seen - v
        if self.layout == "sandwich":  # Thm. 1: the post-MLP RMSNorm's scale, coordinate by coordinate
            normalised = self.post_2.unscaled(mlp(u_seen))
            return ModernPatch(matrices, self.post_2.weight + steer / normalised)
        if mlp.kind == "moe":  # each active expert's output matrix carries δ / S, S the active gates' sum
            weights = mlp.gates(u_seen, {})
            for e, expert in enumerate(mlp.experts):
                column = steer * (weights[:, e:e + 1] > 0) / weights.sum(-1, keepdim=True)
                matrices[f"experts.{e}.down"] = least_norm_map(column, expert.hidden(u_seen, {}))
            return ModernPatch(matrices)
        matrices["down"] = least_norm_map(steer, mlp.hidden(u_seen, {}))
        return ModernPatch(matrices)


class ModernStack(nn.Module):
    """``layers`` :class:`ModernBlock` of one kind on given tokens (B, T, E); its output is the last block's."""

    def __init__(self, kind: str, width: int, layers: int = 2, heads: int = 2):
        super().__init__()
        check_int("layers", layers, 1)
        self.blocks = nn.ModuleList(ModernBlock(kind, width, heads) for _ in range(layers))

    def forward(self, h: torch.Tensor, patches: list[ModernPatch] | None = None) -> torch.Tensor:
        for index, block in enumerate(self.blocks):
            h = block(h, None if patches is None else patches[index])
        return h


def random_modern_stack(kind: str, width: int, generator: torch.Generator, layers: int = 2,
                        heads: int = 2) -> ModernStack:
    """A float64 :class:`ModernStack` with random weights from ``generator``: matrices N(0, 1 / fan-in), biases
    N(0, 0.1²), norm scales 1 + N(0, 0.1²) (learned-looking, not the identity)."""
    stack = ModernStack(kind, width, layers, heads).double()
    with torch.no_grad():
        for name, parameter in stack.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            if parameter.ndim == 2:
                parameter.copy_(noise / math.sqrt(parameter.shape[1]))
            else:  # a vector is a norm's scale (its "weight") or a bias
                parameter.copy_(0.1 * noise + (1.0 if name.endswith("weight") else 0.0))
    return stack.eval()


def modern_patches(stack: ModernStack, context: torch.Tensor,
                   query: torch.Tensor) -> tuple[list[ModernPatch], torch.Tensor]:
    """Every block's patch for query tokens (B, E) after context tokens (B, T, E), and the stack's in-context
    output (B, E) at the query.  Goldwaser et al.'s Algorithm 1: each block's patch is computed from the stream the
    patched blocks below leave for the lone query, so rounding does not accumulate."""
    h, residual, patches = torch.cat([context, query[:, None]], 1), query[:, None], []
    for block in stack.blocks:
        seen = tuple(state[:, -1] for state in block.states(h))
        patches.append(block.patch(tuple(state[:, 0] for state in block.states(residual)), seen))
        residual, h = block(residual, patches[-1]), block(h)
    return patches, h[:, -1]


def modern_patched(stack: ModernStack, query: torch.Tensor, patches: list[ModernPatch] | None) -> torch.Tensor:
    """The stack's output (B, E) on the lone query tokens (B, E), every block patched (None: unpatched)."""
    return stack(query[:, None], patches)[:, 0]
