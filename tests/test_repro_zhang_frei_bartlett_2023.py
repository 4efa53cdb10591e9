"""zhang-frei-bartlett-2023's closed forms (covariate, task and query shifts, §4.2; random covariances, §4.3), the
paper's initialisation, and the query-position measure it uses."""
import pytest
import torch

from icl_sim.checks import monte_carlo
from icl_sim.models import build_model, constructed_lsa
from icl_sim.paper_repro import zhang_frei_bartlett_2023 as zfb
from icl_sim.paper_repro.measures import query_squared_errors
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import covariate_shift_risk, lsa_optimum_risk, preconditioner_risk


def _by_hand(d, n, c, m=None):
    gamma = n / (n + d + 1)
    finite = 0.0 if m is None else (d + 1) * c**2 * gamma**2 / m
    return d * c * ((c * gamma - 1) ** 2 + finite)


@pytest.mark.parametrize("d, n, c, m", [(5, 20, 0.25, 40), (5, 20, 4.0, 160), (3, 8, 1.0, 8), (10, 40, 2.0, 7)])
def test_shift_risk_against_the_general_risk_and_by_hand(d, n, c, m):
    identity = torch.eye(d, dtype=torch.float64)
    assert float(covariate_shift_risk(d, n, c, m)) == pytest.approx(_by_hand(d, n, c, m), rel=1e-12)
    assert float(covariate_shift_risk(d, n, c, m)) == pytest.approx(
        float(lsa_optimum_risk(identity, n, m, c * identity)), rel=1e-12)
    assert float(covariate_shift_risk(d, n, c)) == pytest.approx(_by_hand(d, n, c), rel=1e-12)
    assert float(covariate_shift_risk(d, n, c, 10**9)) == pytest.approx(_by_hand(d, n, c), rel=1e-6)


def test_shift_risk_is_vectorised_and_zero_only_at_one_over_gamma():
    d, n = 5, 20
    scales = torch.tensor([0.5, 1.0, (n + d + 1) / n, 2.0], dtype=torch.float64)
    limits = covariate_shift_risk(d, n, scales)
    assert limits.shape == (4,) and float(limits[2]) == pytest.approx(0.0, abs=1e-12)
    assert bool((limits[[0, 1, 3]] > 0).all())


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_shift_risk_against_monte_carlo(c):
    """Γ*_N = γI applied to prompts with x ~ N(0, cI), M points: mean squared error within 3 s.e."""
    d, n, m = 4, 10, 12
    task = LinearRegression(dim=d, points=m + 1, spectrum=(c,) * d, rotation="fixed")
    prompt = task.sample(200_000, make_generator(5, "eval", 0), dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", prompt.ys[:, :-1], prompt.xs[:, :-1]) / m
    prediction = n / (n + d + 1) * (prompt.xs[:, -1] * h).sum(-1)
    check = monte_carlo("shifted risk", float(covariate_shift_risk(d, n, c, m)), (prediction - prompt.ys[:, -1]) ** 2)
    assert check.passed, check.describe()


def test_bad_scale_is_refused():
    with pytest.raises(ValueError, match="scale"):
        covariate_shift_risk(5, 20, 0.0)
    with pytest.raises(ValueError, match="test_points"):
        covariate_shift_risk(5, 20, 1.0, 0)


def test_query_errors_at_position_m_use_the_first_m_points():
    """query_squared_errors(model, prompt, M): ŷ from points 0..M−1 and the query x_M, against y_M."""
    d, points, m = 3, 9, 5
    gamma = torch.tensor([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 2.0]], dtype=torch.float64)
    model = constructed_lsa(d, points, 1, 1.0, gamma)
    prompt = LinearRegression(dim=d, points=points, noise=0.1).sample(64, make_generator(0, "eval", 0),
                                                                       dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", prompt.ys[:, :m], prompt.xs[:, :m]) / m
    by_hand = ((prompt.xs[:, m] * (h @ gamma.T)).sum(-1) - prompt.ys[:, m]) ** 2
    assert torch.allclose(query_squared_errors(model, prompt, position=m), by_hand, rtol=1e-9, atol=1e-12)


def _spd(values, seed):
    rotation, _ = torch.linalg.qr(torch.randn(len(values), len(values), generator=torch.Generator().manual_seed(seed),
                                              dtype=torch.float64))
    return (rotation * torch.tensor(values, dtype=torch.float64)) @ rotation.T


def test_shifted_risk_without_a_shift_is_the_preconditioner_risk():
    covariance, gamma = _spd([1.0, 0.5, 2.0], 0), _spd([0.7, 0.2, 1.1], 1) + 0.1 * torch.ones(3, 3, dtype=torch.float64)
    for points in (3, 10, 40):
        assert float(zfb.shifted_risk(gamma, covariance, covariance, torch.eye(3, dtype=torch.float64), points)) == \
            pytest.approx(float(preconditioner_risk(gamma, covariance, points)), rel=1e-12)


def test_shifted_risk_against_monte_carlo():
    """Context x ~ N(0, Λ'), query x_q ~ N(μ, I) (E x_q x_qᵀ = I + μμᵀ), w ~ N(0, Ξ); an arbitrary Γ."""
    d, m, count = 3, 6, 200_000
    covariance, task_moment = _spd([1.0, 0.5, 2.0], 2), _spd([2.0, 0.3, 1.0], 3)
    gamma = _spd([0.6, 0.9, 0.3], 4)
    mean = torch.tensor([1.5, 0.0, -0.5], dtype=torch.float64)
    generator = torch.Generator().manual_seed(5)
    xs = torch.randn(count, m, d, generator=generator, dtype=torch.float64) @ torch.linalg.cholesky(covariance).T
    w = torch.randn(count, d, generator=generator, dtype=torch.float64) @ torch.linalg.cholesky(task_moment).T
    query = mean + torch.randn(count, d, generator=generator, dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", torch.einsum("bnd,bd->bn", xs, w), xs) / m
    errors = (torch.einsum("bi,ij,bj->b", query, gamma, h) - (query * w).sum(-1)) ** 2
    expected = float(zfb.shifted_risk(gamma, covariance, torch.eye(d, dtype=torch.float64) + torch.outer(mean, mean),
                                      task_moment, m))
    check = monte_carlo("shifted risk", expected, errors)
    assert check.passed, check.describe()


def test_random_covariance_step_is_the_averaged_stationary_point():
    """E_U[ΛΓK] = E_U[Λ²] at Γ = γ_r I, K = (1+1/N)Λ² + trΛ/N·Λ, Λ = U diag(λ) Uᵀ over Haar U (Monte Carlo), and
    γ_r minimises the rotation-invariant risk of γI."""
    spectrum, n = (1.0, 1.0, 0.5, 0.25, 1.0), 20
    step = zfb.random_covariance_step(spectrum, n)
    task = LinearRegression(dim=5, points=2, spectrum=spectrum, rotation="per-prompt")
    lam = task.sample(20_000, make_generator(6, "eval", 0), dtype=torch.float64).latent["covariance"]
    kernel = (1 + 1 / n) * lam @ lam + lam.diagonal(dim1=-2, dim2=-1).sum(-1)[:, None, None] / n * lam
    gradient = (step * lam @ kernel - lam @ lam).mean(0)
    assert float(gradient.abs().max()) < 0.02
    risk = [float(preconditioner_risk(g * torch.eye(5, dtype=torch.float64), torch.diag(torch.tensor(spectrum,
                                      dtype=torch.float64)), n)) for g in (step * 0.99, step, step * 1.01)]
    assert risk[1] < risk[0] and risk[1] < risk[2]


def test_zfb_initialisation_is_the_papers_and_predicts_as_their_layer():
    """W^PV = σ e eᵀ, W^KQ = σ[[ΘΘᵀ, 0], [0, 0]], ‖ΘΘᵀ‖_F = 1: ZFB's prediction σ² hᵀΘΘᵀ x_q (ours with P = −W^PV)."""
    torch.manual_seed(0)
    model = build_model("lsa", 3, 9, layers=1, init="zfb", init_scale=0.1).double()
    value, key_query = model.value.detach()[0, 0], model.key_query.detach()[0, 0]
    gram = key_query[:3, :3] / 0.1
    assert torch.count_nonzero(value) == 1 and float(value[3, 3]) == pytest.approx(-0.1)
    assert float(torch.linalg.matrix_norm(gram)) == pytest.approx(1.0) and bool((torch.linalg.eigvalsh(gram) > -1e-9).all())
    assert torch.count_nonzero(key_query[3]) == 0 and torch.count_nonzero(key_query[:, 3]) == 0
    prompt = LinearRegression(dim=3, points=9).sample(16, make_generator(0, "eval", 0), dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", prompt.ys[:, :-1], prompt.xs[:, :-1]) / 8
    torch.testing.assert_close(model.predict(prompt.xs, prompt.ys)[:, -1],
                               -value[3, 3] * torch.einsum("bi,ij,bj->b", h, key_query[:3, :3], prompt.xs[:, -1]),
                               atol=1e-12, rtol=1e-10)
    with pytest.raises(ValueError, match="init"):
        build_model("lsa", 3, 9, init="zfb", parameterisation="sparse")


def test_final_query_errors_equal_the_per_position_errors_at_the_last_position():
    model = constructed_lsa(3, 9, 1, 0.8, torch.eye(3, dtype=torch.float64))
    prompt = LinearRegression(dim=3, points=9).sample(32, make_generator(1, "eval", 0), dtype=torch.float64)
    torch.testing.assert_close(zfb.final_query_errors(model, prompt), query_squared_errors(model, prompt),
                               rtol=1e-10, atol=1e-12)


def test_runs_are_gradient_flow_from_the_papers_initialisation():
    for name, config in zfb.runs(zfb.SCALES["quick"]).items():
        assert (config.optimizer, config.lr_schedule, config.model_params["init"]) == ("sgd", "cosine", "zfb")
    assert zfb.tasks(zfb.SCALES["quick"])["random-covariance"].rotation == "per-prompt"
