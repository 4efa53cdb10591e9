"""The LSA model: exact against a token-level reference, one GD step by construction and by training.

No peeking, dtypes, seeding, bad parameters (every variant): tests/test_contracts.py.
"""
import pytest
import torch
from contract import gaussian_prompt
from lsa_reference import assert_matches_reference

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
