"""In-context baselines for ±1 classification: Boolean-function learners and logistic regression.

Conventions (shared with ``icl_sim.tasks.boolean`` and ``icl_sim.tasks.linear_classification``):
inputs are read as bits ``x > 0`` (so ±1 coordinates map to 1/0, x = +1 ↔ bit 1) and
labels as ``y > 0`` (positive) / otherwise negative.  Every predictor follows the
``Baseline`` contract of ``icl_sim.theory.baselines``: float64 predictions (B, N) on
the device of ``xs``, position i using only the context points j < i and the query.
Predictions are ±1 (or real scores whose sign is the prediction); a score of 0 counts
as an error under the ``accuracy`` metric, so the learners below break ties to −1.

* ``ConjunctionElimination`` / ``DisjunctionElimination``: the classical elimination
  algorithm (Valiant 1984; Kearns & Vazirani 1994, ch. 1) — the most specific
  conjunction consistent with the positive examples, and its De Morgan dual for
  disjunctions — the optimal learners Bhattamishra et al. (ICLR 2024, arXiv 2310.03016)
  compare Transformers against.  Fully vectorised with prefix counts.
* ``ParityElimination``: Gaussian elimination over GF(2); predicts with a consistent
  parity.  Loops over positions (one incremental insertion per example), vectorised
  over the batch.
* ``HammingKNN``, ``MajorityLabel``: nearest neighbours in Hamming distance and the
  majority of the labels seen so far.
* ``LogisticGD``: normalised gradient descent on the logistic loss of each prefix.
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float, check_int

from .baselines import Baseline
from .prefix import as_float64, context_mask, prefix_sum


def _pm1(condition: torch.Tensor, dtype) -> torch.Tensor:
    """+1 where ``condition`` holds, −1 elsewhere."""
    return torch.where(condition, 1.0, -1.0).to(dtype)


class ConjunctionElimination(Baseline):
    """The most specific conjunction consistent with the positive examples j < i.

    Start from all 2n literals (x_k and ¬x_k for every k: unsatisfiable, so every query
    is predicted −1); each positive example deletes the literals it falsifies.  After
    positives P the hypothesis keeps literal "x_k = v" iff every p ∈ P has x_k = v, so
    a query x satisfies it iff, for every coordinate k, some earlier positive had the
    query's value x_k at k.  That is two exclusive prefix counts per coordinate; no loop.

    One-sided: the hypothesis contains every literal of the target, so it is +1 only
    where the target is +1 — it never errs on a negative example (only false negatives).
    Negative examples carry no information for this learner.
    """

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        bits = (xs > 0).to(xs.dtype)
        chosen = (ys > 0).to(xs.dtype)[..., None]
        return _pm1(_all_values_seen(bits, chosen), xs.dtype)


class DisjunctionElimination(Baseline):
    """The most general disjunction consistent with the negative examples j < i (dual elimination).

    ¬(l_1 ∨ … ∨ l_k) = ¬l_1 ∧ … ∧ ¬l_k: run ``ConjunctionElimination`` on the negated
    labels, i.e. predict −1 iff for every coordinate some earlier *negative* example had
    the query's value there.  One-sided: it never errs on a positive example.
    """

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        bits = (xs > 0).to(xs.dtype)
        chosen = (ys <= 0).to(xs.dtype)[..., None]
        return _pm1(~_all_values_seen(bits, chosen), xs.dtype)


def _all_values_seen(bits: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: for every coordinate, the query's bit occurred at that coordinate in a chosen point j < i."""
    seen_one = prefix_sum(chosen * bits) > 0
    seen_zero = prefix_sum(chosen * (1 - bits)) > 0
    return torch.where(bits > 0, seen_one, seen_zero).all(dim=-1)


class ParityElimination(Baseline):
    """Gaussian elimination over GF(2): predict with a parity consistent with the points j < i.

    A parity is y = ⟨s, b⟩ mod 2 with b = bits(x) and s the subset's indicator, label
    bit 1 ↔ y = +1 (the convention of Bhattamishra et al.: y = +1 iff an odd number of
    the subset's coordinates are +1).  The context is kept as a basis in reduced row
    echelon form, rows indexed by their pivot column (B, n, n+1 with the label bit last,
    in float64 0/1 so that batched matmuls reduce a vector against all rows at once):

    * query: the predicted parity is the solution with every free (non-pivot) coordinate
      set to 0, s_p = label bit of row p.  It agrees with every consistent parity on a
      query in the span of the context (the label is then determined, and correct);
      outside the span it is a fixed default that is right for half of the consistent
      parities — so under a uniformly random subset its accuracy there is exactly 1/2.
    * insertion: reduce [b, label] by the rows whose pivots it contains; if a nonzero
      residual remains, its first nonzero column becomes a new pivot, eliminated from the
      other rows.  A residual with zero bits and label bit 1 is an inconsistent example
      (label noise) and is ignored.

    Loops over the N positions (each step O(B n²)); vectorised over the batch.  Order-dependent by
    design: of two contradicting examples the later one is the one ignored.
    """

    order_invariant = False

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        batch, points, n = xs.shape
        bits = (xs > 0).to(xs.dtype)
        labels = (ys > 0).to(xs.dtype)
        basis = torch.zeros(batch, n, n + 1, dtype=xs.dtype, device=xs.device)
        valid = torch.zeros(batch, n, dtype=torch.bool, device=xs.device)
        preds = torch.empty(batch, points, dtype=xs.dtype, device=xs.device)
        for i in range(points):
            query = bits[:, i]
            solution = basis[..., n]  # rows that are not pivots are all zero
            preds[:, i] = _pm1(torch.remainder((query * solution).sum(-1), 2) > 0.5, xs.dtype)
            basis, valid = _insert(basis, valid, torch.cat([query, labels[:, i, None]], dim=-1))
        return preds


def _insert(basis: torch.Tensor, valid: torch.Tensor, vector: torch.Tensor):
    """Add ``vector`` (B, n+1) to the reduced GF(2) basis (B, n, n+1) with pivot mask ``valid`` (B, n)."""
    n = basis.shape[1]
    coefficients = (vector[:, :n] * valid)[:, None, :]  # its bits at the pivot columns
    residual = torch.remainder(vector + (coefficients @ basis).squeeze(1), 2)
    nonzero = residual[:, :n] > 0.5
    new = nonzero.any(dim=-1)
    pivot = nonzero.to(torch.int8).argmax(dim=-1)  # first nonzero column
    rows = torch.arange(basis.shape[0], device=basis.device)
    column = basis[rows, :, pivot] * new[:, None]  # which rows hold the new pivot column
    basis = torch.remainder(basis + column[..., None] * residual[:, None, :], 2)
    placed = torch.nn.functional.one_hot(pivot, n).bool() & new[:, None]
    basis = torch.where(placed[..., None], residual[:, None, :], basis)
    return basis, valid | placed


def parity_rank(xs: torch.Tensor) -> torch.Tensor:
    """GF(2) rank of the bits of the context points j < i for every position i, (B, N) int64."""
    batch, points, n = xs.shape
    bits = (xs > 0).to(torch.float64)
    basis = torch.zeros(batch, n, n + 1, dtype=torch.float64, device=xs.device)
    valid = torch.zeros(batch, n, dtype=torch.bool, device=xs.device)
    ranks = torch.empty(batch, points, dtype=torch.int64, device=xs.device)
    zero = torch.zeros(batch, 1, dtype=torch.float64, device=xs.device)
    for i in range(points):
        ranks[:, i] = valid.sum(-1)
        basis, valid = _insert(basis, valid, torch.cat([bits[:, i], zero], dim=-1))
    return ranks


class HammingKNN(Baseline):
    """Mean label of the k context points nearest in Hamming distance (earliest first on ties).

    Hamming distance between the sign patterns s = sign(x) (0 read as +1) is
    (n − s_i·s_j)/2.  With fewer than k context points all of them are used; at i = 0
    the prediction is 0 (counted as an error).  Use odd k for ±1 predictions.  Order-dependent by
    design: Hamming distances tie often, and ties go to the earlier point.

    Distances are small integers, so the key N·distance + j is exact and unique: ``topk`` on it picks
    the earliest of tied neighbours without the stable sort of every row that ``nearest_neighbour_mean``
    needs for real distances (5× the whole prediction at n = 28, N = 70; benchmarks/bench_boolean_graph.py).
    """

    order_invariant = False

    def __init__(self, k: int = 1):
        check_int("k", k, 1)
        self.k = k

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        points = xs.shape[1]
        # sums of n products of ±1 are integers, exact in float32 (n < 2^24) and 8× faster than float64
        signs = torch.where(xs > 0, 1.0, -1.0).to(torch.float32)
        distances = (xs.shape[-1] - signs @ signs.mT) / 2
        keys = distances * points + torch.arange(points, device=xs.device)
        keys = keys.masked_fill(~context_mask(xs), torch.inf)
        nearest_keys, nearest = keys.topk(min(self.k, points), dim=-1, largest=False)
        used = nearest_keys.isfinite()  # fewer than k context points: the missing ones are +inf
        labels = ys.gather(1, nearest.flatten(1)).view(nearest.shape)
        return (labels * used).sum(-1) / used.sum(-1).clamp(min=1)


class MajorityLabel(Baseline):
    """The more frequent label among the points j < i: sign(Σ_{j<i} y_j), ties and i = 0 → −1."""

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return _pm1(prefix_sum(torch.sign(ys)) > 0, xs.dtype)


class LogisticGD(Baseline):
    """``steps`` normalised gradient steps from w = 0 on the logistic loss of each prefix.

    With g_i(w) = (1/i) Σ_{j<i} y_j x_j σ(−y_j wᵀx_j) the negative gradient of the mean
    logistic loss (1/i) Σ_{j<i} log(1 + exp(−y_j wᵀx_j)), the step is

        w ← w + lr · g_i(w) / max(‖g_i(w)‖, eps)

    (normalised GD: each step has length lr, whatever the scale of the data; eps = 1e-12
    guards the empty prefix, whose gradient is 0).  This Euclidean-norm version is not Zhang &
    Cao's (arXiv 2605.06609): their layers take normalised GD steps on the exponential loss,
    which a softmax read-out computes only with the gradient divided by the loss,
    w ← w − η∇L/L (``icl_sim.theory.normalized_gd.ExponentialNGD``).  The first step from w = 0 is
    lr · (Σ y_j x_j)/‖Σ y_j x_j‖, so one step predicts like the averaging baseline.
    Scores wᵀx_i are returned (their sign is the prediction).  All positions and prompts
    are one batched computation per step (prefix sums of y_j x_j σ(−y_j wᵀx_j) need w
    per position, so the terms are formed as (B, N, N) masked products).
    """

    def __init__(self, steps: int = 100, lr: float = 0.1):
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        self.steps, self.lr = steps, lr

    def weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The weights w_i after ``steps`` steps for every position, (B, N, d) float64."""
        xs, ys = as_float64(xs, ys)
        mask = context_mask(xs).to(xs.dtype)  # (N, N): j < i
        w = torch.zeros_like(xs)
        signed = ys[..., None] * xs  # y_j x_j, (B, N, d)
        for _ in range(self.steps):
            margins = w @ signed.mT  # (B, N_i, N_j): y_j w_iᵀx_j
            coefficient = torch.sigmoid(-margins) * mask
            gradient = coefficient @ signed  # (B, N, d); the 1/i factor cancels in the normalisation
            norm = gradient.norm(dim=-1, keepdim=True).clamp(min=1e-12)
            w = w + self.lr * gradient / norm
        return w

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return (xs * self.weights(xs, ys)).sum(-1)
