"""large-prompt-softmax: verify() passes and can fail, and its formulas agree with independent references
(Gauss–Hermite quadrature, autograd, icl-sim's softmax-attention model, the one-dimensional sympy derivation)."""
import json
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from icl_sim import catalogue
from icl_sim.claims import CLAIMS
from icl_sim.claims import large_prompt_softmax as lps
from icl_sim.cli import cli
from icl_sim.models.softmax_attention import SoftmaxAttention, SoftmaxAttentionConfig
from icl_sim.theory.formulas import large_prompt_softmax as formulas
from icl_sim.theory.symbolic import torch_function

NAME = "large-prompt-softmax"


def test_registered_listed_and_verified_from_the_command_line():
    assert NAME in CLAIMS and NAME in catalogue.read()["claims"]
    assert NAME in CliRunner().invoke(cli, ["theory", "list"]).output
    result = CliRunner().invoke(cli, ["theory", "verify", NAME, "--json"])
    assert result.exit_code == 0, result.output
    checks = json.loads(result.stdout)["claims"][0]["checks"]
    assert all(check["passed"] for check in checks)
    rates = [check for check in checks if check["quantity"].startswith("rate")]
    assert len(rates) == 3 and all(0 < check["standard_error"] < 0.01 for check in rates)


def test_verify_passes_on_another_seed():
    failed = [check.describe() for check in CLAIMS[NAME].verify(1) if not check.passed]
    assert not failed, failed


def test_a_wrong_limit_fails_the_checks(monkeypatch):
    """Un-normalised linear attention, (1/N) Σ V x_i (1 + x_iᵀUz) → V m + V(Γ + m mᵀ)U z, is not the limit."""
    def uncentred(mean, covariance, score, value, queries):
        return (mean + queries @ score.T @ (covariance + torch.outer(mean, mean))) @ value.T

    monkeypatch.setattr(lps, "attention_limit", uncentred)
    checks = {check.quantity: check for check in CLAIMS[NAME].verify(0)}
    failed = {quantity for quantity, check in checks.items() if not check.passed}
    assert any(q.startswith("rate") and "‖output" in q for q in failed)
    assert any(q.startswith("constant") and "‖output" in q for q in failed)
    assert any(q.startswith("limit") and "z_" in q and "T̂" in q and "U" not in q for q in failed)
    assert not any("score gradient" in q for q in failed)  # its limit does not involve the mean


# -- the matrix forms against Gauss–Hermite quadrature (d = 2), an independent numerical reference -----------------

def _gaussian_expectation(function, mean, covariance, nodes=40):
    """E f(x), x ~ N(mean, covariance) in R², by a tensor Gauss–Hermite rule (probabilists')."""
    points, weights = np.polynomial.hermite_e.hermegauss(nodes)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.stack(np.meshgrid(points, points, indexing="ij"), -1).reshape(-1, 2)
    mass = np.outer(weights, weights).reshape(-1)
    x = mean.numpy() + grid @ np.linalg.cholesky(covariance.numpy()).T
    values = function(x)
    return np.tensordot(mass, values, axes=(0, 0))


@pytest.fixture
def head():
    covariance = torch.tensor([[1.2, 0.4], [0.4, 0.5]], dtype=torch.float64)
    score = torch.tensor([[0.3, -0.2], [0.1, 0.25]], dtype=torch.float64)
    value = torch.tensor([[1.0, -0.5], [0.3, 0.8], [-0.7, 0.2]], dtype=torch.float64)
    return lps.GaussianHead(torch.tensor([0.4, -0.6], dtype=torch.float64), covariance, score, value)


QUERIES = torch.tensor([[0.0, 0.0], [1.0, -0.5], [-1.5, 2.0]], dtype=torch.float64)


def test_limit_and_constants_against_quadrature(head):
    mean, covariance, value = head.mean, head.covariance, head.value.numpy()
    limit = formulas.attention_limit(mean, covariance, head.score, head.value, QUERIES)
    output = formulas.output_constant(covariance, head.score, head.value, QUERIES)
    gradient = formulas.score_gradient_constant(covariance, head.score, head.value, QUERIES)
    gamma = covariance.numpy()
    for k, query in enumerate(QUERIES):
        a = (head.score @ query).numpy()
        normaliser = _gaussian_expectation(lambda x: np.exp(x @ a), mean, covariance)
        tilted = _gaussian_expectation(lambda x: np.exp(x @ a)[:, None] * x, mean, covariance) / normaliser
        assert limit[k].numpy() == pytest.approx(value @ tilted, rel=1e-10, abs=1e-12)
        spread = lambda x: x - tilted  # noqa: E731
        reference = _gaussian_expectation(
            lambda x: np.exp(2 * x @ a) * ((spread(x) @ value.T) ** 2).sum(-1), mean, covariance) / normaliser**2
        assert float(output[k]) == pytest.approx(reference, rel=1e-9)
        outer = lambda x: spread(x)[:, :, None] * spread(x)[:, None, :] - gamma  # noqa: E731
        reference = _gaussian_expectation(
            lambda x: np.exp(2 * x @ a) * ((value @ outer(x)) ** 2).sum((-2, -1)), mean, covariance) / normaliser**2
        assert float(gradient[k]) == pytest.approx(float(query @ query) * reference, rel=1e-9)


def test_query_average_against_quadrature(head):
    averaged = _gaussian_expectation(
        lambda z: formulas.output_constant(head.covariance, head.score, head.value, torch.from_numpy(z)).numpy(),
        torch.zeros(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64), nodes=60)
    assert formulas.query_averaged_output_constant(head.covariance, head.score, head.value) == pytest.approx(
        float(averaged), rel=1e-8)


def test_derivation_matches_the_matrix_forms_in_one_dimension():
    steps = formulas.derive()
    m, gamma, a = 0.3, 0.8, 0.6
    one = lambda number: torch.tensor([[number]], dtype=torch.float64)  # noqa: E731
    variance, score = one(gamma), one(a)  # z = 1, so a = U z = U
    queries = torch.ones(1, 1, dtype=torch.float64)
    symbols = (formulas.a, formulas.gamma, formulas.m)
    assert float(formulas.attention_limit(torch.tensor([m], dtype=torch.float64), variance, score, one(1.0),
                                          queries)) == pytest.approx(
        float(torch_function(steps[1].expression.rhs, symbols)(a, gamma, m)), rel=1e-12)
    assert steps[3].expression == 0  # the softmax derivative is V z Ĉ exactly
    for step, function in ((steps[4], formulas.output_constant), (steps[5], formulas.score_gradient_constant)):
        expected = float(torch_function(step.expression.rhs, symbols[:2])(a, gamma))
        assert float(function(variance, score, one(1.0), queries)) == pytest.approx(expected, rel=1e-12)
    # query average: κ(z) = e^{αz²}(c + βz²) with α = U²γ, c = v²γ, β = v²U²γ², ρ = 1 − 2α
    v, alpha = 1.3, a**2 * gamma
    averaged = torch_function(steps[6].expression.rhs, (formulas.c, formulas.beta, formulas.rho))(
        v**2 * gamma, v**2 * a**2 * gamma**2, 1 - 2 * alpha)
    assert formulas.query_averaged_output_constant(variance, score, one(v)) == pytest.approx(float(averaged),
                                                                                           rel=1e-12)


# -- the finite-prompt head against autograd and against icl-sim's softmax-attention model -----------------------

def test_gradients_against_autograd(head):
    generator = torch.Generator().manual_seed(3)
    tokens = torch.randn(4, 7, 2, generator=generator, dtype=torch.float64)
    queries = torch.randn(4, 2, generator=generator, dtype=torch.float64)
    finite = lps.attention_gradients(tokens, queries, head.score, head.value)

    def output(score, value, b):
        return lps.attention_gradients(tokens[b:b + 1], queries[b:b + 1], score, value)["output"][0]

    for b in range(4):
        by_score, by_value = torch.autograd.functional.jacobian(lambda s, v: output(s, v, b), (head.score, head.value))
        assert torch.allclose(finite["score gradient"][b], by_score, atol=1e-12)
        assert torch.allclose(finite["value gradient"][b], by_value, atol=1e-12)
        weights = torch.softmax(tokens[b] @ head.score @ queries[b], dim=0)
        assert torch.allclose(finite["output"][b], head.value @ (weights @ tokens[b]), atol=1e-13)


def test_the_head_is_the_softmax_attention_models_first_layer():
    """Tokens (x, y), query (x_q, 0): the model's prediction is minus the label row of P times the head's mix."""
    dim, points = 3, 9
    model = SoftmaxAttention(dim, points + 1, SoftmaxAttentionConfig(init_scale=0.3)).double()
    generator = torch.Generator().manual_seed(5)
    xs = torch.randn(6, points + 1, dim, generator=generator, dtype=torch.float64)
    ys = torch.randn(6, points + 1, generator=generator, dtype=torch.float64)
    tokens = torch.cat([xs[:, :-1], ys[:, :-1, None]], dim=-1)
    queries = torch.cat([xs[:, -1], torch.zeros(6, 1, dtype=torch.float64)], dim=-1)
    score, value = model.score[0, 0].detach(), model.value[0, 0].detach()
    head = lps.attention_gradients(tokens, queries, score, value[-1:])["output"][:, 0]
    with torch.no_grad():
        assert torch.allclose(model.last_prediction(xs, ys), -head, atol=1e-12)


# -- bad input -------------------------------------------------------------------------------------------------

def test_bad_shapes_and_an_infinite_query_average_are_refused(head):
    with pytest.raises(ValueError, match="mean"):
        formulas.attention_limit(torch.zeros(3, dtype=torch.float64), head.covariance, head.score, head.value,
                                 QUERIES)
    with pytest.raises(ValueError, match="queries"):
        formulas.output_constant(head.covariance, head.score, head.value, QUERIES[:, :1])
    with pytest.raises(ValueError, match="value"):
        formulas.score_gradient_limit(head.covariance, head.value.T, QUERIES)
    with pytest.raises(ValueError, match="score"):
        formulas.query_averaged_output_constant(head.covariance, 3 * torch.eye(2, dtype=torch.float64), head.value)
