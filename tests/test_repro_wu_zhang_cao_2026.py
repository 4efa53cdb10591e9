"""The measures wu-zhang-cao-2026's checks rely on: power iterates, the fixed-scale and linear-class floors, the
layerwise target, and the per-seed margins its claim checks take."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from icl_sim.models import build_model
from icl_sim.paper_repro.wu_zhang_cao_2026 import fixed_scale_floor, linear_class_floor, unnormalised_power_iterate
from icl_sim.seeding import make_generator
from icl_sim.tasks import PCA
from icl_sim.theory import PowerMethod


def prompts(count: int, seed: int = 0, dim: int = 4, points: int = 12):
    return PCA(dim=dim, points=points).sample(count, make_generator(seed, "eval"), dtype=torch.float64)


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_power_iterate_is_the_power_method_before_normalisation(steps):
    prompt = prompts(64)
    iterate = unnormalised_power_iterate(prompt.xs, steps)
    # numpy reference: (1/(N − 1)) Σ_{j<N−1} x_j x_jᵀ raised to the power k, times 1/√d
    xs = prompt.xs[:, :-1].numpy()
    gram = np.einsum("bnd,bne->bde", xs, xs) / xs.shape[1]
    start = np.full(prompt.dim, prompt.dim ** -0.5)
    expected = np.einsum("bde,e->bd", np.linalg.matrix_power(gram, steps), start)
    np.testing.assert_allclose(iterate.numpy(), expected, rtol=1e-12, atol=1e-14)
    direction = PowerMethod(steps).predict(prompt.xs, prompt.ys)[:, -1]
    torch.testing.assert_close(iterate / iterate.norm(dim=-1, keepdim=True), direction)


def test_fixed_scale_floor_is_the_least_error_over_one_shared_scale():
    prompt = prompts(2000)
    iterate, target = unnormalised_power_iterate(prompt.xs, 2), prompt.target[:, -1]
    result = fixed_scale_floor(iterate, target)
    # brute force: the mean squared error / d of c·v over a fine grid of c
    scales = np.linspace(0.0, 2 * result["scale"], 4001)
    v, u = iterate.numpy(), target.numpy()
    errors = [((c * v - u) ** 2).sum(axis=1).mean() / prompt.dim for c in scales]
    best = int(np.argmin(errors))
    assert result["scale"] == pytest.approx(scales[best], abs=2 * (scales[1] - scales[0]))
    assert result["floor"] == pytest.approx(errors[best], rel=1e-8)
    assert result["floor"] <= min(errors) + 1e-15
    assert result["floor"] < 1 / prompt.dim


def test_floor_standard_error_matches_the_spread_over_independent_samples():
    """Delta-method s.e. against the standard deviation of 40 independent Monte Carlo floors (within 35 %)."""
    floors, errors = [], []
    for seed in range(40):
        prompt = prompts(500, seed=seed + 100)
        result = fixed_scale_floor(unnormalised_power_iterate(prompt.xs, 3), prompt.target[:, -1])
        floors.append(result["floor"])
        errors.append(result["standard_error"])
    spread = float(np.std(floors, ddof=1))
    assert float(np.mean(errors)) == pytest.approx(spread, rel=0.35)


def test_guidance_targets_are_the_power_iterates_and_leave_the_points_unchanged():
    plain = PCA(dim=4, points=12).sample(32, make_generator(3, "eval"), dtype=torch.float64)
    guided = PCA(dim=4, points=12, guidance=2).sample(32, make_generator(3, "eval"), dtype=torch.float64)
    torch.testing.assert_close(guided.xs, plain.xs)
    torch.testing.assert_close(guided.target, PowerMethod(2).predict(plain.xs, plain.ys))


def test_linear_class_floor_is_the_least_squares_residual_and_binds_every_no_ln_layer():
    prompt = prompts(3000, seed=7)
    target = PowerMethod(1).predict(prompt.xs, prompt.ys)[:, -1]
    floor = linear_class_floor(prompt.xs, target)
    # numpy reference: regress target − s on all d² entries of Ĝ (the duplicated ones change nothing)
    xs = prompt.xs[:, :-1].numpy()
    gram = np.einsum("bnd,bne->bde", xs, xs) / xs.shape[1]
    residual = target.numpy() - prompt.dim ** -0.5
    features = gram.reshape(len(gram), -1)
    fitted = features @ np.linalg.lstsq(features, residual, rcond=None)[0]
    assert floor == pytest.approx(((residual - fitted) ** 2).sum(axis=1).mean() / prompt.dim, rel=1e-9)
    start_error = (residual ** 2).sum(axis=1).mean() / prompt.dim  # the layer that writes nothing
    assert 0 < floor < start_error
    # one loop of looped-lsa-ln without LN, at random weights of several sizes (two heads): never below the floor
    for scale in (0.05, 0.3, 1.0):
        torch.manual_seed(int(10 * scale))
        model = build_model("looped-lsa-ln", 4, 12, 4, loops=1, layer_norm=False, heads=2, init_scale=scale)
        model = model.double()
        read_out = model.predict(prompt.xs, prompt.ys, loops=1)[:, -1].detach()
        error = float((read_out - target).square().sum(dim=-1).mean()) / prompt.dim
        assert error >= floor


LAYERWISE_RUNS = ("with LN, layerwise", "without LN, layerwise", "with LN, layerwise, random start")


def _results(settings, power_cosine, step_cosine, probe_cosine, layerwise, twice):
    """A results table over seeds 0 and 1 from functions of (seed, loops[, step]), (run, seed) and (run, seed, step)
    (the layerwise layer applied twice)."""
    rows = [{"run": "no-LN linear-class floor", "seed": 0, "loops": 1, "quantity": "guided_squared_error",
             "value": 0.004}]
    for seed in (0, 1):
        for k in range(1, settings.loops + 1):
            rows.append({"run": "with LN", "seed": seed, "loops": k, "quantity": "power_cosine",
                         "value": power_cosine(seed, k)})
            rows += [{"run": "with LN", "seed": seed, "loops": k, "step": step, "quantity": "step_cosine",
                      "value": step_cosine(seed, k, step)} for step in (k - 1, k + 1)]
            rows += [{"run": "with LN", "seed": seed, "loops": k, "step": step, "quantity": "probe_residual_cosine",
                      "value": probe_cosine(seed, k, step)} for step in range(1, 2 * settings.loops + 1)]
        for run in LAYERWISE_RUNS:
            rows.append({"run": run, "seed": seed, "loops": 1, "quantity": "guided_squared_error",
                         "value": layerwise(run, seed)})
            rows += [{"run": run, "seed": seed, "loops": 2, "step": step, "quantity": "step_cosine",
                      "value": twice(run, seed, step)} for step in (1, 2, 3)]
    return {"rows": rows}


def test_checks_take_per_seed_margins_and_each_claim_fails_for_a_model_that_learned_nothing():
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.evidence import check_claim_wiring, claim_verdicts
    from icl_sim.paper_repro.wu_zhang_cao_2026 import (SCALES, checks, probe_margins, readout_margins,
                                                       second_application_margins)

    settings = SCALES["smoke"]  # b = 2
    reproduction = REPRODUCTIONS["wu-zhang-cao-2026"]

    def trained(seed, k, step=None):
        return 0.98 - 0.001 * seed if step is None else 0.93 - 0.01 * abs(step - k) - 0.002 * seed

    def probe_cosine(seed, k, step):
        return 0.95 - 0.03 * abs(step - k) + 0.001 * seed

    def iterating(run, seed, step):  # a layer that performs the power iteration: twice, nearest PowerMethod(2)
        return 0.99 - 0.02 * abs(step - 2) - 0.001 * seed

    def layerwise(run, seed):
        return 0.001 + 0.0001 * seed if "with LN" in run else 0.005

    found = checks(_results(settings, trained, trained, probe_cosine, layerwise, iterating), settings)
    check_claim_wiring(reproduction, found)
    # cos at k minus the larger neighbour: 0.98 − 0.92 on seed 0, 0.979 − 0.918 on seed 1
    assert readout_margins(_results(settings, trained, trained, probe_cosine, layerwise, iterating), 1) == \
        pytest.approx([0.06, 0.061])
    assert probe_margins(_results(settings, trained, trained, probe_cosine, layerwise, iterating), 2) == \
        pytest.approx([0.03, 0.03])
    # 0.99 − 0.97 on seed 0, 0.989 − 0.969 on seed 1
    assert second_application_margins(_results(settings, trained, trained, probe_cosine, layerwise, iterating),
                                      "with LN, layerwise") == pytest.approx([0.02, 0.02])
    assert [entry.verdict for entry in claim_verdicts(reproduction, found)] == ["held"] * 4

    # a layer below the floor that writes PowerMethod(1) whatever its input: applied twice, still PowerMethod(1)
    constant = checks(_results(settings, trained, trained, probe_cosine, layerwise,
                               lambda run, seed, step: 0.99 - 0.02 * abs(step - 1)), settings)
    assert {entry.claim.id: entry.verdict for entry in claim_verdicts(reproduction, constant)}["layerwise-gap"] == \
        "failed"
    sanity = [check for check in found if check.kind == "sanity"]
    assert len(sanity) == 1 and sanity[0].passed

    # a model that learned nothing: its read-out is the start s = PowerMethod(0), which the probe puts at step 1
    nothing = checks(_results(settings, lambda seed, k: 0.7 - 0.1 * k,
                              lambda seed, k, step: 1.0 if step == 0 else 0.7 - 0.1 * step,
                              lambda seed, k, step: 0.9 - 0.05 * step, lambda run, seed: 0.036,
                              lambda run, seed, step: 0.9 - 0.1 * step), settings)
    assert [entry.verdict for entry in claim_verdicts(reproduction, nothing)] == ["failed"] * 4


def test_block_start_is_one_damped_power_iteration():
    """Wu et al.'s start P_yx = Q_xy = c·I: one loop maps s to Norm(s + c²Ĝs) with LN, s + c²Ĝs without."""
    prompt = prompts(16, seed=5)
    c = 0.3
    iterate = unnormalised_power_iterate(prompt.xs, 1)
    damped = prompt.dim ** -0.5 + c * c * iterate
    for layer_norm in (True, False):
        model = build_model("looped-lsa-ln", 4, 12, 4, loops=1, layer_norm=layer_norm, init="block",
                            init_scale=c).double()
        read_out = model.predict(prompt.xs, prompt.ys, loops=1)[:, -1].detach()
        expected = damped / damped.norm(dim=-1, keepdim=True) if layer_norm else damped
        torch.testing.assert_close(read_out, expected)


def test_gain_is_the_nearest_multiple_of_the_identity_map_and_zero_off_the_manifold_at_the_block_start():
    from icl_sim.paper_repro.wu_zhang_cao_2026 import gain

    block = build_model("looped-lsa-ln", 4, 12, 4, loops=1, init="block", init_scale=0.3)
    assert gain(block) == pytest.approx({"gain": 0.09, "off_manifold": 0.0}, abs=1e-7)
    torch.manual_seed(3)
    model = build_model("looped-lsa-ln", 4, 12, 4, loops=1, heads=2, init_scale=0.5)
    # numpy reference: the map G ↦ Σ_h A_h G B_h on the basis matrices E_ij, its least-squares multiple of the identity
    values, key_queries = model.value.detach().double().numpy(), model.key_query.detach().double().numpy()
    basis = np.eye(16).reshape(16, 4, 4)
    images = np.stack([sum(v[4:, :4] @ e @ kq[:4, 4:] for v, kq in zip(values, key_queries)) for e in basis])
    rho = float((images * basis).sum() / (basis * basis).sum())
    relative = np.linalg.norm(images - rho * basis) / np.linalg.norm(images)
    assert gain(model) == pytest.approx({"gain": rho, "off_manifold": relative}, rel=1e-9)
