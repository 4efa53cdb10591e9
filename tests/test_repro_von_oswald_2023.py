"""von-oswald-2023's pieces against independent references: η* for uniform inputs by Monte Carlo in numpy, the
input range the paper's own numbers imply, App. A.3's interpolation and the alignment measures on models whose
answers are known, and the full scale as the authors' notebook."""
import dataclasses

import numpy as np
import pytest
import torch

from icl_sim.models import constructed_lsa
from icl_sim.paper_repro import von_oswald_2023 as vo
from icl_sim.theory import GD


def monte_carlo_step(dim, n, bound, prompts, seed):
    """η* = E[s y_q] / E[s²] of one GD step s = x_qᵀ (1/n) Σ_j y_j x_j, and its standard error (numpy)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-bound, bound, size=(prompts, n + 1, dim))
    w = rng.standard_normal((prompts, dim))
    y = np.einsum("bnd,bd->bn", x, w)
    s = np.einsum("bd,bd->b", x[:, -1], np.einsum("bn,bnd->bd", y[:, :-1], x[:, :-1]) / n)
    eta = (s * y[:, -1]).mean() / (s * s).mean()
    influence = (s * y[:, -1] - eta * s * s) / (s * s).mean()
    return eta, influence.std() / np.sqrt(prompts)


@pytest.mark.parametrize("dim, n, bound", [(10, 10, 0.5), (3, 7, 1.0)])
def test_the_one_step_optimal_step_is_the_monte_carlo_minimiser(dim, n, bound):
    eta, error = monte_carlo_step(dim, n, bound, 200_000, seed=dim)
    assert abs(vo.one_step_optimal_step(dim, n, bound) - eta) < 4 * error
    assert error < 0.01 * eta  # a comparison that could tell 1 % apart


def test_the_step_scales_as_the_inverse_square_of_the_input_range():
    """η* = 6.06 for the code's U(−0.5, 0.5) and a quarter of it, 1.52, for the text's U(−1, 1)."""
    assert vo.one_step_optimal_step(10, 10, 0.5) == pytest.approx(10 / 12 / (1 / 80 + 18 / 144), rel=1e-12)
    assert vo.one_step_optimal_step(10, 10, 0.5) == pytest.approx(6.0606, abs=1e-4)
    assert vo.one_step_optimal_step(10, 10, 1.0) == pytest.approx(vo.one_step_optimal_step(10, 10, 0.5) / 4)


def one_step_risk(bound, dim=10, n=10):
    """½ E(ŷ − y_q)² at η*: ½ dσ² (1 − η*σ²) (the risk is ½(E y² − E[s y]²/E[s²]))."""
    variance = bound**2 / 3
    return 0.5 * dim * variance * (1 - vo.one_step_optimal_step(dim, n, bound) * variance)


def test_the_papers_numbers_are_those_of_the_codes_input_range():
    """App. A.11's "GD loss of 0.2" and App. A.10's largest eigenvalues of XXᵀ over 10⁴ tasks (4.6, 7.712, 10.845,
    17.196 for N = 10, 25, 50, 100) are U(−0.5, 0.5)'s, not the text's U(−1, 1) (4 times larger)."""
    assert one_step_risk(0.5) == pytest.approx(0.2, rel=0.05) and one_step_risk(1.0) > 3 * 0.2
    rng = np.random.default_rng(0)
    for n, largest in {10: 4.6, 25: 7.712, 50: 10.845, 100: 17.196}.items():
        for bound, ratio in ((0.5, 1.0), (1.0, 4.0)):
            xs = rng.uniform(-bound, bound, size=(10_000, n, 10))
            top = np.linalg.eigvalsh(np.einsum("bni,bnj->bij", xs, xs))[:, -1].max()
            assert top == pytest.approx(ratio * largest, rel=0.15), (n, bound)


def test_interpolating_a_rescaled_construction_gives_the_construction_back():
    """P = cP_GD, Q = Q_GD/c is GD in disguise; App. A.3's β = 1/c undoes the rescaling, so the interpolation is
    the construction itself and predicts as GD."""
    dim, eta, c = 4, 0.7, -2.5
    construction = vo.gd_lsa_weights(dim, 1, eta)
    model = constructed_lsa(dim, 6, 1, eta)
    model.load_state_dict({"value": c * construction["value"], "key_query": construction["key_query"] / c})
    interpolated = vo.interpolated_lsa(model, construction)
    for name, weights in interpolated.state_dict().items():
        torch.testing.assert_close(weights, construction[name], rtol=1e-12, atol=1e-12)
    xs = torch.randn(5, 6, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ys = torch.randn(5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(interpolated.predict(xs, ys), GD(1, eta).predict(xs, ys), rtol=1e-12, atol=1e-12)


def test_the_interpolation_averages_the_rescaled_products():
    generator = torch.Generator().manual_seed(2)
    dim = 3
    value, key_query = (torch.randn(1, 1, dim + 1, dim + 1, dtype=torch.float64, generator=generator)
                        for _ in range(2))
    model = constructed_lsa(dim, 5, 1, 1.0)
    model.load_state_dict({"value": value, "key_query": key_query})
    construction = vo.gd_lsa_weights(dim, 1, 0.3)
    beta = float(np.mean(np.diag(key_query[0, 0].numpy())[:dim]))
    weights = vo.interpolated_lsa(model, construction).state_dict()
    np.testing.assert_allclose(weights["value"].numpy(), (beta * value + construction["value"]).numpy() / 2)
    np.testing.assert_allclose(weights["key_query"].numpy(), (key_query / beta + construction["key_query"]).numpy() / 2)


def test_the_alignment_of_a_scaled_gd_step():
    """A model predicting 1.1 × GD's step: relative distances of predictions and sensitivities 0.1, cosine 1, and
    the sensitivity distance is 0.1 × GD's mean ‖∂ŷ/∂x_q‖ = 0.1 η mean ‖(1/n) Σ y_j x_j‖."""
    eta = 0.5
    prompt = vo.TASK.sample(400, torch.Generator().manual_seed(3), dtype=torch.float64)
    measured = vo.alignment(constructed_lsa(vo.TASK.dim, vo.TASK.points, 1, 1.1 * eta), GD(1, eta), prompt)
    gradient = eta * (prompt.ys[:, :-1, None] * prompt.xs[:, :-1]).mean(dim=1).norm(dim=-1).mean()
    assert measured["relative_prediction_distance"] == pytest.approx(0.1, rel=1e-9)
    assert measured["relative_sensitivity_distance"] == pytest.approx(0.1, rel=1e-9)
    assert measured["sensitivity_distance"] == pytest.approx(0.1 * float(gradient), rel=1e-9)
    assert measured["sensitivity_cosine"] == pytest.approx(1.0, abs=1e-12)
    step = GD(1, eta).predict(prompt.xs, prompt.ys)[:, -1]
    assert measured["loss_model"] == pytest.approx(0.5 * float((1.1 * step - prompt.ys[:, -1]).square().mean()))


def test_the_full_scale_is_the_authors_notebook():
    """constructed_token_setup.ipynb, one layer: batch 2048, 5000 steps, Adam lr 1e-3 (β 0.9, 0.98; optax's ε 1e-8),
    global-norm clip 1e-3, init 0.002, for their summed attention and ½·MSE (in icl-sim's terms: lr, init ×√N,
    clip and ε ×2/√N); the code's U(−0.5, 0.5) inputs and N = d = 10."""
    (config,) = vo.runs(vo.SCALES["full"]).values()
    root = np.sqrt(10)
    assert (config.batch_size, config.steps, config.lr_schedule) == (2048, 5000, "constant")
    assert (config.lr, config.grad_clip, config.adam_eps, config.model_params["init_scale"]) == pytest.approx(
        (1e-3 * root, 1e-3 * 2 / root, 1e-8 * 2 / root, 0.002 * root), rel=1e-12)
    assert tuple(config.betas) == (0.9, 0.98)
    assert dict(config.task_params, points=None) == dict(dataclasses.asdict(vo.TASK), points=None)
    assert (vo.TASK.x_bound, vo.TASK.dim, vo.TASK.points) == (0.5, 10, 11)


def summed_attention_loss(value, key_query, prompt, points):
    """The authors' recurrent LSA, written out: every token z ← z + P (Σ_{j<N} z_j z_jᵀ) Q z (a plain sum over the
    N context tokens), the weights applied once per layer, ŷ = −(query's y slot), and their ½·MSE."""
    tokens = torch.cat([prompt.xs, torch.cat([prompt.ys[:, :-1], torch.zeros_like(prompt.ys[:, -1:])], 1)[..., None]],
                       dim=-1)
    for _ in range(2):
        context = tokens[:, :points]
        moment = context.mT @ context
        tokens = tokens + tokens @ (value @ moment @ key_query).mT
    return 0.5 * (-tokens[:, -1, -1] - prompt.ys[:, -1]).square().mean()


def test_icl_sims_training_moves_the_authors_weights_as_their_training_does(tmp_path):
    """Twenty Adam steps of icl-sim's averaged-attention LSA, set up by ``summed_attention_training``, against the
    authors' summed-attention LSA trained by torch's Adam at their settings from our initial weights over √N: the
    weights over √N agree at every step (their trajectory), and the untransformed settings do not."""
    from icl_sim.paper_repro import von_oswald_2023_ablations as ablations
    from icl_sim.training import initial_model, train, training_batch

    points = 25
    authors = dataclasses.replace(ablations.runs(ablations.SCALES["full"])["recurrent-lsa-n25"], steps=20,
                                  batch_size=256, log_every=10, checkpoint_every=20)
    authors = dataclasses.replace(authors, lr=1e-3, grad_clip=1e-3, adam_eps=1e-8,
                                  model_params={**authors.model_params, "init_scale": 0.001})
    ours = vo.summed_attention_training(authors, points)
    task = ablations.gd_plus_plus_task(points)
    start = initial_model(ours, torch.device("cpu"))
    root = np.sqrt(points)
    value, key_query = (torch.nn.Parameter(weight.detach()[0, 0] / root) for weight in (start.value, start.key_query))
    optimizer = torch.optim.Adam([value, key_query], lr=1e-3, betas=(0.9, 0.98), eps=1e-8)
    for step in range(20):
        optimizer.zero_grad()
        summed_attention_loss(value, key_query, training_batch(task, ours, step, torch.device("cpu")), points).backward()
        torch.nn.utils.clip_grad_norm_([value, key_query], 1e-3)
        optimizer.step()
    trained = train(ours, tmp_path / "ours", progress=False)
    moved = (value.detach() - start.value.detach()[0, 0] / root).abs().max()
    assert moved > 1e-2  # twenty steps of 1e-3 each moved the weights: the agreement is not of the start alone
    for name, authors_weight in (("value", value), ("key_query", key_query)):
        ours_weight = getattr(trained, name).detach()[0, 0] / root
        assert (ours_weight - authors_weight.detach()).abs().max() < 1e-3 * moved  # float32 rounding, amplified by
        # Adam's near-sign steps on entries whose gradient is near 0
    untransformed = train(dataclasses.replace(authors, model_params=ours.model_params), tmp_path / "untransformed",
                          progress=False)
    assert (untransformed.value.detach()[0, 0] / root - value.detach()).abs().max() > 0.3 * moved
