"""Progress on stderr: without a terminal (a log, a SLURM job) status lines with the step, the loss and the time
left; on a terminal a bar with the loss; nothing with --no-progress."""
import io
import re

import pytest
from click.testing import CliRunner

from icl_sim import progress
from icl_sim.cli import cli
from icl_sim.progress import Progress

TINY = ["--dim", "3", "--points", "6", "--batch-size", "8", "--device", "cpu", "--log-every", "2"]
STEP_LINE = re.compile(r"^train: step (\d+)/20  loss \S+  \d+ s elapsed(, ~\d+ s left)?$")


def _train(tmp_path, *options):
    return CliRunner().invoke(cli, ["train", *TINY, "--steps", "20", "--out", str(tmp_path / "run"), *options])


def test_train_without_a_terminal_prints_a_line_every_tenth_of_the_steps(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "EVERY_SECONDS", 0.0)
    result = _train(tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert all(STEP_LINE.match(line) for line in lines), lines
    assert [int(STEP_LINE.match(line)[1]) for line in lines] == list(range(2, 21, 2))
    assert "s left" in lines[0] and "s left" not in lines[-1]


def test_lines_are_at_least_the_interval_apart_and_the_end_is_always_shown(tmp_path):
    result = _train(tmp_path)  # a run of well under EVERY_SECONDS: only the last line
    assert result.exit_code == 0, result.output
    assert len(result.stderr.splitlines()) == 1 and STEP_LINE.match(result.stderr.strip())
    assert result.stderr.startswith("train: step 20/20")


def test_no_progress_prints_nothing(tmp_path):
    result = _train(tmp_path, "--no-progress")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_with_the_loss(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    shown = Progress(4, desc="train")
    for step in range(1, 5):
        shown.advance(step, "0.5" if step == 2 else None)
    shown.close()
    assert "\r" in terminal.getvalue() and "4/4" in terminal.getvalue() and "loss 0.5" in terminal.getvalue()
    assert "s elapsed" not in terminal.getvalue()


@pytest.mark.parametrize("options, lines", [([], 3), (["--no-progress"], 0)])
def test_sweep_run_reports_each_run_as_it_ends(options, lines, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("base: {task_params: {dim: 3, points: 6}, steps: 4, batch_size: 8, device: cpu, log_every: 2}\n"
                    "grid: {seed: [0, 1, 2]}\n")
    result = CliRunner().invoke(cli, ["sweep", "run", str(spec), "--out", str(tmp_path / "sweep"),
                                      "--executor", "debug", *options])
    assert result.exit_code == 0, result.output
    reported = [line for line in result.stderr.splitlines() if line.startswith("sweep:")]
    assert len(reported) == lines
    for number, line in enumerate(reported, 1):
        assert re.match(rf"^sweep: run {number}/3 done \([0-9a-f]{{12}}\)  loss \S+  \d+ s elapsed", line), line
