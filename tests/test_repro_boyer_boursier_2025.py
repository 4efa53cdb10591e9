"""Boursier & Boyer 2025 (paper_repro/boyer_boursier_2025.py): the projected attention head against its formula in
numpy, the KCM task's covariance against ρ^|i−j| by Monte Carlo, the pairing of softmax and linear runs, the
reproduction's gap measures against hand-computed values, the rate's slope against its closed form, and the checks on
synthetic gaps (a power law at the rate holds, a flatter one fails, a run that leaves the risk fails by a number)."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.paper_repro import boyer_boursier_2025 as repro
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.tasks.kcm_regression import KCMRegression
from icl_sim.training import initial_model, train, training_batch


def numpy_head(model, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """ŷ_i = W_o Σ_{j<i} a_j W_v z_j at every position i, written out point by point (models.py's head)."""
    wq, wk, wv, wo = (getattr(model, name).weight.detach().numpy() for name in ("q_proj", "k_proj", "v_proj",
                                                                                   "o_proj"))
    tokens = np.concatenate([xs, ys[..., None]], axis=-1)
    width = tokens.shape[-1]
    out = np.zeros(ys.shape)
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            query = wq @ np.concatenate([xs[b, i], [0.0]])
            scores = np.array([query @ (wk @ tokens[b, j]) for j in range(i)]) / math.sqrt(width)
            if model.config.activation == "softmax":
                weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
            else:
                weights = scores / i
            out[b, i] = (wo @ sum(w * (wv @ tokens[b, j]) for j, w in enumerate(weights)))[0]
    return out


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_projected_attention_matches_the_head_written_out(activation):
    torch.manual_seed(3)
    model = build_model("projected-attention", 3, 7, activation=activation).double()
    generator = torch.Generator().manual_seed(1)
    xs, ys = torch.randn(2, 7, 3, generator=generator, dtype=torch.float64), torch.randn(2, 7, generator=generator,
                                                                                       dtype=torch.float64)
    expected = numpy_head(model, xs.numpy(), ys.numpy())
    np.testing.assert_allclose(model.predict(xs, ys).numpy(), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.last_prediction(xs, ys).detach().numpy(), expected[:, -1], rtol=0, atol=1e-12)
    score, value = model.merged()  # zᵀ (W_kᵀW_q/√D) z_q and W_o W_v: the same head merged (Lemma 2.1's form)
    tokens = torch.cat([xs, ys[..., None]], -1)
    query = torch.cat([xs[:, -1], torch.zeros(2, 1, dtype=torch.float64)], -1)
    scores = torch.einsum("bjk,kl,bl->bj", tokens[:, :-1], score, query)
    weights = torch.softmax(scores, -1) if activation == "softmax" else scores / 6
    merged = torch.einsum("bj,bjk,k->b", weights, tokens[:, :-1], value[0])
    np.testing.assert_allclose(merged.detach().numpy(), expected[:, -1], rtol=0, atol=1e-12)


def test_projected_attention_starts_as_nn_linear_and_refuses_a_bad_activation():
    torch.manual_seed(0)
    model = build_model("projected-attention", 5, 11)
    bound = 1 / math.sqrt(6)  # U(−1/√fan_in, 1/√fan_in), fan_in = D = d + 1
    for name, shape in (("q_proj", (6, 6)), ("k_proj", (6, 6)), ("v_proj", (6, 6)), ("o_proj", (1, 6))):
        weight = getattr(model, name).weight
        assert weight.shape == shape and float(weight.detach().abs().max()) <= bound
    entries = torch.cat([p.detach().flatten() for p in model.parameters()])
    # a uniform's variance bound²/3; 114 entries give the sample variance a s.e. of about bound² · 0.03
    assert abs(float(entries.var()) - bound ** 2 / 3) < 5 * bound ** 2 * math.sqrt(4 / 45 / entries.numel())
    with pytest.raises(ValueError, match="activation"):
        build_model("projected-attention", 5, 11, activation="relu")


def test_kcm_task_has_the_toeplitz_covariance_by_monte_carlo():
    task = KCMRegression(dim=4, points=50, correlation=0.5, noise=0.1)
    prompt = task.sample(400, make_generator(0, "eval", 0), dtype=torch.float64)
    expected = 0.5 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
    xs = prompt.xs.reshape(-1, 4).numpy()  # 20 000 points, rows independent within and across prompts
    sample = xs.T @ xs / len(xs)
    standard_error = np.sqrt((np.outer(np.diag(expected), np.diag(expected)) + expected ** 2) / len(xs))
    assert np.all(np.abs(sample - expected) < 5 * standard_error)
    np.testing.assert_allclose(prompt.latent["covariance"][0].numpy(), expected, rtol=0, atol=1e-12)
    assert task.trivial_error() == pytest.approx((4 * task.prior_scale ** 2 + 0.01) / 4, abs=1e-12)  # tr Σ = d


@pytest.mark.parametrize("options, name", [(dict(correlation=1.0), "correlation"),
                                           (dict(correlation=-1.0), "correlation"),
                                           (dict(condition_number=3.0), "condition_number")])
def test_kcm_task_refuses_bad_input(options, name):
    with pytest.raises(ValueError, match=name):
        make_task("kcm-regression", **options)


def test_the_paired_runs_start_alike_see_the_same_batches_and_then_differ(tmp_path):
    settings = dataclasses.replace(repro.SCALES["smoke"], lengths=(6,), steps=5, log_every=5)
    configs = {activation: dataclasses.replace(repro.runs(settings)[repro.run_name(activation, 6)], device="cpu")
               for activation in repro.ACTIVATIONS}
    soft, lin = (initial_model(configs[a], torch.device("cpu")) for a in repro.ACTIVATIONS)
    assert all(torch.equal(a, b) for a, b in zip(soft.state_dict().values(), lin.state_dict().values()))
    task = KCMRegression(**configs["softmax"].task_params)
    for step in (0, 3):
        first, second = (training_batch(task, configs[a], step, torch.device("cpu")) for a in repro.ACTIVATIONS)
        assert torch.equal(first.xs, second.xs) and torch.equal(first.ys, second.ys)
    trained = {a: train(configs[a], tmp_path / a, progress=False) for a in repro.ACTIVATIONS}
    assert not torch.equal(trained["softmax"].q_proj.weight, trained["linear"].q_proj.weight)


def test_pair_measures_match_hand_computed_gaps():
    targets = torch.tensor([1.0, -1.0])
    lin = torch.tensor([[0.0, 0.0], [0.5, -0.5], [1.0, -1.0]], dtype=torch.float64)
    soft = torch.tensor([[0.0, 0.0], [0.0, -0.5], [1.0, -0.5]], dtype=torch.float64)
    found = repro._pair_measures(soft, lin, targets)
    # risks: linear 1, 0.25, 0; softmax 1, 0.625, 0.125
    np.testing.assert_allclose(found["risks"]["linear"], [1.0, 0.25, 0.0])
    np.testing.assert_allclose(found["risks"]["softmax"], [1.0, 0.625, 0.125])
    # mean-square gaps 0, 0.125, 0.125: root-mean-square 0 at the start, at most √0.125
    assert found["start_gap"] == 0.0 and found["trajectory_gap"] == pytest.approx(math.sqrt(0.125))
    assert found["softmax_risk_ratio"] == pytest.approx(0.125) and found["linear_risk_ratio"] == 0.0
    still = repro._pair_measures(soft[:1] + 0.5, lin[:1], targets)  # an untrained pair: the start alone
    assert still["softmax_risk_ratio"] == still["linear_risk_ratio"] == 1.0
    assert still["trajectory_gap"] == still["start_gap"] == pytest.approx(0.5)


def test_log_slope_recovers_a_power_law_and_refuses_infinite_gaps():
    lengths = [10, 100, 1000]
    assert repro.log_slope(lengths, [3 * length ** -0.7 for length in lengths]) == pytest.approx(-0.7, abs=1e-12)
    assert math.isnan(repro.log_slope(lengths, [1.0, math.inf, 0.5]))


def test_rate_slope_is_minus_a_half_plus_the_log_factor():
    # two lengths: the slope of log √(ln L / L) is −1/2 + (ln ln b − ln ln a) / (2 ln(b/a))
    expected = -0.5 + (math.log(math.log(1000)) - math.log(math.log(10))) / (2 * math.log(100))
    assert repro.rate_slope([10, 1000]) == pytest.approx(expected, abs=1e-12)
    assert repro.rate_slope(repro.SCALES["long"].lengths) == pytest.approx(-0.367, abs=1e-3)


def synthetic_rows(lengths, gap, ratio):
    """Rows of two seeds whose gaps are gap(L, seed) and whose risk ratios are ``ratio``."""
    quantities = {"start_gap": lambda length, seed: (seed + 1) / math.sqrt(length), "trajectory_gap": gap,
                  "softmax_risk_ratio": lambda length, seed: ratio, "linear_risk_ratio": lambda length, seed: ratio / 2,
                  "pairing_difference": lambda length, seed: 0.0}
    return [{"run": f"L{length}", "length": length, "seed": seed, "quantity": quantity, "value": value(length, seed)}
            for length in lengths for seed in (0, 1) for quantity, value in quantities.items()]


def test_checks_hold_the_rate_on_a_moving_run_and_fail_a_flat_gap_or_a_still_run():
    settings = repro.SCALES["long"]
    verdicts = lambda rows: [check.outcome for check in repro.checks({"rows": rows}, settings)]  # noqa: E731
    falling = synthetic_rows(settings.lengths, lambda length, seed: (seed + 2) * length ** -0.5, 0.5)
    assert verdicts(falling) == ["held", "held", "held", "held"]
    flat = synthetic_rows(settings.lengths, lambda length, seed: (seed + 2) * length ** -0.3, 0.5)
    assert verdicts(flat)[0] == "failed"  # slope −0.3 above the rate's −0.367
    still = repro.checks({"rows": synthetic_rows(settings.lengths, lambda length, seed: length ** -0.5, 1.0)},
                         settings)
    assert still[1].outcome == "failed" and still[1].per_seed == (1.0, 1.0) and not still[1].vacuous
    assert still[2].measured == pytest.approx(-0.5, abs=1e-12)


def test_quick_long_and_full_settings_are_the_declared_ones():
    full = repro.SCALES["full"]
    assert len(full.lengths) == 19 and full.lengths[:2] == (10, 20) and full.lengths[-2:] == (900, 1000)
    assert (full.steps, full.lr, full.batch_size, full.log_every) == (300_000, 1e-3, 128, 1000)
    long = repro.SCALES["long"]  # their rate and batch, L to 300 for the CPU hour
    assert (long.lr, long.batch_size, long.lengths[0], long.lengths[-1]) == (1e-3, 128, 10, 300)
    assert repro.REPRODUCTION.seeds["long"] == 3
    config = repro.runs(repro.SCALES["quick"])[repro.run_name("softmax", 100)]
    task = make_task(config.task, **config.task_params)
    assert (task.dim, task.points, task.correlation) == (5, 101, 0.5)
    assert task.noise ** 2 == pytest.approx(0.1) and task.prior_scale ** 2 == pytest.approx(1 / 5)
    assert isinstance(config, TrainConfig) and config.optimizer == "sgd" and config.momentum == 0.0
