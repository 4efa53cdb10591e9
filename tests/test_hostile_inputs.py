"""Hostile inputs from the reliability audit (issue 40): each is one ``Error:`` line, refused before any work,
with nothing written.  Table-driven: (files to write, command) -> the message's telling part."""
import json
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from icl_sim.cli import cli
from icl_sim.run_io import CHECKPOINT_FILE, load_checkpoint
from icl_sim.sweep import MAX_RUNS
from icl_sim.training import train
from test_run_validation import config, one_line_error, record_checksum

BASE = "base: {task: linear-regression, dim: 2, points: 3, steps: 2, batch_size: 4}\n"
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n" for previous, name in zip("abcdefgh", "bcdefghi"))
DEEP_JSON = "[" * 100_000 + "]" * 100_000

CASES = {
    "a grid value given as 1 and 1.0": ({"spec.yaml": BASE + "grid: {lr: [1, 1.0]}\n"},
                                        ["sweep", "run", "spec.yaml", "--out", "out"], "give the same run"),
    "a grid of 10⁶ runs": ({"spec.yaml": BASE + f"grid: {{seed: {list(range(1000))}, lr: "
                                                f"{[0.001 * k for k in range(1, 1001)]}}}\n"},
                          ["sweep", "run", "spec.yaml", "--out", "out"], "has 1000000 runs, more than --max-runs"),
    "a spec nested 100 000 deep": ({"spec.json": DEEP_JSON}, ["sweep", "run", "spec.json", "--out", "out"],
                                   "nests deeper than 32 levels"),
    "a billion laughs": ({"spec.yaml": BASE + LAUGHS + "grid: {seed: [0]}\n"},
                         ["sweep", "run", "spec.yaml", "--out", "out"], "more than 100000 values"),
    "a train config nested 100 000 deep": ({"config.json": DEEP_JSON},
                                           ["train", "--config", "config.json", "--out", "out"], "nests deeper"),
    "10⁹ seeds": ({}, ["repro", "run", "garg-2022", "--scale", "smoke", "--seeds", "1000000000", "--out", "out"],
                  "seeds must be >= 1 and <= 1000000 - first_seed"),
    "a seed of 10²⁰": ({}, ["theory", "verify", "one-step-gd-optimal-step", "--seed", str(10**20)], "--seed"),
    "a claim named twice": ({}, ["theory", "verify", "one-step-gd-optimal-step", "one-step-gd-optimal-step"], "named twice"),
    "a name and --all": ({}, ["repro", "run", "--all", "garg-2022", "--out", "out"], "not both"),
    "a partition for the local executor": ({"spec.yaml": BASE + "grid: {seed: [0]}\n"},
                                           ["sweep", "run", "spec.yaml", "--partition", "gpu", "--out", "out"],
                                           "the local executor has none of"),
    "a GPU this machine lacks": ({"spec.yaml": BASE + "grid: {seed: [0]}\n"},
                                 ["sweep", "run", "spec.yaml", "--gpus", "99", "--out", "out"], "--gpus 99"),
    "a probe of 10⁷ steps": ({"run/config.json": "{}"}, ["probe", "run", "--algorithm", "gd", "--steps", "10000000"],
                             "--steps"),
    "dim: null": ({"config.yaml": "dim: null\n"}, ["train", "--config", "config.yaml", "--out", "out"],
                  "dim must be an integer, got null"),
}


OTHER_REPRODUCTION = json.dumps({"kind": "reproduction", "name": "von-oswald-2023", "scale": "smoke"})
TINY_TRAIN = ["train", "--dim", "2", "--points", "3", "--steps", "2", "--batch-size", "4"]
#: (files already in out/, command into out/) -> the message: a directory holds one kind of output
WRONG_KIND = {
    "a reproduction into another's directory": ({"out/.icl-sim-output.json": OTHER_REPRODUCTION, "out/checks.json": "[]"},
                                                ["repro", "run", "garg-2022", "--scale", "smoke", "--out", "out"],
                                                "holds the reproduction von-oswald-2023 at smoke scale; give another "
                                                "--out for the reproduction garg-2022 at smoke scale"),
    "a reproduction into a training run": ({"out/config.json": "{}"},
                                           ["repro", "run", "garg-2022", "--scale", "smoke", "--out", "out"],
                                           "holds a training run; give another --out for the reproduction garg-2022"),
    "a training run into a reproduction": ({"out/checks.json": "[]"}, [*TINY_TRAIN, "--out", "out"],
                                           "holds a reproduction; give another --out for a training run"),
    "a sweep into a training run": ({"out/config.json": "{}", "spec.yaml": BASE + "grid: {seed: [0]}\n"},
                                    ["sweep", "run", "spec.yaml", "--out", "out"], "holds a training run"),
}


def invoked_among(files: dict, command: list, tmp_path, monkeypatch):
    """``command``'s result, run in ``tmp_path`` after writing ``files`` (relative path -> text) there."""
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    return CliRunner().invoke(cli, command)


@pytest.mark.parametrize("files, command, message", WRONG_KIND.values(), ids=WRONG_KIND.keys())
def test_a_directory_of_another_kind_of_output_is_refused_untouched(tmp_path, monkeypatch, files, command, message):
    result = invoked_among(files, command, tmp_path, monkeypatch)
    assert result.exit_code in (1, 2) and result.output.startswith("Error: ") and message in result.output, result.output
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == sorted({"out", *files})
    assert all((tmp_path / name).read_text() == text for name, text in files.items())


@pytest.mark.parametrize("files, command, message", CASES.values(), ids=CASES.keys())
def test_a_hostile_input_is_one_line_refused_before_work(tmp_path, monkeypatch, files, command, message):
    started = time.monotonic()
    result = invoked_among(files, command, tmp_path, monkeypatch)
    assert result.exit_code in (1, 2) and message in result.output, result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    assert time.monotonic() - started < 60  # refused, not worked through (10⁶ configs took minutes)
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == sorted(
        {*files, *(str(Path(name).parent) for name in files if "/" in name)})  # no output folder left


def test_the_default_bound_is_the_documented_one():
    assert MAX_RUNS == 10_000 and "--max-runs INTEGER RANGE" in CliRunner().invoke(cli, ["sweep", "run", "--help"]).output


@pytest.mark.parametrize("key", ["step", "window_steps"])
def test_a_forged_checkpoint_with_a_negative_count_is_refused(tmp_path, key):
    run = tmp_path / "run"
    train(config(10), run, progress=False)
    state = torch.load(run / CHECKPOINT_FILE, weights_only=True)
    torch.save({**state, key: -5}, run / CHECKPOINT_FILE)
    record_checksum(run)  # the forger recomputes the checksum
    for call in (lambda: load_checkpoint(run), lambda: train(config(20), run, resume=True, progress=False)):
        one_line_error(call, str(run / CHECKPOINT_FILE), f"its {key!r} is -5, below 0")


def test_a_checkpoint_with_a_non_finite_optimiser_state_is_refused(tmp_path):
    run = tmp_path / "run"
    train(config(10), run, progress=False)
    state = torch.load(run / CHECKPOINT_FILE, weights_only=True)
    moments = next(iter(state["optimizer"]["state"].values()))
    moments["exp_avg_sq"] = torch.full_like(moments["exp_avg_sq"], float("nan"))
    torch.save(state, run / CHECKPOINT_FILE)
    record_checksum(run)
    one_line_error(lambda: train(config(20), run, resume=True, progress=False), str(run / CHECKPOINT_FILE),
                   "'exp_avg_sq'", "NaN or infinite")


class Priced(Exception):
    """Raised in place of the probe's work: the price was given (or not) before it."""


@pytest.mark.parametrize("algorithm, steps, warned", [("preconditioned-gd", 200, True), ("gd", 3, False)])
def test_a_per_step_probe_is_priced_before_its_tuning_starts(tmp_path, monkeypatch, algorithm, steps, warned):
    """Per-step tuning is quadratic in --steps (each count 1..K tuned in turn): 200 preconditioned steps on 1024
    prompts, about 2 CPU hours by the measured rate, is one Warning line with its estimate before any work; three
    GD steps are not worth a word.  The estimate is the formula of tuning_seconds."""
    from icl_sim import reports
    from icl_sim.theory.step_tuning import tuning_seconds

    train(config(steps=5), tmp_path / "run", progress=False)
    monkeypatch.setattr(reports, "probe", lambda *args, **kwargs: (_ for _ in ()).throw(Priced()))
    result = CliRunner().invoke(cli, ["probe", str(tmp_path / "run"), "--algorithm", algorithm, "--step-params",
                                      "per-step", "--steps", str(steps), "--device", "cpu"])
    assert isinstance(result.exception, Priced)
    minutes = tuning_seconds(algorithm, steps, 1024) / 60
    assert (f"Warning: tuning {steps} per-step {algorithm} steps on 1024 prompts takes about {minutes:.0f} CPU "
            f"minutes" in result.stderr) == warned
    # quadratic in the steps, linear in the prompts: twice the steps on half the prompts cost (2K + 1)/(K + 1) times
    assert tuning_seconds(algorithm, 2 * steps, 512) == pytest.approx(tuning_seconds(algorithm, steps, 1024)
                                                                      * (2 * steps + 1) / (steps + 1))
