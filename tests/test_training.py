"""The training loop: determinism, resume after a crash, divergence, curriculum, learning-rate schedules.

Resuming after Ctrl-C bit for bit, for every model family: tests/test_contracts.py; after kill -9:
tests/test_kill_resume.py; a damaged run directory: tests/test_run_validation.py.
"""
import dataclasses
import math

import pytest
import torch

from tiny_runs import Stop, assert_identical, parameters, stop_at

from icl_sim.config import Curriculum, TrainConfig
from icl_sim import training
from icl_sim.run_io import CONFIG_FILE, METRICS_FILE, load_checkpoint, load_config, load_run, read_metrics
from icl_sim.training import LOSS_GROWTH_WARNING, TrainingDiverged, learning_rate_factor, make_optimizer, train


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


def assert_same_run(run_dir, reference, model) -> None:
    """``run_dir`` (whose training returned ``model``) ended with ``reference``'s weights and metrics, bit for bit."""
    assert_identical(parameters(load_run(reference)), parameters(model))
    assert_identical(parameters(load_run(reference)), parameters(load_run(run_dir)))
    assert (run_dir / METRICS_FILE).read_bytes() == (reference / METRICS_FILE).read_bytes()


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_step_0(tmp_path):
    config = tiny_config(checkpoint_every=100)
    train(config, tmp_path / "straight", progress=False)
    with pytest.raises(Stop):
        train(config, tmp_path / "crashed", progress=False, log_extra=stop_at(15, Stop()))
    assert not (tmp_path / "crashed" / "checkpoint.pt").exists() and read_metrics(tmp_path / "crashed")
    resumed = train(config, tmp_path / "crashed", resume=True, progress=False)
    assert_same_run(tmp_path / "crashed", tmp_path / "straight", resumed)


def test_ctrl_c_between_records_resumes_with_the_same_metrics(tmp_path, monkeypatch):
    """The interrupt checkpoints step 12 inside the window of the record of step 15: the window is saved too."""
    config = tiny_config()
    train(config, tmp_path / "straight", progress=False)

    def interrupted_at_step_12(task, config, step, device):
        if step == 12:
            raise KeyboardInterrupt
        return training_batch(task, config, step, device)

    training_batch = training.training_batch
    monkeypatch.setattr(training, "training_batch", interrupted_at_step_12)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "resumed")["step"] == 12
    resumed = train(config, tmp_path / "resumed", resume=True, progress=False)
    assert_same_run(tmp_path / "resumed", tmp_path / "straight", resumed)


def test_checkpoints_by_time_between_records_resume_bit_for_bit(tmp_path):
    config = tiny_config(checkpoint_every=1000, checkpoint_minutes=1e-9)  # a checkpoint after every step
    train(config, tmp_path / "straight", progress=False)
    with pytest.raises(Stop):
        train(config, tmp_path / "crashed", progress=False, log_extra=stop_at(15, Stop()))
    assert load_checkpoint(tmp_path / "crashed")["step"] == 14
    resumed = train(config, tmp_path / "crashed", resume=True, progress=False)
    assert_same_run(tmp_path / "crashed", tmp_path / "straight", resumed)


def test_resume_with_more_steps_extends_the_run_and_its_config(tmp_path, capsys):
    """At a constant learning rate, 10 steps extended to 20 are the first 20 steps of a 20-step run."""
    config = tiny_config(steps=10, lr_schedule="constant")
    train(config, tmp_path / "extended", progress=False)
    capsys.readouterr()
    longer = dataclasses.replace(config, steps=20)
    train(longer, tmp_path / "straight", progress=False)
    extended = train(longer, tmp_path / "extended", resume=True, progress=False)
    assert_same_run(tmp_path / "extended", tmp_path / "straight", extended)
    assert (tmp_path / "extended" / CONFIG_FILE).read_bytes() == (tmp_path / "straight" / CONFIG_FILE).read_bytes()
    assert capsys.readouterr().err == ""  # a constant schedule is not changed by more steps


def test_resume_with_more_steps_warns_that_a_cosine_schedule_is_stretched(tmp_path, capsys):
    """Step 10 of 10 (3 warm-up) sits at the end of the cosine, factor 0; of 20 at ½(1 + cos(π·7/17))."""
    config = tiny_config(steps=10)
    train(config, tmp_path / "run", progress=False)
    capsys.readouterr()
    train(dataclasses.replace(config, steps=20), tmp_path / "run", resume=True, progress=False)
    stretched = 0.5 * (1 + math.cos(math.pi * 7 / 17))
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith("Warning: --steps 20 stretches the cosine schedule of the run, which decayed to step 10")
    assert f"step 10 trains at {stretched:.3g} x lr, not 0 x lr" in warning


@pytest.mark.parametrize("steps, message", [(5, "--steps 5 is fewer than the 10 steps"),
                                            (10, "has already trained all its 10 steps; pass --steps above 10")])
def test_resume_without_steps_left_is_refused_and_changes_nothing(tmp_path, steps, message):
    config = tiny_config(steps=10)
    train(config, tmp_path / "run", progress=False)
    before = {path.name: path.read_bytes() for path in (tmp_path / "run").iterdir()}
    with pytest.raises(ValueError, match=message):
        train(dataclasses.replace(config, steps=steps), tmp_path / "run", resume=True, progress=False)
    assert before == {path.name: path.read_bytes() for path in (tmp_path / "run").iterdir()}


def test_resume_with_other_settings_is_refused(tmp_path):
    train(tiny_config(steps=10), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match=r"config.json has another lr \(0.01\); only --steps and --device may change"):
        train(tiny_config(steps=20, lr=0.5), tmp_path / "run", resume=True, progress=False)
    assert load_config(tmp_path / "run") == tiny_config(steps=10)


def test_refuses_to_overwrite_a_run_and_to_resume_nothing(tmp_path):
    train(tiny_config(steps=5), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="already holds a run"):
        train(tiny_config(steps=5), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="no run to resume"):
        train(tiny_config(), tmp_path / "empty", resume=True, progress=False)


def test_diverging_loss_stops_with_a_message_and_keeps_the_last_good_checkpoint(tmp_path):
    config = tiny_config(lr=1e4, lr_schedule="constant", warmup_steps=0, steps=200, model_params={"layers": 3},
                         checkpoint_every=1, log_every=1)
    with pytest.raises(TrainingDiverged, match="lower --lr"):
        train(config, tmp_path / "run", progress=False)
    model = load_run(tmp_path / "run")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_a_loss_diverging_before_the_first_checkpoint_says_that_none_was_written(tmp_path):
    config = tiny_config(lr=1e4, lr_schedule="constant", warmup_steps=0, steps=200, model_params={"layers": 3},
                         checkpoint_every=1000, log_every=1)
    with pytest.raises(TrainingDiverged, match="no checkpoint was written") as caught:
        train(config, tmp_path / "run", progress=False)
    assert "kept" not in str(caught.value) and not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_runaway_loss_is_warned_about_once_when_it_is_logged(tmp_path, capsys):
    config = tiny_config(lr=1e3, lr_schedule="constant", warmup_steps=0, model_params={"layers": 1}, log_every=2)
    train(dataclasses.replace(config, steps=1, log_every=1), tmp_path / "first-step", progress=False)
    (initial,) = [record["loss"] for record in read_metrics(tmp_path / "first-step")]
    train(config, tmp_path / "run", progress=False)
    runaway = [record for record in read_metrics(tmp_path / "run") if record["loss"] > LOSS_GROWTH_WARNING * initial]
    assert len(runaway) > 1
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"Warning: training loss {runaway[0]['loss']:.3g} at step {runaway[0]['step']} ")
    assert f"its initial {initial:.3g}" in warning


def test_a_steady_loss_is_not_warned_about(tmp_path, capsys):
    train(tiny_config(), tmp_path / "run", progress=False)
    assert capsys.readouterr().err == ""


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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")
@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_adam_is_fused_on_cuda_and_not_on_cpu(optimizer):
    config = TrainConfig(optimizer=optimizer)
    assert make_optimizer(torch.nn.Linear(3, 1).cuda(), config).defaults["fused"] is True
    assert not make_optimizer(torch.nn.Linear(3, 1), config).defaults["fused"]


def test_compile_compiles_the_training_predictions_and_trains_as_eager(tmp_path):
    """The one-layer LSA trained on the last position predicts it without calling its ``forward``: the
    compiled module must be the training loss's own call (torch.compile on CPU; CUDA graphs are skipped)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    eager = tiny_config(model_params={"layers": 1}, steps=4, loss_on="last")
    compiled = dataclasses.replace(eager, compile=True, compile_mode="reduce-overhead")
    compiled_model = train(compiled, tmp_path / "compiled", progress=False)
    assert counters["stats"]["unique_graphs"] >= 1
    eager_model = train(eager, tmp_path / "eager", progress=False)
    for name, value in parameters(eager_model).items():
        torch.testing.assert_close(parameters(compiled_model)[name], value, rtol=1e-5, atol=1e-6)
