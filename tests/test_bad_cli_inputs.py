"""Bad command lines: each ends in exactly one line ``Error: ...`` on stderr with its exit status, and leaves
the disk as it was (a run directory's files byte for byte, no new files or directories)."""
import errno
import hashlib
import json
import os
import pickle
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.run_io import CHECKPOINT_FILE, CHECKSUM_FILE, CONFIG_FILE
from icl_sim.sweep import SweepFailed
from icl_sim.training import TrainingDiverged, train

TINY = ["--dim", "3", "--points", "6", "--steps", "4", "--batch-size", "8", "--device", "cpu", "--no-progress"]


def _sha256_record(run: Path) -> None:
    """Record the current checkpoint's digest, as icl-sim would have (to test what lies past the checksum)."""
    (run / CHECKSUM_FILE).write_text(hashlib.sha256((run / CHECKPOINT_FILE).read_bytes()).hexdigest() + "\n")


def _unsafe_checkpoint(run: Path) -> None:
    with open(run / CHECKPOINT_FILE, "wb") as handle:
        pickle.dump({"step": 1, "model": os.system}, handle)
    _sha256_record(run)


def _edit_config(run: Path, **changes) -> None:
    config = json.loads((run / CONFIG_FILE).read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    (run / CONFIG_FILE).write_text(json.dumps(config))


def _fractional_step(run: Path) -> None:
    state = torch.load(run / CHECKPOINT_FILE, weights_only=True)
    torch.save({**state, "step": 50.5}, run / CHECKPOINT_FILE)
    _sha256_record(run)


#: corruptions of a copy of a good run, by name
CORRUPTIONS = {
    "empty": lambda run: (run / CHECKPOINT_FILE).write_bytes(b""),
    "truncated": lambda run: (run / CHECKPOINT_FILE).write_bytes((run / CHECKPOINT_FILE).read_bytes()[:300]),
    "foreign": lambda run: (run / CHECKPOINT_FILE).write_text("hello\n"),
    "empty-recorded": lambda run: ((run / CHECKPOINT_FILE).write_bytes(b""), _sha256_record(run)),
    "foreign-recorded": lambda run: ((run / CHECKPOINT_FILE).write_text("hello\n"), _sha256_record(run)),
    "unsafe": _unsafe_checkpoint,
    "unknown-key": lambda run: _edit_config(run, colour="blue"),
    "changed-dim": lambda run: _edit_config(run, task_params={"dim": 4}),
    "no-config": lambda run: (run / CONFIG_FILE).unlink(),
    "fractional-step": _fractional_step,
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A workspace: a tiny trained run, its corrupted copies, config files and a plain file."""
    root = tmp_path_factory.mktemp("workspace")
    train(TrainConfig(task_params={"dim": 3, "points": 6}, model_params={"layers": 2}, steps=4, batch_size=8,
                      device="cpu", log_every=2), root / "run", progress=False)
    for name, corrupt in CORRUPTIONS.items():
        shutil.copytree(root / "run", root / name)
        corrupt(root / name)
    train(TrainConfig(task="boolean", task_params={"n": 3, "points": 6}, steps=1, batch_size=8, device="cpu"),
          root / "boolean-run", progress=False)
    (root / "not-a-run").mkdir()
    (root / "afile").write_text("a file\n")
    (root / "bad.yaml").write_text("lr: [unclosed\n")
    (root / "unknown.yaml").write_text("colour: blue\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "conf.txt").write_text("lr: 1\n")
    return root


@pytest.fixture
def workspace(template, tmp_path, monkeypatch):
    root = tmp_path / "ws"
    shutil.copytree(template, root)
    monkeypatch.chdir(root)
    return root


def snapshot(root: Path) -> dict:
    """Every file's bytes and every directory under ``root``."""
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None for path in root.rglob("*")}


TRAIN = [
    (["train", "--task", "nope", "--out", "x"], "task"),
    (["train", "--dim", "-3", "--out", "x"], "--dim"),
    (["train", "--points", "0", "--out", "x"], "--points"),
    (["train", "--task-param", "bogus=1", "--out", "x"], "bogus"),
    (["train", "--task-param", "noise=-1", "--out", "x"], "noise"),
    (["train", "--task-param", "noise", "--out", "x"], "KEY=VALUE"),
    (["train", "--model", "rnn", "--out", "x"], "--model"),
    (["train", "--model", "gpt", "--model-param", "size=huge", "--out", "x"], "size"),
    (["train", "--curriculum-points", "3:1", "--out", "x"], "curriculum"),
    (["train", "--lr", "0", "--out", "x"], "--lr"),
    (["train", "--betas", "1", "0.9", "--out", "x"], "betas"),
    (["train", "--dim", "3", "--task-param", "dim=4", "--out", "x"], "dim"),
    (["train", "--points", "6", "--task-param", "points=7", "--out", "x"], "points"),
    (["train", "--layers", "2", "--model-param", "layers=3", "--out", "x"], "layers"),
    (["train", "--model", "looped", "--layers", "3", "--loops", "2", "--out", "x"], "loops"),
    (["train", "--model", "looped", "--loop-window", "1", "--model-param", "loop_window=2", "--out", "x"],
     "loop_window"),
    (["train", "--loops", "2", "--out", "x"], "looped"),
    (["train", "--task", "graph-connectivity", "--points", "5", "--out", "x"], "points does not apply to task"),
    (["train", *TINY, "--out", ""], "--out"),
    (["train", *TINY, "--out", "afile/x"], "afile"),
    (["train", *TINY, "--out", "run"], "already holds a run"),
    (["train", "--resume", "--lr", "0.5", "--out", "run"], "--lr"),
    (["train", "--config", "missing.yaml", "--out", "x"], "missing.yaml"),
    (["train", "--config", "bad.yaml", "--out", "x"], "bad.yaml"),
    (["train", "--config", "unknown.yaml", "--out", "x"], "colour"),
    (["train", "--config", "list.yaml", "--out", "x"], "list.yaml"),
    (["train", "--config", "conf.txt", "--out", "x"], "conf.txt"),
    (["train", "--steps", "4", "--device", "cpu", "--no-progress", "--batch-size", "100000000", "--dim", "100",
      "--points", "100", "--out", "big/run"], "memory"),
]
RUNS = [
    (["eval", "does-not-exist"], "RUN_DIR"),
    (["eval", "not-a-run"], "not-a-run"),
    (["eval", "afile"], "afile"),
    (["eval", "run", "--num-prompts", "100000000"], "num_prompts"),
    *[(["eval", name, "--num-prompts", "8", "--device", "cpu"], name) for name in CORRUPTIONS],
    (["probe", "run", "--algorithm", "nope", "--device", "cpu"], "algorithm"),
    (["probe", "run", "--algorithm", "power-method", "--device", "cpu"], "power-method"),
    (["probe", "run", "--algorithm", "newton", "--step-params", "per-step", "--device", "cpu"], "per-step"),
    (["probe", "truncated", "--algorithm", "gd", "--device", "cpu"], "truncated"),
    (["probe-latent", "run", "--latent", "nope", "--num-fit", "8", "--num-prompts", "8", "--device", "cpu"], "nope"),
    (["probe-latent", "run", "--latent", "w", "--ridge", "-1"], "--ridge"),
    (["probe-latent", "unsafe", "--latent", "w", "--device", "cpu"], "unsafe"),
    (["compare-weights", "run", "--lr", "0"], "--lr"),
    (["compare-weights", "run", "--lr", "-1"], "--lr"),
    (["compare-weights", "run", "--preconditioner", "best"], "--preconditioner"),
    (["compare-weights", "changed-dim"], "changed-dim"),
    (["compare-weights", "boolean-run"], "task 'boolean' has no algorithm"),
    (["eval", "fractional-step"], "its 'step' is 50.5, not int"),
]
OTHERS = [
    (["repro", "run", "no-such-paper", "--out", "x"], "name"),
    (["repro", "run", "von-oswald-2023", "--scale", "huge"], "--scale"),
    (["repro", "run"], "--all"),
    (["repro", "run", "von-oswald-2023", "--all"], "--all"),
    (["repro", "run", "von-oswald-2023", "--out", ""], "--out"),
    (["repro", "run", "von-oswald-2023", "--out", "afile/x"], "afile"),
    (["theory", "show", "nope"], "claim"),
    (["theory", "verify", "nope"], "claim"),
    (["--threads", "0", "tasks"], "--threads"),
    (["nonsense"], "nonsense"),
]

#: an option given twice, or a key twice in a repeatable KEY=VALUE option (every option: tests/test_cli.py)
REPEATED = [
    (["train", "--lr", "1e-3", "--lr", "2e-3", "--out", "x"], "--lr given twice (1e-3 and 2e-3); give it once"),
    (["train", *TINY, "--steps", "8", "--out", "x"], "--steps given twice (4 and 8)"),
    (["train", "--betas", "0.9", "0.98", "--betas", "0.9", "0.999", "--out", "x"],
     "--betas given twice (0.9 0.98 and 0.9 0.999)"),
    (["train", "--amp", "--no-amp", "--out", "x"], "--amp/--no-amp given twice (--amp and --no-amp)"),
    (["train", "--out", "x", "--out", "y"], "--out given twice (x and y)"),
    (["train", "--task-param", "dim=3", "--task-param", "dim=4", "--out", "x"],
     "parameter dim given twice (dim=3 and dim=4); give it once"),
    (["train", "--task-param", "x-distribution=normal", "--task-param", "x_distribution=uniform", "--out", "x"],
     "parameter x_distribution given twice"),
    (["train", "--model-param", "layers=2", "--model-param", "layers=3", "--out", "x"], "parameter layers given twice"),
    (["eval", "run", "--num-prompts", "8", "--num-prompts", "16"], "--num-prompts given twice (8 and 16)"),
    (["probe-latent", "run", "--latent", "w", "--target", "xty"], "--latent/--target given twice (w and xty)"),
    (["repro", "run", "von-oswald-2023", "--scale", "smoke", "--scale", "quick"], "--scale given twice"),
    (["sweep", "run", "conf.txt", "--executor", "local", "--executor", "slurm"], "--executor given twice"),
    (["theory", "verify", "--seed", "1", "--seed", "2", "--seed", "3"], "--seed given 3 times (1, 2 and 3)"),
    (["--threads", "1", "--threads", "2", "tasks"], "--threads given twice (1 and 2)"),
]


@pytest.mark.parametrize("args, named", TRAIN + RUNS + OTHERS + REPEATED, ids=lambda value: " ".join(value)
                         if isinstance(value, list) else None)
def test_one_line_exit_2_nothing_written(args, named, workspace):
    before = snapshot(workspace)
    with warnings.catch_warnings(record=True) as caught:  # a warning would be a line more on a user's stderr
        warnings.simplefilter("always")
        result = CliRunner().invoke(cli, args)
    lines = result.stderr.strip().splitlines() + [str(warning.message) for warning in caught]
    assert result.exit_code == 2, (result.output, result.exception)
    assert len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], result.stderr
    assert snapshot(workspace) == before


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "config.json")


def _no_permission(self, *args, **kwargs):
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))


def raising(error: BaseException):
    """A stand-in for a library function that fails with ``error``."""
    def fail(*args, **kwargs):
        raise error
    return fail


@pytest.mark.parametrize("target, replacement, named", [
    ((os, "replace"), _no_space, "No space left"),
    ((Path, "mkdir"), _no_permission, "Permission denied"),
    ((torch, "randn"), raising(MemoryError()), "out of memory"),
    ((torch, "randn"), raising(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                                            "40000000000 bytes. Error code 12")), "40 GB"),
    ((torch, "randn"), raising(EOFError("Ran out of input")), "ended early"),  # click would print "Aborted."
    ((torch, "randn"), raising(pickle.UnpicklingError("invalid load key")), "not written by icl-sim"),
])
def test_disk_memory_and_file_failures_are_one_line(target, replacement, named, workspace, monkeypatch):
    before = snapshot(workspace)
    monkeypatch.setattr(*target, replacement)
    result = CliRunner().invoke(cli, ["train", *TINY, "--out", "new/run"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], \
        (result.stderr, result.exception)
    assert snapshot(workspace) == before  # no empty new/ nor new/run left behind


def test_a_bug_keeps_its_traceback(workspace, monkeypatch):
    monkeypatch.setattr("icl_sim.training.train", lambda *args, **kwargs: {}["missing"])
    result = CliRunner().invoke(cli, ["train", *TINY, "--out", "new"])
    assert isinstance(result.exception, KeyError)


DIVERGED = TrainingDiverged("training loss became nan before step 3; lower --lr or set --grad-clip")
JOBS_DIED = SweepFailed("1 of 2 runs failed, e.g. lr=0.1: killed (job logs in runs/jobs); run again to resume them")


@pytest.mark.parametrize("command, failing, error", [
    (["train", *TINY, "--out", "new"], "icl_sim.training.train", DIVERGED),
    (["sweep", "run", "spec.yaml"], "icl_sim.sweep.run_sweep", JOBS_DIED),
    (["repro", "run", "wu-2023", "--scale", "full", "--out", "repro"], "icl_sim.paper_repro.run_reproduction",
     JOBS_DIED),
])
def test_a_failed_run_is_one_line_with_exit_status_1(command, failing, error, workspace, monkeypatch):
    """A run that diverged or a sweep whose jobs died (``RunFailed``): one line, status 1, not a traceback."""
    (workspace / "spec.yaml").write_text("base: {task: linear-regression}\ngrid: {lr: [0.001, 0.1]}\n")
    monkeypatch.setattr(failing, raising(error))
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 1 and result.stderr.splitlines() == [f"Error: {error}"], \
        (result.stderr, result.exception)


def test_a_diverging_train_keeps_its_directory_and_exits_1(workspace):
    result = CliRunner().invoke(cli, ["train", "--dim", "3", "--points", "6", "--batch-size", "16", "--layers", "3",
                                      "--lr", "1e4", "--lr-schedule", "constant", "--warmup-steps", "0",
                                      "--steps", "200", "--log-every", "1", "--device", "cpu", "--no-progress",
                                      "--out", "diverged"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: training loss became "), \
        (result.stderr, result.exception)
    assert "lower --lr" in lines[0] and (workspace / "diverged" / CONFIG_FILE).is_file()
