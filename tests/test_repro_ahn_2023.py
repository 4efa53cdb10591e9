"""The pieces ahn-2023's checks rely on: whitening, the Σ⁻¹-preconditioned baseline, the distance to identity."""
import pytest
import torch

from icl_sim.models import build_model, constructed_lsa
from icl_sim.paper_repro import ahn_2023
from icl_sim.paper_repro.measures import layer_preconditioners, scaled_distance
from icl_sim.seeding import make_generator
from icl_sim.tasks import LinearRegression
from icl_sim.theory import StepwiseGD, StepwisePreconditionedGD


def _task():
    return LinearRegression(dim=5, points=21, spectrum=ahn_2023.AUTHORS_D, rotation="fixed",
                            weight_prior="inverse-covariance")


def test_whitener_is_the_symmetric_square_root():
    prompt = _task().sample(4, make_generator(0, "eval", 0), dtype=torch.float64)
    covariance = prompt.latent["covariance"][0]
    root = ahn_2023._whitener(covariance)
    assert torch.allclose(root @ root, covariance, atol=1e-12) and torch.allclose(root, root.T, atol=1e-12)


def test_preconditioned_steps_equal_gd_on_whitened_inputs():
    """The baseline: steps η_t Σ⁻¹ on x are GD steps η_t on Σ^(-1/2) x (the authors' do_preconditioned_gd)."""
    prompt = _task().sample(32, make_generator(1, "eval", 0), dtype=torch.float64)
    covariance = prompt.latent["covariance"][0]
    inverse_root = torch.linalg.inv(ahn_2023._whitener(covariance))
    steps = torch.tensor([0.4, 1.3, 0.7], dtype=torch.float64)
    preconditioned = StepwisePreconditionedGD(steps[:, None, None] * torch.linalg.inv(covariance))
    whitened = StepwiseGD(steps.tolist())
    assert torch.allclose(preconditioned.predict(prompt.xs, prompt.ys),
                          whitened.predict(prompt.xs @ inverse_root, prompt.ys), atol=1e-9)


def test_distance_to_identity_reads_a_constructed_inverse_covariance_step_as_zero():
    covariance = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64))
    model = constructed_lsa(3, 9, 2, 0.7, torch.linalg.inv(covariance))
    root = ahn_2023._whitener(covariance)
    for matrix in layer_preconditioners(model):
        distance, scale = scaled_distance(root @ matrix @ root, torch.eye(3, dtype=torch.float64))
        assert distance == pytest.approx(0.0, abs=1e-12) and scale == pytest.approx(0.7)
    (single,) = layer_preconditioners(constructed_lsa(3, 9, 1, 1.0, torch.eye(3, dtype=torch.float64)))
    assert scaled_distance(root @ single @ root, torch.eye(3, dtype=torch.float64))[0] > 0.3


def test_full_scale_is_the_authors_notebooks():
    """chengxiang/LinearTransformer: variable_L_exp (L = 1..4, lr 0.01, 20 000 steps), rotation demonstration-Adam
    (Fig. 4: 3 layers, lr 0.1, 100 000 steps), -Adam-p0 (B = 0: lr 0.02 halved every 2000, 30 000 steps); all AdamW
    β = (0.99, 0.9), batch 20 000, init std 1e-4, each matrix's gradient clipped at 0.01, prompts redrawn every
    100 steps, the lr halved every 4000 steps; the L-sweep keeps the best of its last 20 snapshots."""
    full, quick = ahn_2023.SCALES["full"], ahn_2023.SCALES["quick"]
    assert full.spectrum == (1.0, 1.0, 0.25, 0.0625, 1.0) and quick.spectrum == ahn_2023.AUTHORS_D
    assert (full.dim, full.context, full.layers, full.restricted_layers) == (5, 20, (1, 2, 3, 4), (3,))
    assert (full.batch_size, full.init_scale, full.best_of, full.log_every) == (20_000, 1e-4, 20, 100)
    configs = ahn_2023.runs(full)
    expected = {"layers-2": (20_000, 0.01, 4000), "restricted-3": (30_000, 0.02, 2000), "figure-4": (100_000, 0.1, 4000)}
    for name, (steps, lr, halving) in expected.items():
        config = configs[name]
        assert (config.steps, config.lr, config.lr_halving_every) == (steps, lr, halving)
        assert (config.optimizer, config.betas, config.grad_clip_matrix, config.batch_redraw_every, config.grad_clip) \
            == ("adamw", (0.99, 0.9), 0.01, 100, 0.0)
    assert configs["restricted-3"].model_params["parameterisation"] == "preconditioner"
    assert configs["figure-4"].model_params == {"init_scale": 1e-4, "layers": 3, "parameterisation": "sparse"}


def test_restricted_model_with_inverse_covariance_steps_is_preconditioned_gd():
    """Thm 3's model (B_ℓ = 0) with A_ℓ = a_ℓ Σ⁻¹ is L steps of Σ⁻¹-preconditioned GD, step a_ℓ at step ℓ."""
    prompt = _task().sample(16, make_generator(2, "eval", 0), dtype=torch.float64)
    covariance = prompt.latent["covariance"][0]
    steps = torch.tensor([0.3, 0.9, 0.5], dtype=torch.float64)
    model = build_model("lsa", 5, 21, layers=3, parameterisation="preconditioner").double()
    with torch.no_grad():
        model.preconditioner.copy_((steps[:, None, None] * torch.linalg.inv(covariance))[:, None])
    reference = StepwisePreconditionedGD(steps[:, None, None] * torch.linalg.inv(covariance))
    torch.testing.assert_close(model.predict(prompt.xs, prompt.ys), reference.predict(prompt.xs, prompt.ys),
                               atol=1e-10, rtol=1e-10)
    distances = ahn_2023.distances_to_identity(model, ahn_2023._whitener(covariance), free=False)
    assert [distances[f"distance_to_identity_layer_{k}"] for k in (1, 2, 3)] == pytest.approx([0, 0, 0], abs=1e-12)
    assert [distances[f"scale_layer_{k}"] for k in (1, 2, 3)] == pytest.approx(steps.tolist())


def test_feature_distance_is_the_authors_statistic_on_b_and_skips_the_last_layer():
    model = build_model("lsa", 3, 9, layers=3, parameterisation="sparse").double()
    b = torch.tensor([[1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.4]], dtype=torch.float64)
    with torch.no_grad():
        model.feature_update[0, 0] = 0.7 * torch.eye(3)
        model.feature_update[1, 0] = b
    distances = ahn_2023.distances_to_identity(model, torch.eye(3, dtype=torch.float64), free=True)
    scale = torch.trace(b) / 3  # compute_dist_identity: ‖M − (tr M/d) I‖_F / ‖M‖_F
    assert distances["feature_distance_layer_1"] == pytest.approx(0.0, abs=1e-12)
    assert distances["feature_distance_layer_2"] == pytest.approx(float((b - scale * torch.eye(3)).norm() / b.norm()))
    assert "feature_distance_layer_3" not in distances


def test_best_snapshot_picks_the_least_validation_loss_and_keeps_an_untrained_model():
    """variable_L_exp: of the last 20 saved parameters, the one with the least loss on the validation prompts."""
    prompt = _task().sample(256, make_generator(3, "eval", 0), dtype=torch.float64)
    covariance = prompt.latent["covariance"][0]
    model = build_model("lsa", 5, 21, layers=1, parameterisation="preconditioner")
    good = (0.8 * torch.linalg.inv(covariance)).float().flatten().tolist()
    bad = torch.zeros(25).tolist()
    history = [{"step": 1, "weights": good}, {"step": 2, "weights": bad}, {"step": 3, "weights": bad}]
    chosen = ahn_2023.best_snapshot(model, history, prompt, count=3)
    torch.testing.assert_close(chosen.preconditioner.detach().flatten(), torch.tensor(good))
    assert ahn_2023.best_snapshot(model, history, prompt, count=2).preconditioner.abs().sum() == 0
    assert ahn_2023.best_snapshot(model, [], prompt, count=20) is model


def test_claim_checks_take_one_value_per_seed_and_the_risk_band_of_their_standard_errors():
    settings = ahn_2023.SCALES["smoke"]  # figure-4 (3 layers), restricted L = 2, the L-sweep L = 1, 2

    def rows(run, **per_seed):
        return [{"run": run, "seed": seed, "quantity": key, "value": values[seed]}
                for key, values in per_seed.items() for seed in (0, 1)]

    layers3 = {f"distance_to_identity_layer_{k}": (0.01 * k, 0.02 * k) for k in (1, 2, 3)}
    table = (rows("one-layer", relative_error=(0.01, 0.03), risk=(0.84, 0.86), risk_standard_error=(0.01, 0.03),
                  risk_formula=(0.85, 0.85))
             + rows("figure-4", **layers3, feature_distance_layer_1=(0.05, 0.06), feature_distance_layer_2=(0.3, 0.2))
             + rows("restricted-2", distance_to_identity_layer_1=(0.02, 0.04), distance_to_identity_layer_2=(0.2, 0.0),
                    log_distance_contrast=(-1.0, -2.0))
             + rows("layers-2", risk_minus_preconditioned_gd=(-0.3, -0.1)))
    *checks, comparison = ahn_2023.checks({"rows": table}, settings)
    assert all(check.kind == "claim" for check in checks)
    # L preconditioned steps are a special case of the trained class: the comparison is a sanity check, its worst seed
    assert (comparison.kind, comparison.measured, comparison.passed) == ("sanity", -0.1, True)
    assert [(check.claim, check.per_seed) for check in checks] == [
        ("one-layer-preconditioner", (0.01, 0.03)), ("one-layer-preconditioner", (0.84, 0.86)),
        ("layers-inverse-covariance", (0.01, 0.02)), ("layers-inverse-covariance", (0.02, 0.04)),
        ("layers-inverse-covariance", (0.03, 0.06)), ("layers-feature-identity", (0.05, 0.06)),
        ("layers-feature-identity", (0.3, 0.2)), ("restricted-preconditioned-steps", (0.02, 0.04)),
        ("restricted-preconditioned-steps", (0.2, 0.0)), ("restricted-preconditioned-steps", (-1.0, -2.0))]
    risk = checks[1]
    assert risk.expected == 0.85 and risk.tolerance == pytest.approx(3 * 0.02 + ahn_2023.RISK_SLACK * 0.85)
    assert (checks[2].passed, checks[6].passed) == (True, False)  # a 2-seed interval: t = 12.7
