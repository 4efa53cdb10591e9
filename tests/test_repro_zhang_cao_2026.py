"""Zhang & Cao 2026: normalised GD on the exponential loss, the looped softmax layer that takes its step, the
one-step task, and the reproduction's pipeline, each against an independent reference."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.models.looped_softmax_ngd import constructed_ngd_layer
from icl_sim.paper_repro import REPRODUCTIONS, run_reproduction
from icl_sim.paper_repro.zhang_cao_2026 import SCALES, gap, shifted, uniform_attention_layer
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory.max_margin import max_margin_classifier
from icl_sim.theory.normalized_gd import ExponentialNGD, ngd_iterates


def _prompt(dim=3, points=7, batch=4, seed=0) -> Prompt:
    return make_task("linear-classification", dim=dim, points=points).sample(batch, make_generator(seed, "eval"),
                                                                               dtype=torch.float64)


def _numpy_ngd(xs: np.ndarray, ys: np.ndarray, steps: int, lr: float, start: np.ndarray) -> np.ndarray:
    """w − η ∇L/L with L(w) = Σ_{j<i} exp(−y_j wᵀx_j), written out per prompt and position with numpy."""
    out = start.copy()
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            u = ys[b, :i, None] * xs[b, :i]
            w = start[b, i].copy()
            for _ in range(steps):
                losses = np.exp(-u @ w)
                gradient = -(losses[:, None] * u).sum(0)
                w = w - lr * gradient / losses.sum()
            out[b, i] = w
    return out


def test_ngd_iterates_match_the_step_written_out():
    prompt = _prompt()
    start = 0.7 * prompt.xs.numpy()
    expected = _numpy_ngd(prompt.xs.numpy(), prompt.ys.numpy(), 4, 0.6, start)
    got = ngd_iterates(prompt.xs, prompt.ys, 4, 0.6, 0.7 * prompt.xs)[-1]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[:, 0].numpy(), start[:, 0])  # an empty context leaves w where it started


def test_one_step_is_the_gradient_of_the_mean_exponential_loss_over_the_loss():
    prompt = _prompt(points=6)
    w = torch.randn(3, generator=torch.Generator().manual_seed(1), dtype=torch.float64, requires_grad=True)
    u = prompt.ys[0, :5, None] * prompt.xs[0, :5]
    loss = torch.exp(-u @ w).mean()
    (gradient,) = torch.autograd.grad(loss, w)
    start = torch.zeros_like(prompt.xs)
    start[0, 5] = w.detach()
    stepped = ngd_iterates(prompt.xs, prompt.ys, 1, 0.3, start)[1][0, 5]
    torch.testing.assert_close(stepped, w.detach() - 0.3 * gradient / loss.detach(), rtol=1e-12, atol=1e-12)


def test_exponential_ngd_scores_the_query_with_the_iterate():
    prompt = _prompt(seed=2)
    start = 0.5 * prompt.xs.numpy()
    w = _numpy_ngd(prompt.xs.numpy(), prompt.ys.numpy(), 3, 1.0, start)
    expected = (w * prompt.xs.numpy()).sum(-1)
    np.testing.assert_allclose(ExponentialNGD(3, 1.0, 0.5).predict(prompt.xs, prompt.ys).numpy(), expected,
                               rtol=1e-12, atol=1e-12)


def test_ngd_turns_toward_the_max_margin_classifier():
    """Normalised GD's implicit bias, against cvxpy's hard-margin solution on separable 2-d data."""
    generator = torch.Generator().manual_seed(3)
    xs = torch.randn(1, 13, 2, generator=generator, dtype=torch.float64)
    ys = torch.where(xs @ torch.tensor([1.0, 0.3], dtype=torch.float64) > 0, 1.0, -1.0).to(xs)
    mm = max_margin_classifier(xs[0, :-1], ys[0, :-1])
    iterates = ngd_iterates(xs, ys, 2000, 1.0)
    gaps = [float(gap(iterates[k][0, -1], mm)) for k in (1, 20, 2000)]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 1e-3 and gaps[2] < gaps[0] / 20


def test_the_construction_is_normalised_gd():
    prompt = _prompt(dim=4, points=9, seed=4)
    model = constructed_ngd_layer(4, 9, 0.5, loops=3).double()  # η = 0.5 is exact in the float32 weights
    expected = _numpy_ngd(prompt.xs.numpy(), prompt.ys.numpy(), 3, 0.5, np.zeros(prompt.xs.shape))
    np.testing.assert_allclose(model.classifiers(prompt.xs, prompt.ys, 3)[-1].numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(model.predict(prompt.xs, prompt.ys).numpy(), (expected * prompt.xs.numpy()).sum(-1),
                               atol=1e-12)


def test_one_loop_of_random_weights_matches_its_formula():
    prompt = _prompt(dim=3, points=6, seed=5)
    model = build_model("looped-softmax-ngd", 3, 6, loops=2, start_scale=0.4, init_scale=0.5).double()
    P, Q = model.value.detach().numpy(), model.key_query.detach().numpy()
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    w = 0.4 * xs.copy()
    for _ in range(2):
        new = w.copy()
        for b in range(xs.shape[0]):
            for i in range(1, xs.shape[1]):
                u = ys[b, :i, None] * xs[b, :i]
                scores = u @ (Q @ w[b, i])
                weights = np.exp(scores - scores.max())
                new[b, i] = w[b, i] + P @ (weights / weights.sum() @ u)
        w = new
    np.testing.assert_allclose(model.predict(prompt.xs, prompt.ys).numpy(), (w * xs).sum(-1), atol=1e-12)


def test_the_one_step_task_targets_one_step_from_the_query_start():
    task = make_task("linear-classification-ngd", dim=3, points=7, guidance=1, lr=0.5, start_scale=2.0)
    guided = task.sample(4, make_generator(6, "eval"), dtype=torch.float64)
    plain = make_task("linear-classification", dim=3, points=7).sample(4, make_generator(6, "eval"),
                                                                       dtype=torch.float64)
    torch.testing.assert_close(guided.xs, plain.xs, rtol=0, atol=0)  # the same prompts, other targets
    w = _numpy_ngd(guided.xs.numpy(), guided.ys.numpy(), 1, 0.5, 2.0 * guided.xs.numpy())
    np.testing.assert_allclose(guided.targets.numpy(), (w * guided.xs.numpy()).sum(-1), atol=1e-12)
    with pytest.raises(ValueError, match="guidance"):
        make_task("linear-classification-ngd", guidance=0)


def test_a_layer_trained_on_one_step_learns_the_construction(tmp_path):
    """A few hundred Adam steps on the one-step target bring P, Q near ηI, −I (the loss's zero)."""
    from icl_sim.config import TrainConfig
    from icl_sim.training import train

    config = TrainConfig(task="linear-classification-ngd", task_params={"dim": 3, "points": 17}, model=
                         "looped-softmax-ngd", model_params={"loops": 1}, steps=400, batch_size=32, lr=2e-2,
                         optimizer="adam", log_every=400, checkpoint_every=400)
    model = train(config, tmp_path / "run", progress=False)
    eye = torch.eye(3)
    assert float((model.value.detach() - eye).abs().max()) < 0.15
    assert float((model.key_query.detach() + eye).abs().max()) < 0.15


def test_shifted_prompts_have_the_stated_covariance_and_labels():
    prompt = _prompt(dim=3, points=50, batch=400, seed=7)
    moved = shifted(prompt, (0.5, 8.0))
    variances = moved.xs.reshape(-1, 3).square().mean(0)
    expected = torch.tensor([0.5, 2.0, 8.0], dtype=torch.float64)
    samples = moved.xs.reshape(-1, 3).square()
    standard_error = samples.std(0) / samples.shape[0] ** 0.5
    assert bool(((variances - expected).abs() < 4 * standard_error).all())
    torch.testing.assert_close(moved.ys, torch.sign(torch.einsum("bnd,bd->bn", moved.xs, prompt.latent["w"])))


def test_smoke_run_produces_every_claim_check(tmp_path):
    checks = run_reproduction("zhang-cao-2026", "smoke", tmp_path, progress=False)
    claims = {check.claim for check in checks if check.kind == "claim"}
    assert claims == {claim.id for claim in REPRODUCTIONS["zhang-cao-2026"].claims}
    construction = [check for check in checks if check.quantity.startswith("the construction")]
    assert construction and construction[0].passed
    assert (tmp_path / "figure.png").exists()


def test_last_only_iterates_are_the_final_positions():
    prompt = _prompt(dim=3, points=8, seed=8)
    full = ngd_iterates(prompt.xs, prompt.ys, 3, 1.0, 0.5 * prompt.xs)
    last = ngd_iterates(prompt.xs, prompt.ys, 3, 1.0, 0.5 * prompt.xs, last_only=True)
    model = build_model("looped-softmax-ngd", 3, 8, init_scale=0.3).double()
    every = model.classifiers(prompt.xs, prompt.ys, 3)
    final = model.classifiers(prompt.xs, prompt.ys, 3, last_only=True)
    for k in range(3):
        torch.testing.assert_close(last[k + 1], full[k + 1][:, -1], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(final[k], every[k][:, -1], rtol=1e-12, atol=1e-12)


def test_the_contrast_layer_recovers_a_uniform_attention_step():
    """Targets made by a layer with Q = 0 and a known P: the least-squares contrast finds that P, and its step is
    c·x_i plus P times the plain mean of y_j x_j (numpy)."""
    settings = dataclasses.replace(SCALES["smoke"], start_scale=0.5)
    prompt = _prompt(dim=3, points=9, batch=200, seed=9)
    value = torch.randn(3, 3, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    w = 0.5 * xs[:, -1] + (ys[:, :-1, None] * xs[:, :-1]).mean(1) @ value.numpy().T
    guided = Prompt(prompt.xs, prompt.ys, prompt.latent, torch.from_numpy((w[:, None] * xs).sum(-1)))
    layer = uniform_attention_layer(guided, settings)
    torch.testing.assert_close(layer.value.detach(), value, rtol=1e-9, atol=1e-9)
    assert not layer.key_query.detach().any()
    np.testing.assert_allclose(layer.predict(prompt.xs, prompt.ys, loops=1)[:, -1].numpy(), (w * xs[:, -1]).sum(-1),
                               atol=1e-9)
