"""Compare a linear model's weights with a hand-built construction, up to the model's symmetries.

von Oswald et al. 2023 ("Transformers learn in-context by gradient descent", §3, Fig. 2)
compare trained LSA weights with the GD construction; Ahn et al. 2023 ("Transformers
learn to implement preconditioned gradient descent", Thm. 1 / Fig. 1) describe the
learned structure.  Raw P, Q cannot be compared entry by entry: one layer of the
icl-sim LSA (``icl_sim.models.lsa``) updates a token z by

    Δz_i = Σ_h Σ_{a,b,c} P_h[i, a] Γ[a, b] Q_h[b, c] z_c  =  Σ_{a,b,c} W[i, a, b, c] Γ[a, b] z_c,
    W[i, a, b, c] = Σ_h P_h[i, a] Q_h[b, c],

so P → cP, Q → Q/c (per layer and head) and any permutation of the heads leave the layer
unchanged.  Γ = (1/n) Σ_j z_j z_jᵀ is symmetric and ranges over all symmetric matrices, so
the layer's function is determined by, and determines, the part of W symmetric in (a, b):

    W_sym[i, a, b, c] = (W[i, a, b, c] + W[i, b, a, c]) / 2          ("full", (D, D, D, D), D = d + k)

:func:`effective_layer_maps` returns, per layer, that tensor and two slices of it:

* ``label`` = W_sym[d:, ...], (k, D, D, D): how the label slots are updated (all that a
  one-layer model's prediction ŷ = −(query's label slots) depends on);
* ``label_feature`` = 2 W_sym[d:, d:, :d, :d], (k, k, d, d), squeezed to (d, d) for scalar
  labels: the coefficient of h_b x_c, h = Γ_{yx} = (1/n) Σ_j y_j x_j the context's
  label/feature moment and x the token's features, in the label update.  With P's other
  rows and Q's other blocks zero it is −P_yy Q_xx.  For scalar labels ``preconditioner`` =
  −label_featureᵀ, so that the label-feature part of a layer's prediction is x_qᵀ B h; the
  construction P = −η e eᵀ, Q = [[Aᵀ, 0], [0, 0]] (``icl_sim.theory.gd_lsa_weights``)
  gives B = ηA.

:func:`compare_to_construction` compares each of these per layer with a construction's:
``cosine`` between the flattened maps (invariant to the symmetries above and to the overall
scale, so a step size need not be known), ``scale`` = ⟨m, c⟩/⟨c, c⟩ the best scalar fit of
the model's map m by the construction's c (for the GD construction built with lr = 1, the
learned step size), ``relative_residual`` = ‖m − scale·c‖/‖m‖, and ``support_fraction`` =
the fraction of ‖m‖² on the entries where the construction is non-zero.
"""
from __future__ import annotations

import math
from typing import Mapping

import torch

MAPS = ("full", "label", "label_feature")


def _weights(source, target_dim: int) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """(P, Q) as float64 (L, H, D, D) on the CPU, with (d, k), from a model or a ``{"value", "key_query"}`` dict."""
    if isinstance(source, Mapping):
        if "value" not in source or "key_query" not in source:
            raise ValueError(f"weights must hold 'value' and 'key_query' tensors, got keys {sorted(source)}")
        value, key_query = source["value"], source["key_query"]
        dim = None
    elif callable(getattr(source, "attention_weights", None)):
        value, key_query = source.attention_weights()
        dim, target_dim = source.dim, source.target_dim
    else:
        raise ValueError("model must be a linear attention model with attention_weights() (e.g. 'lsa') "
                         f"or a dict of 'value' and 'key_query' weights, got {type(source).__name__}")
    value = torch.as_tensor(value).detach().to(device="cpu", dtype=torch.float64)
    key_query = torch.as_tensor(key_query).detach().to(device="cpu", dtype=torch.float64)
    if value.ndim != 4 or value.shape != key_query.shape or value.shape[-1] != value.shape[-2]:
        raise ValueError("value and key_query must both be (layers, heads, D, D), got "
                         f"{tuple(value.shape)} and {tuple(key_query.shape)}")
    width = value.shape[-1]
    if dim is None:
        dim = width - target_dim
    if dim < 1 or dim + target_dim != width:
        raise ValueError(f"target_dim must leave at least one feature slot in width {width}, got {target_dim}")
    return value, key_query, dim, target_dim


def effective_layer_maps(model, target_dim: int = 1) -> list[dict]:
    """Per layer: ``{"layer", "full", "label", "label_feature"[, "preconditioner"]}`` (see the module docstring).

    ``model`` is an LSA (any parameterisation; only the attention weights are read, so for the
    LayerNorm / MLP variants the maps describe the attention alone) or a weights dict such as
    :func:`icl_sim.theory.gd_lsa_weights` returns (``target_dim`` then gives k).  float64, CPU.
    """
    value, key_query, dim, k = _weights(model, target_dim)
    products = torch.einsum("lhia,lhbc->liabc", value, key_query)  # Σ_h P_h[i, a] Q_h[b, c]
    symmetric = (products + products.transpose(2, 3)) / 2
    maps = []
    for layer, full in enumerate(symmetric, start=1):
        label_feature = 2 * full[dim:, dim:, :dim, :dim]
        entry = {"layer": layer, "full": full, "label": full[dim:]}
        if k == 1:
            entry["label_feature"] = label_feature[0, 0]
            entry["preconditioner"] = -label_feature[0, 0].T
        else:
            entry["label_feature"] = label_feature
        maps.append(entry)
    return maps


def similarity(model_map: torch.Tensor, construction_map: torch.Tensor, tolerance: float = 1e-12) -> dict:
    """``cosine``, ``scale``, ``relative_residual`` and ``support_fraction`` of one map against another."""
    m, c = model_map.flatten().to(torch.float64), construction_map.flatten().to(torch.float64)
    if m.shape != c.shape:
        raise ValueError(f"maps must have the same shape, got {tuple(model_map.shape)} "
                         f"and {tuple(construction_map.shape)}")
    m_norm, c_norm = float(m.norm()), float(c.norm())
    inner = float(m @ c)
    cosine = max(-1.0, min(1.0, inner / (m_norm * c_norm))) if m_norm > 0 and c_norm > 0 else 0.0
    scale = inner / c_norm**2 if c_norm > 0 else math.nan
    residual = float((m - scale * c).norm()) / m_norm if m_norm > 0 and c_norm > 0 else math.nan
    support = c.abs() > tolerance * float(c.abs().max()) if c_norm > 0 else torch.zeros_like(c, dtype=torch.bool)
    fraction = min(1.0, float(m[support].square().sum()) / m_norm**2) if m_norm > 0 else math.nan
    return {"cosine": cosine, "scale": scale, "relative_residual": residual, "support_fraction": fraction}


def compare_to_construction(model, construction, maps=MAPS) -> list[dict]:
    """Records ``{layer, map, cosine, scale, relative_residual, support_fraction}`` per layer and map.

    ``construction`` is a weights dict (e.g. ``gd_lsa_weights(d, L, lr, A)``) or a model with the
    same number of layers and the same token width as ``model``.
    """
    unknown = [name for name in maps if name not in MAPS]
    if unknown or not maps:
        raise ValueError(f"maps must be a non-empty selection of {', '.join(MAPS)}; got {list(maps)}")
    target_dim = getattr(model, "target_dim", 1)
    ours, theirs = effective_layer_maps(model, target_dim), effective_layer_maps(construction, target_dim)
    if len(ours) != len(theirs):
        raise ValueError(f"construction must have as many layers as the model ({len(ours)}), got {len(theirs)}")
    if ours[0]["full"].shape != theirs[0]["full"].shape:
        raise ValueError(f"construction must have the model's token width {ours[0]['full'].shape[0]}, "
                         f"got {theirs[0]['full'].shape[0]}")
    return [{"layer": mine["layer"], "map": name, **similarity(mine[name], other[name])}
            for mine, other in zip(ours, theirs) for name in maps]


__all__ = ["MAPS", "compare_to_construction", "effective_layer_maps", "similarity"]
