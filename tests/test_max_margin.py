"""Hard-margin SVMs (icl_sim.theory.max_margin) against closed forms and scipy's SLSQP as an independent solver."""
import numpy as np
import pytest
import torch
from scipy.linalg import null_space
from scipy.optimize import minimize

from icl_sim.theory.max_margin import (attention_svm, finite_component, matrix_correlation,
                                       max_margin_classifier, svm_equivalence)


def slsqp_min_norm(rows: np.ndarray, ties: np.ndarray | None = None) -> np.ndarray:
    """argmin ‖v‖² subject to rows @ v ≥ 1 (and ties @ v = 0), by scipy's SLSQP (an active-set method, unlike
    Clarabel)."""
    constraints = [{"type": "ineq", "fun": lambda v: rows @ v - 1, "jac": lambda v: rows}]
    if ties is not None:
        constraints.append({"type": "eq", "fun": lambda v: ties @ v, "jac": lambda v: ties})
    result = minimize(lambda v: v @ v, np.ones(rows.shape[1]), jac=lambda v: 2 * v, method="SLSQP",
                      constraints=constraints, options={"ftol": 1e-14, "maxiter": 500})
    assert result.success, result.message
    return result.x


def prompts(seed: int, n: int = 4, count: int = 3, dim: int = 4):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randn(n, count, dim, generator=generator, dtype=torch.float64)
    queries = torch.randn(n, dim, generator=generator, dtype=torch.float64)
    selected = torch.randint(count, (n,), generator=generator)
    return tokens, queries, selected


def margins(weights, tokens, queries, selected):
    """(x_α − x_t)ᵀ W z_i for every prompt i and every other token t."""
    scores = torch.einsum("ita,ab,ib->it", tokens, weights, queries)
    chosen = scores[torch.arange(len(selected)), selected]
    others = torch.ones_like(scores, dtype=torch.bool)
    others[torch.arange(len(selected)), selected] = False
    return (chosen[:, None] - scores)[others]


@pytest.mark.parametrize("norm", ["fro", "nuc"])
def test_one_constraint_has_the_rank_one_closed_form(norm):
    """With one prompt of two tokens the constraint is ⟨W, a zᵀ⟩ ≥ 1, a = x_α − x_t; both norms are least at
    W = a zᵀ / (‖a‖² ‖z‖²) (the Frobenius projection; for the nuclear norm, the dual of the spectral norm of the
    rank-one a zᵀ)."""
    tokens = torch.tensor([[[1.0, 2.0, 0.0], [0.0, -1.0, 1.0]]], dtype=torch.float64)
    queries = torch.tensor([[0.5, 0.0, -2.0]], dtype=torch.float64)
    a, z = tokens[0, 1] - tokens[0, 0], queries[0]
    expected = torch.outer(a, z) / (a.square().sum() * z.square().sum())
    solution = attention_svm(tokens, queries, torch.tensor([1]), norm)
    assert torch.allclose(solution, expected, atol=1e-7)


def test_the_frobenius_svm_agrees_with_an_independent_solver():
    tokens, queries, selected = prompts(0)
    solution = attention_svm(tokens, queries, selected, "fro")
    chosen = tokens[torch.arange(4), selected]
    rows = torch.stack([torch.outer(chosen[i] - tokens[i, t], queries[i]).flatten()
                        for i in range(4) for t in range(3) if t != selected[i]])
    reference = slsqp_min_norm(rows.numpy()).reshape(4, 4)
    assert np.allclose(solution.numpy(), reference, atol=1e-5)
    assert margins(solution, tokens, queries, selected).min() >= 1 - 1e-7


def test_each_norm_is_least_at_its_own_solution_and_the_nuclear_one_has_lower_rank():
    """Optimality across the two programs (each feasible for the other): ‖W_F‖_F ≤ ‖W_*‖_F and ‖W_*‖_* ≤ ‖W_F‖_*;
    with fewer constraints than d², the nuclear solution has lower rank (Tarzanagh et al.'s rank gap)."""
    tokens, queries, selected = prompts(1, n=3, count=2, dim=5)
    frobenius, nuclear = (attention_svm(tokens, queries, selected, norm) for norm in ("fro", "nuc"))
    for weights in (frobenius, nuclear):
        assert margins(weights, tokens, queries, selected).min() >= 1 - 1e-6
    assert torch.linalg.norm(frobenius) <= torch.linalg.norm(nuclear) + 1e-7
    assert torch.linalg.matrix_norm(nuclear, "nuc") <= torch.linalg.matrix_norm(frobenius, "nuc") + 1e-7

    def rank(weights):
        values = torch.linalg.svdvals(weights)
        return int((values > 1e-5 * values[0]).sum())

    assert rank(nuclear) < rank(frobenius) == 3



def outer_rows(tokens, queries, pairs):
    """vec((x_iτ − x_it) z_iᵀ) for each (i, τ, t) of ``pairs``."""
    return torch.stack([torch.outer(tokens[i, upper] - tokens[i, lower], queries[i]).flatten()
                        for i, upper, lower in pairs]).numpy()


def test_a_mask_of_one_token_per_prompt_is_the_index_form():
    tokens, queries, selected = prompts(3)
    mask = torch.zeros(4, 3, dtype=torch.bool)
    mask[torch.arange(4), selected] = True
    for norm in ("fro", "nuc"):
        assert torch.allclose(attention_svm(tokens, queries, mask, norm), attention_svm(tokens, queries, selected,
                                                                                        norm), atol=1e-7)


def test_the_svm_of_selected_sets_ties_them_and_agrees_with_an_independent_solver():
    """Sets O_0 = {0, 2}, O_1 = {1}, O_2 = {0, 1}, O_3 = all of T = 4 tokens: margins ≥ 1 from O_i to the rest,
    ties within (the last prompt's ties alone)."""
    tokens, queries, _ = prompts(4, n=4, count=4, dim=5)
    mask = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    solution = attention_svm(tokens, queries, mask, "fro")
    margin = [(i, upper, lower) for i in range(4) for upper in range(4) for lower in range(4)
              if mask[i, upper] and not mask[i, lower]]
    ties = outer_rows(tokens, queries, [(0, 2, 0), (2, 1, 0), (3, 1, 0), (3, 2, 0), (3, 3, 0)])
    reference = slsqp_min_norm(outer_rows(tokens, queries, margin), ties).reshape(5, 5)
    assert np.allclose(solution.numpy(), reference, atol=1e-5)
    assert np.abs(ties @ solution.numpy().flatten()).max() < 1e-7


def test_the_finite_component_reproduces_the_softmax_ratios_with_least_norm():
    """Softmax weights of a known W: W^fin meets (x_τ − x_t)ᵀ W^fin z = log(s_τ / s_t) within each set, and is
    orthogonal to every W that leaves those scores unchanged (scipy's null space): the least-norm solution."""
    tokens, queries, _ = prompts(5, n=3, count=4, dim=4)
    true = torch.randn(4, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    probabilities = torch.softmax(torch.einsum("ita,ab,ib->it", tokens, true, queries), dim=-1)
    mask = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 1]], dtype=torch.bool)
    finite = finite_component(tokens, queries, probabilities, mask)
    pairs = [(0, 1, 0), (1, 2, 1), (1, 3, 1)]
    ties = outer_rows(tokens, queries, pairs)
    logs = probabilities.log().numpy()
    ratios = np.array([logs[i, upper] - logs[i, lower] for i, upper, lower in pairs])
    assert np.allclose(ties @ finite.numpy().flatten(), ratios, atol=1e-10)
    assert np.abs(null_space(ties).T @ finite.numpy().flatten()).max() < 1e-10
    assert torch.equal(finite_component(tokens, queries, probabilities, torch.eye(4, dtype=torch.bool)[:3]),
                       torch.zeros(4, 4, dtype=torch.float64))


def test_the_svm_equivalence_is_the_nearest_point_of_its_line():
    finite, direction = torch.eye(3, dtype=torch.float64), torch.ones(3, 3, dtype=torch.float64)
    assert torch.allclose(svm_equivalence(finite + 2.5 * direction, direction, finite), finite + 2.5 * direction)
    off_line = finite + 2.5 * direction + torch.tensor([[1.0, -1.0, 0.0]] * 3, dtype=torch.float64)  # ⟂ direction
    assert torch.allclose(svm_equivalence(off_line, direction, finite), finite + 2.5 * direction)

def test_the_max_margin_classifier_has_its_closed_form_and_agrees_with_an_independent_solver():
    xs = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    solution = max_margin_classifier(xs, torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert torch.allclose(solution, torch.tensor([0.5, -1.0], dtype=torch.float64), atol=1e-7)

    generator = torch.Generator().manual_seed(2)
    xs = torch.randn(20, 3, generator=generator, dtype=torch.float64)
    ys = torch.sign(xs @ torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64))
    solution = max_margin_classifier(xs, ys)
    assert np.allclose(solution.numpy(), slsqp_min_norm((ys[:, None] * xs).numpy()), atol=1e-5)


def test_matrix_correlation_is_the_cosine_of_two_matrices():
    weights = torch.tensor([[1.0, 2.0], [0.0, -1.0]])
    assert matrix_correlation(weights, 3 * weights) == pytest.approx(1.0)
    assert matrix_correlation(weights, -weights) == pytest.approx(-1.0)
    assert matrix_correlation(torch.eye(2), torch.tensor([[0.0, 1.0], [1.0, 0.0]])) == pytest.approx(0.0)


@pytest.mark.parametrize("call, message", [
    (lambda: attention_svm(torch.ones(1, 2, 2), torch.ones(1, 2), torch.tensor([0])), "no solution"),
    (lambda: attention_svm(*prompts(0), norm="spectral"), "norm must be one of fro, nuc"),
    (lambda: attention_svm(torch.ones(2, 3, 2), torch.ones(2, 3), torch.tensor([0, 1])), "queries must have shape"),
    (lambda: attention_svm(torch.ones(2, 3, 2), torch.ones(2, 2), torch.tensor([0, 3])), "selected must hold"),
    (lambda: attention_svm(torch.ones(1, 2, 2), torch.ones(1, 2), torch.tensor([[True, True]])), "selected must mark"),
    (lambda: attention_svm(torch.ones(1, 2, 2), torch.ones(1, 2), torch.tensor([[False, False]])), "selected must mark"),
    (lambda: finite_component(torch.ones(1, 3, 2), torch.ones(1, 2), torch.tensor([[0.5, 0.0, 0.5]]),
                              torch.tensor([[True, True, False]])), "probabilities must be positive"),
    (lambda: max_margin_classifier(torch.ones(2, 2), torch.tensor([1.0, -1.0])), "no solution"),
    (lambda: max_margin_classifier(torch.ones(2, 2), torch.tensor([1.0, 0.0])), "ys must be labels"),
])
def test_bad_input_is_one_line_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()
