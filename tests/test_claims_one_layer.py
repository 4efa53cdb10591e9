"""One-layer LSA optimum: verify() passes, and the formulas agree with independent references."""
import math

import pytest
import sympy
import torch

from icl_sim.models.lsa import LinearSelfAttention
from icl_sim.seeding import make_generator
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.theory.baselines import GD
from icl_sim.claims import Claim
from icl_sim.claims import one_layer_optimum as olo_claims
from icl_sim.theory.formulas import one_layer_optimum as olo
from icl_sim.theory.symbolic import torch_function

NAMES = ["one-step-gd-optimal-step", "preconditioned-gd-optimal", "lsa-global-optimum-risk"]


def by_name(name):
    return {p.name: p for p in olo_claims.CLAIMS}[name]


def spd(d, seed, spectrum=None):
    generator = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    eigs = torch.rand(d, generator=generator, dtype=torch.float64) * 2 + 0.1 if spectrum is None else \
        torch.tensor(spectrum, dtype=torch.float64)
    return (q * eigs) @ q.T


def test_exports():
    assert [p.name for p in olo_claims.CLAIMS] == NAMES
    assert all(isinstance(p, Claim) for p in olo_claims.CLAIMS)
    assert all(p.summary and p.source for p in olo_claims.CLAIMS)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", NAMES)
def test_verify_passes(name, seed):
    comparisons = by_name(name).verify(seed)
    assert comparisons
    failed = [c.as_dict() for c in comparisons if not c.passed]
    assert not failed, failed
    if name == "preconditioned-gd-optimal":  # the perturbed risks are significantly larger
        increases = [c for c in comparisons if c.quantity.startswith("risk increase")]
        assert len(increases) == 3
        assert all(c.measured > 3 * c.standard_error and c.expected > 0 for c in increases)


# -- closed forms of the papers, typed by hand ------------------------------------------------

@pytest.mark.parametrize("d,n,noise,scale", [(5, 10, 0.0, 1.0), (3, 20, 0.5, 1.5), (20, 7, 2.0, 0.3)])
def test_one_step_against_hand_written(d, n, noise, scale):
    lam = noise**2 / scale**2
    eta = n / (n + d + 1 + lam)
    assert olo.optimal_step(d, n, noise, scale) == pytest.approx(eta, rel=1e-12)
    risk = d * scale**2 * (d + 1 + lam) / (n + d + 1 + lam) + noise**2
    assert olo.one_step_gd_risk(d, n, noise, scale) == pytest.approx(risk, rel=1e-12)
    # R(η) = d s²(η²(n+d+1+λ)/n − 2η + 1) + σ², minimal at η*
    for step in (0.0, 0.3, eta, 1.2):
        expected = d * scale**2 * (step**2 * (n + d + 1 + lam) / n - 2 * step + 1) + noise**2
        assert olo.one_step_gd_risk(d, n, noise, scale, step=step) == pytest.approx(expected, rel=1e-12)
        assert olo.one_step_gd_risk(d, n, noise, scale, step=step) >= risk - 1e-12


def test_optimal_step_against_grid_of_monte_carlo_risks():
    """η* against a brute-force grid minimisation of the MC risk of the GD(1, η) baseline."""
    d, n, noise = 4, 10, 0.5
    task = LinearRegression(dim=d, points=n + 1, noise=noise)
    prompt = task.sample(40_000, make_generator(7, "eval", 0), dtype=torch.float64)
    base = GD(1, 1.0).predict(prompt.xs, prompt.ys)[:, -1]  # one step with lr 1 from n points
    assert torch.allclose(GD(1, 0.37).predict(prompt.xs, prompt.ys)[:, -1], 0.37 * base)  # linear in η
    grid = torch.linspace(0.3, 0.9, 241, dtype=torch.float64)
    risks = ((grid[:, None] * base - prompt.ys[:, -1]) ** 2).mean(dim=1)
    best = float(grid[risks.argmin()])
    assert best == pytest.approx(olo.optimal_step(d, n, noise), abs=0.03)
    assert float(risks.min()) == pytest.approx(olo.one_step_gd_risk(d, n, noise), rel=0.03)


def test_preconditioner_isotropic_is_optimal_step():
    for d, n, noise, scale in [(5, 10, 0.0, 1.0), (3, 20, 0.5, 1.5)]:
        gamma = olo.optimal_preconditioner(torch.eye(d, dtype=torch.float64), n, noise, scale)
        assert torch.allclose(gamma, olo.optimal_step(d, n, noise, scale) * torch.eye(d, dtype=torch.float64),
                              atol=1e-13)
        risk = olo.preconditioned_gd_risk(torch.eye(d, dtype=torch.float64), n, noise, scale)
        assert float(risk) == pytest.approx(olo.one_step_gd_risk(d, n, noise, scale), rel=1e-12)


@pytest.mark.parametrize("noise,scale", [(0.0, 1.0), (0.7, 1.3)])
def test_preconditioner_against_ahn_closed_form(noise, scale):
    d, n = 5, 6
    cov = spd(d, 3)
    eye = torch.eye(d, dtype=torch.float64)
    expected = torch.linalg.inv((1 + 1 / n) * cov + (torch.trace(cov) + noise**2 / scale**2) / n * eye)
    gamma = olo.optimal_preconditioner(cov, n, noise, scale)
    assert gamma.dtype == torch.float64 and gamma.shape == (d, d)
    assert torch.allclose(gamma, expected, atol=1e-12)
    # its risk two ways: spectral per-direction formula and the general trace formula
    risk = olo.preconditioned_gd_risk(cov, n, noise, scale)
    assert float(risk) == pytest.approx(float(olo.preconditioner_risk(gamma, cov, n, noise, scale)), rel=1e-12)
    # R(Γ*) = σ² + s²(tr Σ − tr(Γ* Σ²))
    closed = noise**2 + scale**2 * float(torch.trace(cov) - torch.trace(gamma @ cov @ cov))
    assert float(risk) == pytest.approx(closed, rel=1e-12)
    # Γ* is the minimiser of the general quadratic risk: any perturbation, even non-symmetric, increases it
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        delta = 0.05 * torch.randn(d, d, generator=generator, dtype=torch.float64)
        assert float(olo.preconditioner_risk(gamma + delta, cov, n, noise, scale)) > float(risk)
    batched = olo.optimal_preconditioner(torch.stack([cov, eye]), n, noise, scale)
    assert torch.allclose(batched[0], gamma, atol=1e-13)


def test_preconditioner_risk_against_monte_carlo_non_symmetric():
    """The general trace formula for a non-symmetric Γ, against plain sampling."""
    d, m, noise = 3, 5, 0.3
    cov = spd(d, 5)
    gamma = torch.randn(d, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.3
    generator = torch.Generator().manual_seed(2)
    batch = 200_000
    chol = torch.linalg.cholesky(cov)
    x = torch.randn(batch, m + 1, d, generator=generator, dtype=torch.float64) @ chol.T
    w = torch.randn(batch, d, generator=generator, dtype=torch.float64)
    y = torch.einsum("bnd,bd->bn", x, w) + noise * torch.randn(batch, m + 1, generator=generator, dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", y[:, :m], x[:, :m]) / m
    errors = (torch.einsum("bd,de,be->b", x[:, -1], gamma, h) - y[:, -1]) ** 2
    se = float(errors.std()) / math.sqrt(batch)
    assert float(errors.mean()) == pytest.approx(float(olo.preconditioner_risk(gamma, cov, m, noise)), abs=4 * se)


def zfb_risk(lam, n_train, m, omega=None):
    """ZFB (2024) Thm 4.1 in their notation: Γ = (1+1/N)Λ + tr(Λ)/N I, ŷ = x_qᵀΓ⁻¹(1/M)Σ y_i x_i."""
    omega = lam if omega is None else omega
    eye = torch.eye(lam.shape[0], dtype=torch.float64)
    inv = torch.linalg.inv((1 + 1 / n_train) * lam + torch.trace(lam) / n_train * eye)
    moment = (1 + 1 / m) * omega @ omega + torch.trace(omega) / m * omega  # E[h hᵀ] on test prompts
    return float(torch.trace(inv @ moment @ inv @ omega) - 2 * torch.trace(inv @ omega @ omega) + torch.trace(omega))


@pytest.mark.parametrize("m", [4, 8, 32])
def test_lsa_risk_against_zfb_closed_form(m):
    lam, omega = spd(4, 11), spd(4, 12)
    assert float(olo.lsa_optimum_risk(lam, 8, m)) == pytest.approx(zfb_risk(lam, 8, m), rel=1e-12)
    assert float(olo.lsa_optimum_risk(lam, 8, m, omega)) == pytest.approx(zfb_risk(lam, 8, m, omega), rel=1e-12)
    # commuting case, Λ diagonal: tr[Γ⁻²((1+1/M)Λ³ + trΛ/M Λ²)] − 2 tr(Γ⁻¹Λ²) + trΛ, eigenvalue by eigenvalue
    eigs = torch.tensor([2.0, 1.0, 0.5, 0.25], dtype=torch.float64)
    g = (1 + 1 / 8) * eigs + eigs.sum() / 8
    by_hand = float(((1 + 1 / m) * eigs**3 + eigs.sum() / m * eigs**2).div(g**2).sum()
                    - 2 * (eigs**2 / g).sum() + eigs.sum())
    assert float(olo.lsa_optimum_risk(torch.diag(eigs), 8, m)) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("noise,scale", [(0.0, 1.0), (0.5, 2.0)])
def test_lsa_risk_at_train_length_is_preconditioned_gd_risk(noise, scale):
    lam = spd(4, 13)
    assert float(olo.lsa_optimum_risk(lam, 8, 8, noise=noise, prior_scale=scale)) == pytest.approx(
        float(olo.preconditioned_gd_risk(lam, 8, noise, scale)), rel=1e-12)
    # at test length 8, the layer trained on N = 8 beats those trained on other lengths
    other = [float(olo.lsa_optimum_risk(lam, k, 8, noise=noise, prior_scale=scale)) for k in (4, 16, 64)]
    assert min(other) > float(olo.preconditioned_gd_risk(lam, 8, noise, scale))


def test_lsa_layer_implements_the_preconditioned_step():
    """icl-sim's LSA with P = −e e ᵀ, Q = [[Γ*, 0], [0, 0]] is the predictor of these formulas."""
    d, n = 3, 6
    cov = spd(d, 17)
    gamma = olo.optimal_preconditioner(cov, n)
    model = LinearSelfAttention(d, n + 1).double()
    with torch.no_grad():
        model.value.zero_()
        model.key_query.zero_()
        model.value[0, 0, d, d] = -1.0
        model.key_query[0, 0, :d, :d] = gamma
    generator = torch.Generator().manual_seed(4)
    xs = torch.randn(16, n + 1, d, generator=generator, dtype=torch.float64) @ torch.linalg.cholesky(cov).T
    ys = torch.randn(16, n + 1, generator=generator, dtype=torch.float64)
    h = torch.einsum("bn,bnd->bd", ys[:, :n], xs[:, :n]) / n
    expected = torch.einsum("bd,de,be->b", xs[:, -1], gamma, h)
    assert torch.allclose(model.last_prediction(xs, ys), expected, atol=1e-12)


# -- the derivations ----------------------------------------------------------------------------

def evaluate_last(prediction, values):
    steps = prediction.derive()
    assert steps and all(isinstance(step.expression, sympy.Basic) for step in steps)
    expression = steps[-1].expression
    symbols = sorted(expression.free_symbols, key=str)
    assert {str(x) for x in symbols} == set(values), symbols
    return float(torch_function(expression, symbols)(*(values[str(x)] for x in symbols)))


def test_derivation_one_step_matches_numeric():
    prediction = by_name("one-step-gd-optimal-step")
    for d, n, noise, scale in [(5, 10, 0.0, 1.0), (3, 20, 0.5, 1.5)]:
        value = evaluate_last(prediction, {"d": d, "n": n, "sigma": noise, "s": scale})
        assert value == pytest.approx(olo.one_step_gd_risk(d, n, noise, scale), rel=1e-12)
    steps = prediction.derive()
    (eta_step,) = [st for st in steps if st.label.startswith("dR/dη = 0")]
    d, n, sigma, s = sympy.symbols("d n sigma s", positive=True)
    assert sympy.simplify(eta_step.expression.rhs - n / (n + d + 1 + sigma**2 / s**2)) == 0


def test_derivation_preconditioned_matches_numeric():
    prediction = by_name("preconditioned-gd-optimal")
    cov, n, noise, scale = spd(4, 21), 6, 0.4, 1.2
    eigs = torch.linalg.eigvalsh(cov)
    total = noise**2 + sum(evaluate_last(prediction, {"mu": float(e), "T": float(eigs.sum()), "n": n,
                                                      "sigma": noise, "s": scale}) for e in eigs)
    assert total == pytest.approx(float(olo.preconditioned_gd_risk(cov, n, noise, scale)), rel=1e-12)
    g_step = next(st for st in prediction.derive() if st.label.startswith("Γ* = g*")).expression.rhs
    mu, T, n_, sigma, s = sympy.symbols("mu T n sigma s", positive=True)
    assert sympy.simplify(g_step - 1 / ((1 + 1 / n_) * mu + (T + sigma**2 / s**2) / n_)) == 0


def test_derivation_lsa_matches_numeric():
    prediction = by_name("lsa-global-optimum-risk")
    lam, omega, m, noise, scale = spd(4, 31), spd(4, 32), 5, 0.2, 0.8
    gamma = olo.optimal_preconditioner(lam, 8, noise, scale)
    values = {"t_1": float(torch.trace(gamma @ omega @ omega)),
              "t_2": float(torch.trace(gamma @ omega @ gamma @ omega)),
              "t_3": float(torch.trace(gamma @ omega @ omega @ gamma @ omega)),
              "T": float(torch.trace(omega)), "M": m, "sigma": noise, "s": scale}
    assert evaluate_last(prediction, values) == pytest.approx(
        float(olo.lsa_optimum_risk(lam, 8, m, omega, noise, scale)), rel=1e-12)


def test_bad_input_raises_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="dim"):
        olo.optimal_step(0, 5)
    with pytest.raises(ValueError, match="noise"):
        olo.one_step_gd_risk(3, 5, noise=-1.0)
    with pytest.raises(ValueError, match="prior_scale"):
        olo.optimal_preconditioner(torch.eye(3), 5, prior_scale=0.0)
    with pytest.raises(ValueError, match="covariance"):
        olo.optimal_preconditioner(-torch.eye(3), 5)
    with pytest.raises(ValueError, match="test_covariance|covariance"):
        olo.lsa_optimum_risk(torch.eye(3), 5, 5, torch.ones(3, 4))
