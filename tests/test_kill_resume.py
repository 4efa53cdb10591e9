"""``kill -9`` a training process at random points, once and twice, and resume it: the same run, bit for bit.

Each training process is a fresh interpreter calling :func:`icl_sim.training.train` on one thread; it is
killed (SIGKILL: no handler runs) once it has logged a randomly drawn step, plus a random delay, so
kills land before the first checkpoint, between records, around checkpoints written by step count and
by time.  The resumed run must end with the uninterrupted run's weights, optimiser and scheduler
state (every tensor ``torch.equal``), ``metrics.jsonl`` and ``config.json`` byte for byte.
"""
import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.run_io import CONFIG_FILE, METRICS_FILE, load_checkpoint
from icl_sim.training import train

pytestmark = pytest.mark.slow

#: log every 7 steps, checkpoint every 40 steps and every 0.06 s: checkpoints fall inside logging windows
CONFIG = TrainConfig(task_params={"dim": 3, "points": 6}, model="lsa", model_params={"layers": 2}, steps=200,
                     batch_size=64, lr=1e-2, lr_schedule="cosine", warmup_steps=20, device="cpu", log_every=7,
                     checkpoint_every=40, checkpoint_minutes=0.001)

#: kills are drawn before this step, so that the process is still training when the signal lands
LAST_KILL_STEP = 150

TRAIN_SCRIPT = """
import sys
import torch
from icl_sim.config import TrainConfig
from icl_sim.training import train
torch.set_num_threads(1)
train(TrainConfig.from_json(sys.argv[1]), sys.argv[2], resume=sys.argv[3] == "resume", progress=False)
"""


@contextlib.contextmanager
def one_thread():
    """Train in this process on one thread, as the killed processes do, so that their arithmetic is the same."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    with one_thread():
        train(CONFIG, run_dir, progress=False)
    return run_dir


def logged_step(run_dir) -> int:
    """The last step in ``metrics.jsonl`` (0 if none), read while another process may be appending to it."""
    path = run_dir / METRICS_FILE
    steps = re.findall(r'"step": (\d+)', path.read_text()) if path.is_file() else []
    return max(map(int, steps), default=0)


def train_and_kill(run_dir, rng: random.Random, *, resume: bool, after_step: int) -> None:
    """Start training in a new process; SIGKILL it once it has logged ``after_step`` (0: once it has begun)."""
    process = subprocess.Popen([sys.executable, "-c", TRAIN_SCRIPT, CONFIG.to_json(), str(run_dir),
                                "resume" if resume else "new"], env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        while process.poll() is None and not ((run_dir / CONFIG_FILE).is_file() and logged_step(run_dir) >= after_step):
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.01))
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL, "the training process ended before it was killed"


def resume_to_the_end(run_dir) -> None:
    with one_thread():
        train(CONFIG, run_dir, resume=True, progress=False)


def assert_same_state(first, second, where="checkpoint") -> None:
    """Two checkpoint states are equal: every tensor bit for bit, every other value exactly."""
    assert type(first) is type(second), where
    if isinstance(first, torch.Tensor):
        assert first.dtype == second.dtype and torch.equal(first, second), where
    elif isinstance(first, dict):
        assert first.keys() == second.keys(), where
        for key in first:
            assert_same_state(first[key], second[key], f"{where}[{key!r}]")
    elif isinstance(first, (list, tuple)):
        assert len(first) == len(second), where
        for index, (a, b) in enumerate(zip(first, second)):
            assert_same_state(a, b, f"{where}[{index}]")
    else:
        assert first == second, where


def assert_same_run(run_dir, reference) -> None:
    assert_same_state(load_checkpoint(run_dir), load_checkpoint(reference))
    for name in (METRICS_FILE, CONFIG_FILE):
        assert (run_dir / name).read_bytes() == (reference / name).read_bytes(), name


def test_killed_once_then_resumed_is_the_uninterrupted_run(tmp_path, uninterrupted):
    rng = random.Random(0)
    run_dir = tmp_path / "run"
    train_and_kill(run_dir, rng, resume=False, after_step=rng.randrange(1, LAST_KILL_STEP))
    resume_to_the_end(run_dir)
    assert_same_run(run_dir, uninterrupted)


def test_killed_before_its_first_checkpoint_then_again_then_resumed_is_the_uninterrupted_run(tmp_path, uninterrupted):
    """The first kill lands as soon as the run has begun: its directory holds a config and no checkpoint."""
    rng = random.Random(1)
    run_dir = tmp_path / "run"
    train_and_kill(run_dir, rng, resume=False, after_step=0)
    train_and_kill(run_dir, rng, resume=True, after_step=rng.randrange(logged_step(run_dir) + 1, LAST_KILL_STEP))
    resume_to_the_end(run_dir)
    assert_same_run(run_dir, uninterrupted)
