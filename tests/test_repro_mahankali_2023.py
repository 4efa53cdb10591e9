"""mahankali-2023: the inverse-covariance-prior optimum (Thm 2) against Monte Carlo and numpy, the map from the
paper's (W^PV, W^KQ) to icl-sim's LSA, and the checks' kinds."""
import math

import numpy
import pytest
import sympy
import torch

from icl_sim.checks import claim_check, monte_carlo
from icl_sim.models import build_model
from icl_sim.paper_repro.measures import layer_preconditioners
from icl_sim.paper_repro import mahankali_2023
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import (inverse_covariance_prior_preconditioner, one_step_gd_risk, optimal_preconditioner,
                                     optimal_step)
from icl_sim.theory.formulas.one_layer_optimum import _derivation, derive


def _rotated_covariance(eigenvalues, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(len(eigenvalues), len(eigenvalues), generator=generator, dtype=torch.float64))
    return (q * torch.tensor(eigenvalues, dtype=torch.float64)) @ q.T


def test_the_optimum_is_the_optimal_step_times_the_inverse_covariance():
    covariance = _rotated_covariance([3.0, 1.0, 0.5, 0.1])
    for n, noise, scale in [(8, 0.0, 1.0), (20, 0.7, 1.5)]:
        gamma = inverse_covariance_prior_preconditioner(covariance, n, noise, scale)
        expected = optimal_step(4, n, noise, scale) * torch.linalg.inv(covariance).numpy()
        assert gamma.numpy() == pytest.approx(expected, rel=1e-10)
    batched = torch.stack([covariance, 2 * covariance])
    assert torch.allclose(inverse_covariance_prior_preconditioner(batched, 8)[1],
                          inverse_covariance_prior_preconditioner(2 * covariance, 8))
    steps = derive("inverse-covariance")
    assert "g^*" in str(steps[-3].expression) and len(steps) > 5
    derived = _derivation()
    for key in ("g_star", "risk_star"):  # the same step and risk as one isotropic GD step (sympy-exact)
        isotropic = derived["one-step"][1]["eta_star" if key == "g_star" else "risk_star"]
        assert sympy.simplify(derived["inverse-covariance"][1][key] - isotropic) == 0


def test_monte_carlo_least_squares_fit_of_gamma_and_its_risk():
    """Γ̂ = argmin of the empirical risk over all d×d matrices (a least-squares fit) matches η*Σ⁻¹,
    and the Monte Carlo risk of η*Σ⁻¹ matches one_step_gd_risk, on the task's own prompts."""
    dim, n, noise = 3, 6, 0.5
    task = LinearRegression(dim=dim, points=n + 1, noise=noise, condition_number=4.0, rotation="fixed",
                            weight_prior="inverse-covariance")
    prompt = task.sample(200_000, make_generator(11, "eval", 0), dtype=torch.float64)
    covariance = prompt.latent["covariance"][0]
    h = torch.einsum("bn,bnd->bd", prompt.ys[:, :-1], prompt.xs[:, :-1]) / n
    query, target = prompt.xs[:, -1], prompt.ys[:, -1]
    features = (query[:, :, None] * h[:, None, :]).reshape(len(target), -1)  # ŷ = vec(Γ)ᵀ vec(x_q hᵀ)
    gram = features.T @ features
    fit = torch.linalg.solve(gram, features.T @ target)
    residual = target - features @ fit
    standard_errors = (residual.var() * torch.diagonal(torch.linalg.inv(gram))).sqrt()
    gamma = inverse_covariance_prior_preconditioner(covariance, n, noise)
    assert ((fit - gamma.flatten()).abs() <= 4 * standard_errors).all()
    isotropic = optimal_preconditioner(covariance, n, noise)  # the other prior's optimum is clearly different
    assert ((fit - isotropic.flatten()).abs() > 4 * standard_errors).any()
    errors = ((query * (h @ gamma.T)).sum(-1) - target) ** 2
    assert monte_carlo("risk at η*Σ⁻¹", one_step_gd_risk(dim, n, noise), errors).passed


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="covariance"):
        inverse_covariance_prior_preconditioner(torch.tensor([[1.0, 2.0], [0.0, 1.0]]), 4)
    with pytest.raises(ValueError, match="n"):
        inverse_covariance_prior_preconditioner(torch.eye(2), 0)


def test_the_quick_grid_spans_dimension_length_and_noise():
    grid = mahankali_2023.SCALES["quick"].grid
    assert len({d for d, _, _ in grid}) > 1 and len({n for _, n, _ in grid}) > 1 and any(s for _, _, s in grid)


def test_a_risk_claim_check_takes_one_risk_per_seed_and_the_risk_checks_band():
    from icl_sim.paper_repro.measures import risk_claim_check

    check = risk_claim_check("optimal-step", "risk", 2.0, [2.01, 2.012], [0.01, 0.03], slack=0.02, source="Thm 1")
    assert check.kind == "claim" and check.per_seed == (2.01, 2.012)
    assert check.tolerance == pytest.approx(3 * 0.02 + 0.02 * 2.0, rel=1e-12)
    assert check.passed  # the seeds' interval [1.998, 2.024] lies inside 2 ± 0.1
    assert not risk_claim_check("optimal-step", "risk", 2.0, [2.01, 2.2], [0.01, 0.03], slack=0.02,
                                source="Thm 1").passed


def _paper_prediction(value, key_query, xs, ys):
    """The paper's readout in numpy: ŷ = [W^PV (Σ_{i≤n} z_i z_iᵀ / n) W^KQ z_q]_{d+1}, z_q = (x_q, 0)."""
    xs, ys, value, key_query = (t.numpy() for t in (xs, ys, value, key_query))
    context = numpy.concatenate([xs[:, :-1], ys[:, :-1, None]], axis=-1)  # (B, n, d+1)
    query = numpy.concatenate([xs[:, -1], numpy.zeros((len(xs), 1))], axis=-1)
    moments = numpy.einsum("bni,bnj->bij", context, context) / context.shape[1]
    return numpy.einsum("i,bij,jk,bk->b", value[-1], moments, key_query, query)


def test_the_papers_optimum_maps_to_icl_sims_lsa_and_reads_back_eta_gamma():
    """W^PV = e eᵀ, W^KQ = [[ηΓ, 0], [0, 0]] mapped by to_icl_sim predict the paper's ŷ = (η/n) Σ y_i x_iᵀ Γ x_q
    in icl-sim's lsa, and its effective preconditioner reads B = ηΓ (the map of the module docstring)."""
    dim, n = 3, 7
    gamma = _rotated_covariance([2.0, 1.0, 0.25], seed=3)
    eta = optimal_step(dim, n, 0.5)
    value, key_query = mahankali_2023.paper_weights(eta, gamma)
    weights = mahankali_2023.to_icl_sim(value, key_query)
    model = build_model("lsa", dim, n + 1, layers=1).double()
    with torch.no_grad():
        model.value.copy_(weights["value"])
        model.key_query.copy_(weights["key_query"])
    prompt = LinearRegression(dim=dim, points=n + 1, noise=0.5).sample(64, make_generator(5, "eval", 0),
                                                                      dtype=torch.float64)
    ours = model.predict(prompt.xs, prompt.ys)[:, -1]
    papers = _paper_prediction(value, key_query, prompt.xs, prompt.ys)
    gd_step = eta * numpy.einsum("bn,bnd,de,be->b", prompt.ys[:, :-1].numpy(), prompt.xs[:, :-1].numpy(),
                                 gamma.numpy(), prompt.xs[:, -1].numpy()) / n
    assert ours.numpy() == pytest.approx(papers, rel=1e-10, abs=1e-12)
    assert papers == pytest.approx(gd_step, rel=1e-10, abs=1e-12)
    (preconditioner,) = layer_preconditioners(model)
    assert preconditioner.numpy() == pytest.approx((eta * gamma).numpy(), rel=1e-10, abs=1e-12)


def test_the_diagonal_spread_counts_only_a_positive_multiple_of_the_identity():
    diagonal = torch.tensor([1.0, 1.05, 0.95], dtype=torch.float64)
    assert mahankali_2023.diagonal_spread(diagonal) == pytest.approx(0.1 / 1.0, rel=1e-12)
    assert mahankali_2023.diagonal_spread(-diagonal) == math.inf  # −ηI ascends the loss: no GD step
    check = claim_check("nonlinear-link-plain-gd", "spread", 0.1, [mahankali_2023.diagonal_spread(-diagonal)] * 3,
                        relation="at_most")
    assert not check.passed


def test_the_risk_check_is_sanity_with_three_standard_errors_plus_two_percent():
    (d, n, sigma), name = mahankali_2023.SCALES["smoke"].grid[0], "iso-d4-n8-sigma0"
    rows = []
    for seed in range(2):
        rows += [{"run": name, "seed": seed, "quantity": "optimal_step", "value": optimal_step(d, n, sigma)},
                 {"run": name, "seed": seed, "quantity": "learned_step", "value": optimal_step(d, n, sigma)},
                 {"run": name, "seed": seed, "quantity": "risk", "value": one_step_gd_risk(d, n, sigma)},
                 {"run": name, "seed": seed, "quantity": "risk_standard_error", "value": 0.01},
                 {"run": name, "seed": seed, "quantity": "risk_formula", "value": one_step_gd_risk(d, n, sigma)}]
    check = mahankali_2023._risk_check({"rows": rows}, name, "x", "Thm 1")
    assert check.kind == "sanity" and check.passed
    assert check.tolerance == pytest.approx(3 * 0.01 + 0.02 * one_step_gd_risk(d, n, sigma), rel=1e-12)
