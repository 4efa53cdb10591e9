"""The deep-ReLU-teacher task and the network-GD baseline (Wu et al. 2025) against independent references: autograd
with torch's SGD for the gradient steps, numpy for the teacher's forward pass."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icl_sim.seeding import make_generator
from icl_sim.tasks.deep_relu_teacher import DeepReluTeacher
from icl_sim.theory import NetworkGD
from icl_sim.theory.network_gd import he_network, network_forward, network_gradients


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_written_out_gradients_equal_autograd(depth):
    generator = torch.Generator().manual_seed(depth)
    weights = he_network(3, depth, 5, generator, (2, 3))
    xs = torch.randn(2, 3, 7, 3, generator=generator, dtype=torch.float64)
    ys = torch.randn(2, 3, 7, generator=generator, dtype=torch.float64)
    mask = (torch.rand(2, 3, 7, generator=generator) < 0.6).double()
    mask[0, 0] = 0  # an empty context: zero gradient
    leaves = [weight.clone().requires_grad_() for weight in weights]
    outputs = network_forward(leaves, xs)[0]
    loss = (mask * (outputs - ys) ** 2).sum(-1) / (2 * mask.sum(-1).clamp(min=1))
    expected = torch.autograd.grad(loss.sum(), leaves)
    for mine, reference in zip(network_gradients(weights, xs, ys, mask), expected):
        torch.testing.assert_close(mine, reference, rtol=1e-12, atol=1e-13)


def _sgd_prediction(baseline: NetworkGD, xs: torch.Tensor, ys: torch.Tensor, query: torch.Tensor) -> float:
    """One prompt's network trained by torch's SGD on autograd's gradients of the mean squared error / 2."""
    leaves = [weight.clone().requires_grad_() for weight in baseline.start(xs.shape[-1])]
    optimiser = torch.optim.SGD(leaves, lr=baseline.lr)
    for _ in range(baseline.steps):
        optimiser.zero_grad()
        (0.5 * (network_forward(leaves, xs)[0] - ys).square().mean()).backward()
        optimiser.step()
    with torch.no_grad():
        return float(network_forward(leaves, query[None])[0][0])


def test_every_position_is_the_network_trained_on_its_prefix():
    task = DeepReluTeacher(dim=3, points=6, depth=3, width=4)
    prompt = task.sample(2, make_generator(0, "eval"), dtype=torch.float64)
    baseline = NetworkGD(3, 4, steps=12, lr=0.03, init_seed=5)
    preds = baseline.predict(prompt.xs, prompt.ys)
    for b in range(1):  # the batch's other prompt is trained alike, in the same tensors
        with torch.no_grad():
            start = float(network_forward(baseline.start(3), prompt.xs[b, :1])[0][0])
        assert preds[b, 0].item() == pytest.approx(start, rel=1e-12)  # no context: the start's prediction
        for i in range(1, 6):
            expected = _sgd_prediction(baseline, prompt.xs[b, :i], prompt.ys[b, :i], prompt.xs[b, i])
            assert preds[b, i].item() == pytest.approx(expected, rel=1e-9, abs=1e-12)
    fitted = baseline.fit(prompt.xs[:, :5], prompt.ys[:, :5])
    torch.testing.assert_close(network_forward(fitted, prompt.xs[:, 5:6])[0][:, 0], preds[:, 5], rtol=1e-12,
                               atol=1e-12)


def test_teacher_labels_and_mixture():
    task = DeepReluTeacher(dim=4, points=50, depth=3, width=6, mean=2.0, shift_weight=0.25)
    prompt = task.sample(400, make_generator(3, "eval"), dtype=torch.float64)
    xs, component = prompt.xs.numpy(), prompt.latent["component"].numpy()
    hidden = xs
    for layer in (1, 2):
        hidden = np.maximum(np.einsum("bnk,bjk->bnj", hidden, prompt.latent[f"W{layer}"].numpy()), 0.0)
    expected = np.einsum("bnk,bjk->bn", hidden, prompt.latent["W3"].numpy()) / math.sqrt(5.0)
    np.testing.assert_allclose(prompt.ys.numpy(), expected, rtol=1e-12, atol=1e-12)
    # each point's component: weight 0.25 within 4 standard errors; centres ±2 in every coordinate
    count = component.size
    assert abs(component.mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / count)
    centred = xs - np.where(component[..., None] > 0, 2.0, -2.0)
    assert abs(centred.mean()) < 4 / math.sqrt(centred.size) and abs(centred.var() - 1) < 0.02
    # the teacher's weights: He's variances, 2/fan_in before a ReLU and 1/fan_in at the read-out
    assert prompt.latent["W1"].var().item() == pytest.approx(2 / 4, rel=0.05)
    assert prompt.latent["W3"].var().item() == pytest.approx(1 / 6, rel=0.1)


def test_teacher_parameters_are_checked():
    for field, value in (("shift_weight", 1.5), ("depth", 0), ("width", 0), ("mean", math.nan)):
        with pytest.raises(ValueError, match=field):
            DeepReluTeacher(**{field: value})
    with pytest.raises(ValueError, match="lr"):
        NetworkGD(3, 4, 10, 0.0)
