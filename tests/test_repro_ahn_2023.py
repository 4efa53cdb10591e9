"""The pieces ahn-2023's checks rely on: whitening, the Σ⁻¹-preconditioned baseline, the distance to identity."""
import pytest
import torch

from icl_sim.models import constructed_lsa
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


def test_full_scale_is_the_authors_covariance():
    full, quick = ahn_2023.SCALES["full"], ahn_2023.SCALES["quick"]
    assert full.spectrum == (1.0, 1.0, 0.25, 0.0625, 1.0) and quick.spectrum == ahn_2023.AUTHORS_D
    assert (full.dim, full.context, full.layers) == (5, 20, (1, 2, 3, 4))


def test_claim_checks_take_one_value_per_seed_and_the_risk_band_of_their_standard_errors():
    settings = ahn_2023.SCALES["smoke"]  # L = 1, 2

    def rows(run, **per_seed):
        return [{"run": run, "seed": seed, "quantity": key, "value": values[seed]}
                for key, values in per_seed.items() for seed in (0, 1)]

    table = (rows("one-layer", relative_error=(0.01, 0.03), risk=(0.84, 0.86), risk_standard_error=(0.01, 0.03),
                  risk_formula=(0.85, 0.85))
             + rows("layers-1", distance_to_identity_layer_1=(0.02, 0.04))
             + rows("layers-2", distance_to_identity_layer_1=(0.05, 0.07), distance_to_identity_layer_2=(0.2, 0.0),
                    risk_minus_preconditioned_gd=(-0.3, -0.1)))
    checks = ahn_2023.checks({"rows": table}, settings)
    assert all(check.kind == "claim" for check in checks)
    assert [(check.claim, check.per_seed) for check in checks] == [
        ("one-layer-preconditioner", (0.01, 0.03)), ("one-layer-preconditioner", (0.84, 0.86)),
        ("layers-inverse-covariance", (0.02, 0.04)), ("layers-inverse-covariance", (0.05, 0.07)),
        ("layers-inverse-covariance", (0.2, 0.0)), ("layers-beat-preconditioned-gd", (-0.3, -0.1))]
    risk = checks[1]
    assert risk.expected == 0.85 and risk.tolerance == pytest.approx(3 * 0.02 + ahn_2023.RISK_SLACK * 0.85)
