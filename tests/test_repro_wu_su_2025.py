"""Wu, Su, Hu, Song & Liu 2025 (paper_repro/wu_su_2025.py): the full scale against App. F's settings, the measured
errors against the predictors recomputed independently (the baseline's all-positions prediction, the model's own
forward pass), and the claim checks' ratio on a hand-made table."""
import dataclasses

import pytest
import torch

from icl_sim.paper_repro import wu_su_2025
from icl_sim.paper_repro.runner import Measurement, held_out_prompts
from icl_sim.training import initial_model

SMOKE = wu_su_2025.SCALES["smoke"]


def test_full_scale_is_the_papers_setting():
    """App. F: d = 20, 50 pretraining examples from N(−2, I_d), batch 64; Garg et al.'s GPT-2 and Adam at 1e-4."""
    (config,) = wu_su_2025.runs(wu_su_2025.SCALES["full"]).values()
    params = config.task_params
    assert (config.task, params["dim"], params["points"], params["mean"], params["shift_weight"]) == (
        "deep-relu-teacher", 20, 50, 2.0, 0.0)
    assert (config.model, config.model_params, config.batch_size, config.lr, config.loss_on) == (
        "gpt", {"size": "standard"}, 64, 1e-4, "all")
    quick = wu_su_2025.SCALES["quick"]
    assert (quick.shifts, quick.positions[-1], quick.points) == ((0.0, wu_su_2025.SHIFT), 20, 21)


def test_measure_against_the_predictors_recomputed():
    config = wu_su_2025.runs(SMOKE)["gpt"]
    models = [initial_model(dataclasses.replace(config, seed=seed), torch.device("cpu")) for seed in (0, 1)]
    measurement = Measurement(SMOKE, torch.device("cpu"), {"gpt": models}, {"gpt": [[], []]},
                              {"gpt": [config, config]})
    results = wu_su_2025.measure(measurement)
    for shift in SMOKE.shifts:
        prompt = held_out_prompts(SMOKE.task(shift), "test", SMOKE.test_prompts, torch.device("cpu"))
        gd = (SMOKE.direct_training.predict(prompt.xs, prompt.ys) - prompt.ys).square()
        with torch.no_grad():
            model = (models[1].double().predict(prompt.xs, prompt.ys) - prompt.ys).square()
        for k in SMOKE.positions:
            row = wu_su_2025._baseline(results, wu_su_2025.GD_NAME, shift, k)
            assert row["value"] == pytest.approx(float(gd[:, k].mean()), rel=1e-10)
            mine = next(r for r in results["rows"] if r["predictor"] == wu_su_2025.MODEL and r["seed"] == 1
                        and r["shift"] == shift and r["position"] == k)
            assert mine["value"] == pytest.approx(float(model[:, k].mean()), rel=1e-10)
    checks = wu_su_2025.checks(results, SMOKE)
    last = SMOKE.positions[-1]
    gd = wu_su_2025._baseline(results, wu_su_2025.GD_NAME, 0.0, last)["value"]
    first = checks[0]
    assert first.claim == "icl-matches-gd" and first.relation == "at_most" and first.expected == 1.25
    assert first.per_seed[1] == pytest.approx(float(model_error(results, 1, 0.0, last)) / gd)
    assert len(wu_su_2025.figure(results, SMOKE)) == len(SMOKE.shifts)


def model_error(results: dict, seed: int, shift: float, position: int) -> float:
    return next(r["value"] for r in results["rows"] if r["predictor"] == wu_su_2025.MODEL and r["seed"] == seed
                and r["shift"] == shift and r["position"] == position)


def _table(ratio: float, shift_ratio: float) -> dict:
    rows = []
    for shift, factor in ((0.0, ratio), (wu_su_2025.SHIFT, shift_ratio)):
        for name, value in ((wu_su_2025.GD_NAME, 0.1), ("Zero", 1.0), ("Least squares", 0.5)):
            rows.append({"predictor": name, "seed": None, "shift": shift, "position": 5, "value": value, "se": 0.01})
        rows += [{"predictor": wu_su_2025.MODEL, "seed": seed, "shift": shift, "position": 5,
                  "quantity": f"error at k = 5, w2 = {shift}", "value": 0.1 * factor * (1 + 0.01 * seed), "se": 0.01}
                 for seed in range(3)]
    return {"rows": rows}


def test_ratio_checks_separate_matching_from_not():
    held = {check.claim: check.outcome for check in wu_su_2025.checks(_table(1.0, 1.1), SMOKE) if check.claim}
    failed = {check.claim: check.outcome for check in wu_su_2025.checks(_table(2.0, 10.0), SMOKE) if check.claim}
    assert held == {"icl-matches-gd": "held", "matches-under-shift": "held"}
    assert failed == {"icl-matches-gd": "failed", "matches-under-shift": "failed"}
    assert all(check.passed for check in wu_su_2025.checks(_table(1.0, 1.0), SMOKE) if check.kind == "sanity")
