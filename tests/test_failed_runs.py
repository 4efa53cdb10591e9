"""What a stopped or failed command leaves on disk: a failed resume changes no file, SIGTERM and Ctrl-C stop after
the step under way and checkpoint (a second Ctrl-C stops at once, never checkpointing a half-done step), a full disk
is one line naming the file (the previous checkpoint kept, no empty output folder), and a new run can start from
another run's trained weights (``--init-from``)."""
import errno
import io
import json
import os
import shutil
import signal

import pytest
import torch
from click.testing import CliRunner

from tiny_runs import Stop, assert_identical, parameters, stop_at

from icl_sim import ensemble, training
from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.ensemble import train_ensemble
from icl_sim.failures import Terminated
from icl_sim.run_io import CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, load_checkpoint, load_run, save_checkpoint
from icl_sim.training import restored_run, train

TINY = ["--dim", "3", "--points", "6", "--batch-size", "8", "--layers", "2", "--device", "cpu", "--no-progress"]


def tiny_config(**changes) -> TrainConfig:
    base = dict(task_params={"dim": 3, "points": 6}, model_params={"layers": 2}, steps=20, batch_size=8, lr=1e-2,
                lr_schedule="cosine", warmup_steps=3, device="cpu", log_every=5, checkpoint_every=10)
    return TrainConfig(**{**base, **changes})


def snapshot(root) -> dict:
    """Every file's bytes and every directory under ``root``."""
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None for path in root.rglob("*")}


def one_error_line(result, exit_code: int = 2) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == exit_code and len(lines) == 1 and lines[0].startswith("Error: "), \
        (result.stderr, result.exception)
    return lines[0]


def assert_same_run(run_dir, reference) -> None:
    """``run_dir`` ended with ``reference``'s weights and metrics, bit for bit."""
    assert_identical(parameters(load_run(reference)), parameters(load_run(run_dir)))
    assert (run_dir / METRICS_FILE).read_bytes() == (reference / METRICS_FILE).read_bytes()


# == a failed resume changes nothing ====================================================================

def _garbage_metrics_line(run) -> None:
    lines = (run / METRICS_FILE).read_text().splitlines(keepends=True)
    (run / METRICS_FILE).write_text("".join([lines[0], "garbage\n", *lines[1:]]))


def _nan_weights(run) -> None:
    state = load_checkpoint(run)
    state["model"] = {name: torch.full_like(value, float("nan")) for name, value in state["model"].items()}
    save_checkpoint(run, state)  # with its checksum recorded: only the weights give it away


def test_a_failed_resume_leaves_config_and_metrics_as_they_were(tmp_path, monkeypatch):
    """The issue's case: a damaged metrics.jsonl is refused (exit 2) and config.json keeps its steps."""
    train(tiny_config(), tmp_path / "run", progress=False)
    _garbage_metrics_line(tmp_path / "run")
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["train", "--resume", "--steps", "30", "--out", "run", "--no-progress"])
    assert f"{METRICS_FILE}, line 2" in one_error_line(result)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("damage", [_garbage_metrics_line, _nan_weights])
def test_an_ensemble_resume_refused_for_one_run_writes_none(damage, tmp_path):
    """Every run of an ensemble is checked before any of their directories is written."""
    configs = [tiny_config(), tiny_config(seed=1)]
    run_dirs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(Terminated):
        _signal_at_step(12, ensemble, lambda: train_ensemble(configs, run_dirs, progress=False))
    damage(run_dirs[1])
    before = snapshot(tmp_path)
    with pytest.raises(ValueError):
        train_ensemble(configs, run_dirs, resume=True, progress=False)
    assert snapshot(tmp_path) == before


# == SIGTERM checkpoints and stops, as Ctrl-C does =========================================================

def _signal_at_step(step: int, module, run, signum: int = signal.SIGTERM):
    """``run()`` with SIGTERM (or ``signum``) sent to this process while ``module``'s loop draws the batch of
    ``step``."""
    drawn = module.training_batch

    def batch(task, config, at, device):
        if at == step:
            os.kill(os.getpid(), signum)
        return drawn(task, config, at, device)

    module.training_batch = batch
    try:
        return run()
    finally:
        module.training_batch = drawn


def test_sigterm_checkpoints_after_the_step_and_resumes_bit_for_bit(tmp_path, capsys):
    config = tiny_config()
    train(config, tmp_path / "straight", progress=False)
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        _signal_at_step(12, training, lambda: train(config, tmp_path / "stopped", progress=False))
    assert signal.getsignal(signal.SIGTERM) is handler  # restored for the library's caller
    assert load_checkpoint(tmp_path / "stopped")["step"] == 13  # step 12 finished, then the stop
    assert "stopped by SIGTERM at step 13: checkpoint of step 13 saved" in capsys.readouterr().err
    train(config, tmp_path / "stopped", resume=True, progress=False)
    assert_same_run(tmp_path / "stopped", tmp_path / "straight")


@pytest.mark.parametrize("signum, stopped_by", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_sigterm_or_ctrl_c_stops_an_ensemble_whose_runs_resume_bit_for_bit(signum, stopped_by, tmp_path, monkeypatch):
    configs = [tiny_config(), tiny_config(seed=1, lr=3e-3)]
    train_ensemble(configs, [tmp_path / "straight-0", tmp_path / "straight-1"], progress=False)
    run_dirs = [tmp_path / "stopped-0", tmp_path / "stopped-1"]
    _signal_inside_optimiser_step(monkeypatch, ensemble, 12, signum)
    with pytest.raises(KeyboardInterrupt) as stopped:
        train_ensemble(configs, run_dirs, progress=False)
    monkeypatch.undo()
    assert type(stopped.value) is stopped_by
    assert [load_checkpoint(run_dir)["step"] for run_dir in run_dirs] == [13, 13]  # step 12 finished, then the stop
    train_ensemble(configs, run_dirs, resume=True, progress=False)
    for index, run_dir in enumerate(run_dirs):
        assert_same_run(run_dir, tmp_path / f"straight-{index}")


def test_sigterm_during_train_command_says_where_the_checkpoint_is_and_exits_143(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _signal_at_step(3, training, lambda: CliRunner().invoke(
        cli, ["train", *TINY, "--steps", "50", "--checkpoint-every", "100", "--out", "run"]))
    assert result.exit_code == 128 + signal.SIGTERM, (result.stderr, result.exception)
    assert result.stderr.splitlines()[-1] == ("Training stopped by SIGTERM at step 4: checkpoint of step 4 saved in "
                                              "run; continue it with `icl-sim train --resume --out run`")
    assert load_checkpoint(tmp_path / "run")["step"] == 4


# == Ctrl-C stops after the step under way, as SIGTERM does ===============================================

def _signal_inside_optimiser_step(monkeypatch, module, step: int, signum: int = signal.SIGINT, *,
                                  also_at_batch: bool = False) -> None:
    """SIGINT (or ``signum``) to this process inside the optimiser step of ``step`` of ``module``'s loop, once Adam has
    updated the weights (the schedule's step still to come); ``also_at_batch``: a first one as the step's batch is
    drawn."""
    drawn, update, armed = module.training_batch, torch.optim.Adam.step, {"now": False}

    def batch(task, config, at, device):
        if at == step:
            armed["now"] = True
            if also_at_batch:
                os.kill(os.getpid(), signum)
        return drawn(task, config, at, device)

    def update_then_signal(self, *args, **kwargs):
        result = update(self, *args, **kwargs)
        if armed["now"]:
            armed["now"] = False
            os.kill(os.getpid(), signum)
        return result

    monkeypatch.setattr(module, "training_batch", batch)
    monkeypatch.setattr(torch.optim.Adam, "step", update_then_signal)


def test_ctrl_c_inside_the_optimiser_step_checkpoints_after_it_and_resumes_bit_for_bit(tmp_path, monkeypatch, capfd):
    config = tiny_config()
    train(config, tmp_path / "straight", progress=False)
    handler = signal.getsignal(signal.SIGINT)
    _signal_inside_optimiser_step(monkeypatch, training, 12)
    with pytest.raises(KeyboardInterrupt) as stopped:
        train(config, tmp_path / "stopped", progress=False)
    monkeypatch.undo()
    assert type(stopped.value) is KeyboardInterrupt and signal.getsignal(signal.SIGINT) is handler
    assert load_checkpoint(tmp_path / "stopped")["step"] == 13  # step 12 finished, then the stop
    err = capfd.readouterr().err
    assert err.count("stopping after this step; Ctrl-C again to stop at once\n") == 1, err
    assert "Training interrupted at step 13: checkpoint of step 13 saved" in err
    train(config, tmp_path / "stopped", resume=True, progress=False)
    assert_same_run(tmp_path / "stopped", tmp_path / "straight")


@pytest.mark.parametrize("pressed_again, saved", [(False, 13), (True, 10)])
def test_a_second_ctrl_c_stops_at_once_and_never_checkpoints_a_half_done_step(pressed_again, saved, tmp_path,
                                                                               monkeypatch):
    """Two SIGINTs in step 12: one moment apart they are one Ctrl-C that a parent forwarded again (submitit's local
    job controller does), and the step finishes; a second press stops inside the step, and the run keeps the
    checkpoint of step 10, as a half-updated model and optimiser do not resume bit for bit."""
    config = tiny_config()
    train(config, tmp_path / "straight", progress=False)
    if pressed_again:
        monkeypatch.setattr(training, "FORWARDED_CTRL_C_SECONDS", 0.0)
    _signal_inside_optimiser_step(monkeypatch, training, 12, also_at_batch=True)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "stopped", progress=False)
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "stopped")["step"] == saved
    train(config, tmp_path / "stopped", resume=True, progress=False)
    assert_same_run(tmp_path / "stopped", tmp_path / "straight")


def test_ctrl_c_during_train_command_says_where_the_checkpoint_is_and_exits_130(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _signal_at_step(3, training, lambda: CliRunner().invoke(
        cli, ["train", *TINY, "--steps", "50", "--checkpoint-every", "100", "--out", "run"]), signal.SIGINT)
    assert result.exit_code == 130, (result.stderr, result.exception)
    lines = result.stderr.splitlines()
    assert lines[0] == ("Training interrupted at step 4: checkpoint of step 4 saved in run; continue it with "
                        "`icl-sim train --resume --out run`") and lines[-1] == "Aborted.", result.stderr
    assert load_checkpoint(tmp_path / "run")["step"] == 4


def test_a_run_whose_ctrl_c_is_ignored_trains_on_through_it(tmp_path):
    """A process started with SIGINT ignored (``nohup``, ``&`` in a script) is not stopped by it."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _signal_at_step(12, training, lambda: train(tiny_config(), tmp_path / "run", progress=False), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert load_checkpoint(tmp_path / "run")["step"] == 20


# == a full disk ======================================================================================

def _disk_full_from_call(number: int):
    """A stand-in for ``torch.save`` whose ``number``-th call on a file writes a little, then fails as a full disk
    does."""
    save, calls = torch.save, {"n": 0}

    def full(state, file, *args, **kwargs):
        calls["n"] += isinstance(file, io.BufferedWriter)
        if calls["n"] < number or not isinstance(file, io.BufferedWriter):
            return save(state, file, *args, **kwargs)
        file.write(b"PK\x03\x04")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a failed write() raises it: no file named

    return full


def test_a_full_disk_while_checkpointing_is_one_line_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train(tiny_config(steps=4, log_every=1, checkpoint_every=2), tmp_path / "straight", progress=False)
    command = ["train", *TINY, "--steps", "4", "--lr", "1e-2", "--lr-schedule", "cosine", "--warmup-steps", "3",
               "--log-every", "1", "--checkpoint-every", "2", "--out", "run"]
    monkeypatch.setattr(torch, "save", _disk_full_from_call(2))
    line = one_error_line(CliRunner().invoke(cli, command))
    assert line.startswith("Error: No space left on device (the checkpoint needs about ") and \
        line.endswith(f"are free): {str(os.path.join('run', CHECKPOINT_FILE))!r}; free disk space or choose another "
                      f"location"), line
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "run")["step"] == 2  # intact: its checksum verifies
    assert not list((tmp_path / "run").glob(".*.tmp"))
    train(tiny_config(steps=4, log_every=1, checkpoint_every=2), tmp_path / "run", resume=True, progress=False)
    assert_same_run(tmp_path / "run", tmp_path / "straight")


@pytest.mark.parametrize("free, refused_as", [(10, "No space left on device"), (10**12, "some other failure")])
def test_a_large_checkpoints_failed_write_is_told_by_the_space_left(tmp_path, monkeypatch, free, refused_as):
    """A large checkpoint's failed write reaches us as torch's zip writer's RuntimeError, not an OSError: with less
    space left than the checkpoint needs it is the full disk's one line, else torch's own error."""
    train(tiny_config(steps=4, checkpoint_every=2), tmp_path / "run", progress=False)
    state, save = load_checkpoint(tmp_path / "run"), torch.save

    def failing(state, file, *args, **kwargs):
        if not isinstance(file, io.BufferedWriter):  # the size count (into no file) still works
            return save(state, file, *args, **kwargs)
        file.write(b"PK\x03\x04")
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0" if free > 10 else
                           "PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(torch, "save", failing)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**12, 10**12 - free, free))
    with pytest.raises(OSError if free == 10 else RuntimeError) as caught:
        save_checkpoint(tmp_path / "run", {**state, "step": 6})
    if free == 10:
        assert str(caught.value).startswith(f"[Errno {errno.ENOSPC}] {refused_as} (the checkpoint needs about ")
        assert caught.value.filename == str(tmp_path / "run" / CHECKPOINT_FILE)
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "run")["step"] == 4  # the previous checkpoint kept
    assert not list((tmp_path / "run").glob(".*.tmp"))


class _FullFile(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_while_logging_names_the_metrics_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(training, "open", lambda *args, **kwargs: _FullFile(), raising=False)
    line = one_error_line(CliRunner().invoke(cli, ["train", *TINY, "--steps", "4", "--out", "run"]))
    assert line == (f"Error: No space left on device: {str(os.path.join('run', METRICS_FILE))!r}; free disk space or "
                    f"choose another location")
    assert not (tmp_path / "run").exists()  # a new run that saved no checkpoint is removed


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("trained") / "run"
    train(tiny_config(steps=4), run, progress=False)
    return run


def _failing_write(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("command, written", [
    (["eval", "--num-prompts", "16", "--device", "cpu"], os.path.join("eval", "results.csv")),
    (["probe", "--algorithm", "gd", "--steps", "2", "--num-prompts", "16", "--device", "cpu"],
     os.path.join("probe", "gd.csv")),
    (["compare-weights"], os.path.join("compare-weights", "identity-lr1.csv")),
])
def test_a_full_disk_leaves_no_output_folder_and_names_the_file(command, written, trained, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    before = snapshot(tmp_path)
    monkeypatch.setattr("csv.DictWriter.writeheader", _failing_write)
    line = one_error_line(CliRunner().invoke(cli, [command[0], str(run), *command[1:]]))
    assert line == f"Error: No space left on device: {str(run / written)!r}; free disk space or choose another location"
    assert snapshot(tmp_path) == before


# == a new run from another run's weights ===================================================================

def test_init_from_starts_a_new_run_from_the_trained_weights_and_records_it(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = snapshot(trained)
    result = CliRunner().invoke(cli, ["train", *TINY, "--steps", "6", "--lr", "3e-4", "--checkpoint-every", "100",
                                      "--init-from", str(trained), "--out", "again"])
    assert result.exit_code == 0, (result.stderr, result.exception)
    config = TrainConfig.from_json((tmp_path / "again" / CONFIG_FILE).read_text())
    assert config.init_from == str(trained) and config.lr == 3e-4
    model, optimizer, _ = restored_run(config, tmp_path / "again", torch.device("cpu"), None)
    assert_identical(parameters(model), parameters(load_run(trained)))  # its step 0: the weights, no moments
    assert optimizer.state_dict()["state"] == {}
    assert snapshot(trained) == before


def test_a_run_from_weights_restarted_before_its_first_checkpoint_is_bit_for_bit(trained, tmp_path):
    config = tiny_config(init_from=str(trained), checkpoint_every=100)
    train(config, tmp_path / "straight", progress=False)
    with pytest.raises(Stop):
        train(config, tmp_path / "crashed", progress=False, log_extra=stop_at(15, Stop()))
    assert not (tmp_path / "crashed" / CHECKPOINT_FILE).exists()
    train(config, tmp_path / "crashed", resume=True, progress=False)  # from step 0: the weights loaded again
    assert_same_run(tmp_path / "crashed", tmp_path / "straight")


@pytest.mark.parametrize("options, named", [
    (["--dim", "4", "--layers", "2"], "weight 'key_query' is (2, 1, 4, 4) in the checkpoint, (2, 1, 5, 5) by the "
                                      "config"),
    (["--dim", "3", "--model", "gpt"], "does not fit the new run's config"),
])
def test_init_from_a_run_of_other_shapes_is_one_line(options, named, trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["train", "--points", "6", "--steps", "2", "--device", "cpu", "--no-progress",
                                      *options, "--init-from", str(trained), "--out", "again"])
    line = one_error_line(result)
    assert line.startswith(f"Error: init_from {str(trained)!r}: ") and named in line, line
    assert not (tmp_path / "again").exists()


def test_init_from_is_left_out_of_the_saved_json_at_its_default():
    """An ``added`` field: configs saved before it keep their JSON and sweep hashes."""
    assert "init_from" not in json.loads(tiny_config().to_json())
    assert json.loads(tiny_config(init_from="runs/a").to_json())["init_from"] == "runs/a"


def test_resume_refusing_a_changed_option_points_to_init_from(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["train", "--resume", "--lr", "0.1", "--out", str(trained)])
    assert one_error_line(result) == (f"Error: --resume continues the saved config; do not pass --lr (to change it, "
                                      f"start a new run from this one's weights: --init-from {trained} --out NEW_DIR)")
