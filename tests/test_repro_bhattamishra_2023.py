"""The closed forms bhattamishra-2023's checks rely on, against exact enumeration and Monte Carlo.

* the GF(2) rank law (Landsberg's count) against enumerating every small matrix;
* GF(2) elimination and 1-NN on parities: the library's learners on *every* prompt of a tiny n (all subsets,
  all inputs), weighted uniformly, equal the closed forms exactly;
* conjunction / disjunction elimination: the library's learners on every sequence of a tiny n, weighted by the
  task's law written out (literal prior 0.15/0.15/0.7, planting 0.3), equal the closed form exactly; and the
  task's own sampler agrees with it by Monte Carlo at the quick scale's n;
* the claim checks' arithmetic: the binomial test against the exact two-sided sum, the "closer to A than to B"
  fraction and the first position after a teaching sequence on hand-made accuracies;
* the full scale is the authors' README command with their ``args.py`` defaults.
"""
import dataclasses
import itertools
import math
from fractions import Fraction

import pytest
import torch

from icl_sim.paper_repro import bhattamishra_2023
from icl_sim.paper_repro.bhattamishra_2023 import SCALES, Settings, chance_checks, runs, teaching_checks
from icl_sim.seeding import make_generator
from icl_sim.tasks import Boolean
from icl_sim.theory.boolean_learners import (ConjunctionElimination, DisjunctionElimination, HammingKNN,
                                             ParityElimination)
from icl_sim.theory.formulas.boolean_learning import (conjunction_elimination_accuracy, gf2_rank_distribution,
                                                      nearest_neighbour_parity_accuracy, parity_elimination_accuracy)


def _all_vectors(n):
    return torch.tensor(list(itertools.product((0, 1), repeat=n)), dtype=torch.int64)


def _span_size(rows):
    span = {0}
    for row in rows:
        value = int("".join(map(str, row)), 2)
        span |= {v ^ value for v in span}
    return len(span)


@pytest.mark.parametrize("n, m", [(2, 3), (3, 2), (3, 3), (2, 5)])
def test_gf2_rank_law_by_enumeration(n, m):
    vectors = _all_vectors(n).tolist()
    counts = [0] * (min(n, m) + 1)
    for rows in itertools.product(vectors, repeat=m):
        counts[int(math.log2(_span_size(rows)))] += 1
    expected = [c / len(vectors) ** m for c in counts]
    assert gf2_rank_distribution(n, m) == pytest.approx(expected, abs=1e-12)


def _every_parity_prompt(n, points):
    """Every (subset, input sequence) of n bits as ±1 prompts, with parity labels (+1 iff |S ∩ {x = +1}| is odd)."""
    vectors = _all_vectors(n)
    sequences = torch.tensor(list(itertools.product(range(len(vectors)), repeat=points)))
    bits = vectors[sequences]  # (V^points, points, n)
    subsets = vectors  # every subset, uniformly
    bits = bits[None].expand(len(subsets), -1, -1, -1).reshape(-1, points, n)
    subset = subsets[:, None].expand(-1, len(sequences), -1).reshape(-1, n)
    labels = (bits * subset[:, None]).sum(-1) % 2
    return (bits * 2 - 1).to(torch.float64), (labels * 2 - 1).to(torch.float64)


def test_parity_learners_equal_their_closed_forms_exactly():
    n, points = 2, 4
    xs, ys = _every_parity_prompt(n, points)
    for learner, formula in ((ParityElimination(), parity_elimination_accuracy),
                             (HammingKNN(1), nearest_neighbour_parity_accuracy)):
        preds = learner.predict(xs, ys)
        accuracy = (torch.where(preds > 0, 1.0, -1.0) == ys).to(torch.float64).mean(0)
        assert accuracy.tolist() == pytest.approx([formula(n, i) for i in range(points)], abs=1e-12)


def test_teaching_parity_elimination_is_exact_after_n():
    task = Boolean(function="parity", n=4, points=9, teaching=True)
    prompt = task.sample(256, make_generator(0, "eval", 7), dtype=torch.float64)
    preds = ParityElimination().predict(prompt.xs, prompt.ys)
    assert torch.equal(torch.where(preds > 0, 1.0, -1.0)[:, 4:], prompt.ys[:, 4:])
    assert [parity_elimination_accuracy(4, i, teaching=True) for i in range(6)] == [0.5] * 4 + [1.0] * 2


def _conjunction_law(n, literals, plant, *, satisfy):
    """P(x) for every x ∈ {0,1}^n under the task's law for one function (planting satisfies or falsifies it)."""
    vectors = _all_vectors(n)
    relevant = literals != 0
    value = (literals > 0) if satisfy else (literals < 0)
    planted = ((vectors == value.to(torch.int64)) | ~relevant).all(-1).to(torch.float64)
    planted /= 2.0 ** (n - int(relevant.sum()))
    return plant * planted + (1 - plant) / 2.0**n


@pytest.mark.parametrize("function", ["conjunction", "disjunction"])
def test_elimination_equals_its_closed_form_by_exact_enumeration(function):
    n, points, plant = 2, 4, 0.3
    satisfy = function == "conjunction"
    learner = ConjunctionElimination() if satisfy else DisjunctionElimination()
    vectors = _all_vectors(n)
    sequences = torch.tensor(list(itertools.product(range(len(vectors)), repeat=points)))
    bits = vectors[sequences]
    accuracy = torch.zeros(points, dtype=torch.float64)
    for signs in itertools.product((-1, 0, 1), repeat=n):
        literals = torch.tensor(signs)
        prior = math.prod(0.7 if s == 0 else 0.15 for s in signs)
        law = _conjunction_law(n, literals, plant, satisfy=satisfy)
        weights = law[sequences].prod(-1)
        satisfied = bits == (literals > 0).to(torch.int64)
        labels = (satisfied | (literals == 0)).all(-1) if satisfy else (satisfied & (literals != 0)).any(-1)
        xs, ys = (bits * 2 - 1).to(torch.float64), (labels.to(torch.float64) * 2 - 1)
        right = (torch.where(learner.predict(xs, ys) > 0, 1.0, -1.0) == ys).to(torch.float64)
        accuracy += prior * (weights[:, None] * right).sum(0)
    expected = [conjunction_elimination_accuracy(n, i) for i in range(points)]
    assert accuracy.tolist() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("function", ["conjunction", "disjunction"])
def test_elimination_closed_form_matches_the_task_sampler(function):
    n, points, count = 5, 12, 20_000
    task = Boolean(function=function, n=n, points=points)
    prompt = task.sample(count, make_generator(0, "eval", 11), dtype=torch.float64)
    learner = ConjunctionElimination() if function == "conjunction" else DisjunctionElimination()
    right = (torch.where(learner.predict(prompt.xs, prompt.ys) > 0, 1.0, -1.0) == prompt.ys).to(torch.float64)
    for i in (0, 3, 6, 11):
        standard_error = float(right[:, i].std()) / count**0.5
        assert float(right[:, i].mean()) == pytest.approx(conjunction_elimination_accuracy(n, i),
                                                          abs=4 * standard_error + 1e-9)


def test_repeated_queries_marks_exact_repeats_only():
    xs = torch.tensor([[[1., -1.], [1., 1.], [1., -1.], [-1., -1.], [1., 1.]]])
    assert bhattamishra_2023.repeated_queries(xs).tolist() == [[False, False, True, False, True]]


def test_parity_chance_queries_leave_out_repeats_and_the_all_minus_one_input():
    xs = torch.tensor([[[1., -1.], [-1., -1.], [1., -1.], [-1., 1.], [-1., -1.]]])
    assert bhattamishra_2023.parity_chance_queries(xs).tolist() == [[True, False, False, True, False]]


def _two_sided_binomial(k, m):
    """P(a count at most as likely as k) under Binomial(m, 1/2), summed exactly."""
    probabilities = [Fraction(math.comb(m, j), 2**m) for j in range(m + 1)]
    return float(sum(p for p in probabilities if p <= probabilities[k]))


def _accuracies(rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_chance_checks_are_the_exact_binomial_test_and_the_contrast_with_conjunctions():
    settings = dataclasses.replace(SCALES["smoke"], parity_points=3, n=1, points=3)
    correct = [[1, 0, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0]]  # last position: 1 + 1 + 0 + 0 of 4, and ...
    parity = {"chance_queries": torch.tensor([[True] * 3, [True] * 3, [True] * 3, [False] * 3]),
              "accuracy": {"GF(2) elimination": _accuracies([[0, 0, 1]] * 3 + [[0, 0, 0]])},
              "transformer": [_accuracies(correct), _accuracies([[0, 0, 1]] * 4)]}
    conjunction = {"accuracy": {"1-NN": _accuracies([[0, 0, 0], [0, 1, 0]]), "Elimination": _accuracies([[1] * 3] * 2)},
                   "transformer": [_accuracies([[1, 1, 1], [1, 1, 1]])] * 2}
    binomial, contrast = chance_checks({"parity": parity, "conjunction": conjunction}, settings)
    # the fourth prompt's query is left out: 2 of 3 and 3 of 3 right
    assert binomial.per_seed == pytest.approx([_two_sided_binomial(2, 3), _two_sided_binomial(3, 3)], abs=1e-12)
    assert binomial.expected == pytest.approx(0.05 / 2) and binomial.every_seed
    # conjunctions, positions >= n = 1: model 1, 1-NN 1/4, elimination 1: fraction 1 for both seeds; parity, last
    # position of the three chance queries: GF(2) elimination 1, the model 2/3 and 1: fractions 1/3 and 1
    assert contrast.per_seed == pytest.approx([1 - 1 / 3, 0.0]) and contrast.expected == 0.5


def test_teaching_checks_use_the_positions_after_each_teaching_sequence():
    settings = dataclasses.replace(SCALES["smoke"], n=2, points=4)
    taught = {"teaching_length": torch.tensor([2, 3]),
              "accuracy": {"3-NN": _accuracies([[0, 0, 1, 0], [0, 0, 0, 1]])},
              "transformer": [_accuracies([[0, 0, 1, 1], [0, 0, 0, 1]])]}
    untaught = {"elimination": _accuracies([[0, 1, 0, 1], [1, 1, 1, 1], [1, 1, 1, 1]]), "literals": torch.tensor([0, 1, 2])}
    closer, first = teaching_checks({"conjunction-teaching": taught, "untaught": untaught}, settings)
    # after the sequences: positions 2, 3 of prompt 0 and 3 of prompt 1; model 3/3, 3-NN 2/3: (1 − 2/3)/(1 − 2/3)
    assert closer.per_seed == pytest.approx([1.0])
    # first positions: model (1 + 1)/2; elimination at k + 2: prompt 0 at 2 (0), prompt 1 at 3 (1), prompt 2 at 4
    # (outside the prompt, left out): 1/2
    assert first.per_seed == pytest.approx([0.5])


def test_full_scale_is_the_authors_readme_command_and_args_defaults():
    full = SCALES["full"]
    assert (full.n, full.points, full.parity_n, full.parity_points) == (28, 40, 28, 40)
    assert (full.n_layer, full.n_embd, full.n_head, full.batch_size, full.lr, full.steps) == (12, 256, 8, 64, 1e-4,
                                                                                              15_000)
    configs = runs(full)
    assert set(configs) == {"conjunction", "disjunction", "conjunction-teaching", "parity"}
    assert configs["conjunction-teaching"].task_params["plant_probability"] == 0.4
    assert all(config.lr_schedule == "constant" and config.warmup_steps == 0 for config in configs.values())
    assert isinstance(full, Settings)


def test_long_scale_is_quick_with_the_larger_model():
    quick, long = SCALES["quick"], SCALES["long"]
    assert (long.n_layer, long.n_embd, long.n_embd // long.n_head) == (3, 64, 32)  # the paper's head width 256/8
    assert dataclasses.replace(long, n_layer=quick.n_layer, n_embd=quick.n_embd, n_head=quick.n_head) == quick
    assert bhattamishra_2023.REPRODUCTION.seeds == {"long": 3}
