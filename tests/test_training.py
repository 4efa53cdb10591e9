"""The training loop: determinism, resume after a crash, divergence, curriculum, learning-rate schedules.

Resuming after Ctrl-C bit for bit, for every model family: tests/test_contracts.py.
"""
import math

import pytest
import torch

from tiny_runs import Stop, assert_identical, parameters, stop_at

from icl_sim.config import Curriculum, TrainConfig
from icl_sim.run_io import load_run, read_metrics
from icl_sim.training import TrainingDiverged, learning_rate_factor, train


def tiny_config(**changes):
    base = dict(task_params={"dim": 3, "points": 6}, model="lsa", model_params={"layers": 2}, steps=20,
                batch_size=16, lr=1e-2, lr_schedule="cosine", warmup_steps=3, device="cpu", log_every=5,
                checkpoint_every=10)
    return TrainConfig(**{**base, **changes})


def test_same_config_gives_identical_models(tmp_path):
    first = parameters(train(tiny_config(), tmp_path / "a", progress=False))
    second = parameters(train(tiny_config(), tmp_path / "b", progress=False))
    assert_identical(first, second)
    other_seed = parameters(train(tiny_config(seed=1), tmp_path / "c", progress=False))
    assert not torch.equal(first["value"], other_seed["value"])


def test_resume_after_crash_restarts_from_last_checkpoint(tmp_path):
    config = tiny_config()
    reference = parameters(train(config, tmp_path / "straight", progress=False))
    with pytest.raises(Stop):
        train(config, tmp_path / "crashed", progress=False, log_extra=stop_at(15, Stop()))
    assert [r["step"] for r in read_metrics(tmp_path / "crashed")] == [5, 10]  # the record of step 15 never landed
    assert_identical(reference, parameters(train(config, tmp_path / "crashed", resume=True, progress=False)))
    assert_identical(reference, parameters(load_run(tmp_path / "crashed")))


def test_refuses_to_overwrite_a_run_and_to_resume_nothing(tmp_path):
    train(tiny_config(steps=5), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="already holds a run"):
        train(tiny_config(steps=5), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="no checkpoint"):
        train(tiny_config(), tmp_path / "empty", resume=True, progress=False)


def test_diverging_loss_stops_with_a_message_and_keeps_the_last_good_checkpoint(tmp_path):
    config = tiny_config(lr=1e4, lr_schedule="constant", warmup_steps=0, steps=200, model_params={"layers": 3},
                         checkpoint_every=1, log_every=1)
    with pytest.raises(TrainingDiverged, match="lower --lr"):
        train(config, tmp_path / "run", progress=False)
    model = load_run(tmp_path / "run")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_curriculum_grows_points_and_dimensions(tmp_path):
    config = tiny_config(task_params={"dim": 6, "points": 9}, steps=40, curriculum_dims=Curriculum(2, 2, 10),
                         curriculum_points=Curriculum(3, 3, 10), loss_on="all")
    train(config, tmp_path / "run", progress=False)
    seen = {(r["step"], r["points"], r["active_dims"]) for r in read_metrics(tmp_path / "run")}
    # metrics record the batch of the step before the logged count: step s logs batch s - 1
    assert (10, 3, 2) in seen and (20, 6, 4) in seen and (30, 9, 6) in seen and (40, 9, 6) in seen


def test_learning_rate_schedules():
    cosine = learning_rate_factor(tiny_config(steps=110, warmup_steps=10))
    assert [cosine(s) for s in (0, 4, 9)] == pytest.approx([0.1, 0.5, 1.0])
    assert cosine(10) == pytest.approx(1.0)
    assert cosine(60) == pytest.approx(0.5)
    assert cosine(110) == pytest.approx(0.0, abs=1e-12)
    constant = learning_rate_factor(tiny_config(lr_schedule="constant", warmup_steps=0))
    assert constant(0) == constant(19) == 1.0


def test_config_round_trips_through_json():
    config = tiny_config(curriculum_points=Curriculum(3, 1, 5), task_params={"dim": 3, "points": 6, "noise": 0.5},
                         betas=(0.9, 0.98), adam_eps=1e-9)
    assert TrainConfig.from_json(config.to_json()) == config


def test_adam_gets_the_configured_betas_and_eps(tmp_path):
    """von Oswald et al. train with Adam(0.9, 0.98, eps 1e-9); the optimiser state saved with the run says so."""
    train(tiny_config(betas=(0.9, 0.98), adam_eps=1e-9, steps=2), tmp_path / "run", progress=False)
    (group,) = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["optimizer"]["param_groups"]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9


@pytest.mark.parametrize("field, value", [("steps", 0), ("lr", -1.0), ("lr", math.nan), ("optimizer", "rmsprop"),
                                          ("loss_on", "first"), ("device", "tpu"), ("batch_size", 0),
                                          ("betas", (0.9,)), ("betas", (0.9, 1.0)), ("adam_eps", 0.0)])
def test_bad_config_names_the_parameter(field, value):
    with pytest.raises(ValueError, match=field):
        tiny_config(**{field: value})
