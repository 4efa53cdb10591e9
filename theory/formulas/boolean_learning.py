"""Exact accuracy curves of the Boolean-function learners on the ``boolean`` task's distributions.

Bhattamishra, Patel, Blunsom & Kanade (ICLR 2024, arXiv 2310.03016) compare Transformers with the
optimal learners of each class; these are the learners' exact accuracies after i examples
("position i": the query is the (i+1)-th point, predicted from the i before it), so a Monte Carlo
run of ``icl_sim.theory.boolean_learners`` can be checked against them.  Computed exactly
(integers and fractions), returned as floats.

* ``gf2_rank_distribution(n, m)``: the rank of m independent uniform vectors of GF(2)^n.  The
  number of n×m matrices of rank r over GF(2) is ∏_{j<r} (2^n − 2^j)(2^m − 2^j)/(2^r − 2^j)
  (Landsberg 1893; e.g. Lidl & Niederreiter, *Finite Fields*), so
  P(rank = r) = 2^{−nm} ∏_{j<r} (2^n − 2^j)(2^m − 2^j)/(2^r − 2^j).
* ``parity_elimination_accuracy(n, i)`` (``ParityElimination`` on ``parity``, S uniform over all
  2^n subsets): a query in the span of the context has its label determined, and elimination
  predicts it; outside the span ⟨s, q⟩ is uniform under the posterior (a coset of the null
  space, some member of which has ⟨z, q⟩ = 1), so the default guess is right with probability
  exactly 1/2.  With V the span of the i context bit-vectors, P(q ∈ V) = E[|V|]/2^n, hence
      acc(i) = 1/2 + E[2^{rank_i}] / 2^{n+1}.
  With a teaching sequence (the basis e_1 … e_n first): acc(i) = 1/2 for i < n (the query e_{i+1}
  is outside the span), 1 for i ≥ n.
* ``nearest_neighbour_parity_accuracy(n, i)`` (``HammingKNN(1)`` on ``parity``): the nearest
  earlier point is the query itself when the query repeats (probability 1 − (1 − 2^−n)^i) and then
  copies the right label; otherwise the neighbour differs on a non-empty set D and agrees iff
  |S ∩ D| is even, probability exactly 1/2 under the uniform S (D depends on the inputs only):
      acc(i) = 1/2 + (1 − (1 − 2^−n)^i)/2,  i ≥ 1;  acc(0) = P(y = −1) = 1/2 + 2^{−n−1}
  (with no context the predictor returns 0, scored as −1; y = −1 iff S ∩ {x = +1} is even).
* ``conjunction_elimination_accuracy(n, i, literal_probability, plant_probability)``
  (``ConjunctionElimination`` on ``conjunction``; by De Morgan the same number for
  ``DisjunctionElimination`` on ``disjunction`` with labels and planting mirrored).  A conjunction
  with r literals (r ~ Binomial(n, ρ), ρ = 0.3 in the task) labels a point positive with
  probability π_r = p + (1 − p)·2^{−r} (p the planting probability: planted points satisfy every
  literal, the other coordinates stay uniform).  Elimination errs only on positive queries (it is
  one-sided): with no earlier positive it predicts −1; after m ≥ 1 positives it keeps, at each of
  the n − r irrelevant coordinates, the literal "x_k = v" iff all m positives had v there
  (probability 2^{1−m} that they agree, 2^{−m} that they agree on the value the query does *not*
  have), and the query is rejected iff some irrelevant coordinate has only the other value:
      P(err at i) = Σ_r B(r; n, ρ) π_r [ (1 − π_r)^i + Σ_{m=1}^{i} B(m; i, π_r)(1 − (1 − 2^{−m})^{n−r}) ].
"""
from __future__ import annotations

import math
from fractions import Fraction

from icl_sim.validation import check_float, check_int

#: the task's literal law: positive or negative literal, each w.p. 0.15 (icl_sim.tasks.boolean)
LITERAL_PROBABILITY = 0.3
#: the task's planting probability for conjunctions and disjunctions (the authors' 0.3)
PLANT_PROBABILITY = 0.3


def gf2_rank_distribution(n: int, m: int) -> list[float]:
    """P(rank = r), r = 0 … min(n, m), of m independent uniform vectors of GF(2)^n."""
    check_int("n", n, 1)
    check_int("m", m, 0)
    probabilities = []
    for r in range(min(n, m) + 1):
        count = Fraction(1)
        for j in range(r):
            count *= Fraction((2**n - 2**j) * (2**m - 2**j), 2**r - 2**j)
        probabilities.append(float(count / 2 ** (n * m)))
    return probabilities


def expected_span_fraction(n: int, m: int) -> float:
    """E[2^{rank}]/2^n for m uniform vectors of GF(2)^n: the probability that a fresh uniform vector lies in their span."""
    return sum(p * 2.0 ** (r - n) for r, p in enumerate(gf2_rank_distribution(n, m)))


def parity_elimination_accuracy(n: int, i: int, *, teaching: bool = False) -> float:
    """Accuracy of GF(2) elimination after ``i`` examples on uniform parities of ``n`` bits."""
    check_int("i", i, 0)
    if teaching:
        check_int("n", n, 1)
        return 1.0 if i >= n else 0.5
    return 0.5 + 0.5 * expected_span_fraction(n, i)


def nearest_neighbour_parity_accuracy(n: int, i: int) -> float:
    """Accuracy of 1-nearest-neighbour (Hamming) after ``i`` examples on uniform parities of ``n`` bits."""
    check_int("n", n, 1)
    check_int("i", i, 0)
    if i == 0:
        return 0.5 + 2.0 ** (-n - 1)
    return 0.5 + 0.5 * (1.0 - (1.0 - 2.0**-n) ** i)


def conjunction_elimination_accuracy(n: int, i: int, *, literal_probability: float = LITERAL_PROBABILITY,
                                     plant_probability: float = PLANT_PROBABILITY) -> float:
    """Accuracy of the elimination algorithm after ``i`` examples on the task's conjunctions (and, dually, disjunctions)."""
    check_int("n", n, 1)
    check_int("i", i, 0)
    check_float("literal_probability", literal_probability, 0.0, maximum=1.0)
    check_float("plant_probability", plant_probability, 0.0, maximum=1.0)
    error = 0.0
    for r in range(n + 1):
        weight = math.comb(n, r) * literal_probability**r * (1 - literal_probability) ** (n - r)
        positive = plant_probability + (1 - plant_probability) * 2.0**-r
        rejected = (1 - positive) ** i  # no earlier positive: every query is predicted −1
        for m in range(1, i + 1):
            rejected += math.comb(i, m) * positive**m * (1 - positive) ** (i - m) * (1 - (1 - 2.0**-m) ** (n - r))
        error += weight * positive * rejected
    return 1.0 - error


def accuracy_curve(formula, n: int, points: int, **options) -> list[float]:
    """``formula(n, i, **options)`` at positions i = 0 … points − 1."""
    return [formula(n, i, **options) for i in range(points)]
