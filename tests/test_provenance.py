"""Provenance: every session of work in a run, reproduction, sweep or gallery directory is recorded, with the
software, device, command, seeds and how it ended."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from icl_sim.provenance import ENVIRONMENT_FILE, recorded_session
from icl_sim.training import train
from test_training import tiny_config

ROOT = Path(__file__).resolve().parent.parent


def sessions(directory) -> list[dict]:
    return json.loads((Path(directory) / ENVIRONMENT_FILE).read_text())["sessions"]


def test_a_run_records_each_training_session_with_its_environment(tmp_path):
    train(tiny_config(steps=10), tmp_path / "run", progress=False)
    train(tiny_config(steps=20), tmp_path / "run", resume=True, progress=False)
    first, second = sessions(tmp_path / "run")
    for session in (first, second):
        assert session["outcome"] == "completed" and session["ended"] >= session["started"]
        assert session["torch"] == torch.__version__ and session["numpy"] == np.__version__
        assert session["device"] == "cpu" and session["seeds"] == [0] and session["threads"] >= 1
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # in a checkout: its commit, and whether the tree had uncommitted changes
        assert first["git"]["commit"] == head.stdout.strip() and isinstance(first["git"]["dirty"], bool)


def test_a_failed_or_interrupted_session_says_so(tmp_path):
    with pytest.raises(ValueError), recorded_session(tmp_path):
        raise ValueError("the loss diverged\nat step 7")
    with pytest.raises(KeyboardInterrupt), recorded_session(tmp_path, seeds=range(3, 5)):
        raise KeyboardInterrupt
    failed, interrupted = sessions(tmp_path)
    assert failed["outcome"] == "failed: ValueError: the loss diverged"
    assert interrupted["outcome"] == "interrupted" and interrupted["seeds"] == [3, 4]


def test_a_refused_resume_records_nothing(tmp_path):
    train(tiny_config(steps=10), tmp_path / "run", progress=False)
    before = (tmp_path / "run" / ENVIRONMENT_FILE).read_bytes()
    with pytest.raises(ValueError):
        train(tiny_config(steps=10), tmp_path / "run", resume=True, progress=False)
    assert (tmp_path / "run" / ENVIRONMENT_FILE).read_bytes() == before
