"""The covariate-shift curve of zhang-frei-bartlett-2023 (§4.2) and the query-position measure it uses."""
import pytest
import torch

from icl_sim.checks import monte_carlo
from icl_sim.models import constructed_lsa
from icl_sim.paper_repro.measures import query_squared_errors
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import covariate_shift_risk, lsa_optimum_risk


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
