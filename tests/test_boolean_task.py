"""Tests for the Boolean-function task and its learners, against independent numpy references.

No peeking (every learner, on its own function class), determinism, dtypes, generic bad parameters:
tests/test_contracts.py.

Monte Carlo checks allow ``Z = 5`` standard errors (derived next to each check); the
seeds are fixed, so every test is deterministic.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny_runs import train_and_evaluate

from icl_sim.evaluation import prompt_errors
from icl_sim.params import parse_parameters
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASKS, Boolean, make_task
from icl_sim.tasks.boolean import FUNCTIONS
from icl_sim.theory.baselines import Averaging
from icl_sim.theory.boolean_learners import (ConjunctionElimination, DisjunctionElimination, HammingKNN,
                                             MajorityLabel, ParityElimination, parity_rank)

Z = 5.0


def draw(task, batch, seed=0, **options):
    options.setdefault("dtype", torch.float64)
    return task.sample(batch, make_generator(seed, "eval"), **options)


# -- independent references (numpy, the ±1 formulas of the authors' code) ----------------------
def conjunction_ref(x, w):
    """sign(xᵀw − (‖w‖₁ − 1)) per prompt: +1 iff every literal holds."""
    return np.sign(np.einsum("bnd,bd->bn", x, w) - (np.abs(w).sum(-1) - 1)[:, None])


def disjunction_ref(x, w):
    """sign(xᵀw + ‖w‖₁ − 1): +1 iff some literal holds."""
    return np.sign(np.einsum("bnd,bd->bn", x, w) + (np.abs(w).sum(-1) - 1)[:, None])


def nearest_neighbour_ref(x, y, start):
    """Each point from `start` on (or repeating an earlier point) copies the label of its nearest earlier
    point by Hamming distance, ties to the earliest; the random starts are read from y itself."""
    ref = y.copy()
    batch, points, _ = x.shape
    for b in range(batch):
        for i in range(1, points):
            distances = [(np.sum(x[b, j] != x[b, i]), j) for j in range(i)]
            distance, nearest = min(distances)
            if i >= start or distance == 0:
                ref[b, i] = ref[b, nearest]
    return ref


def reference_labels(function, x, latent, y=None):
    if function == "nearest-neighbour":
        return nearest_neighbour_ref(x, y, start=1)
    if function == "conjunction":
        return conjunction_ref(x, latent["literals"])
    if function in ("disjunction", "sparse-disjunction"):
        return disjunction_ref(x, latent["literals"])
    if function == "3-dnf":
        terms = [conjunction_ref(x, latent["literals"][:, t]) for t in range(3)]
        return np.max(terms, axis=0)
    if function == "3-cnf":
        clauses = [disjunction_ref(x, latent["literals"][:, t]) for t in range(3)]
        return np.min(clauses, axis=0)
    if function == "majority":
        return np.sign(np.einsum("bnd,bd->bn", x, latent["subset"].astype(float)) - 0.5)
    if function == "zero-one-threshold":
        return np.sign(np.einsum("bnd,bd->bn", x, latent["literals"]) - latent["threshold"][:, None])
    if function == "integer-halfspace":
        return np.sign(np.einsum("bnd,bd->bn", x, latent["weights"]) - 0.5)
    if function in ("parity", "sparse-parity"):
        ones = np.einsum("bnd,bd->bn", (x + 1) / 2, latent["subset"].astype(float))
        return (ones % 2) * 2 - 1
    raise AssertionError(function)


def numpy_latent(prompt):
    return {k: v.numpy() for k, v in prompt.latent.items()}


# -- labels ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("function", FUNCTIONS)
def test_labels_equal_the_planted_formula(function):
    task = make_task("boolean", function=function, n=12, points=30)
    prompt = draw(task, 64, seed=1)
    x, y = prompt.xs.numpy(), prompt.ys.numpy()
    assert x.shape == (64, 30, 12) and y.shape == (64, 30)
    assert set(np.unique(x)) <= {-1.0, 1.0} and set(np.unique(y)) <= {-1.0, 1.0}
    np.testing.assert_array_equal(y, reference_labels(function, x, numpy_latent(prompt), y))
    # both labels occur (no class is constant over a batch)
    assert 0 < (y > 0).mean() < 1


def test_one_nearest_neighbour_is_exact_on_the_nearest_neighbour_class():
    """From position start_points on every label is the nearest earlier point's: 1-NN never errs there,
    while the random starts leave it at chance (Binomial(512, 1/2): 5 standard errors = 0.11)."""
    task = make_task("boolean", function="nearest-neighbour", n=6, points=20, start_points=4)
    prompt = draw(task, 512, seed=3)
    preds = HammingKNN(1).predict(prompt.xs, prompt.ys)
    accuracy = (torch.where(preds > 0, 1.0, -1.0) == prompt.ys).double().mean(0)
    assert torch.all(accuracy[4:] == 1.0)
    assert abs(float(accuracy[1]) - 0.5) < 0.11 + 0.05  # repeats among 64 patterns add a little
    nearest = prompt.latent["nearest"]
    assert torch.all(nearest[:, 4:] >= 0) and torch.all(nearest[:, 0] == -1)


def test_latent_priors():
    n, batch = 20, 2000
    lit = draw(Boolean(function="conjunction", n=n, points=2), batch).latent["literals"].numpy()
    m = lit.size  # P(+1) = P(−1) = 0.15: SE sqrt(0.15·0.85/m)
    for value in (1.0, -1.0):
        assert abs((lit == value).mean() - 0.15) <= Z * math.sqrt(0.15 * 0.85 / m)
    subset = draw(Boolean(function="parity", n=n, points=2), batch).latent["subset"].numpy()
    assert abs(subset.mean() - 0.5) <= Z * math.sqrt(0.25 / subset.size)
    sparse = draw(Boolean(function="sparse-parity", n=n, points=2, sparsity=3), batch).latent["subset"].numpy()
    assert np.all(sparse.sum(-1) == 3)
    # uniform over 3-subsets: each coordinate w.p. 3/n
    assert np.all(np.abs(sparse.mean(0) - 3 / n) <= Z * math.sqrt((3 / n) * (1 - 3 / n) / batch))
    disj = draw(Boolean(function="sparse-disjunction", n=n, points=2), batch).latent["literals"].numpy()
    assert np.all((disj == 1).sum(-1) == 4) and np.all(disj >= 0)
    weights = draw(Boolean(function="integer-halfspace", n=n, points=2), batch).latent["weights"].numpy()
    assert set(np.unique(weights)) == set(range(-3, 4))
    thresholds = draw(Boolean(function="zero-one-threshold", n=n, points=2), batch).latent["threshold"].numpy()
    assert set(np.unique(thresholds)) == {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}


def test_uniform_inputs_for_unplanted_classes():
    prompt = draw(Boolean(function="parity", n=10, points=50), 200, seed=2)
    x = prompt.xs.numpy().reshape(-1, 10)  # 10 000 rows: each coordinate ±1 w.p. 1/2, pairwise independent
    m = x.shape[0]
    assert np.all(np.abs(x.mean(0)) <= Z / math.sqrt(m))
    off = (x.T @ x / m)[~np.eye(10, dtype=bool)]
    assert np.all(np.abs(off) <= Z / math.sqrt(m))


# -- biased sampling --------------------------------------------------------------------------
@pytest.mark.parametrize("function,rare", [("conjunction", 1.0), ("disjunction", -1.0)])
def test_planting_gives_the_documented_label_frequency(function, rare):
    """P(rare label | k literals) = p + (1 − p)·2^−k, and over the prior p + (1 − p)·0.85^n."""
    p, n, batch, points = 0.3, 10, 400, 50
    prompt = draw(Boolean(function=function, n=n, points=points), batch, seed=3)
    y = prompt.ys.numpy()
    k = (prompt.latent["literals"].numpy() != 0).sum(-1)
    expected = p + (1 - p) * 2.0 ** -k  # per prompt
    # given the latents the points are independent: mean of m indicators, SE <= sqrt(1/(4m))
    m = y.size
    assert abs((y == rare).mean() - expected.mean()) <= Z * math.sqrt(0.25 / m)
    # per-prompt frequency also matches across k: regress on the expectation (slope 1)
    frequency = (y == rare).mean(-1)
    assert abs(np.mean(frequency - expected)) <= Z * math.sqrt(0.25 / m)
    # unconditional: over prompts, with prompt-level SE (each prompt frequency in [0, 1])
    marginal = p + (1 - p) * 0.85**n
    assert abs(frequency.mean() - marginal) <= Z * frequency.std() / math.sqrt(batch) + 1e-12


def test_plant_probability_parameter():
    prompt = draw(Boolean(function="conjunction", n=30, points=100, plant_probability=0.6), 100, seed=4)
    y, k = prompt.ys.numpy(), (prompt.latent["literals"].numpy() != 0).sum(-1)
    expected = 0.6 + 0.4 * 2.0 ** -k
    assert abs((y > 0).mean() - expected.mean()) <= Z * math.sqrt(0.25 / y.size)


# -- teaching sequences -------------------------------------------------------------------------
def test_conjunction_teaching_sequence():
    task = Boolean(function="conjunction", n=10, points=30, teaching=True)
    prompt = draw(task, 50, seed=5)
    x, y = prompt.xs.numpy(), prompt.ys.numpy()
    lit, length = prompt.latent["literals"].numpy(), prompt.latent["teaching_length"].numpy()
    for b in range(50):
        idx = np.flatnonzero(lit[b])
        assert length[b] == len(idx) + 2
        first = np.where(lit[b] != 0, lit[b], -1.0)
        second = np.where(lit[b] != 0, lit[b], 1.0)
        np.testing.assert_array_equal(x[b, 0], first)
        np.testing.assert_array_equal(x[b, 1], second)
        for t, k in enumerate(idx):
            expected = first.copy()
            expected[k] = -expected[k]
            np.testing.assert_array_equal(x[b, 2 + t], expected)
        np.testing.assert_array_equal(y[b, :length[b]], [1, 1] + [-1] * len(idx))
    # elimination is exact right after the two positives
    acc = prompt_errors(ConjunctionElimination(), prompt, "accuracy").numpy()
    assert np.all(acc[:, 2:] == 1)


def test_parity_teaching_sequence_identifies_the_subset():
    n = 8
    prompt = draw(Boolean(function="parity", n=n, points=20, teaching=True), 100, seed=6)
    x, y, subset = prompt.xs.numpy(), prompt.ys.numpy(), prompt.latent["subset"].numpy()
    np.testing.assert_array_equal(x[:, :n], np.broadcast_to(2 * np.eye(n) - 1, (100, n, n)))
    np.testing.assert_array_equal(y[:, :n], np.where(subset, 1.0, -1.0))
    acc = prompt_errors(ParityElimination(), prompt, "accuracy").numpy()
    assert np.all(acc[:, n:] == 1)


# -- learners ---------------------------------------------------------------------------------
def gf2_rank(rows):
    """Rank over GF(2) of a 0/1 integer matrix, by plain elimination (independent reference)."""
    m = rows.copy() % 2
    rank = 0
    for col in range(m.shape[1]):
        pivot = next((r for r in range(rank, m.shape[0]) if m[r, col]), None)
        if pivot is None:
            continue
        m[[rank, pivot]] = m[[pivot, rank]]
        for r in range(m.shape[0]):
            if r != rank and m[r, col]:
                m[r] ^= m[rank]
        rank += 1
    return rank


def test_gf2_elimination_exact_when_determined_and_half_otherwise():
    n, points, batch = 6, 16, 300
    prompt = draw(Boolean(function="parity", n=n, points=points), batch, seed=7)
    bits = (prompt.xs.numpy() > 0).astype(np.int64)
    acc = prompt_errors(ParityElimination(), prompt, "accuracy").numpy()
    determined = np.zeros((batch, points), dtype=bool)
    ranks = np.zeros((batch, points), dtype=np.int64)
    for b in range(batch):
        for i in range(points):
            ranks[b, i] = gf2_rank(bits[b, :i]) if i else 0
            determined[b, i] = gf2_rank(bits[b, : i + 1]) == ranks[b, i]
    np.testing.assert_array_equal(parity_rank(prompt.xs).numpy(), ranks)
    # exact wherever the query is in the span, in particular once rank n is reached
    assert np.all(acc[determined] == 1) and np.all(acc[ranks == n] == 1)
    assert (ranks == n).sum() > 100
    # undetermined queries: the label is a fair coin independent of the prediction (uniform subset)
    m = int((~determined).sum())
    assert m > 500
    assert abs(acc[~determined].mean() - 0.5) <= Z * 0.5 / math.sqrt(m)


def test_gf2_elimination_on_sparse_parity_and_at_larger_n():
    prompt = draw(Boolean(function="sparse-parity", n=40, points=60), 16, seed=8)
    acc = prompt_errors(ParityElimination(), prompt, "accuracy").numpy()
    ranks = parity_rank(prompt.xs).numpy()
    assert np.all(acc[ranks == 40] == 1) and (ranks == 40).any()


def literal_elimination(x, y):
    """Kearns-Vazirani elimination with an explicit literal set, one prompt at a time (reference)."""
    points, n = x.shape
    keep = np.ones((n, 2), dtype=bool)  # keep[k, 0]: literal x_k = +1; keep[k, 1]: x_k = −1
    preds = np.empty(points)
    for i in range(points):
        holds = np.where(x[i] > 0, ~keep[:, 1], ~keep[:, 0])
        preds[i] = 1.0 if holds.all() else -1.0
        if y[i] > 0:
            keep[:, 0] &= x[i] > 0
            keep[:, 1] &= x[i] < 0
    return preds


def test_conjunction_elimination_matches_reference_and_is_one_sided():
    prompt = draw(Boolean(function="conjunction", n=8, points=60), 80, seed=9)
    x, y = prompt.xs.numpy(), prompt.ys.numpy()
    preds = ConjunctionElimination().predict(prompt.xs, prompt.ys).numpy()
    reference = np.stack([literal_elimination(x[b], y[b]) for b in range(80)])
    np.testing.assert_array_equal(preds, reference)
    assert np.all(preds[y < 0] == -1)  # never errs on a negative
    assert (preds[y > 0] == -1).any()  # but does err on some positives early on
    assert np.mean(preds[:, -10:] == y[:, -10:]) > 0.95


def test_disjunction_elimination_is_the_dual_and_one_sided():
    prompt = draw(Boolean(function="disjunction", n=8, points=60), 80, seed=10)
    x, y = prompt.xs.numpy(), prompt.ys.numpy()
    preds = DisjunctionElimination().predict(prompt.xs, prompt.ys).numpy()
    reference = -np.stack([literal_elimination(x[b], -y[b]) for b in range(80)])  # ¬f is a conjunction
    np.testing.assert_array_equal(preds, reference)
    assert np.all(preds[y > 0] == 1)  # never errs on a positive


def test_hamming_knn_and_majority_label_match_brute_force():
    prompt = draw(Boolean(function="majority", n=7, points=25), 20, seed=11)
    x, y = prompt.xs.numpy(), prompt.ys.numpy()
    knn = HammingKNN(3).predict(prompt.xs, prompt.ys).numpy()
    majority = MajorityLabel().predict(prompt.xs, prompt.ys).numpy()
    for b in range(20):
        for i in range(25):
            hamming = (x[b, :i] != x[b, i]).sum(-1)
            order = np.argsort(hamming, kind="stable")[:3]
            assert knn[b, i] == pytest.approx(y[b, order].mean() if i else 0.0)
            assert majority[b, i] == (1.0 if y[b, :i].sum() > 0 else -1.0)


def test_baselines_by_class():
    assert "Elimination" in Boolean(function="conjunction").baselines()
    assert "GF(2) elimination" in Boolean(function="sparse-parity").baselines()
    assert isinstance(Boolean(function="majority").baselines()["Averaging"], Averaging)


# -- registry, large n, parameters ---------------------------------------------------------------
def test_registry_and_dimension_parameter():
    task = make_task("boolean", function="parity", n=28)
    assert TASKS["boolean"] is Boolean and task.dim == 28 and Boolean.dim_parameter == "n"
    assert parse_parameters(Boolean, ["teaching=true", "function=sparse-parity", "sparsity=3"]) == \
        {"teaching": True, "function": "sparse-parity", "sparsity": 3}


@pytest.mark.parametrize("function", ["parity", "conjunction", "3-dnf"])
def test_sampling_at_n_1000(function):
    task = Boolean(function=function, n=1000, points=40)
    prompt = task.sample(2, make_generator(0, "train"))
    assert prompt.xs.shape == (2, 40, 1000) and prompt.xs.dtype == torch.float32
    x = prompt.xs.double().numpy()
    np.testing.assert_array_equal(prompt.ys.numpy(), reference_labels(function, x, numpy_latent(prompt.to(
        dtype=torch.float64))))


# unknown choices, non-booleans, negative or non-integer sizes: tests/test_contracts.py, for every task
@pytest.mark.parametrize("params,name", [
    ({"n": 0}, "n"), ({"points": 0}, "points"), ({"function": "majority", "teaching": True}, "teaching"),
    ({"function": "sparse-parity", "sparsity": 9, "n": 8}, "sparsity"),
    ({"function": "parity", "sparsity": 2}, "sparsity"), ({"function": "sparse-disjunction", "n": 3}, "sparsity"),
    ({"plant_probability": 1.5}, "plant_probability"), ({"function": "parity", "plant_probability": 0.2},
                                                        "plant_probability"),
])
def test_invalid_parameters(params, name):
    with pytest.raises(ValueError, match=name):
        make_task("boolean", **params)


def test_invalid_sample_arguments():
    # batch_size=0, points=0, active_dims=n+1: tests/test_contracts.py, for every task
    task = Boolean(n=5, points=4)
    with pytest.raises(ValueError, match="active_dims"):
        task.sample(2, make_generator(0, "eval"), active_dims=3)


# -- training end to end ---------------------------------------------------------------------------
def test_tiny_gpt_trains_and_evaluates(tmp_path):
    records = train_and_evaluate(tmp_path / "run", "boolean", {"function": "conjunction", "n": 8, "points": 24})
    trained = [r["mean"] for r in records if r["predictor"] == "gpt (trained)" and r["position"] >= 12]
    assert all(0.0 <= v <= 1.0 for v in trained)
    # above chance: the labels are ~50/50 at n = 8 (P(+1) = 0.3 + 0.7·0.85^8 ≈ 0.49)
    assert np.mean(trained) > 0.6
