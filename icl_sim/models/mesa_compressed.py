"""The compressed form of a trained one-layer causal linear attention over constructed tokens (s_t, s_{t−1}).

von Oswald et al. 2023b, "Uncovering mesa-optimization algorithms in Transformers" (arXiv 2309.05858), the
one-layer reverse-engineering: the authors (mtavit/transformers_mesa_optimization_paper,
``src/util/interpolation/interpol_helpers.py``, ``OneLayerRevAlg_Linear``) replace every d×d block of each
head's W_KᵀW_Q and P·W_V by the mean of its diagonal times I, which leaves a few scalars per head.  On the
``MesaTransformer`` layout (stream (s_t, s_{t−1}, slot), the slot 0 on input and read as the prediction) the
blocks that act are the 2×2 blocks of A_h = W_K,hᵀW_Q,h on (s_t, s_{t−1}) and the 1×2 blocks of B_h = P_h W_V,h
from (s_t, s_{t−1}) into the slot: 6 scalars per head, 12 for the authors' two heads.  The compressed layer
predicts at position t (e_i^(0) = s_i, e_i^(1) = s_{i−1}, s_{−1} = 0)

    ŝ_{t+1} = Σ_h Σ_{i≤t} (Σ_c b_{h,c} e_i^(c)) (Σ_{r,c'} a_{h,rc'} e_i^(r)·e_t^(c')),

which holds one GD step from 0 on Σ_i ‖s_i − Φ s_{i−1}‖², η Σ_{i≤t} s_i s_{i−1}ᵀ s_t, as the terms a_{10} b_0.
"""
from __future__ import annotations

import torch

from icl_sim.models.mesa import MesaTransformer


def _block_diagonal_means(matrix: torch.Tensor, rows: int, columns: int, dim: int) -> torch.Tensor:
    """(..., rows, columns) mean diagonals of the d×d blocks of the leading rows·d × columns·d corner of
    ``matrix`` (..., R, C)."""
    blocks = matrix[..., :rows * dim, :columns * dim].unflatten(-2, (rows, dim)).unflatten(-1, (columns, dim))
    return blocks.diagonal(dim1=-3, dim2=-1).mean(-1)


def compressed_weights(model: MesaTransformer) -> tuple[torch.Tensor, torch.Tensor]:
    """The scalars of a one-layer linear ``MesaTransformer``: a (H, 2, 2), block means of W_KᵀW_Q (row block: the
    key's part, column block: the query's), and b (H, 2), block means of P·W_V from (s_t, s_{t−1}) to the slot."""
    if model.config.layers != 1 or model.config.attention != "linear":
        raise ValueError(f"model must be a one-layer linear MesaTransformer, got {model.config.layers} layers of "
                         f"{model.config.attention!r}")
    dim = model.dim
    with torch.no_grad():
        key_query = model.key[0].mT @ model.query[0]  # (H, 3d, 3d): e_iᵀ A e_t is the score
        value_projection = model.projection[0, :, 2 * dim:] @ model.value[0]  # (H, d, 3d): into the slot
    return (_block_diagonal_means(key_query, 2, 2, dim),
            _block_diagonal_means(value_projection, 1, 2, dim)[:, 0])


def compressed_predictions(key_query: torch.Tensor, value: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
    """The compressed layer's prediction of s_{t+1} at every position, (B, N, d), from states ``xs`` (B, N, d)
    and the scalars of :func:`compressed_weights`."""
    key_query, value = key_query.to(xs.dtype), value.to(xs.dtype)
    parts = torch.stack([xs, torch.nn.functional.pad(xs, (0, 0, 1, 0))[:, :-1]], dim=1)  # (B, 2, N, d)
    inner = torch.einsum("brid,bctd->brcti", parts, parts)  # e_i^(r) · e_t^(c)
    scores = torch.einsum("hrc,brcti->bhti", key_query, inner).tril()  # i ≤ t
    values = torch.einsum("hc,bcid->bhid", value, parts)
    return torch.einsum("bhti,bhid->btd", scores, values)
