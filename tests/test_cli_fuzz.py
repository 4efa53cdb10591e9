"""Random command lines (hypothesis) for ``icl-sim train``, ``eval`` and ``probe``: sizes, options and damaged run
files.  Each ends in exit 0 with valid outputs, or in exactly one ``Error:`` line with exit 1 or 2; never a
traceback; a failed command changes no file that was there before; no command leaves a file half-written.

Sizes are tiny, so that an example takes about a second; the examples are derandomized (the "ci" profile of tests/conftest.py), so CI is reproducible.
"""
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.run_io import CHECKPOINT_FILE, CONFIG_FILE, METRICS_FILE, load_run, read_metrics
from icl_sim.training import train

FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
RUN_FILES = (METRICS_FILE, CHECKPOINT_FILE, CONFIG_FILE)
#: an integer beyond every option's range
HUGE = str(10 ** 30)
#: an option's value that is out of range or not a number
BAD_VALUES = st.sampled_from(["0", "-1", "1.5", "nan", "inf", "x", HUGE])


def sizes(low: int, high: int):
    """An integer option's text in ``low..high``: tiny, valid."""
    return st.integers(low, high).map(str)


def with_one_broken(options: dict[str, str], broken) -> list[str]:
    """``options`` (flag -> value) as arguments, the value of ``broken`` ((flag, value) or None) replaced."""
    options = {**options, **dict([broken] if broken else [])}
    return [text for flag, value in options.items() for text in (flag, value)]


#: how a run file is damaged: (file, truncate | garble | delete, where (a fraction of its length), the bytes
#: garbled in, whether its sha256 record is rewritten to match, as a user's edit would not)
DAMAGES = st.one_of(st.none(), st.tuples(st.sampled_from(RUN_FILES), st.sampled_from(["truncate", "garble", "delete"]),
                                         st.floats(0, 1), st.binary(min_size=1, max_size=8), st.booleans()))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A tiny trained run: 3 dimensions, 6 points, 2 layers, 4 steps logged every 2."""
    run = tmp_path_factory.mktemp("fuzz") / "run"
    train(TrainConfig(task_params={"dim": 3, "points": 6}, model_params={"layers": 2}, steps=4, batch_size=8,
                      device="cpu", log_every=2), run, progress=False)
    return run


def damaged_copy(template: Path, workspace: Path, damage) -> Path:
    """A copy of ``template`` in ``workspace`` with one ``damage`` (see DAMAGES) done to it."""
    run = workspace / "run"
    shutil.copytree(template, run)
    if damage is not None:
        name, how, where, junk, recorded = damage
        path = run / name
        data, cut = path.read_bytes(), int(where * path.stat().st_size)
        if how == "delete":
            path.unlink()
        else:
            path.write_bytes(data[:cut] if how == "truncate" else data[:cut] + junk + data[cut + len(junk):])
        checksum = run / f"{name}.sha256"
        if recorded and path.is_file() and checksum.is_file():
            checksum.write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")
    return run


def snapshot(root: Path) -> dict:
    """Every file's bytes and every directory under ``root``."""
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None for path in root.rglob("*")}


def invoke(args: list[str], workspace: Path):
    """Run ``icl-sim ARGS``; check what every command must do, and that a failed one changed nothing under
    ``workspace``; returns the result and the snapshot taken before."""
    before = snapshot(workspace)
    result = CliRunner().invoke(cli, args)
    event(f"exit {result.exit_code}")  # --hypothesis-show-statistics: how many examples succeed
    shown = f"icl-sim {' '.join(args)}\n{result.output}\n{result.exception!r}"
    assert "Traceback" not in result.output, shown
    assert result.exception is None or isinstance(result.exception, SystemExit), shown
    assert not list(workspace.rglob(".*.tmp")), shown  # no write was left half-done
    if result.exit_code != 0:
        assert result.exit_code in (1, 2), shown
        lines = [line for line in result.stderr.splitlines() if not line.startswith("Warning: ")]
        assert len(lines) == 1 and lines[0].startswith("Error: "), shown
        assert snapshot(workspace) == before, shown
    return result, before


def unchanged_run_files(run: Path, before: dict) -> bool:
    return all(before.get(f"run/{path.name}") == path.read_bytes() for path in run.iterdir() if path.is_file())


TRAIN_SIZES = ("--dim", "--points", "--layers", "--steps", "--batch-size", "--log-every", "--lr")


@FUZZ
@given(dim=sizes(1, 4), points=sizes(1, 8), layers=sizes(1, 3), steps=sizes(1, 5), batch=sizes(1, 8),
       log_every=sizes(1, 3), model=st.sampled_from(["lsa", "softmax-attention", "deep-linear", "nope"]),
       lr=st.sampled_from(["1e-3", "0.05"]), broken=st.none() | st.tuples(st.sampled_from(TRAIN_SIZES), BAD_VALUES),
       resume=st.booleans(), damage=DAMAGES, progress=st.sampled_from([[], ["--progress"], ["--no-progress"]]))
def test_train(template, dim, points, layers, steps, batch, log_every, model, lr, broken, resume, damage, progress):
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        run = damaged_copy(template, workspace, damage)
        out = run if resume else workspace / "new" / "run"
        options = {"--steps": steps} if resume else {
            "--dim": dim, "--points": points, "--steps": steps, "--batch-size": batch, "--log-every": log_every,
            "--model": model, "--lr": lr, "--layers": layers}
        arguments = with_one_broken(options, broken)
        result, _ = invoke(["train", *(["--resume"] if resume else []), *arguments, "--device", "cpu", *progress,
                            "--out", str(out)], workspace)
        if result.exit_code == 0:
            config = json.loads((out / CONFIG_FILE).read_text())
            assert config["steps"] == int(dict(zip(arguments[::2], arguments[1::2]))["--steps"])
            assert read_metrics(out)[-1]["step"] <= config["steps"]
            load_run(out)


@FUZZ
@given(num_prompts=sizes(2, 16), seed=sizes(0, 3),
       broken=st.none() | st.tuples(st.sampled_from(["--num-prompts", "--seed"]), BAD_VALUES), damage=DAMAGES)
def test_eval(template, num_prompts, seed, broken, damage):
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        run = damaged_copy(template, workspace, damage)
        options = with_one_broken({"--num-prompts": num_prompts, "--seed": seed}, broken)
        result, before = invoke(["eval", str(run), *options, "--device", "cpu", "--no-progress"], workspace)
        if result.exit_code == 0:
            assert unchanged_run_files(run, before)
            assert json.loads((run / "eval" / "results.json").read_text())
            assert (run / "eval" / "results.csv").read_text().count("\n") > 1
            assert (run / "eval" / "error_curve.png").stat().st_size > 0


@FUZZ
@given(algorithm=st.sampled_from(["gd", "newton", "ridge", "preconditioned-gd", "nope"]), steps=sizes(1, 3),
       num_prompts=sizes(2, 16),
       broken=st.none() | st.tuples(st.sampled_from(["--steps", "--num-prompts"]), BAD_VALUES),
       per_step=st.booleans(), fitted=st.booleans(), damage=DAMAGES)
def test_probe(template, algorithm, steps, num_prompts, broken, per_step, fitted, damage):
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        run = damaged_copy(template, workspace, damage)
        options = with_one_broken({"--steps": steps, "--num-prompts": num_prompts}, broken)
        choices = [*(["--step-params", "per-step"] if per_step else []), *(["--readout", "fitted"] if fitted else [])]
        result, before = invoke(["probe", str(run), "--algorithm", algorithm, *options, *choices, "--device", "cpu",
                                 "--json", "--no-progress"], workspace)
        if result.exit_code == 0:
            assert unchanged_run_files(run, before)
            printed = json.loads(result.stdout)
            assert printed["records"] and printed["best"]
            written = [json.loads(path.read_text()) for path in (run / "probe").glob("*.json")]
            assert written and all(written)
