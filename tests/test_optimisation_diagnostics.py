"""The optimisation diagnostics of Ahn et al. 2024 against independent references.

* Tail indices: samples of known laws from scipy.stats.  Mohammadi et al.'s estimator on K = K1·K2 symmetric
  α-stable samples: Y_i/K1^{1/α} has the law of X, and Var log|X| = π²/12 · (1 + 2/α²) for a symmetric α-stable
  law (π²/8 for the gaussian, π²/4 for the Cauchy), so SE(1/α̂) ≤ sqrt(π²/12 (1 + 2/α²)(1/K2 + 1/K)) / log K1
  (the two means are positively correlated, which only lowers the variance).  Hill's estimator on a Pareto(α)
  sample: k/α̂ is exactly a sum of k standard exponentials over α, so SE(1/α̂) = (1/α)/√k.  Each allows Z = 5 SE.
* Curvature: quadratics and a log-cosh function whose Hessian is written out; machine-precision tolerances.
* A model: the one-layer ``preconditioner`` LSA predicts ŷ = x_qᵀ Γ h with h = (1/n) Σ_j y_j x_j, linear in Γ,
  so its loss mean_b (ŷ_b − y_b)² has gradient 2 mean_b r_b x_q hᵀ and Hessian diagonal 2 mean_b (x_q,i h_j)²:
  the reference for the model's flat loss, its gradient noise and its condition number, to a relative 1e-5: the
  training loss rounds the predictions to float32 (``task_loss``), a relative 6e-8 per value, summed over a batch.
"""
import math

import numpy as np
import pytest
import torch
from scipy import stats

from icl_sim.models import build_model
from icl_sim.optimisation_diagnostics import (NOISE_SHARD, REFERENCE_SHARD, directional_smoothness, gradient_noise,
                                              hessian_diagonal, hill_tail_index, loss_of_parameters,
                                              parameter_vector, robust_condition_number,
                                              smoothness_along_trajectory, smoothness_gradient_fit,
                                              stable_tail_index)
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression

Z = 5.0


# -- tail indices ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.2, 1.5, 1.8, 2.0])
def test_stable_tail_index_recovers_alpha_of_symmetric_stable_samples(alpha):
    count = 2**16
    rng = np.random.default_rng(int(alpha * 10))
    samples = (rng.standard_normal(count) if alpha == 2.0
               else stats.levy_stable.rvs(alpha, 0.0, scale=3.0, size=count, random_state=rng))
    k1 = math.isqrt(count)
    error = math.sqrt(math.pi**2 / 12 * (1 + 2 / alpha**2) * (1 / (count // k1) + 1 / count)) / math.log(k1)
    assert abs(1 / stable_tail_index(samples) - 1 / alpha) <= Z * error


def test_stable_tail_index_separates_heavy_from_gaussian_noise():
    rng = np.random.default_rng(7)
    assert stable_tail_index(stats.cauchy.rvs(size=2**14, random_state=rng)) < 1.3
    assert stable_tail_index(rng.standard_normal(2**14)) > 1.8


@pytest.mark.parametrize("alpha", [1.5, 3.0])
@pytest.mark.parametrize("tail_size", [None, 20000])
def test_hill_tail_index_recovers_alpha_of_a_pareto_sample(alpha, tail_size):
    samples = stats.pareto(alpha, scale=2.0).rvs(size=10**5, random_state=np.random.default_rng(3))
    k = math.isqrt(samples.size) if tail_size is None else tail_size
    assert abs(1 / hill_tail_index(samples, tail_size) - 1 / alpha) <= Z / alpha / math.sqrt(k)


@pytest.mark.parametrize("call, name", [(lambda: stable_tail_index(np.ones(10), block=1), "block"),
                                        (lambda: stable_tail_index(np.zeros(100)), "samples"),
                                        (lambda: hill_tail_index(np.ones(10), 10), "tail_size")])
def test_bad_tail_index_inputs_name_themselves(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# -- curvature on functions written out --------------------------------------------------------------------------
def spd_matrix(p: int, seed: int) -> torch.Tensor:
    g = torch.randn(p, p, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return g @ g.T + 0.1 * torch.eye(p, dtype=torch.float64)


def test_condition_number_of_a_quadratic_is_its_diagonal_ratio():
    """f = ½ θᵀAθ + bᵀθ: H = A; R_med = max |A_ii| / (lower) median |A_ii|, computed with numpy."""
    A = spd_matrix(7, 0) * torch.tensor([1.0, 50.0, 1.0, 3.0, 0.2, 1.0, 9.0], dtype=torch.float64)[:, None]
    A = (A + A.T) / 2
    b = torch.arange(7, dtype=torch.float64)
    loss = lambda theta: 0.5 * theta @ A @ theta + b @ theta  # noqa: E731
    theta = torch.randn(7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    diagonal = np.abs(np.diag(A.numpy()))
    torch.testing.assert_close(hessian_diagonal(loss, theta), A.diagonal(), rtol=1e-12, atol=1e-12)
    expected = diagonal.max() / np.sort(diagonal)[(diagonal.size - 1) // 2]
    assert robust_condition_number(loss, theta) == pytest.approx(expected, rel=1e-12)


def log_cosh(theta: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """f = Σ_i log cosh(a_i θ_i): ∇²f = diag(a_i² sech²(a_i θ_i)), so ∇f is max_i a_i²-Lipschitz."""
    return torch.log(torch.cosh(scales * theta)).sum()


def test_directional_smoothness_is_the_curvature_along_the_direction_and_at_most_lipschitz():
    scales = torch.tensor([0.5, 2.0, 3.0, 1.0], dtype=torch.float64)
    generator = torch.Generator().manual_seed(2)
    for _ in range(5):
        theta, direction = (torch.randn(4, generator=generator, dtype=torch.float64) for _ in range(2))
        unit = direction / direction.norm()
        expected = float((scales**2 / torch.cosh(scales * theta) ** 2 * unit**2).sum())
        ours = directional_smoothness(lambda t: log_cosh(t, scales), theta, 3.0 * direction)
        assert ours == pytest.approx(expected, rel=1e-12)
        assert ours <= float(scales.max() ** 2)


def test_smoothness_along_a_gradient_descent_trajectory_of_a_quadratic():
    """GD on ½ θᵀAθ: ‖∇f(θ_t)‖ = ‖Aθ_t‖ and the smoothness along the step −ηAθ_t is (Aθ)ᵀA(Aθ)/‖Aθ‖²."""
    A = spd_matrix(5, 3)
    thetas = [torch.randn(5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)]
    for _ in range(6):
        thetas.append(thetas[-1] - 0.02 * A @ thetas[-1])
    norms, smoothness = smoothness_along_trajectory(lambda t: 0.5 * t @ A @ t, thetas)
    gradients = torch.stack([A @ theta for theta in thetas[:-1]])
    torch.testing.assert_close(norms, gradients.norm(dim=1), rtol=1e-12, atol=0)
    expected = torch.einsum("ti,ij,tj->t", gradients, A, gradients) / gradients.norm(dim=1) ** 2
    torch.testing.assert_close(smoothness, expected, rtol=1e-12, atol=0)
    _, still = smoothness_along_trajectory(lambda t: 0.5 * t @ A @ t, [thetas[0], thetas[0]])
    assert torch.isnan(still).all()  # a zero step has no direction


def test_smoothness_gradient_fit_matches_scipy_linregress_on_positive_points():
    rng = np.random.default_rng(5)
    norms = np.exp(rng.uniform(-3, 2, 200))
    smoothness = 0.7 * norms**1.3 * np.exp(0.1 * rng.standard_normal(200))
    smoothness[:5] = [-1.0, 0.0, np.nan, -2.0, 0.0]  # dropped, as a log axis drops them
    fit = smoothness_gradient_fit(norms, smoothness)
    reference = stats.linregress(np.log(norms[5:]), np.log(smoothness[5:]))
    assert fit["kept"] == 195
    assert fit["slope"] == pytest.approx(reference.slope, rel=1e-10)
    assert fit["intercept"] == pytest.approx(reference.intercept, rel=1e-10)
    assert fit["correlation"] == pytest.approx(reference.rvalue, rel=1e-10)


# -- on a model --------------------------------------------------------------------------------------------------
DIM, POINTS = 3, 6
TASK = LinearRegression(dim=DIM, points=POINTS)


def one_layer_model():
    torch.manual_seed(0)
    return build_model("lsa", DIM, POINTS, layers=1, parameterisation="preconditioner", init_scale=0.3)


def closed_form(model, prompt):
    """(gradient, Hessian diagonal) of mean_b (x_qᵀ Γ h − y_q)², flattened as Γ is."""
    gamma = model.preconditioner.detach().double()[0, 0]
    xs, ys = prompt.xs.double(), prompt.ys.double()
    query, h = xs[:, -1], (ys[:, :-1, None] * xs[:, :-1]).mean(1)
    residual = torch.einsum("bi,ij,bj->b", query, gamma, h) - ys[:, -1]
    gradient = 2 * torch.einsum("b,bi,bj->ij", residual, query, h) / len(xs)
    diagonal = 2 * torch.einsum("bi,bj->ij", query**2, h**2) / len(xs)
    return gradient.reshape(-1), diagonal.reshape(-1)


def test_model_loss_gradient_and_condition_number_match_the_closed_form():
    model = one_layer_model()
    prompt = TASK.sample(40, make_generator(0, "eval"), dtype=torch.float64)
    loss, theta = loss_of_parameters(model, TASK, prompt), parameter_vector(model)
    gradient, diagonal = closed_form(model, prompt)
    torch.testing.assert_close(torch.func.grad(loss)(theta), gradient, rtol=1e-5, atol=1e-8)
    torch.testing.assert_close(hessian_diagonal(loss, theta), diagonal, rtol=1e-5, atol=1e-8)
    expected = float(diagonal.max() / np.sort(diagonal.numpy())[(diagonal.numel() - 1) // 2])
    assert robust_condition_number(loss, theta) == pytest.approx(expected, rel=1e-5)


def test_gradient_noise_is_each_minibatch_gradient_minus_the_reference_mean():
    model, batch, samples, reference = one_layer_model(), 16, 5, 4

    def gradient(index, shard):
        prompt = TASK.sample(batch, make_generator(9, "eval", index, shard=shard), dtype=torch.float64)
        return closed_form(model, prompt)[0]

    noise = gradient_noise(model, TASK, batch_size=batch, samples=samples, reference_batches=reference, seed=9)
    mean = torch.stack([gradient(r, REFERENCE_SHARD) for r in range(reference)]).mean(0)
    expected = torch.stack([gradient(i, NOISE_SHARD) for i in range(samples)]) - mean
    torch.testing.assert_close(noise, expected, rtol=1e-5, atol=1e-8)


def test_gradient_noise_variance_falls_as_one_over_the_batch_size():
    """E‖g_B − ∇f‖² = tr Cov(per-prompt gradient)/B: quadrupling B divides it by 4 (the reference error, a
    1/(100 B) part, is negligible).  Over 400 draws each mean square has a relative standard error of about
    sqrt(Var‖n‖²)/(√400 E‖n‖²) ≲ 0.15, so the ratio must lie within 4 · (1 ± 0.5)."""
    model = one_layer_model()
    small, large = (gradient_noise(model, TASK, batch_size=size, samples=400, reference_batches=100, seed=1)
                    for size in (8, 32))
    ratio = float(small.square().sum(1).mean() / large.square().sum(1).mean())
    assert 2.0 <= ratio <= 6.0
