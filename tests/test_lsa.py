"""The LSA model: exact against a token-level reference, one GD step by construction and by training.

No peeking, dtypes, seeding, bad parameters (every variant): tests/test_contracts.py.
"""
import pytest
import torch
from contract import gaussian_prompt
from lsa_reference import assert_matches_reference, causal_moment_reference

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory import GD
from icl_sim.training import train


@pytest.fixture
def prompt64():
    return gaussian_prompt(3, 7, 4)


def test_matches_per_prefix_reference(prompt64):
    xs, ys = prompt64
    torch.manual_seed(1)
    model = build_model("lsa", 4, 7, layers=3, heads=2, init_scale=0.3).double()
    assert_matches_reference(model, xs, ys)


def test_vector_labels_match_per_prefix_reference(prompt64):
    xs, _ = prompt64
    ys = torch.randn(*xs.shape[:2], 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    torch.manual_seed(3)
    model = build_model("lsa", 4, 7, target_dim=3, layers=2, heads=2, init_scale=0.3).double()
    assert_matches_reference(model, xs, ys)


def test_gd_construction_is_one_gd_step(prompt64):
    """P = −η e_{d+1}e_{d+1}ᵀ, Q = [[I, 0], [0, 0]] gives exactly one GD step of size η (von Oswald et al.)."""
    xs, ys = prompt64
    eta, d = 0.7, xs.shape[-1]
    model = build_model("lsa", d, 7).double()
    with torch.no_grad():
        model.value.zero_()
        model.value[0, 0, d, d] = -eta
        model.key_query.zero_()
        model.key_query[0, 0, :d, :d] = torch.eye(d)
    torch.testing.assert_close(model.predict(xs, ys), GD(steps=1, lr=eta).predict(xs, ys), atol=1e-12, rtol=1e-12)


def test_trained_one_layer_lsa_is_one_gd_step_at_the_optimal_step_size(tmp_path):
    """d = 5, N = 21: the optimum of one layer is GD with η* = n/(n + d + 1) (Mahankali et al. 2023)."""
    d, n = 5, 20
    config = TrainConfig(task_params={"dim": d, "points": n + 1}, model="lsa", steps=800, batch_size=1024,
                         lr=1e-2, lr_schedule="cosine", loss_on="last", device="cpu", log_every=100)
    model = train(config, tmp_path / "run", progress=False)
    task = make_task("linear-regression", dim=d, points=n + 1)
    prompt = task.sample(20_000, make_generator(7, "eval"), dtype=torch.float64)
    y = prompt.ys[:, -1]
    model_pred = model.predict(prompt.xs, prompt.ys)[:, -1]
    gd_pred = GD(steps=1, lr=n / (n + d + 1)).predict(prompt.xs, prompt.ys)[:, -1]
    model_risk, gd_risk = (model_pred - y).square().mean(), (gd_pred - y).square().mean()
    # the closed-form risk of that GD step, d(d + 1)/(n + d + 1), within 3 Monte Carlo standard errors
    standard_error = (gd_pred - y).square().std() / len(y) ** 0.5
    assert abs(gd_risk - d * (d + 1) / (n + d + 1)) < 3 * standard_error
    assert abs(model_risk - gd_risk) / gd_risk < 0.05
    assert (model_pred - gd_pred).norm() / gd_pred.norm() < 0.1


# == the masked token pass: the same function as the Γ recursion where it is used ======================

def _random_lsa(target_dim: int, **params):
    """A float64 LSA (d = 5, N = 9) with every parameter N(0, 0.3²), LayerNorm affine and MLP biases included."""
    torch.manual_seed(11)
    model = build_model("lsa", 5, 9, target_dim=target_dim, **params).double()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(std=0.3)
    return model


def _prompt(target_dim: int):
    xs, ys = gaussian_prompt(4, 9, 5, seed=12)
    if target_dim > 1:
        ys = torch.randn(4, 9, target_dim, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
    return xs, ys


@pytest.mark.parametrize("target_dim", [1, 3])
@pytest.mark.parametrize("params", [{}, {"heads": 2}, {"parameterisation": "diagonal", "heads": 2},
                                    {"parameterisation": "preconditioner"}, {"parameterisation": "sparse", "heads": 2},
                                    {"recurrent": True}, {"layer_norm": True, "mlp": True, "heads": 2}], ids=str)
def test_one_layer_token_pass_equals_moment_and_per_prefix_paths(params, target_dim):
    """One layer reads only unchanged context tokens, so the masked token pass (the path layer_predictions takes)
    is the per-prefix model: equal to the Γ recursion (linear variants) and to the materialised prefixes."""
    model = _random_lsa(target_dim, **params)
    xs, ys = _prompt(target_dim)
    paths = [model.per_prefix_predictions] + ([] if model.config.nonlinear else [model.moment_predictions])
    for features, token_pass in ((False, model.layer_predictions), (True, model.layer_features)):
        for path in paths:
            torch.testing.assert_close(token_pass(xs, ys), path(xs, ys, features=features), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("params", [{}, {"layer_norm": True, "mlp": True}], ids=str)
def test_one_layer_token_pass_has_the_gradients_of_the_per_prefix_model(params):
    model = _random_lsa(1, **params)
    xs, ys = _prompt(1)
    gradients = []
    for predictions in (model.layer_predictions, model.per_prefix_predictions):
        model.zero_grad()
        (predictions(xs, ys)[-1] - ys).square().mean().backward()
        gradients.append([parameter.grad.clone() for parameter in model.parameters()])
    for token_pass, per_prefix in zip(*gradients):
        torch.testing.assert_close(token_pass, per_prefix, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("target_dim", [1, 3])
@pytest.mark.parametrize("params", [{}, {"layers": 3, "heads": 2}, {"layers": 3, "recurrent": True},
                                    {"layers": 2, "parameterisation": "sparse"},
                                    {"layers": 2, "parameterisation": "diagonal", "layer_norm": True, "mlp": True}],
                         ids=str)
def test_causal_token_pass_equals_per_layer_moments(params, target_dim):
    """The causal form at every depth: the masked token pass against the per-layer Γ_t of that layer's tokens."""
    model = _random_lsa(target_dim, causal=True, **params)
    xs, ys = _prompt(target_dim)
    expected = causal_moment_reference(model, xs, ys)
    predictions = model.layer_predictions(xs, ys)
    assert len(predictions) == model.config.layers
    for layer, preds in enumerate(predictions):
        torch.testing.assert_close(preds, expected[layer], atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(model.last_prediction(xs, ys), expected[-1][:, -1], atol=1e-12, rtol=1e-12)
