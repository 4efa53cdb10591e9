"""SGD with heavy-ball momentum (``TrainConfig.momentum``): Ahn et al. 2024's SGDM, torch.optim.SGD(momentum=0.9)
in their train.ipynb.

The reference step is written out by hand in float64: with weight decay λ, g_t = ∇f(θ_{t−1}) + λ θ_{t−1},
b_1 = g_1, b_t = μ b_{t−1} + g_t, θ_t = θ_{t−1} − η b_t.  The ensemble test follows tests/test_ensemble.py
(relative 1e-5: vmap may reorder a reduction).
"""
import dataclasses
import json

import pytest
import torch
from torch import nn

from tiny_runs import parameters

from icl_sim.config import TrainConfig
from icl_sim.ensemble import ensemble_groups, train_ensemble
from icl_sim.training import make_optimizer, train


def test_momentum_step_matches_the_heavy_ball_rule_written_out():
    """Three steps on f(θ) = ½‖Aθ − c‖², whose gradient Aᵀ(Aθ − c) is written out, against make_optimizer's SGD."""
    A = torch.tensor([[2.0, -1.0, 0.5], [0.0, 1.5, 1.0]], dtype=torch.float64)
    c = torch.tensor([1.0, -2.0], dtype=torch.float64)
    lr, mu, decay = 0.05, 0.9, 0.01
    module = nn.Module()
    module.theta = nn.Parameter(torch.tensor([0.3, -0.2, 0.7], dtype=torch.float64))
    optimizer = make_optimizer(module, TrainConfig(optimizer="sgd", lr=lr, momentum=mu, weight_decay=decay))
    theta, buffer = module.theta.detach().clone(), None
    for _ in range(3):
        optimizer.zero_grad()
        (0.5 * (A @ module.theta - c).square().sum()).backward()
        optimizer.step()
        gradient = A.T @ (A @ theta - c) + decay * theta
        buffer = gradient if buffer is None else mu * buffer + gradient
        theta = theta - lr * buffer
        torch.testing.assert_close(module.theta.detach(), theta, rtol=1e-12, atol=1e-14)


def test_ensemble_of_momentum_runs_equals_the_runs_trained_alone(tmp_path):
    base = TrainConfig(task_params={"dim": 3, "points": 6}, model="lsa", model_params={"layers": 2}, steps=12,
                       batch_size=16, optimizer="sgd", lr=2e-2, momentum=0.9, device="cpu", log_every=4,
                       checkpoint_every=12)
    configs = [base, dataclasses.replace(base, seed=1, grad_clip=0.5)]
    assert ensemble_groups(configs) == [[0, 1]]
    models = train_ensemble(configs, [tmp_path / f"ensemble-{i}" for i in range(2)], progress=False)
    for index, config in enumerate(configs):
        alone = parameters(train(config, tmp_path / f"alone-{index}", progress=False))
        ours = parameters(models[index])
        assert ours.keys() == alone.keys()
        for name in ours:
            torch.testing.assert_close(ours[name], alone[name], rtol=1e-5, atol=1e-7, msg=name)
    plain = parameters(train(dataclasses.replace(base, momentum=0.0), tmp_path / "plain", progress=False))
    assert not all(torch.allclose(plain[name], parameters(models[0])[name]) for name in plain)  # momentum acted


def test_default_momentum_leaves_saved_configs_unchanged():
    """An ``added`` field at its default stays out of config.json, so configs saved before it read back equal."""
    assert "momentum" not in json.loads(TrainConfig(optimizer="sgd").to_json())
    assert json.loads(TrainConfig(optimizer="sgd", momentum=0.9).to_json())["momentum"] == 0.9
    assert TrainConfig.from_json(TrainConfig(optimizer="sgd").to_json()).momentum == 0.0


@pytest.mark.parametrize("options", [dict(optimizer="sgd", momentum=1.0), dict(optimizer="sgd", momentum=-0.1),
                                     dict(optimizer="adam", momentum=0.9)])
def test_bad_momentum_names_itself(options):
    with pytest.raises(ValueError, match="momentum"):
        TrainConfig(**options)
