"""A second learning rate for one parameter group (``TrainConfig.lr_group``, ``lr_group_scale``): Tian et al. 2023
train their decoder Y at η_Y and their attention logits Z at η_Z (luckmatters ``decoder_only.py``: one SGD optimiser
per matrix, both with momentum 0.9).

The reference is that rule written out by hand in float64 (b_t = μ b_{t−1} + g_t, θ_t = θ_{t−1} − η b_t, η the
group's rate); the ensemble test follows tests/test_sgd_momentum.py (relative 1e-5: vmap may reorder a reduction).
"""
import dataclasses
import json

import pytest
import torch
from torch import nn

from tiny_runs import parameters

from icl_sim.config import TrainConfig
from icl_sim.ensemble import ensemble_groups, train_ensemble
from icl_sim.training import make_optimizer, make_scheduler, train


def test_grouped_sgd_steps_match_two_heavy_ball_rules_written_out():
    """Three momentum steps on f = ½‖A a − c‖² + ½‖B b − c‖²: ``decoder`` at lr × 10, ``attention`` at lr."""
    A = torch.tensor([[2.0, -1.0], [0.5, 1.5]], dtype=torch.float64)
    B = torch.tensor([[1.0, 0.3], [-0.4, 2.0]], dtype=torch.float64)
    c = torch.tensor([1.0, -2.0], dtype=torch.float64)
    lr, mu, scale = 0.02, 0.9, 10.0
    module = nn.Module()
    module.attention = nn.Parameter(torch.tensor([0.3, -0.2], dtype=torch.float64))
    module.decoder = nn.Parameter(torch.tensor([-0.1, 0.6], dtype=torch.float64))
    config = TrainConfig(optimizer="sgd", lr=lr, momentum=mu, lr_group="decoder", lr_group_scale=scale)
    optimizer = make_optimizer(module, config)
    scheduler = make_scheduler(optimizer, config)  # constant: each group keeps its own rate
    thetas = {"attention": module.attention.detach().clone(), "decoder": module.decoder.detach().clone()}
    matrices, rates, buffers = {"attention": A, "decoder": B}, {"attention": lr, "decoder": lr * scale}, {}
    for _ in range(3):
        optimizer.zero_grad()
        (0.5 * (A @ module.attention - c).square().sum() + 0.5 * (B @ module.decoder - c).square().sum()).backward()
        optimizer.step()
        scheduler.step()
        for name, matrix in matrices.items():
            gradient = matrix.T @ (matrix @ thetas[name] - c)
            buffers[name] = gradient if name not in buffers else mu * buffers[name] + gradient
            thetas[name] = thetas[name] - rates[name] * buffers[name]
            torch.testing.assert_close(getattr(module, name).detach(), thetas[name], rtol=1e-12, atol=1e-14)


def test_a_group_naming_no_parameter_and_a_scale_without_a_group_are_refused():
    with pytest.raises(ValueError, match="lr_group 'head' names none"):
        make_optimizer(nn.Linear(2, 2), TrainConfig(lr_group="head", lr_group_scale=2.0))
    with pytest.raises(ValueError, match="lr_group_scale .* needs lr_group"):
        TrainConfig(lr_group_scale=2.0)
    with pytest.raises(ValueError, match="lr_group_scale"):
        TrainConfig(lr_group="decoder", lr_group_scale=0.0)


def test_ensemble_of_grouped_runs_equals_the_runs_trained_alone(tmp_path):
    """SGD with momentum, the LSA's value matrices at 5 × lr: two seeds as one ensemble equal each trained alone,
    and the larger rate acted (the run differs from one at 1 ×)."""
    base = TrainConfig(task_params={"dim": 3, "points": 6}, model="lsa", model_params={"layers": 2}, steps=8,
                       batch_size=16, optimizer="sgd", lr=2e-2, momentum=0.9, lr_group="value", lr_group_scale=5.0,
                       device="cpu", log_every=4, checkpoint_every=8)
    configs = [base, dataclasses.replace(base, seed=1)]
    assert ensemble_groups(configs) == [[0, 1]]
    models = train_ensemble(configs, [tmp_path / f"ensemble-{i}" for i in range(2)], progress=False)
    for index, config in enumerate(configs):
        alone = parameters(train(config, tmp_path / f"alone-{index}", progress=False))
        ours = parameters(models[index])
        assert ours.keys() == alone.keys() == {"value", "key_query"}
        for name in ours:
            torch.testing.assert_close(ours[name], alone[name], rtol=1e-5, atol=1e-7, msg=name)
    one_rate = parameters(train(dataclasses.replace(base, lr_group="", lr_group_scale=1.0), tmp_path / "one-rate",
                                progress=False))
    assert not torch.allclose(one_rate["value"], parameters(models[0])["value"])


def test_default_group_leaves_saved_configs_unchanged():
    """``added`` fields at their defaults stay out of config.json, so configs saved before them read back equal."""
    saved = json.loads(TrainConfig().to_json())
    assert "lr_group" not in saved and "lr_group_scale" not in saved
