"""Training rules taken from papers' code, each against its update rule written out.

* ``lr_schedule="halving"``: Ahn et al. 2023's notebooks halve the lr when t % K == 0 and t > 1 (K = 4000);
* ``lr_schedule="triangle"``: Raventós et al. 2023 (``icl/optim.py``): optax linear 0 → lr over W steps joined
  to linear lr → 0 over the remaining s − W, evaluated at the update count t = 0, 1, …;
* ``grad_clip_matrix``: Ahn et al.'s ``clip_and_step``, each (layer, head, P or Q) matrix's gradient scaled to
  norm c where its norm exceeds c;
* ``batch_redraw_every``: Ahn et al. redraw the training prompts when t % 100 == 0 and reuse them in between.
"""
import pytest
import torch

from tiny_runs import Stop, assert_identical, parameters, stop_at

from icl_sim.config import TrainConfig
from icl_sim.ensemble import train_ensemble
from icl_sim.training import (clip_matrix_norms_, initial_model, learning_rate_factor, make_optimizer,
                              make_scheduler, optimisation_step, train, training_batch)
from icl_sim.tasks import make_task


def config(**changes):
    base = dict(task_params={"dim": 3, "points": 6}, model="lsa",
                model_params={"layers": 2, "parameterisation": "sparse"}, steps=20, batch_size=16, lr=1e-2, device="cpu", log_every=5, checkpoint_every=10)
    return TrainConfig(**{**base, **changes})


def authors_halving(lr: float, steps: int, every: int) -> list[float]:
    """The lr each step trains at in Ahn et al.'s loop: halved before step t when t % every == 0 and t > 1."""
    out = []
    for t in range(steps):
        if t % every == 0 and t > 1:
            lr *= 0.5
        out.append(lr)
    return out


def optax_triangle(lr: float, rise: int, steps: int, count: int) -> float:
    """optax.join_schedules([linear_schedule(0, lr, W), linear_schedule(lr, 0, s − W)], [W]) at ``count``."""
    if count < rise:
        return lr * count / rise
    return lr + (0.0 - lr) * min(count - rise, steps - rise) / (steps - rise)


def test_halving_schedule_is_the_authors_loop():
    factor = learning_rate_factor(config(lr_schedule="halving", lr_halving_every=4, steps=13))
    assert [0.01 * factor(t) for t in range(13)] == pytest.approx(authors_halving(0.01, 13, 4), rel=1e-15)
    warm = learning_rate_factor(config(lr_schedule="halving", lr_halving_every=4, warmup_steps=2))
    assert [warm(t) for t in (0, 1, 2, 5, 6)] == [0.5, 1.0, 1.0, 1.0, 0.5]


@pytest.mark.parametrize("rise, steps", [(4, 10), (250, 500), (0, 7)])
def test_triangle_schedule_is_the_optax_schedule(rise, steps):
    factor = learning_rate_factor(config(lr_schedule="triangle", warmup_steps=rise, steps=steps))
    assert [factor(t) for t in range(steps)] == pytest.approx([optax_triangle(1.0, rise, steps, t)
                                                               for t in range(steps)], abs=1e-15)


def test_the_optimiser_trains_at_the_scheduled_rate():
    run = config(lr_schedule="halving", lr_halving_every=3, optimizer="sgd", steps=8)
    model = initial_model(run, torch.device("cpu"))
    optimizer = make_optimizer(model, run)
    scheduler = make_scheduler(optimizer, run)
    seen = []
    for _ in range(run.steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx(authors_halving(run.lr, run.steps, 3), rel=1e-15)


@pytest.mark.parametrize("changes, name", [(dict(lr_schedule="halving"), "lr_halving_every"),
                                           (dict(lr_halving_every=10), "lr_halving_every"),
                                           (dict(lr_halving_every=-1), "lr_halving_every"),
                                           (dict(grad_clip_matrix=-0.1), "grad_clip_matrix"),
                                           (dict(batch_redraw_every=0), "batch_redraw_every")])
def test_bad_settings_name_the_parameter(changes, name):
    with pytest.raises(ValueError, match=name):
        config(**changes)


def test_saved_configs_without_the_new_fields_keep_their_json():
    text = config().to_json()
    assert all(name not in text for name in ("lr_halving_every", "grad_clip_matrix", "batch_redraw_every"))
    assert TrainConfig.from_json(text) == config()
    changed = config(lr_schedule="halving", lr_halving_every=4, grad_clip_matrix=0.01, batch_redraw_every=5)
    assert TrainConfig.from_json(changed.to_json()) == changed


def authors_clip(grad: torch.Tensor, clip: float) -> torch.Tensor:
    """Ahn et al.'s ``clip_and_step`` loop over every (layer, head) matrix of a (L, H, d, d) gradient."""
    grad = grad.clone()
    for layer in range(grad.shape[0]):
        for head in range(grad.shape[1]):
            norm = grad[layer, head].norm().item()
            if norm > clip:
                grad[layer, head].mul_(clip / norm)
    return grad


def test_matrix_clipping_is_the_authors_loop_and_leaves_small_matrices_alone():
    grad = torch.randn(3, 2, 4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    grad[1, 0] *= 1e-3  # below the clip: unchanged
    clipped = grad.clone()
    clip_matrix_norms_(clipped, 0.5, dims=4)
    torch.testing.assert_close(clipped, authors_clip(grad, 0.5), rtol=1e-15, atol=0)
    torch.testing.assert_close(clipped[1, 0], grad[1, 0], rtol=0, atol=0)
    vector = torch.tensor([3.0, 4.0])
    clip_matrix_norms_(vector, 1.0, dims=1)  # a vector is one matrix: norm 5 -> 1
    torch.testing.assert_close(vector, torch.tensor([0.6, 0.8]))
    stacked = grad.clone()[None].repeat(2, 1, 1, 1, 1)  # an ensemble's two runs: the same matrices each
    clip_matrix_norms_(stacked, 0.5, dims=4)
    torch.testing.assert_close(stacked[1], authors_clip(grad, 0.5), rtol=1e-15, atol=0)


def test_one_sgd_step_with_matrix_clipping_is_w_minus_lr_times_the_clipped_gradient():
    run = config(optimizer="sgd", lr=0.1, grad_clip_matrix=1e-3)
    device = torch.device("cpu")
    task = make_task(run.task, **run.task_params)
    model = initial_model(run, device)
    before = {name: value.detach().clone() for name, value in model.named_parameters()}
    prompt = training_batch(task, run, 0, device)
    reference = initial_model(run, device)
    loss = ((reference.last_prediction(prompt.xs, prompt.ys) - prompt.ys[:, -1]) ** 2).mean()
    grads = dict(zip(before, torch.autograd.grad(loss, list(reference.parameters()))))
    optimizer = make_optimizer(model, run)
    optimisation_step(model, optimizer, make_scheduler(optimizer, run), prompt, task, run, 0, device)
    for name, value in model.named_parameters():
        expected = before[name] - run.lr * authors_clip(grads[name], run.grad_clip_matrix)
        torch.testing.assert_close(value.detach(), expected, rtol=1e-5, atol=1e-9, msg=name)


def test_batches_are_reused_for_the_redraw_interval():
    run = config(batch_redraw_every=4)
    task, device = make_task(run.task, **run.task_params), torch.device("cpu")
    batches = [training_batch(task, run, step, device) for step in range(9)]
    fresh = config()
    for step, batch in enumerate(batches):
        drawn = training_batch(task, fresh, step - step % 4, device)  # the batch a redraw-every-step run draws there
        assert torch.equal(batch.xs, drawn.xs) and torch.equal(batch.ys, drawn.ys)
    assert not torch.equal(batches[3].xs, batches[4].xs)


def test_a_run_with_the_authors_rules_resumes_bit_for_bit(tmp_path):
    run = config(lr_schedule="halving", lr_halving_every=6, grad_clip_matrix=0.01, batch_redraw_every=3,
                 optimizer="adamw", betas=(0.99, 0.9))
    straight = parameters(train(run, tmp_path / "straight", progress=False))
    with pytest.raises(Stop):
        train(run, tmp_path / "crashed", progress=False, log_extra=stop_at(15, Stop()))
    assert_identical(straight, parameters(train(run, tmp_path / "crashed", resume=True, progress=False)))
    assert (tmp_path / "crashed" / "metrics.jsonl").read_bytes() == (tmp_path / "straight" / "metrics.jsonl").read_bytes()


def test_ensemble_with_the_authors_rules_equals_separate_runs(tmp_path):
    runs = [config(lr_schedule="halving", lr_halving_every=3, grad_clip_matrix=1e-3, batch_redraw_every=2,
                   seed=seed, steps=8) for seed in (0, 1)]
    models = train_ensemble(runs, [tmp_path / f"ensemble-{seed}" for seed in (0, 1)], progress=False)
    for index, run in enumerate(runs):
        alone = parameters(train(run, tmp_path / f"alone-{index}", progress=False))
        for name, value in parameters(models[index]).items():
            torch.testing.assert_close(value, alone[name], rtol=1e-5, atol=1e-7, msg=name)
