"""Hand-built LSA weights that *are* an algorithm: L layers = L steps of (preconditioned) GD.

von Oswald et al. 2023 ("Transformers learn in-context by gradient descent", Prop. 1)
and Ahn et al. 2023 ("Transformers learn to implement preconditioned gradient
descent", Lemma 1 / Thm. 3).  In the icl-sim LSA (``icl_sim.models.lsa``) every
token z_t = (x_t, y_t) is updated by z_t ← z_t + P Γ Q z_t with
Γ = (1/n) Σ_{j<n} z_j z_jᵀ over the n context tokens, and ŷ = −(query's y slot).

Take, in every layer, P = −η e_{d+1} e_{d+1}ᵀ and Q = [[Aᵀ, 0], [0, 0]] (A the
d×d preconditioner).  Then x slots never change, and the y slot of any token t gains

    e_{d+1}ᵀ P Γ Q z_t = −η (1/n) Σ_j y_j x_jᵀ Aᵀ x_t = −η x_tᵀ A (1/n) Σ_j y_j x_j.

Invariant (induction over layers): after ℓ layers, with w_ℓ the ℓ-th iterate of

    w ← w − η A (1/n) Σ_j (wᵀx_j − y_j) x_j,   w_0 = 0,

the context tokens hold the residuals r_j = y_j − x_jᵀ w_ℓ and the query holds
−x_qᵀ w_ℓ.  Indeed the next layer adds −η x_tᵀ A (1/n) Σ_j r_j x_j to each y slot,
and A (1/n) Σ_j r_j x_j = −A ∇L(w_ℓ) = (w_{ℓ+1} − w_ℓ)/η, so r_j becomes
y_j − x_jᵀ w_{ℓ+1} and the query −x_qᵀ w_{ℓ+1}.  The prediction after layer ℓ is
therefore x_qᵀ w_ℓ; with one layer and A = I it is (η/n) Σ_j y_j x_jᵀ x_q, i.e.
``GD(1, η)`` of ``icl_sim.theory``.  (The query never enters Γ, so its y slot
only accumulates; context tokens see their own residuals.)
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float, check_int


def gd_lsa_weights(dim: int, steps: int, lr: float,
                   preconditioner: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """LSA weights for ``steps`` steps of GD with step ``lr`` (and preconditioner A) from w = 0.

    Returns ``{"value": (L, 1, d+1, d+1), "key_query": (L, 1, d+1, d+1)}`` in float64,
    L = ``steps``: value = −lr·e_{d+1}e_{d+1}ᵀ, key_query = [[Aᵀ, 0], [0, 0]] in every layer.
    The update is w ← w − lr·A·(1/n) Σ_j (wᵀx_j − y_j) x_j (A = I when ``preconditioner``
    is None), so one step gives w = (lr/n)·A·Σ_j y_j x_j.
    """
    check_int("dim", dim, 1)
    check_int("steps", steps, 1)
    check_float("lr", lr)
    if preconditioner is None:
        matrix = torch.eye(dim, dtype=torch.float64)
    else:
        matrix = torch.as_tensor(preconditioner).detach().to(device="cpu", dtype=torch.float64)
        if matrix.shape != (dim, dim):
            raise ValueError(f"preconditioner must have shape ({dim}, {dim}), got {tuple(matrix.shape)}")
        if not bool(torch.isfinite(matrix).all()):
            raise ValueError("preconditioner must be finite")
    size = dim + 1
    value = torch.zeros(steps, 1, size, size, dtype=torch.float64)
    value[:, 0, dim, dim] = -lr
    key_query = torch.zeros(steps, 1, size, size, dtype=torch.float64)
    key_query[:, 0, :dim, :dim] = matrix.T
    return {"value": value, "key_query": key_query}


def gd_plus_plus_lsa_weights(dim: int, steps: int, lr: float, gamma: float) -> dict[str, torch.Tensor]:
    """LSA weights for ``steps`` steps of GD++ (``icl_sim.theory.GDPlusPlus``) with step ``lr`` and
    curvature correction ``gamma`` (von Oswald et al. 2023, Sec. 4).

    Every layer has value = [[−γ I, 0], [0, −lr]] and key_query = [[I, 0], [0, 0]], so a token
    z = (x, r) becomes (x − γ Ĝ x, r − lr·b̂ᵀx) with Ĝ, b̂ the context's (1/n)-moments: both of
    GD++'s updates at once.  Shape and dtype as :func:`gd_lsa_weights`; ``gamma = 0`` is GD.
    """
    check_float("gamma", gamma)
    weights = gd_lsa_weights(dim, steps, lr)
    weights["value"][:, 0, :dim, :dim] = -gamma * torch.eye(dim, dtype=torch.float64)
    return weights


__all__ = ["gd_lsa_weights", "gd_plus_plus_lsa_weights"]
