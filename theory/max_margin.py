"""Hard-margin SVMs: the directions that gradient descent on separable data converges to.

* :func:`attention_svm` is Tarzanagh, Li, Thrampoulidis & Oymak's Att-SVM ("Transformers as Support Vector
  Machines", 2023, eq. (Att-SVM)): the key-query matrix of least norm that scores each prompt's selected token
  above every other by a margin of one,

      W^mm = argmin ‖W‖  subject to  (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1  for every t ≠ α_i and every prompt i,

  for a softmax attention layer whose scores are softmax(X_i W z_i) (token t scores x_{i,t}ᵀ W z_i).  With the
  Frobenius norm it is the limit direction of gradient descent on W; with the nuclear norm (Att-SVM⋆), of
  gradient descent on a factorisation W = K Qᵀ.
* :func:`max_margin_classifier` is the hard-margin linear classifier w = argmin ‖w‖ subject to y_i wᵀx_i ≥ 1,
  the limit direction of gradient descent on the logistic or exponential loss of separable data (Soudry et al.
  2018).

Both are convex programs solved by cvxpy with the Clarabel interior-point solver (the Frobenius and Euclidean
problems are quadratic programs, the nuclear-norm one a semidefinite program); cvxpy is imported when they are
called.  Inputs are torch tensors; solutions come back as float64 tensors.
"""
from __future__ import annotations

import numpy as np
import torch

from icl_sim.theory.algorithms import float64_tensor

#: the norms of :func:`attention_svm`: Frobenius (W trained directly) or nuclear (W = K Qᵀ trained)
SVM_NORMS = ("fro", "nuc")


def attention_svm(tokens: torch.Tensor, queries: torch.Tensor, selected: torch.Tensor,
                  norm: str = "fro") -> torch.Tensor:
    """Att-SVM's W^mm (d × d) for prompts of ``tokens`` (n, T, d) with queries (n, d) whose selected tokens are
    ``selected`` (n,) indices; ``norm`` "fro" or "nuc".  Raises ValueError naming the prompts when no W
    separates them (a selected token that another token of its prompt equals, say)."""
    if norm not in SVM_NORMS:
        raise ValueError(f"norm must be one of {', '.join(SVM_NORMS)}; got {norm!r}")
    tokens = float64_tensor("tokens", tokens, 3).cpu()
    queries = float64_tensor("queries", queries, 2).cpu()
    selected = torch.as_tensor(selected).cpu()
    n, count, dim = tokens.shape
    if queries.shape != (n, dim):
        raise ValueError(f"queries must have shape ({n}, {dim}) to match tokens {tuple(tokens.shape)}; "
                         f"got {tuple(queries.shape)}")
    if selected.shape != (n,) or selected.dtype.is_floating_point or not bool(
            ((selected >= 0) & (selected < count)).all()):
        raise ValueError(f"selected must hold one token index in [0, {count}) per prompt, shape ({n},)")
    if count < 2:
        raise ValueError(f"tokens must hold at least 2 tokens per prompt to select one; got {count}")
    chosen = tokens[torch.arange(n), selected]  # (n, d)
    others = torch.ones(n, count, dtype=torch.bool)
    others[torch.arange(n), selected] = False
    gaps = (chosen[:, None, :] - tokens)[others].reshape(n, count - 1, dim)  # x_α − x_t, (n, T − 1, d)
    # (x_α − x_t)ᵀ W z = ⟨W, (x_α − x_t) zᵀ⟩: one row of the constraint matrix per (prompt, other token)
    rows = torch.einsum("ita,ib->itab", gaps, queries).reshape(-1, dim * dim)

    import cvxpy as cp

    weights = cp.Variable((dim, dim))
    objective = cp.sum_squares(weights) if norm == "fro" else cp.normNuc(weights)
    solution = _solve(cp, weights, objective, rows.numpy() @ cp.reshape(weights, (dim * dim,), order="C") >= 1,
                      "Att-SVM")
    return torch.from_numpy(solution)


def max_margin_classifier(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """The hard-margin classifier through the origin, w = argmin ‖w‖ subject to y_i wᵀx_i ≥ 1, for points
    ``xs`` (n, d) and labels ``ys`` (n,) in {−1, +1}; raises ValueError if no such w exists."""
    xs, ys = float64_tensor("xs", xs, 2).cpu(), float64_tensor("ys", ys, 1).cpu()
    if ys.shape != xs.shape[:1]:
        raise ValueError(f"ys must have shape ({xs.shape[0]},) to match xs {tuple(xs.shape)}; got {tuple(ys.shape)}")
    if not bool((ys.abs() == 1).all()):
        raise ValueError("ys must be labels in {-1, +1}")

    import cvxpy as cp

    weights = cp.Variable(xs.shape[1])
    solution = _solve(cp, weights, cp.sum_squares(weights), (ys[:, None] * xs).numpy() @ weights >= 1,
                      "the max-margin classifier")
    return torch.from_numpy(solution)


def matrix_correlation(first: torch.Tensor, second: torch.Tensor) -> float:
    """⟨W₁, W₂⟩ / (‖W₁‖_F ‖W₂‖_F): the cosine of two matrices, how Tarzanagh et al. compare a trained W with
    W^mm (1: the same direction)."""
    first, second = first.to(torch.float64), second.to(torch.float64)
    return float((first * second).sum() / (torch.linalg.norm(first) * torch.linalg.norm(second)))


def _solve(cp, variable, objective, constraint, what: str) -> np.ndarray:
    """``variable``'s value at the minimum of ``objective`` under ``constraint`` (Clarabel), or ValueError."""
    problem = cp.Problem(cp.Minimize(objective), [constraint])
    problem.solve(solver=cp.CLARABEL)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise ValueError(f"{what} has no solution: the constraints are {problem.status} (no direction separates "
                         f"the data with a positive margin)")
    return np.asarray(variable.value, dtype=np.float64)
