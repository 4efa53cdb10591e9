"""Latent probes (Akyürek et al. 2023) with control tasks (Hewitt & Liang 2019)."""
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.latent_probes import fit_linear_probe, latent_targets, probe_latent, r_squared
from icl_sim.models import InContextModel, LinearSelfAttention
from icl_sim.models.lsa import LSAConfig
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.training import train

# n = 7 context points in d = 4: Xᵀy/n = Σ̂ w is far from w, so the w and xty layers are distinguishable
TASK = make_task("linear-regression", dim=4, points=8)


class PlantedLayers(InContextModel):
    """Layer 1: the query x (independent of w); layer 2: w + 0.1 x_query; layer 3: Xᵀy/n of the context.

    w is recovered exactly from the noiseless context by least squares; every position gets the final
    query's features (only those are probed).
    """

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(()))

    def layer_features(self, xs, ys):
        context_xs, context_ys = xs[:, :-1], ys[:, :-1]
        w = torch.linalg.lstsq(context_xs, context_ys.unsqueeze(-1)).solution.squeeze(-1)
        xty = torch.einsum("bnd,bn->bd", context_xs, context_ys) / context_xs.shape[1]
        query = xs[:, -1]
        return [f.unsqueeze(1).expand(-1, xs.shape[1], -1) for f in (query, w + 0.1 * query, xty)]

    def layer_predictions(self, xs, ys):
        return [torch.zeros_like(ys)] * 3


def _values(records):
    return {(r["layer"], r["probe"], r["metric"]): r["value"] for r in records}


def test_planted_layers_are_found_with_selectivity_only_there():
    """Linear probe: R² > 0.97 where the target is planted (> 0.999 for the exact Xᵀy/n), |R²| < 0.05 on the
    noise layer, |control R²| < 0.05 everywhere (MLP: 0.1 and 0.15); selectivity is highest on the planted layer.

    The other planted layer is not ≈ 0 (w and Xᵀy/n = Σ̂ w are correlated, R² ≈ 0.58), hence "highest".
    """
    for target, layer in (("w", 2), ("xty", 3)):
        records = probe_latent(PlantedLayers(), TASK, target, probes=("linear", "mlp"), num_fit=2048,
                               num_prompts=1024, mlp_steps=200)
        assert {r["target"] for r in records} == {target}
        values = _values(records)
        assert values[layer, "linear", "r2"] > (0.999 if target == "xty" else 0.97)
        assert values[layer, "mlp", "r2"] > 0.9
        assert values[layer, "linear", "selectivity"] > 0.95
        for probe in ("linear", "mlp"):
            assert abs(values[1, probe, "r2"]) < (0.05 if probe == "linear" else 0.1)
            assert values[1, probe, "selectivity"] < 0.15
            for each in (1, 2, 3):
                assert abs(values[each, probe, "control_r2"]) < (0.05 if probe == "linear" else 0.15)
                assert values[each, probe, "selectivity"] <= values[layer, probe, "selectivity"]
        # the MLP memorises part of the permuted control on its fit prompts; the linear probe cannot
        assert values[1, "linear", "control_fit_r2"] < 0.02


def test_query_projection_control_is_read_from_a_layer_holding_x_query():
    values = _values(probe_latent(PlantedLayers(), TASK, "w", control="query-projection", num_fit=1024,
                                  num_prompts=512))
    assert values[1, "linear", "control_r2"] > 0.999  # layer 1 is x_query: the control is a linear map of it
    assert values[3, "linear", "control_r2"] < 0.05


def test_probing_is_seeded():
    """Same seed, same probes: the records agree to float64 rounding.

    Not bit for bit: BLAS may sum in another order when a buffer lands at another alignment,
    which moved the last bit of an MLP probe's R² in about one run in six.
    """
    first, second = (probe_latent(PlantedLayers(), TASK, "w", probes="mlp", num_fit=256, num_prompts=128,
                                  mlp_steps=20, seed=3) for _ in range(2))
    assert [{k: v for k, v in r.items() if k != "value"} for r in first] == \
        [{k: v for k, v in r.items() if k != "value"} for r in second]
    assert [r["value"] for r in first] == pytest.approx([r["value"] for r in second], rel=1e-12, abs=1e-12)
    other_seed = probe_latent(PlantedLayers(), TASK, "w", probes="mlp", num_fit=256, num_prompts=128,
                              mlp_steps=20, seed=4)
    assert [r["value"] for r in other_seed] != pytest.approx([r["value"] for r in first], rel=1e-6)


def test_linear_probe_is_the_numpy_ridge_solution():
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(200, 6, generator=generator, dtype=torch.float64) * 3 + 1
    targets = features[:, :2] @ torch.randn(2, 3, generator=generator, dtype=torch.float64) + torch.randn(
        200, 3, generator=generator, dtype=torch.float64)
    weights, bias = fit_linear_probe(features, targets, ridge=0.1)
    x, y = features.numpy(), targets.numpy()
    centred_x, centred_y = x - x.mean(0), y - y.mean(0)
    penalty = 0.1 * np.trace(centred_x.T @ centred_x) / x.shape[1]
    # ridge as least squares on data augmented with sqrt(λ) I rows (a different algorithm, the same minimiser)
    augmented_x = np.concatenate([centred_x, np.sqrt(penalty) * np.eye(6)])
    augmented_y = np.concatenate([centred_y, np.zeros((6, 3))])
    expected = np.linalg.lstsq(augmented_x, augmented_y, rcond=None)[0]
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bias.numpy(), y.mean(0) - x.mean(0) @ expected, rtol=1e-10, atol=1e-12)
    assert r_squared(targets, targets) == 1.0


def test_targets_xty_and_flattened_matrix_latents():
    prompt = TASK.sample(5, make_generator(0, "eval"), dtype=torch.float64)
    xty = latent_targets(prompt, "xty")
    expected = prompt.xs[:, :-1].mT @ prompt.ys[:, :-1, None] / 7
    torch.testing.assert_close(xty, expected.squeeze(-1))
    assert latent_targets(prompt, "covariance").shape == (5, 16)
    autoregressive = make_task("autoregressive", dim=3, points=6)
    sample = autoregressive.sample(4, make_generator(0, "eval"), dtype=torch.float64)
    torch.testing.assert_close(latent_targets(sample, "W"), sample.latent["W"].flatten(1).to(torch.float64))


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="target must be one of xty, covariance, noise, w; got 'v'"):
        probe_latent(PlantedLayers(), TASK, "v", num_fit=8, num_prompts=8)
    for options, name in (({"probes": ("linear", "svm")}, "probe"), ({"control": "none"}, "control"),
                          ({"ridge": 0.0}, "ridge"), ({"num_fit": 1}, "num_fit")):
        with pytest.raises(ValueError, match=name):
            probe_latent(PlantedLayers(), TASK, "w", **{"num_fit": 8, "num_prompts": 8, **options})


def test_lsa_layer_features_are_query_tokens_whose_label_slot_is_minus_the_prediction():
    xs = torch.randn(3, 6, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    ys = xs.sum(-1)
    for config in (LSAConfig(layers=2), LSAConfig(layers=2, mlp=True), LSAConfig(layers=2, causal=True)):
        torch.manual_seed(0)
        model = LinearSelfAttention(2, 6, config).double()
        with torch.no_grad():
            features, predictions = model.layer_features(xs, ys), model.layer_predictions(xs, ys)
        assert [f.shape for f in features] == [(3, 6, 3)] * 2
        for feature, prediction in zip(features, predictions):
            torch.testing.assert_close(-feature[..., -1], prediction)


def test_probe_latent_cli_on_a_trained_lsa(tmp_path):
    config = TrainConfig(task_params={"dim": 3, "points": 8}, model_params={"layers": 2}, steps=20, batch_size=32,
                         device="cpu", log_every=10)
    train(config, tmp_path / "run", progress=False)
    arguments = ["probe-latent", str(tmp_path / "run"), "--latent", "w", "--num-fit", "256", "--num-prompts", "128",
                 "--device", "cpu"]
    result = CliRunner().invoke(cli, [*arguments, "--probe", "linear", "--probe", "mlp", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert len(records) == 2 * 2 * 5
    assert {(r["layer"], r["probe"]) for r in records} == {(1, "linear"), (1, "mlp"), (2, "linear"), (2, "mlp")}
    assert all(np.isfinite(r["value"]) for r in records)
    both = tmp_path / "run" / "probe" / "latent-w-linear-mlp.csv"
    assert both.read_text().startswith("layer,target,probe,metric,value")
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0 and "selectivity" in result.output, result.output
    # the linear probe alone writes its own files; the two-probe table is kept, not overwritten
    assert ",mlp," in both.read_text() and ",mlp," not in (both.parent / "latent-w.csv").read_text()
    result = CliRunner().invoke(cli, ["probe-latent", str(tmp_path / "run"), "--latent", "bogus", "--device", "cpu"])
    assert result.exit_code == 2 and "target must be one of" in result.output
