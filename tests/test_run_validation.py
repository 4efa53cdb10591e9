"""A run directory is validated before use: config schema, model shapes, checkpoint integrity, metrics records.

Every bad file ends in one ``ValueError`` line that names the file.
"""
import collections
import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from test_training import tiny_config

from icl_sim import atomic
from icl_sim.cli import cli
from icl_sim.config import ADDED_FIELDS, TrainConfig
from icl_sim.run_io import (CHECKPOINT_FILE, CHECKSUM_FILE, CONFIG_CHECKSUM_FILE, CONFIG_FILE, METRICS_FILE, load_checkpoint, load_config,
                            load_run, read_metrics, save_checkpoint)
from icl_sim.sweep import run_id
from icl_sim.training import train


def config(steps: int):
    """A tiny run; at a constant learning rate, 10 steps extended to 20 are the first 20-step run."""
    return tiny_config(steps=steps, lr_schedule="constant")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    train(config(10), run_dir, progress=False)
    return run_dir


@pytest.fixture
def run(finished_run, tmp_path):
    """A fresh copy of a finished 10-step run, to break."""
    return shutil.copytree(finished_run, tmp_path / "run")


def one_line_error(call, *names) -> str:
    """Call ``call``; it must raise a one-line ValueError containing every one of ``names``."""
    with pytest.raises(ValueError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    for name in names:
        assert name in message, (name, message)
    return message


def edit_config(run_dir, **changes):
    """Change ``config.json`` by hand, as its checksum records it: the edit is a valid file's, or not a config."""
    path = run_dir / CONFIG_FILE
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps({key: value for key, value in data.items() if value is not DELETE}))
    (run_dir / CONFIG_CHECKSUM_FILE).write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


DELETE = object()


def record_checksum(run_dir):
    """Make ``checkpoint.pt``'s checksum file agree with its bytes, whatever they are (a crafted run)."""
    digest = hashlib.sha256((run_dir / CHECKPOINT_FILE).read_bytes()).hexdigest()
    (run_dir / CHECKSUM_FILE).write_text(digest + "\n")


# == config.json ===========================================================================================

@pytest.mark.parametrize("changes, names", [
    ({"lrr": 0.1}, ["unknown key 'lrr'"]),
    ({"steps": DELETE}, ["missing key 'steps'"]),
    ({"steps": "ten"}, ["steps"]),
    ({"steps": 2.5}, ["steps"]),
    ({"lr": -1.0}, ["lr"]),
    ({"amp": "maybe"}, ["amp"]),
    ({"betas": [0.9]}, ["betas"]),
    ({"task_params": 5}, ["task_params"]),
    ({"curriculum_dims": 7}, ["curriculum_dims"]),
    ({"task": "no-such-task"}, ["task"]),
    ({"task": ["linear-regression"]}, ["task"]),
    ({"model": 3}, ["model"]),
    ({"task_params": {"dim": -1, "points": 6}}, ["dim"]),
    ({"model_params": {"no_such_parameter": 2}}, ["no_such_parameter"]),
])
def test_a_hand_edited_config_names_config_json_and_the_key(run, changes, names):
    edit_config(run, **changes)
    for call in (lambda: load_config(run), lambda: load_run(run),
                 lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, CONFIG_FILE, *names)


@pytest.mark.parametrize("changes", [{"task_params": {"dim": 3, "points": 50}}, {"steps": 5}])
def test_an_edit_the_checksum_does_not_record_is_refused(run, changes):
    path = run / CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    for call in (lambda: load_config(run), lambda: load_run(run),
                 lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, str(path), "was edited", CONFIG_CHECKSUM_FILE)


def test_a_config_without_its_checksum_is_refused_until_accepted_on_purpose(run):
    """The audit's case: the checksum deleted and the learning rate edited.  Refused everywhere, until `train
    --resume --force-unverified` accepts it, which records when in the config and continues at the edited rate."""
    (run / CONFIG_CHECKSUM_FILE).unlink()
    path = run / CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "lr": 0.05}))
    for call in (lambda: load_config(run), lambda: load_run(run),
                 lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, str(path), f"no {CONFIG_CHECKSUM_FILE}", "--force-unverified")
    assert not (run / CONFIG_CHECKSUM_FILE).exists()  # nothing written by the refusals
    result = CliRunner().invoke(cli, ["train", "--resume", "--force-unverified", "--steps", "20", "--out", str(run)])
    assert result.exit_code == 0, result.output
    accepted = load_config(run)
    assert accepted.lr == 0.05 and accepted.steps == 20 and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
                                                                        accepted.unverified_edit)
    assert [record["step"] for record in read_metrics(run)] == [5, 10, 15, 20]


def test_force_unverified_needs_resume(run):
    result = CliRunner().invoke(cli, ["train", "--force-unverified", "--out", str(run)])
    assert result.exit_code == 2 and result.output == ("Error: --force-unverified accepts the edited config of a run to "
                                                      "resume; pass it with --resume\n")


def test_a_checkpoint_with_non_finite_weights_is_refused(run):
    state = torch.load(run / CHECKPOINT_FILE, weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = torch.full_like(state["model"][name], float("nan"))
    torch.save(state, run / CHECKPOINT_FILE)
    record_checksum(run)
    one_line_error(lambda: load_run(run), CHECKPOINT_FILE, name, "NaN")


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "\xff\xfe"])
def test_an_unreadable_config_names_config_json(run, text):
    (run / CONFIG_FILE).write_text(text, encoding="latin-1")
    one_line_error(lambda: load_config(run), str(run / CONFIG_FILE))


def test_the_saved_config_loads_as_it_was(run):
    assert load_config(run) == config(10)


#: a config.json that icl-sim wrote on 2026-12-01, before the field compile_mode was added
SAVED_BEFORE_COMPILE_MODE = Path(__file__).parent / "data" / "config_saved_2026-12-01.json"


def test_a_config_saved_before_a_field_was_added_loads_with_its_default_and_keeps_its_json(tmp_path):
    run_dir = tmp_path / "old run"
    run_dir.mkdir()
    shutil.copy(SAVED_BEFORE_COMPILE_MODE, run_dir / CONFIG_FILE)
    saved = load_config(run_dir, verified=False)  # without its checksum: load_config alone refuses it (below)
    assert saved.compile_mode == "default" and "compile_mode" in ADDED_FIELDS
    assert saved.to_json() + "\n" == SAVED_BEFORE_COMPILE_MODE.read_text()  # save_config writes the same bytes
    assert run_id(saved) == hashlib.sha256(SAVED_BEFORE_COMPILE_MODE.read_text().strip().encode()).hexdigest()[:12]


def test_an_added_field_away_from_its_default_is_saved_and_compared(run):
    compiled = dataclasses.replace(config(10), compile=True, compile_mode="reduce-overhead")
    assert json.loads(compiled.to_json())["compile_mode"] == "reduce-overhead"
    assert TrainConfig.from_json(compiled.to_json()) == compiled
    edit_config(run, compile=True, compile_mode="max-autotune")
    assert load_config(run).compile_mode == "max-autotune"
    one_line_error(lambda: train(dataclasses.replace(compiled, steps=20), run, resume=True, progress=False),
                   "compile_mode", "'max-autotune'")


def test_compile_mode_needs_compile():
    one_line_error(lambda: dataclasses.replace(config(10), compile_mode="reduce-overhead"), "compile_mode", "compile")


# == model shapes ============================================================================================

@pytest.mark.parametrize("changes, weight", [
    ({"task_params": {"dim": 4, "points": 6}}, "'key_query' is (2, 1, 4, 4) in the checkpoint, (2, 1, 5, 5) by"),
    ({"model_params": {"layers": 3}}, "'key_query' is (2, 1, 4, 4) in the checkpoint, (3, 1, 4, 4) by"),
    ({"model_params": {"layers": 2, "mlp": True}}, "absent in the checkpoint"),
])
def test_a_config_that_no_longer_fits_the_checkpoint_names_both_files(run, changes, weight):
    edit_config(run, **changes)
    message = one_line_error(lambda: load_run(run), CHECKPOINT_FILE, CONFIG_FILE, weight)
    extended = dataclasses.replace(load_config(run), steps=20)
    assert message == one_line_error(lambda: train(extended, run, resume=True, progress=False))


# == checkpoint.pt ===========================================================================================

def truncated(data: bytes) -> bytes:
    return data[:len(data) // 2]


def one_byte_flipped(data: bytes) -> bytes:
    """A flipped byte in the tensor data: torch.load alone would not notice."""
    index = len(data) // 2
    return data[:index] + bytes([data[index] ^ 0xFF]) + data[index + 1:]


@pytest.mark.parametrize("damage", [truncated, one_byte_flipped, lambda data: b"", lambda data: data + b"\0"])
def test_a_damaged_checkpoint_is_refused_by_its_checksum(run, damage):
    path = run / CHECKPOINT_FILE
    path.write_bytes(damage(path.read_bytes()))
    for call in (lambda: load_checkpoint(run), lambda: load_run(run),
                 lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, str(path), "corrupt or truncated", "--resume")


def test_a_checkpoint_without_its_checksum_is_refused(run):
    (run / CHECKSUM_FILE).unlink()
    one_line_error(lambda: load_run(run), str(run / CHECKPOINT_FILE), CHECKSUM_FILE)


class Payload:
    """Any object that is not a tensor: unpickling it could run code."""


@pytest.mark.parametrize("content, names", [
    ({"model": {"weight": torch.ones(2)}}, ["not an icl-sim checkpoint", "'step'"]),
    ([torch.ones(2)], ["not an icl-sim checkpoint"]),
    ({"step": 10, "model": Payload()}, ["holds objects other than tensors; refusing to load it"]),
    ({"counter": collections.OrderedDict(a=torch.ones(1)), "step": 1}, ["not an icl-sim checkpoint"]),
])
def test_a_foreign_or_unsafe_checkpoint_is_refused(run, content, names):
    torch.save(content, run / CHECKPOINT_FILE)
    record_checksum(run)
    one_line_error(lambda: load_run(run), str(run / CHECKPOINT_FILE), *names)


def test_a_checksummed_file_that_is_no_checkpoint_at_all_is_refused(run):
    (run / CHECKPOINT_FILE).write_text("hello\n")
    record_checksum(run)
    one_line_error(lambda: load_run(run), f"cannot read {run / CHECKPOINT_FILE}")


def test_a_save_stopped_before_its_rename_leaves_a_loadable_checkpoint(run, monkeypatch):
    """The checksum file is replaced before the checkpoint: both digests are listed until the next save."""
    before = load_checkpoint(run)

    def killed_before_the_checkpoint_rename(source, target):
        if os.path.basename(target) == CHECKPOINT_FILE:
            raise KeyboardInterrupt
        os.rename(source, target)

    monkeypatch.setattr(atomic.os, "replace", killed_before_the_checkpoint_rename)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(run, {**before, "step": 11})
    monkeypatch.undo()
    assert len((run / CHECKSUM_FILE).read_text().split()) == 2
    assert load_checkpoint(run)["step"] == 10
    save_checkpoint(run, {**before, "step": 12})
    assert load_checkpoint(run)["step"] == 12


# == metrics.jsonl ===========================================================================================

def test_a_torn_last_metrics_line_is_dropped_and_does_not_block_resume(run, tmp_path):
    path = run / METRICS_FILE
    complete = path.read_bytes()
    path.write_bytes(complete + b'{"step": 15, "lo')
    assert read_metrics(run) == [json.loads(line) for line in complete.decode().splitlines()]
    train(config(20), run, resume=True, progress=False)
    train(config(20), tmp_path / "straight", progress=False)
    assert path.read_bytes() == (tmp_path / "straight" / METRICS_FILE).read_bytes()


@pytest.mark.parametrize("damage, missing", [
    (lambda lines: [], 5),  # metrics.jsonl deleted
    (lambda lines: lines[:1], 10),  # its checkpointed last record lost
    (lambda lines: lines[1:], 5),  # an early record lost
    (lambda lines: lines[:1] + ['{"step": 10, "lo'], 10),  # the checkpointed step's record torn
])
def test_a_gap_in_the_checkpointed_history_is_refused_on_resume(run, damage, missing):
    path = run / METRICS_FILE
    kept = damage(path.read_text().splitlines())
    if kept:
        path.write_text("".join(f"{line}\n" for line in kept))
    else:
        path.unlink()
    before = path.read_bytes() if kept else None
    one_line_error(lambda: train(config(20), run, resume=True, progress=False), str(path),
                   f"gap from step {missing}", "trained 10 steps")
    assert (path.read_bytes() if path.exists() else None) == before


@pytest.mark.parametrize("bad_line", ['{"step": 5, "lo', '[1, 2]', '{"loss": 1.0}'])
def test_a_bad_metrics_line_before_the_last_names_the_file_and_line(run, bad_line):
    path = run / METRICS_FILE
    first, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(first + bad_line + "\n" + "".join(rest))
    for call in (lambda: read_metrics(run), lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, f"{path}, line 2")
