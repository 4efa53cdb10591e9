"""von-oswald-2023b: the uniform initial state against its law, the compressed one-layer form against the model's
forward pass and a written-out loop, the preconditioned-input target against per-position solves, and the claim
checks against hand-made results."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icl_sim.models.mesa import MesaConfig, MesaTransformer, constructed_mesa
from icl_sim.models.mesa_compressed import compressed_predictions, compressed_weights
from icl_sim.paper_repro import von_oswald_2023b as repro
from icl_sim.paper_repro.evidence import held_claims
from icl_sim.seeding import make_generator
from icl_sim.tasks import Autoregressive

Z = 4.0  # standard errors a Monte Carlo moment may stray


@pytest.mark.parametrize("scale", [1.0, 2.5])
def test_uniform_initial_state_has_the_law_of_u_minus_s_s(scale):
    task = Autoregressive(dim=10, points=1, initial="uniform", initial_scale=scale)
    x0 = task.sample(20_000, make_generator(0, "eval", 0), dtype=torch.float64).xs[:, 0].flatten().numpy()
    count = x0.size
    assert np.abs(x0).max() <= scale and np.abs(x0).max() > 0.999 * scale
    assert abs(x0.mean()) <= Z * scale / math.sqrt(3 * count)  # Var = s²/3
    fourth = scale ** 4 / 5  # E x⁴ of U[−s, s]; Var(x²) = s⁴/5 − s⁴/9
    assert abs((x0 ** 2).mean() - scale ** 2 / 3) <= Z * math.sqrt((fourth - scale ** 4 / 9) / count)
    assert task.trivial_error() == pytest.approx(scale ** 2 / 3)


def test_an_unknown_initial_law_names_the_parameter():
    with pytest.raises(ValueError, match="initial"):
        Autoregressive(initial="laplace")


def _random_layer(dim, heads, key_size, seed=0):
    torch.manual_seed(seed)
    config = MesaConfig(attention="linear", heads=heads, key_size=key_size, init_scale=1.0)
    return MesaTransformer(dim, 6, config, dim).double()


def test_compressed_weights_are_the_mean_diagonals_of_the_product_blocks():
    dim, heads = 3, 2
    model = _random_layer(dim, heads, 5)
    key_query, value = compressed_weights(model)
    for h in range(heads):
        kq = model.key[0, h].detach().numpy().T @ model.query[0, h].detach().numpy()
        pv = model.projection[0, h].detach().numpy() @ model.value[0, h].detach().numpy()
        for r in range(2):
            value_block = pv[2 * dim:, r * dim:(r + 1) * dim]
            assert value[h, r].item() == pytest.approx(np.trace(value_block) / dim, rel=1e-12)
            for c in range(2):
                block = kq[r * dim:(r + 1) * dim, c * dim:(c + 1) * dim]
                assert key_query[h, r, c].item() == pytest.approx(np.trace(block) / dim, rel=1e-12)


def _block_scalar_layer(dim, a, b):
    """A one-layer linear model whose W_KᵀW_Q and P·W_V are exactly the block-scalar matrices of ``a``, ``b``."""
    heads, width = a.shape[0], 3 * dim
    model = MesaTransformer(dim, 6, MesaConfig(attention="linear", heads=heads, key_size=width, init_scale=0.0),
                            dim).double()
    eye = torch.eye(dim, dtype=torch.float64)
    with torch.no_grad():
        for h in range(heads):
            model.key[0, h] = torch.eye(width, dtype=torch.float64)
            for r in range(2):
                model.value[0, h, 2 * dim:, r * dim:(r + 1) * dim] = b[h, r] * eye
                for c in range(2):
                    model.query[0, h, r * dim:(r + 1) * dim, c * dim:(c + 1) * dim] = a[h, r, c] * eye
            model.projection[0, h, 2 * dim:, 2 * dim:] = eye
    return model


def _loop_predictions(a, b, xs):
    """The compressed layer written out position by position and token by token (numpy)."""
    xs = xs.numpy()
    batch, points, dim = xs.shape
    previous = np.concatenate([np.zeros((batch, 1, dim)), xs[:, :-1]], axis=1)
    out = np.zeros_like(xs)
    for t in range(points):
        for i in range(t + 1):
            parts_i, parts_t = (xs[:, i], previous[:, i]), (xs[:, t], previous[:, t])
            for h in range(a.shape[0]):
                score = sum(a[h, r, c] * (parts_i[r] * parts_t[c]).sum(-1) for r in range(2) for c in range(2))
                out[:, t] += score[:, None] * (b[h, 0] * parts_i[0] + b[h, 1] * parts_i[1])
    return out


def test_compressed_predictions_match_a_block_scalar_layers_forward_pass_and_a_loop():
    generator = torch.Generator().manual_seed(1)
    a = torch.randn(2, 2, 2, generator=generator, dtype=torch.float64)
    b = torch.randn(2, 2, generator=generator, dtype=torch.float64)
    xs = torch.randn(4, 6, 3, generator=generator, dtype=torch.float64)
    model = _block_scalar_layer(3, a, b)
    compressed = compressed_predictions(a, b, xs)
    np.testing.assert_allclose(compressed.numpy(), _loop_predictions(a.numpy(), b.numpy(), xs), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(compressed.numpy(), model.predict(xs, xs).detach().numpy(), rtol=1e-10, atol=1e-12)
    key_query, value = compressed_weights(model)
    np.testing.assert_allclose(key_query.numpy(), a.numpy(), rtol=1e-12)
    np.testing.assert_allclose(value.numpy(), b.numpy(), rtol=1e-12)


def test_compressed_weights_refuse_other_models():
    with pytest.raises(ValueError, match="model"):
        compressed_weights(MesaTransformer(3, 6, MesaConfig(attention="mesa"), 3))
    with pytest.raises(ValueError, match="model"):
        compressed_weights(MesaTransformer(3, 6, MesaConfig(attention="linear", layers=2), 3))


def test_preconditioned_inputs_are_per_position_ridge_solves():
    xs = torch.randn(3, 7, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    got = repro.preconditioned_inputs(xs, ridge=0.5).numpy()
    for b in range(3):
        for t in range(7):
            states = xs[b, :t].numpy()
            expected = np.linalg.solve(states.T @ states + 0.5 * np.eye(4), xs[b, t].numpy())
            np.testing.assert_allclose(got[b, t], expected, rtol=1e-10, atol=1e-12)


def test_probes_read_the_next_token_from_the_least_squares_layer_and_not_from_the_input():
    """The hand-built ridge layer writes its prediction into the slot: after it the next-token probe's held-out R²
    is at least the R² of that prediction itself (a linear read-out of it), on the input tokens near 0."""
    task = repro.SCALES["smoke"].task()
    fit, score = (task.sample(256, make_generator(seed, "eval", 0), dtype=torch.float64) for seed in (5, 6))
    model = constructed_mesa(task.dim, task.points, 1000.0).float()
    positions = range(40, 50)
    scores = repro.probe_scores(model, fit, score, positions)
    with torch.no_grad():
        preds = model.predict(score.xs.float(), score.ys.float()).double()[:, 40:50].flatten(0, 1)
    own = 1 - float((preds - score.ys[:, 40:50].flatten(0, 1)).square().sum()
                    / (score.ys[:, 40:50] - score.ys[:, 40:50].mean(dim=(0, 1))).square().sum())
    assert own > 0.99
    assert scores["next token"][1] >= own - 0.01
    assert abs(scores["next token"][0]) < 0.1


def test_bias_free_probes_are_per_position_least_squares_without_intercept():
    generator = torch.Generator().manual_seed(3)
    features = torch.randn(4, 200, 6, generator=generator, dtype=torch.float64)
    targets = torch.randn(4, 200, 3, generator=generator, dtype=torch.float64) + 5.0  # an offset no probe can fit
    got = repro.bias_free_probes(features, targets).numpy()
    for position in range(4):
        expected = np.linalg.lstsq(features[position].numpy(), targets[position].numpy(), rcond=None)[0]
        np.testing.assert_allclose(got[position], expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("model", ["one GD step", "least squares"])
def test_a_converged_model_that_writes_no_preconditioned_input_fails_the_probe_check(model):
    """The mechanisms the preconditioned-input probe must tell apart: the one-GD-step layer and the mesa-layer that
    solves least squares inside its attention both predict the next token (gain ≥ 0.1) but write no
    (Σ s_i s_iᵀ + λI)⁻¹ s_t into the stream, so its gain stays below the claim's 0.1."""
    task = repro.SCALES["smoke"].task()
    fit, score = (task.sample(512, make_generator(seed, "eval", 0), dtype=torch.float64) for seed in (7, 8))
    built = (repro.gd_step_layer(task.dim, task.points, 0.1) if model == "one GD step"
             else constructed_mesa(task.dim, task.points, 1000.0))
    scores = repro.probe_scores(built.float(), fit, score, range(40, 50))
    assert scores["next token"][-1] - scores["next token"][0] >= repro.PROBE_GAIN
    assert scores["preconditioned input"][-1] - scores["preconditioned input"][0] < repro.PROBE_GAIN / 2


def _results(mse, compressed, gains, zero=1.0):
    rows = [{"run": "baselines", "seed": 0, "quantity": "zero_mse", "value": zero}]
    for run, values in mse.items():
        rows += [{"run": run, "seed": s, "quantity": "mse", "value": v} for s, v in enumerate(values)]
    rows += [{"run": "linear", "seed": s, "quantity": "compressed_mse", "value": v} for s, v in enumerate(compressed)]
    for target in repro.PROBE_TARGETS:
        rows += [{"run": "deep-linear", "seed": s, "quantity": f"{target} probe gain", "value": v}
                 for s, v in enumerate(gains)]
    return {"rows": rows, "gd_sanity": {"compressed_vs_forward": 0.0, "compressed_vs_gd": 0.0, "scale": 1.0}}


def test_claim_checks_pass_on_a_clear_win_and_fail_on_untrained_like_values():
    settings = repro.SCALES["smoke"]
    good = _results({"mesa": [0.1, 0.11, 0.09], "linear": [0.5, 0.52, 0.49], "softmax": [0.4, 0.41, 0.39]},
                    [0.52, 0.54, 0.51], [0.5, 0.6, 0.55])
    assert all(check.passed for check in repro.checks(good, settings))
    flat = _results({name: [1.0 - 1e-12] * 3 for name in ("mesa", "linear", "softmax")}, [1.0 - 1e-12] * 3, [0.0] * 3)
    assert held_claims(repro.REPRODUCTION, repro.checks(flat, settings)) == []  # the gain check sinks the ratio
