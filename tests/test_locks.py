"""Directory locks: a second writer of a live run is refused naming the holder, a dead holder's lock is taken over."""
import json
import os
import subprocess
import sys
import time

import pytest

from icl_sim.config import TrainConfig
from icl_sim.locks import LOCK_FILE, DirectoryInUse, directory_lock, lock_holder
from icl_sim.run_io import METRICS_FILE
from icl_sim.sweep import execute_runs
from icl_sim.executors import Executor
from icl_sim.training import train

HOLD = "import sys, time; from icl_sim.locks import directory_lock\nwith directory_lock(sys.argv[1]):\n" \
       "    print('held', flush=True); time.sleep(60)\n"


@pytest.fixture
def holder(tmp_path):
    """A live process holding the lock of ``tmp_path / 'run'``; killed at the end."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield process
    process.kill()
    process.wait()


def _config(steps=4) -> TrainConfig:
    return TrainConfig(task="linear-regression", task_params={"dim": 2, "points": 3}, model="lsa",
                       model_params={"layers": 1}, steps=steps, batch_size=4, log_every=2, checkpoint_every=2)


def test_second_writer_is_refused_naming_the_holder(tmp_path, holder):
    run_dir = tmp_path / "run"
    assert lock_holder(run_dir).startswith(f"pid {holder.pid} on ")
    with pytest.raises(DirectoryInUse, match=f"run directory .* is in use by pid {holder.pid} on "):
        with directory_lock(run_dir):
            pass
    with pytest.raises(DirectoryInUse, match=f"pid {holder.pid}"):
        train(_config(), run_dir, progress=False)
    assert sorted(path.name for path in run_dir.iterdir()) == [LOCK_FILE]  # nothing written


def test_sweep_never_starts_a_second_job_on_a_live_run(tmp_path, holder, capsys):
    execute_runs({"live": (_config(), tmp_path / "run")}, Executor("debug"), tmp_path)
    assert f"run live is training in another process (pid {holder.pid}" in capsys.readouterr().err
    assert not (tmp_path / "run" / METRICS_FILE).exists()


def test_a_dead_holders_lock_is_taken_over_with_a_warning(tmp_path, capsys):
    run_dir = tmp_path / "run"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    run_dir.mkdir()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": "node-7", "since": "then"}))
    assert lock_holder(run_dir) is None  # the file is there, its lock is free
    train(_config(), run_dir, progress=False)
    assert f"took over the lock of run directory {str(run_dir)!r} from pid {int(dead.stdout)} on node-7" in \
        capsys.readouterr().err
    assert not (run_dir / LOCK_FILE).exists()  # released at the end
    assert [record["step"] for record in map(json.loads, (run_dir / METRICS_FILE).read_text().splitlines())] == [2, 4]


def test_a_killed_holder_releases_the_lock(tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while lock_holder(run_dir) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock_holder(run_dir) is None
    with directory_lock(run_dir):
        assert lock_holder(run_dir).startswith(f"pid {os.getpid()} on ")
