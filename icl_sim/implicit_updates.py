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

The query is the x token of point n (its learned position 2n), the context the n pairs before it; "context-free"
is that token alone.  :func:`update_trajectory` grows the context one example at a time for one query, Dherin et
al.'s implicit learning dynamics W_i = W_{i−1} + (ΔW_i − ΔW_{i−1}); :func:`fine_tuning_gradient` is the explicit
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
class BlockPatch:
    """One block's patch for a batch of queries: ``fc`` (B, 4E, E), the rank-1 update of the MLP's first matrix;
    ``steer`` (B, E), the attention output's change (the bias form); ``proj`` (B, E, 4E), its rank-1 update of
    the MLP's output matrix (the bias-free form)."""

    fc: torch.Tensor
    steer: torch.Tensor
    proj: torch.Tensor


def _rank_one(column: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    """column rowᵀ / ‖row‖², batched: the least-norm matrix that maps ``row`` to ``column``."""
    return column[:, :, None] * row[:, None, :] / row.pow(2).sum(-1)[:, None, None]


def _lone_attention(block: Block, residual: torch.Tensor) -> torch.Tensor:
    """The attention output of query tokens (..., E) that see only themselves."""
    width = residual.shape[-1]
    return block.attn(block.ln_1(residual).reshape(-1, 1, width)).reshape(residual.shape)


def _mlp(block: Block, inputs: torch.Tensor, patch: BlockPatch | None, form: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The MLP on normalised inputs (B, E) or (B, n, E), with prompt b's ``patch`` applied in ``form`` to its
    inputs, and its pre-activations (B, [n,] 4E)."""
    mlp = block.mlp
    pre = mlp.fc(inputs)
    if patch is not None:
        pre = pre + torch.einsum("boe,b...e->b...o", patch.fc, inputs)
    hidden = F.gelu(pre, approximate=mlp.approximate)
    out = mlp.proj(hidden)
    if patch is not None and form == "bias":
        out = out + patch.steer.reshape(patch.steer.shape[0], *[1] * (out.ndim - 2), -1)
    elif patch is not None:
        out = out + torch.einsum("beo,b...o->b...e", patch.proj, hidden)
    return out, pre


def context_free_block(block: Block, residual: torch.Tensor, patch: BlockPatch | None = None,
                       form: str = "bias") -> tuple[torch.Tensor, torch.Tensor]:
    """One block on lone query tokens (B, E), its MLP patched by ``patch``: the block's output and the MLP's
    pre-activations."""
    attended = residual + _lone_attention(block, residual)
    out, pre = _mlp(block, block.ln_2(attended), patch, form)
    return attended + out, pre


def query_tokens(model: GPT, queries: torch.Tensor, slot: int) -> torch.Tensor:
    """Query points (B, d) embedded as the x token of point ``slot``: (B, E)."""
    return model.embedding.queries(queries[:, None], slot)[:, 0]


def block_patches(model: GPT, xs: torch.Tensor, ys: torch.Tensor,
                  queries: torch.Tensor) -> tuple[list[BlockPatch], torch.Tensor]:
    """Every block's patch for queries (B, d) after the context (xs (B, n, d), ys (B, n)), and the model's
    in-context prediction (B,) for them.

    Block by block, the query's residual stream is the in-context one (which the patches of the blocks below
    reproduce without context); the block's patch maps the lone query's MLP input to its in-context input.
    """
    if xs.shape[1] == 0:
        raise ValueError("xs: the context needs at least one example")
    h, residual, patches = model.embedding(xs, ys), query_tokens(model, queries, xs.shape[1]), []
    for block in model.blocks:
        h, memory = block.with_memory(h)
        lone = _lone_attention(block, residual)
        in_context = block.attn.recall(block.ln_1(residual)[:, None], memory)[:, 0]
        alone, seen = block.ln_2(residual + lone), block.ln_2(residual + in_context)
        steer = in_context - lone
        fc = _rank_one((seen - alone) @ block.mlp.fc.weight.T, alone)
        hidden = F.gelu(block.mlp.fc(seen), approximate=block.mlp.approximate)
        patches.append(BlockPatch(fc, steer, _rank_one(steer, hidden)))
        residual = block.recall(residual[:, None], memory)[:, 0]
    return patches, model.head.read(residual)


def patched_prediction(model: GPT, queries: torch.Tensor, slot: int, patches: list[BlockPatch],
                       form: str = "bias") -> torch.Tensor:
    """The context-free model's prediction (B,) for queries (B, d) at point ``slot``, every block's MLP patched."""
    check_choice("form", form, FORMS)
    if len(patches) != len(model.blocks):
        raise ValueError(f"patches: one per block ({len(model.blocks)}), got {len(patches)}")
    residual = query_tokens(model, queries, slot)
    for block, patch in zip(model.blocks, patches):
        residual = context_free_block(block, residual, patch, form)[0]
    return model.head.read(residual)


def context_free_prediction(model: GPT, queries: torch.Tensor, slot: int) -> torch.Tensor:
    """The model's prediction (B,) for queries (B, d) at point ``slot`` with no context at all."""
    residual = query_tokens(model, queries, slot)
    for block in model.blocks:
        residual = context_free_block(block, residual)[0]
    return model.head.read(residual)


def update_trajectory(model: GPT, xs: torch.Tensor, ys: torch.Tensor,
                      queries: torch.Tensor) -> dict[str, torch.Tensor]:
    """Dherin et al.'s implicit dynamics for one query per prompt: the context grows one example at a time, the
    query following it at point i.  Returns, for i = 1 … n (xs (B, n, d)), ``norm`` (B, n, L): ‖ΔW_i‖_F of each
    block's first-matrix patch; ``step`` (B, n − 1, L): ‖ΔW_{i+1} − ΔW_i‖_F, the implicit update token by token;
    ``in_context`` and ``patched`` (B, n): the model's prediction after i examples and the patched context-free
    model's (both forms applied in turn: ``patched_output``)."""
    norms, steps, in_context, patched, patched_output, previous = [], [], [], [], [], None
    for count in range(1, xs.shape[1] + 1):
        patches, prediction = block_patches(model, xs[:, :count], ys[:, :count], queries)
        current = torch.stack([patch.fc for patch in patches], dim=1)
        norms.append(current.flatten(2).norm(dim=-1))
        if previous is not None:
            steps.append((current - previous).flatten(2).norm(dim=-1))
        previous = current
        in_context.append(prediction)
        patched.append(patched_prediction(model, queries, count, patches, "bias"))
        patched_output.append(patched_prediction(model, queries, count, patches, "output"))
    return {"norm": torch.stack(norms, 1), "step": torch.stack(steps, 1), "in_context": torch.stack(in_context, 1),
            "patched": torch.stack(patched, 1), "patched_output": torch.stack(patched_output, 1)}


def _first_matrix_patches(updates: list[torch.Tensor]) -> list[BlockPatch]:
    """Patches (bias form) that change each block's MLP first matrix by ``updates`` (B, 4E, E) and nothing else."""
    return [BlockPatch(update, update.new_zeros(update.shape[0], update.shape[2]), update.transpose(1, 2) * 0)
            for update in updates]


def fine_tuning_gradient(model: GPT, xs: torch.Tensor, ys: torch.Tensor,
                         updates: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Per prompt and block, the gradient (B, 4E, E) of the context-free model's squared error
    ½ Σ_j (f(x_j) − y_j)² on the context's examples with respect to the block's MLP first matrix, that matrix
    already changed by ``updates`` (per block, (B, 4E, E); None: unchanged).  Each x_j is its lone x token at point
    j: the example as the context-free model sees it."""
    patches = [None] * len(model.blocks) if updates is None else _first_matrix_patches(updates)
    with torch.enable_grad():
        residual, inputs, pres = model.embedding(xs, ys)[:, ::2], [], []
        for block, patch in zip(model.blocks, patches):
            attended = residual + _lone_attention(block, residual)
            normalised = block.ln_2(attended)
            out, pre = _mlp(block, normalised, patch, "bias")
            inputs.append(normalised.detach())
            pres.append(pre)
            residual = attended + out
        loss = 0.5 * (model.head.read(residual) - ys).pow(2).sum()
        grads = torch.autograd.grad(loss, pres)
    return [torch.einsum("bjo,bje->boe", grad, normalised) for grad, normalised in zip(grads, inputs)]


def explicit_fine_tuning(model: GPT, xs: torch.Tensor, ys: torch.Tensor, queries: torch.Tensor, lr: float,
                         steps: int) -> torch.Tensor:
    """The explicit baseline: the context-free model's MLP first matrices fine-tuned per prompt by ``steps`` steps
    of gradient descent at ``lr`` on the squared error over the context's examples (xs (B, n, d), ys (B, n)), then
    its prediction (B,) for queries (B, d) at point n."""
    check_int("steps", steps, 0)
    updates = [torch.zeros_like(block.mlp.fc.weight).expand(xs.shape[0], -1, -1) for block in model.blocks]
    for _ in range(steps):
        updates = [update - lr * grad for update, grad in zip(updates, fine_tuning_gradient(model, xs, ys, updates))]
    with torch.no_grad():
        return patched_prediction(model, queries, xs.shape[1], _first_matrix_patches(updates), "bias")
