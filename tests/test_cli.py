"""The command line: one-line errors with exit 2, and train -> eval -> files end to end."""
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from icl_sim.cli import cli
from icl_sim.tasks import TASKS

TINY = ["--dim", "3", "--points", "6", "--steps", "10", "--batch-size", "8", "--device", "cpu", "--no-progress",
        "--log-every", "5"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("args, named", [
    (["train", "--task", "nope", "--out", "x"], "task"),
    (["train", "--dim", "-3", "--out", "x"], "--dim"),
    (["train", "--points", "0", "--out", "x"], "--points"),
    (["train", "--task-param", "bogus=1", "--out", "x"], "bogus"),
    (["train", "--task-param", "noise=-1", "--out", "x"], "noise"),
    (["train", "--task-param", "noise", "--out", "x"], "KEY=VALUE"),
    (["train", "--model", "rnn", "--out", "x"], "--model"),
    (["train", "--model-param", "size=huge", "--model", "gpt", "--out", "x"], "size"),
    (["train", "--curriculum-points", "3:1", "--out", "x"], "curriculum"),
    (["eval", "does-not-exist"], "RUN_DIR"),
    (["repro", "run", "no-such-paper"], "name"),
    (["repro", "run", "von-oswald-2023", "--scale", "huge"], "--scale"),
])
def test_bad_input_is_one_line_with_exit_2(args, named, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], result.stderr
    assert not (tmp_path / "x").exists()  # nothing written for a rejected command


def test_console_script_reports_one_line():
    result = subprocess.run([sys.executable, "-c", "from icl_sim.cli import main; main()", "train", "--task", "nope",
                             "--out", "x"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"Error: task must be one of {', '.join(TASKS)}; got 'nope'"]


def test_tasks_lists_every_parameter():
    result = invoke("tasks")
    assert result.exit_code == 0
    for word in ("linear-regression", "noise", "prior_scale", "condition_number", "pool_size", "sparsity"):
        assert word in result.output


def test_train_eval_resume_round_trip(tmp_path):
    run = tmp_path / "run"
    assert invoke("train", *TINY, "--task-param", "noise=0.1", "--out", str(run)).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    assert config["task_params"] == {"dim": 3, "points": 6, "noise": 0.1} and config["loss_on"] == "last"

    result = invoke("eval", str(run), "--num-prompts", "64", "--device", "cpu")
    assert result.exit_code == 0, result.output
    records = json.loads((run / "eval" / "results.json").read_text())
    predictors = {r["predictor"] for r in records}
    assert predictors == {"lsa (trained)", "OLS", "Averaging", "3-NN", "Zero", "Ridge (Bayes)"}
    assert (run / "eval" / "results.csv").read_text().startswith("predictor,position,metric,mean")
    assert (run / "eval" / "error_curve.png").stat().st_size > 1000

    again = invoke("train", *TINY, "--out", str(run))
    assert again.exit_code == 2 and "already holds a run" in again.stderr
    bad_resume = invoke("train", "--resume", "--lr", "0.5", "--out", str(run))
    assert bad_resume.exit_code == 2 and "--lr" in bad_resume.stderr
    extended = invoke("train", "--resume", "--steps", "15", "--out", str(run), "--no-progress")
    assert extended.exit_code == 0, extended.output
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [5, 10, 15]


def test_gpt_defaults_to_loss_on_all_positions(tmp_path):
    run = tmp_path / "gpt"
    assert invoke("train", *TINY, "--model", "gpt", "--layers", "1", "--model-param", "n_embd=16",
                  "--out", str(run)).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    assert config["loss_on"] == "all" and config["model_params"] == {"n_embd": 16, "n_layer": 1}


def test_repro_list_names_the_papers():
    result = invoke("repro", "list")
    assert result.exit_code == 0 and "von-oswald-2023" in result.output
