"""The context of a ``gpt`` block as a rank-1 patch of its MLP (Dherin et al. 2025; Goldwaser et al. 2025).

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
one query token, Dherin et al.'s implicit learning dynamics W_i = W_{i−1} + (ΔW_i − ΔW_{i−1}); :func:`fine_tuning_gradient` is the explicit
counterpart, the gradient of the context-free model's squared error on the context's examples.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
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
