"""Ahn et al. 2024 (paper_repro/ahn_2024.py): the runs against the authors' settings written out, the recorded
trajectory against the trained model, the measured losses and condition numbers against an independent float64
computation (the model's own predictions and a dense autograd Hessian), the untrained control's null contrasts, and
the tail panel against a Pareto law's survival function.

Tolerances: the measured losses pass the model's predictions through float32 (``task_loss`` rounds them, a
relative 6e-8 per value), so losses agree to a relative 1e-5 and the Hessian's diagonal, differentiated through that
rounding, to 1e-4; the Pareto survival allows 5 standard errors sqrt(p(1 − p)/n) plus 3 % for the estimated median.
"""
import copy
import dataclasses
import json
import math

import numpy as np
import pytest
import scipy.stats
import torch
from torch.func import functional_call

from icl_sim.paper_repro import ahn_2024
from icl_sim.paper_repro.runner import Measurement
from icl_sim.training import initial_model, train

SMOKE = ahn_2024.SCALES["smoke"]


def test_runs_are_the_authors_settings():
    """README learning-rate table (N = 20: normal and gamma 0.02 both; sphere SGDM 5, Adam 0.1), train.ipynb (SGD
    momentum 0.9, AdamW β (0.9, 0.9), clip 1 (0.1 for sphere), var 0.05, 3 layers, 1 head, d 5, B 1 000, 10 000 steps),
    linear_transformer.py (gamma k = 0.1, scale 10; sphere: unit-norm covariates)."""
    full = ahn_2024.runs(ahn_2024.SCALES["full"])
    assert set(full) == {"sgdm-sphere", "adam-sphere", "sgdm-normal", "adam-normal", "sgdm-gamma", "adam-gamma",
                         "adam-trajectory"}
    rates = {"sgdm-sphere": 5.0, "adam-sphere": 0.1}
    for name, config in full.items():
        sphere = name.endswith("sphere")
        assert (config.model, config.lr, config.grad_clip, config.loss_on) == (
            "lsa", rates.get(name, 0.02), 0.1 if sphere else 1.0, "last")  # train.ipynb: clip 0.1 for 'sphere'

        assert config.model_params == {"layers": 3, "heads": 1, "parameterisation": "sparse", "init_scale": 0.05}
        assert (config.task_params["dim"], config.task_params["points"], config.task_params["noise"]) == (5, 21, 0.0)
        assert config.batch_size == 1000 and config.lr_schedule == "constant" and config.batch_redraw_every == 1
        if name.startswith("sgdm"):
            assert (config.optimizer, config.momentum, config.weight_decay) == ("sgd", 0.9, 0.0)
        else:
            assert (config.optimizer, config.betas, config.weight_decay) == ("adam", (0.9, 0.9), 0.0)
        gamma = name.endswith("gamma")
        laws = {"sphere": "sphere", "gamma": "gamma-sphere"}
        assert config.task_params["x_distribution"] == laws.get(name.split("-")[1], "gaussian")
        if gamma:
            assert (config.task_params["x_gamma_shape"], config.task_params["x_gamma_scale"]) == (0.1, 10.0)
    assert full["adam-normal"].steps == 10000 and (full["adam-trajectory"].steps, full["adam-trajectory"].log_every) \
        == (2000, 1)
    long = ahn_2024.runs(ahn_2024.SCALES["long"])  # the authors' batch, rates and seeds, 1 000 of their steps
    for name, config in long.items():
        assert dataclasses.replace(config, steps=full[name].steps, checkpoint_every=full[name].steps) == full[name]
    assert ahn_2024.REPRODUCTION.seeds["long"] == 6 and ahn_2024.SCALES["long"].condition_prompts == 1000


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Every smoke run trained with the reproduction's monitor: (configs, models, histories)."""
    root = tmp_path_factory.mktemp("ahn-2024")
    configs = {name: dataclasses.replace(config, device="cpu") for name, config in ahn_2024.runs(SMOKE).items()}
    log = ahn_2024.monitor(SMOKE, torch.device("cpu"))
    models, histories = {}, {}
    for name, config in configs.items():
        models[name] = train(config, root / name, progress=False, log_extra=log)
        with open(root / name / "metrics.jsonl") as lines:
            histories[name] = [json.loads(line) for line in lines]
    return configs, models, histories


def test_the_trajectory_run_retraces_adams_steps_and_ends_at_the_trained_weights(trained):
    configs, models, histories = trained
    short = {record["step"]: record["theta"] for record in histories["adam-trajectory"]}
    long = {record["step"]: record["theta"] for record in histories["adam-normal"]}
    common = sorted(set(short) & set(long))
    assert common and len(short) == SMOKE.smoothness_steps
    for step in common:
        assert short[step] == long[step]  # the same batches and initialisation: bit-identical steps
    final = torch.cat([p.detach().reshape(-1) for p in models["adam-normal"].parameters()]).double()
    torch.testing.assert_close(torch.tensor(long[SMOKE.steps], dtype=torch.float64), final, rtol=0, atol=0)


def _measurement(configs, models, histories, settings=SMOKE, control=None):
    wrap = lambda values: {name: [value] for name, value in values.items()}  # noqa: E731 - one seed per run
    return Measurement(settings, torch.device("cpu"), wrap(models), wrap(histories), wrap(configs), control=control)


def _predictions(model, prompt):
    """θ ↦ the model's query predictions ŷ_q on ``prompt`` in float64, written apart from the library."""
    module = copy.deepcopy(model).double()
    names = [name for name, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    xs, ys = prompt.xs.double(), prompt.ys.double()

    def predictions(theta):
        pieces = torch.split(theta, [math.prod(shape) for shape in shapes])
        weights = {name: piece.reshape(shape) for name, piece, shape in zip(names, pieces, shapes)}
        return functional_call(module, weights, (xs, ys))[:, -1]
    return predictions


def _flat_loss(model, prompt):
    """θ ↦ mean (ŷ_q − y_q)² from the model's own query prediction, float64."""
    predictions = _predictions(model, prompt)
    return lambda theta: (predictions(theta) - prompt.ys[:, -1].double()).square().mean()


def test_measured_losses_and_condition_numbers_equal_an_independent_float64_computation(trained):
    configs, models, histories = trained
    measurement = _measurement(configs, models, histories)
    results = ahn_2024.measure(measurement)
    task = SMOKE.task("normal")
    batch = measurement.prompts(task, "test", SMOKE.eval_prompts)
    final = {}
    for optimiser in ahn_2024.OPTIMISERS:
        name = ahn_2024.run_name(optimiser, "normal")
        model = models[name]
        theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
        final[optimiser] = float(_flat_loss(model, batch)(theta))
        assert results["curves"][name][0]["loss"][-1] == pytest.approx(final[optimiser], rel=1e-5)
        start = initial_model(configs[name], torch.device("cpu"))
        theta0 = torch.cat([p.detach().reshape(-1) for p in start.parameters()]).double()
        hessian_batch = measurement.prompts(task, "test", SMOKE.condition_prompts)
        diagonal = torch.diagonal(torch.autograd.functional.hessian(_flat_loss(start, hessian_batch), theta0)).abs()
        expected = float(diagonal.max() / diagonal.sort().values[(len(diagonal) - 1) // 2])  # the lower median
        assert results["curves"][name][0]["condition"][0] == pytest.approx(expected, rel=1e-4)
    ratio = next(row["value"] for row in results["rows"] if row["quantity"] == "log10_loss_ratio"
                 and row["run"] == "normal")
    assert ratio == pytest.approx(math.log10(final["sgdm"] / final["adam"]), rel=1e-4, abs=1e-6)


def test_untrained_models_give_the_null_contrasts_and_the_null_models_of_the_claims_at_the_initialisation(trained):
    """The control: 0 and 1 for the training contrasts; the noise of a gaussian model of the minibatch gradient (the
    measured noise's second moment, through the same estimator) for the tail; Adam's steps on the model linearised
    at its initialisation (the noisy quadratic model) for the smoothness, whose every directional smoothness lies
    in the quadratic's spectrum [0, λ_max(2 JᵀJ / n)]: an L-smooth landscape."""
    configs, models, histories = trained
    untrained = {name: initial_model(config, torch.device("cpu")) for name, config in configs.items()}
    results = ahn_2024.measure(_measurement(configs, untrained, {name: [] for name in configs}, control="untrained"))
    values = {(row["run"], row["quantity"]): row["value"] for row in results["rows"]}
    assert values["normal", "log10_loss_ratio"] == 0.0 and values["gamma-vs-normal", "log10_gap_ratio"] == 0.0
    assert values["normal", "condition_ratio"] == 1.0  # one initialisation for both optimisers
    assert all(math.isfinite(values[key]) for key in (("initialisation", "noise_tail_ratio"),
                                                      ("adam-trajectory", "smoothness_slope")))
    # the trained runs' noise is the authors' measurement at the initialisation; the control's is not that noise
    trained_rows = ahn_2024.measure(_measurement(configs, models, histories))["rows"]
    measured = next(row["value"] for row in trained_rows if row["quantity"] == "noise_tail_ratio")
    assert values["initialisation", "noise_tail_ratio"] != measured
    task = SMOKE.task("normal")
    batch = _measurement(configs, models, histories).prompts(task, "test", SMOKE.smoothness_prompts)
    start = untrained["adam-trajectory"]
    theta0 = torch.cat([p.detach().reshape(-1) for p in start.parameters()]).double()
    jacobian = torch.autograd.functional.jacobian(
        lambda theta: _predictions(start, batch)(theta), theta0)  # independent of the module's jacfwd
    spectrum = torch.linalg.eigvalsh(2 * jacobian.T @ jacobian / len(jacobian))
    smoothness = results["smoothness"][0]["smoothness"]
    assert len(smoothness) == SMOKE.smoothness_steps
    assert all(-1e-10 <= value <= float(spectrum[-1]) * (1 + 1e-9) for value in smoothness)


def test_the_gaussian_reference_norm_follows_the_chi_distribution():
    """Isotropic noise σ ξ, ξ ~ N(0, I_p): ‖ζ‖²/σ² is χ²_p, whose quantiles scipy gives; the 40 000 draws allow 5
    standard errors of a sample quantile, sqrt(q(1 − q)/n)/f(x_q)."""
    p, sigma = 150, 0.3
    noise = sigma * torch.randn(20000, p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    norms = ahn_2024.gaussian_reference_norms(noise)
    second = noise.T @ noise / len(noise)
    scale = float(torch.linalg.eigvalsh(second).mean())  # the reference's covariance is the measured one
    for q in (0.5, 0.99):
        x = scipy.stats.chi2.ppf(q, p)
        error = math.sqrt(q * (1 - q) / len(norms)) / scipy.stats.chi2.pdf(x, p)
        assert np.quantile(norms, q) ** 2 / scale == pytest.approx(x, abs=5 * error)


def test_the_tail_ratio_is_one_for_gaussian_noise_and_large_for_a_power_law():
    """Anisotropic gaussian noise gives a tail ratio of 1 up to the sample quantile's error; scaling each of its rows
    by a Pareto(1.5) factor (an infinite-variance tail) pushes the 99 % quantile far out."""
    generator = torch.Generator().manual_seed(2)
    noise = torch.randn(20000, 150, generator=generator, dtype=torch.float64) * torch.logspace(0, -3, 150)
    ratio = ahn_2024.tail_reach(noise.norm(dim=1).numpy()) / ahn_2024.tail_reach(
        ahn_2024.gaussian_reference_norms(noise))
    assert ratio == pytest.approx(1.0, abs=0.03)
    scales = torch.tensor(np.random.default_rng(3).pareto(1.5, size=(20000, 1)) + 1.0)
    heavy = noise * scales
    ratio = ahn_2024.tail_reach(heavy.norm(dim=1).numpy()) / ahn_2024.tail_reach(
        ahn_2024.gaussian_reference_norms(heavy))
    assert ratio > 2 * ahn_2024.RATIO_MARGIN


def test_the_gaussian_model_noise_has_the_measured_covariance_and_a_tail_ratio_of_one():
    """The control's noise for a heavy-tailed input (gaussian rows scaled by a Pareto(1.5) factor, tail ratio > 2.2):
    its rows are Σ^{1/2}(z_i − z̄_R) with Σ the input's second moment, so their covariance is Σ (1 + 1/R), within 5
    standard errors of a sample covariance's diagonal, sqrt(2/n) relative; their tail ratio is 1 up to the 0.03 the
    gaussian test above allows (R = 1 000 references, so the references' common offset is negligible)."""
    generator = torch.Generator().manual_seed(4)
    gaussian = torch.randn(20000, 40, generator=generator, dtype=torch.float64) * torch.logspace(0, -2, 40)
    heavy = gaussian * torch.tensor(np.random.default_rng(5).pareto(1.5, size=(20000, 1)) + 1.0)
    references = 1000
    model = ahn_2024.gaussian_model_noise(heavy, references, torch.Generator().manual_seed(6))
    assert model.shape == heavy.shape
    expected = torch.diagonal(heavy.T @ heavy / len(heavy)) * (1 + 1 / references)
    measured = torch.diagonal(model.T @ model / len(model))
    assert torch.all((measured / expected - 1).abs() <= 5 * math.sqrt(2 / len(model)))
    ratio = ahn_2024.tail_reach(model.norm(dim=1).numpy()) / ahn_2024.tail_reach(
        ahn_2024.gaussian_reference_norms(model))
    assert ratio == pytest.approx(1.0, abs=0.03)


def test_the_noisy_quadratic_trajectory_takes_adams_steps():
    """On f(θ) = ½‖A θ‖² with A diagonal: Adam's first step is −lr·sign(g) (bias-corrected m/√v = g/|g|, up to ε),
    with g the clipped ∇f(θ_0) + noise_0; a noise-free run converges toward the minimum at 0."""
    scales = torch.tensor([3.0, 1.0, 0.1], dtype=torch.float64)
    loss = lambda theta: 0.5 * (scales * theta).square().sum()  # noqa: E731
    config = dataclasses.replace(ahn_2024.runs(SMOKE)["adam-trajectory"], steps=200)
    theta0 = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    noise = torch.tensor([[0.0, 5.0, -10.0]], dtype=torch.float64).repeat(200, 1)
    path = ahn_2024.noisy_quadratic_trajectory(loss, theta0, noise, config)
    gradient = scales.square() * theta0 + noise[0]
    torch.testing.assert_close(path[1] - path[0], -config.lr * torch.sign(gradient), rtol=1e-6, atol=1e-9)
    quiet = ahn_2024.noisy_quadratic_trajectory(loss, theta0, torch.zeros_like(noise), config)
    assert len(quiet) == 201 and float(loss(quiet[-1])) < 1e-2 * float(loss(theta0))


def test_the_tail_panel_follows_a_pareto_survival_function():
    """Pareto(α) over its median: P(X/m > x) = x^{−α}/2 for x ≥ 1."""
    alpha, count = 1.5, 20000
    samples = (np.random.default_rng(0).pareto(alpha, size=(2, count)) + 1.0)
    grid, per_seed = ahn_2024._survival(list(samples))
    assert grid[0] == 1.0 and len(per_seed) == 2
    for survival in per_seed:
        for x, p in zip(grid, survival):
            expected = 0.5 * x ** -alpha
            assert abs(p - expected) <= 5 * math.sqrt(expected * (1 - expected) / count) + 0.03 * expected
