"""Hard-margin SVMs: the directions that gradient descent on separable data converges to.

* :func:`attention_svm` is Tarzanagh, Li, Thrampoulidis & Oymak's Att-SVM ("Transformers as Support Vector
  Machines", 2023, eq. (Att-SVM)): the key-query matrix of least norm that scores each prompt's selected token
  above every other by a margin of one,

      W^mm = argmin ‖W‖  subject to  (x_{i,α_i} − x_{i,t})ᵀ W z_i ≥ 1  for every t ≠ α_i and every prompt i,

  for a softmax attention layer whose scores are softmax(X_i W z_i) (token t scores x_{i,t}ᵀ W z_i).  With the
  Frobenius norm it is the limit direction of gradient descent on W; with the nuclear norm (Att-SVM⋆), of
  gradient descent on a factorisation W = K Qᵀ.  Given a set O_i of selected tokens per prompt instead of one
  (their Sec. 6, nonlinear heads, where attention keeps several), the selected tokens score alike and above the
  others, (x_{i,τ} − x_{i,t})ᵀ W z_i = 0 for τ, t ∈ O_i and ≥ 1 for τ ∈ O_i, t ∉ O_i: the direction of their
  "SVM-equivalence", whose finite part :func:`finite_component` and whole :func:`svm_equivalence` are.
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
    ``selected``: one index per prompt (n,), or a non-empty set per prompt as a boolean mask (n, T), a prompt
    whose every token is selected adding ties alone; ``norm`` "fro" or "nuc".  Raises ValueError naming the prompts when no W separates them (a selected token that
    another token of its prompt equals, say)."""
    if norm not in SVM_NORMS:
        raise ValueError(f"norm must be one of {', '.join(SVM_NORMS)}; got {norm!r}")
    tokens, queries, mask = _prompts(tokens, queries, selected)
    dim = tokens.shape[-1]
    margin_rows, tie_rows = (_constraint_rows(tokens, queries, pairs) for pairs in _constraint_pairs(mask))

    import cvxpy as cp

    weights = cp.Variable((dim, dim))
    flat = cp.reshape(weights, (dim * dim,), order="C")
    objective = cp.sum_squares(weights) if norm == "fro" else cp.normNuc(weights)
    constraints = [margin_rows.numpy() @ flat >= 1] + ([tie_rows.numpy() @ flat == 0] if len(tie_rows) else [])
    return torch.from_numpy(_solve(cp, weights, objective, constraints, "Att-SVM"))


def finite_component(tokens: torch.Tensor, queries: torch.Tensor, probabilities: torch.Tensor,
                     selected: torch.Tensor) -> torch.Tensor:
    """W^fin (d × d): the least-Frobenius-norm W that reproduces, within each prompt's selected set O_i (a boolean
    mask (n, T)), the softmax ratios ``probabilities`` (n, T) show, (x_{i,τ} − x_{i,t})ᵀ W z_i = log(s_iτ / s_it)
    for τ, t ∈ O_i (Tarzanagh et al. 2023, Sec. 6: the part of W that stays finite while its norm grows along
    W^mm); zero where every set holds one token.  A minimum-norm least-squares solve (the pseudo-inverse)."""
    tokens, queries, mask = _prompts(tokens, queries, selected)
    probabilities = float64_tensor("probabilities", probabilities, 2).cpu()
    if probabilities.shape != mask.shape or not bool((probabilities[mask] > 0).all()):
        raise ValueError(f"probabilities must be positive at the selected tokens, shape {tuple(mask.shape)}")
    _, ties = _constraint_pairs(mask)
    dim = tokens.shape[-1]
    if not ties:
        return torch.zeros(dim, dim, dtype=torch.float64)
    logs = probabilities.log()
    targets = torch.stack([logs[prompt, upper] - logs[prompt, lower] for prompt, upper, lower in ties])
    return (torch.linalg.pinv(_constraint_rows(tokens, queries, ties)) @ targets).reshape(dim, dim)


def svm_equivalence(weights: torch.Tensor, direction: torch.Tensor, finite: torch.Tensor) -> torch.Tensor:
    """W^fin + R W^mm with R = ⟨W − W^fin, W^mm⟩ / ‖W^mm‖²: the point of the line Tarzanagh et al. (Sec. 6)
    predict a trained W follows that is nearest ``weights`` in Frobenius norm (their notebook fits R alike)."""
    weights, direction, finite = (matrix.to(torch.float64) for matrix in (weights, direction, finite))
    scale = ((weights - finite) * direction).sum() / direction.square().sum()
    return finite + scale * direction


def _prompts(tokens: torch.Tensor, queries: torch.Tensor, selected: torch.Tensor):
    """Checked float64 tokens (n, T, d), queries (n, d) and the selected sets as a boolean mask (n, T)."""
    tokens = float64_tensor("tokens", tokens, 3).cpu()
    queries = float64_tensor("queries", queries, 2).cpu()
    selected = torch.as_tensor(selected).cpu()
    n, count, dim = tokens.shape
    if queries.shape != (n, dim):
        raise ValueError(f"queries must have shape ({n}, {dim}) to match tokens {tuple(tokens.shape)}; "
                         f"got {tuple(queries.shape)}")
    if count < 2:
        raise ValueError(f"tokens must hold at least 2 tokens per prompt to select one; got {count}")
    if selected.dtype == torch.bool:
        if selected.shape != (n, count) or not bool(selected.any(dim=-1).all()) or bool(selected.all()):
            raise ValueError(f"selected must mark, as a mask of shape ({n}, {count}), at least one token of each "
                             f"prompt and leave at least one token of some prompt unmarked")
        return tokens, queries, selected
    if selected.shape != (n,) or selected.dtype.is_floating_point or not bool(
            ((selected >= 0) & (selected < count)).all()):
        raise ValueError(f"selected must hold one token index in [0, {count}) per prompt, shape ({n},)")
    mask = torch.zeros(n, count, dtype=torch.bool)
    mask[torch.arange(n), selected] = True
    return tokens, queries, mask


def _constraint_pairs(mask: torch.Tensor) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The (prompt, τ, t) of each constraint (x_τ − x_t)ᵀ W z: margins from every selected τ to every unselected t,
    and ties of every selected τ after its set's first to that first."""
    margins, ties = [], []
    for prompt, chosen in enumerate(mask):
        members, others = chosen.nonzero().flatten().tolist(), (~chosen).nonzero().flatten().tolist()
        margins += [(prompt, member, other) for member in members for other in others]
        ties += [(prompt, member, members[0]) for member in members[1:]]
    return margins, ties


def _constraint_rows(tokens: torch.Tensor, queries: torch.Tensor,
                     pairs: list[tuple[int, int, int]]) -> torch.Tensor:
    """vec((x_τ − x_t) zᵀ) for each (prompt, τ, t) of ``pairs``: (x_τ − x_t)ᵀ W z = ⟨W, (x_τ − x_t) zᵀ⟩."""
    if not pairs:
        return torch.zeros(0, tokens.shape[-1] ** 2, dtype=torch.float64)
    prompt, upper, lower = (torch.tensor(index) for index in zip(*pairs))
    return torch.einsum("ra,rb->rab", tokens[prompt, upper] - tokens[prompt, lower], queries[prompt]).flatten(1)


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
    solution = _solve(cp, weights, cp.sum_squares(weights), [(ys[:, None] * xs).numpy() @ weights >= 1],
                      "the max-margin classifier")
    return torch.from_numpy(solution)


def matrix_correlation(first: torch.Tensor, second: torch.Tensor) -> float:
    """⟨W₁, W₂⟩ / (‖W₁‖_F ‖W₂‖_F): the cosine of two matrices, how Tarzanagh et al. compare a trained W with
    W^mm (1: the same direction)."""
    first, second = first.to(torch.float64), second.to(torch.float64)
    return float((first * second).sum() / (torch.linalg.norm(first) * torch.linalg.norm(second)))


def _solve(cp, variable, objective, constraints: list, what: str) -> np.ndarray:
    """``variable``'s value at the minimum of ``objective`` under ``constraints`` (Clarabel), or ValueError."""
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=cp.CLARABEL)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise ValueError(f"{what} has no solution: the constraints are {problem.status} (no direction separates "
                         f"the data with a positive margin)")
    return np.asarray(variable.value, dtype=np.float64)
