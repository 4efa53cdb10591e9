"""Sweeps end to end through submitit's local executor: runs by config hash, skipped when done, resumed when killed."""
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import icl_sim.cli as cli_module
from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.paper_repro import von_oswald_2023
from icl_sim.paper_repro.runner import run_reproduction
from icl_sim.run_io import load_checkpoint, load_config, read_metrics, trained_steps
from icl_sim.executors import Executor
from icl_sim.threads import allocated_cores
from icl_sim.sweep import JOBS_FILE, RemainingTraining, SweepFailed, expand_grid, read_spec, run_sweep, sweep_status
from icl_sim.training import train
from tiny_runs import Stop, assert_identical, stop_at

BASE = {"dim": 2, "points": 5, "batch_size": 8, "device": "cpu", "log_every": 5, "checkpoint_every": 10}


def write_spec(path: Path, base: dict, grid: dict) -> Path:
    dump = json.dumps if path.suffix == ".json" else yaml.safe_dump
    path.write_text(dump({"base": base, "grid": grid}))
    return path


def invoke(*args):
    return CliRunner().invoke(cli, ["--threads", "1", *args])


@pytest.mark.slow
def test_a_grid_runs_as_jobs_and_a_killed_worker_resumes_bit_for_bit(tmp_path):
    """A 2 × 2 grid through the local executor; one worker is killed (SIGKILL) mid-run: its run is failed, the
    next `sweep run` resumes it alone and it ends equal to an uninterrupted run; a third skips every run."""
    spec = write_spec(tmp_path / "grid.yaml", {**BASE, "steps": 400}, {"lr": [0.01, 0.05], "seed": [0, 1]})
    root = tmp_path / "sweep"
    failure = []
    worker = threading.Thread(target=lambda: failure.append(pytest.raises(SweepFailed, run_sweep, read_spec(spec),
                                                                          root, threads=1)))
    worker.start()
    killed = wait_for(lambda: [path for path in (root / "runs").glob("*")
                               if (path / "checkpoint.pt").exists() and (root / JOBS_FILE).exists()])
    assert {row["run"]: row["state"] for row in sweep_status(root)}[killed.name] == "running"
    controller = json.loads((root / JOBS_FILE).read_text())[killed.name]["job_id"]
    (training,) = Path(f"/proc/{controller}/task/{controller}/children").read_text().split()
    os.kill(int(training), signal.SIGKILL)
    worker.join(timeout=120)
    assert failure and "1 of 4 runs failed" in str(failure[0].value)
    assert 0 < trained_steps(killed) < 400
    status = invoke("sweep", "status", str(root))
    assert status.exit_code == 0 and status.output.splitlines()[-1] == "3 done, 0 running, 1 failed, 0 pending, 0 damaged"
    assert f"{killed.name}  failed" in status.output

    jobs = json.loads((root / JOBS_FILE).read_text())
    result = invoke("sweep", "run", str(spec), "--out", str(root))
    assert result.exit_code == 0, result.output
    resubmitted = json.loads((root / JOBS_FILE).read_text())
    assert [name for name in jobs if resubmitted[name] != jobs[name]] == [killed.name]
    status = invoke("sweep", "status", str(root))
    assert status.output.splitlines()[-1] == "4 done, 0 running, 0 failed, 0 pending, 0 damaged"
    again = invoke("sweep", "run", str(spec), "--out", str(root))
    assert again.exit_code == 0 and json.loads((root / JOBS_FILE).read_text()) == resubmitted  # nothing submitted

    for lr in (0.01, 0.05):
        for seed in (0, 1):  # each directory is the hash of the config that `icl-sim train` would build
            config = TrainConfig(task_params={"dim": 2, "points": 5}, steps=400, batch_size=8, lr=lr, seed=seed,
                                 device="cpu", log_every=5, checkpoint_every=10)
            run_dir = root / "runs" / hashlib.sha256(config.to_json().encode()).hexdigest()[:12]
            assert load_config(run_dir) == config and load_checkpoint(run_dir)["step"] == 400
            if run_dir == killed:
                reference = train(config, tmp_path / "straight", progress=False)
                assert_identical(load_checkpoint(run_dir)["model"], reference.state_dict())
                assert read_metrics(run_dir) == read_metrics(tmp_path / "straight")
    summary = json.loads((root / "summary.json").read_text())
    assert {(row["lr"], row["seed"]) for row in summary} == {(0.01, 0), (0.01, 1), (0.05, 0), (0.05, 1)}
    for row in summary:
        assert row["final_loss"] == read_metrics(root / "runs" / row["run"])[-1]["loss"]
    assert (root / "summary.png").stat().st_size > 10_000 and (root / "summary.csv").is_file()


def wait_for(found, timeout=60.0):
    """The first item of ``found()`` once it has one (polled every 10 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = found()
        if items:
            return items[0]
        time.sleep(0.01)
    raise TimeoutError("nothing appeared")


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_with_one_line_and_its_runs_checkpointed(tmp_path):
    """SIGINT to the terminal's process group (what Ctrl-C sends): the jobs checkpoint, the job controllers' own
    tracebacks go to their log, and the sweep says one line and exits 130."""
    spec = write_spec(tmp_path / "grid.yaml", {**BASE, "steps": 10**6}, {"seed": [0, 1]})
    root = tmp_path / "sweep"
    process = subprocess.Popen([sys.executable, "-m", "icl_sim.cli", "--threads", "1", "sweep", "run", str(spec),
                                "--out", str(root), "--parallel", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    wait_for(lambda: [True] if len(list(root.glob("runs/*/checkpoint.pt"))) == 2 else [], timeout=180)
    os.killpg(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130
    assert output.splitlines() == [f"Interrupted: each run checkpointed as it stopped; `icl-sim sweep run {spec} "
                                   f"--out {root}` resumes them"]
    assert "KeyboardInterrupt" in (root / "jobs" / "controllers.log").read_text()
    rows = sweep_status(root)
    assert all(row["state"] == "failed" and row["steps"] >= 10 for row in rows), rows


@pytest.mark.slow
def test_the_local_executor_starts_at_most_parallel_runs_at_once(tmp_path):
    """With ``parallel=1`` two runs execute one after another: the second starts (writes its config) after the
    first ended (wrote its last checkpoint).  300 steps take seconds, longer than the two processes' start-up skew:
    with ``parallel=2`` the same runs overlap."""
    spec = write_spec(tmp_path / "grid.yaml", {**BASE, "steps": 300}, {"seed": [0, 1]})
    rows = run_sweep(read_spec(spec), tmp_path / "sweep", Executor("local", parallel=1), threads=1)
    assert [row["state"] for row in rows] == ["done"] * 2
    spans = sorted(((run / "config.json").stat().st_mtime, (run / "checkpoint.pt").stat().st_mtime)
                   for run in (tmp_path / "sweep" / "runs").iterdir())
    assert all(start >= previous_end for (_, previous_end), (start, _) in zip(spans, spans[1:])), spans


def test_runs_at_once_defaults_to_what_the_cores_hold_and_is_unbounded_under_slurm(monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    cores = allocated_cores()
    assert Executor("local").runs_at_once(threads=1) == cores
    assert Executor("local").runs_at_once(threads=cores + 1) == 1
    assert Executor("local", parallel=3).runs_at_once(threads=1) == 3
    assert Executor("slurm", parallel=3).runs_at_once(threads=1) is None
    with pytest.raises(ValueError, match="parallel"):
        Executor("local", parallel=0)


@pytest.mark.slow
def test_a_full_scale_reproduction_trains_its_runs_as_jobs(tmp_path):
    """A fake "full" scale of smoke size: every run of each of its three default seeds becomes a submitit job, then
    the reproduction measures them.

    The jobs run in this process (the ``debug`` executor): the local executor's processes are tested above.
    """
    smoke = dataclasses.replace(von_oswald_2023.REPRODUCTION,
                                scales={**von_oswald_2023.REPRODUCTION.scales,
                                        "full": von_oswald_2023.REPRODUCTION.scales["smoke"]})
    checks = run_reproduction(smoke, "full", tmp_path, device="cpu", progress=False, executor=Executor("debug"))
    jobs = json.loads((tmp_path / JOBS_FILE).read_text())
    runs = von_oswald_2023.REPRODUCTION.runs(von_oswald_2023.REPRODUCTION.scales["smoke"])
    assert sorted(jobs) == sorted(f"{name}/seed-{seed}" for name in runs for seed in range(3))
    assert {job["executor"] for job in jobs.values()} == {"debug"}
    assert all(load_checkpoint(tmp_path / "runs" / name / f"seed-{seed}")["step"] == config.steps
               for name, config in runs.items() for seed in range(3))
    assert checks and (tmp_path / "checks.json").is_file()


@pytest.mark.parametrize("text, message", [
    ("grid: {lr: 0.1}", "grid 'lr' must be a non-empty list"),
    ("base: {lr: 0.1}\nsteps: 3", "must be a mapping with the keys base and grid"),
    ("grid: [1, 2]", "base and grid must be mappings"),
    ("base: {lr: [", "cannot parse sweep spec"),
    ("grid: {lr: [0.1]}\ngrid: {lr: [0.2]}", "key 'grid' is given twice"),
    ("base: {steps: 3, steps: 4}", "key 'steps' is given twice"),
    ("grid: {lr: [0.1, 0.2, 0.1]}", "grid 'lr' lists 0.1 twice"),
])
def test_a_malformed_spec_is_one_line_naming_it(tmp_path, text, message):
    (tmp_path / "spec.yaml").write_text(text)
    with pytest.raises(ValueError, match=message):
        read_spec(tmp_path / "spec.yaml")


def test_bad_values_are_refused_before_anything_runs(tmp_path):
    for grid, message in [({"lr": [-1.0]}, "lr"), ({"task_params.noise": [-1.0]}, "noise"),
                          ({"warp": [1]}, "warp"), ({"other.noise": [0.1]}, "grid key prefix")]:
        spec = write_spec(tmp_path / "spec.json", {**BASE, "steps": 5}, grid)
        result = invoke("sweep", "run", str(spec), "--out", str(tmp_path / "sweep"))
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
        assert not (tmp_path / "sweep").exists()
    result = invoke("sweep", "status", str(tmp_path))
    assert result.exit_code == 2 and "holds no sweep" in result.output


def test_a_swept_task_parameter_and_shortcut_reach_the_config():
    spec = {"base": {**BASE, "steps": 5}, "grid": {"task_params.noise": [0.0, 0.5], "points": [5, 7]}}
    configs = [config for _, config in expand_grid(spec)]
    assert [(c.task_params["noise"], c.task_params["points"]) for c in configs] == [(0.0, 5), (0.0, 7), (0.5, 5),
                                                                                     (0.5, 7)]


def test_slurm_is_refused_where_there_is_no_cluster(tmp_path):
    with pytest.raises(ValueError, match="executor 'slurm' is not available here"):
        Executor("slurm", partition="gpu").submitit(tmp_path)


def test_lazy_help_is_the_commands_own():
    for name, lazy in cli_module.SWEEP_COMMANDS.items():
        command = lazy.load()
        assert command.name == name and lazy.help == command.get_short_help_str(limit=1000)


def test_a_json_key_given_twice_is_refused(tmp_path):
    (tmp_path / "spec.json").write_text('{"base": {"lr": 0.1, "lr": 0.2}}')
    with pytest.raises(ValueError, match="key 'lr' is given twice"):
        read_spec(tmp_path / "spec.json")


def test_a_binary_spec_is_one_line_naming_it(tmp_path):
    (tmp_path / "spec.yaml").write_bytes(bytes(range(256)))
    with pytest.raises(ValueError, match="spec.yaml' is not UTF-8 text"):
        read_spec(tmp_path / "spec.yaml")


@pytest.mark.parametrize("base, grid", [
    ({**BASE, "task_params": {"dim": 4}}, {"lr": [0.1]}),
    ({**BASE, "steps": 5}, {"task_params.dim": [3, 4]}),
])
def test_a_parameter_set_twice_in_a_spec_is_refused(base, grid):
    with pytest.raises(ValueError, match="both set the task parameter 'dim'"):
        expand_grid({"base": base, "grid": grid})


def test_a_sweep_directory_refuses_another_spec_and_keeps_its_record(tmp_path):
    first = {"base": {**BASE, "steps": 2}, "grid": {"seed": [0]}}
    run_sweep(first, tmp_path, Executor("debug"))
    recorded = (tmp_path / "sweep.json").read_text()
    with pytest.raises(ValueError, match="holds another sweep"):
        run_sweep({**first, "grid": {"seed": [1]}}, tmp_path, Executor("debug"))
    assert (tmp_path / "sweep.json").read_text() == recorded
    assert [row["state"] for row in run_sweep(first, tmp_path, Executor("debug"))] == ["done"]


def test_a_damaged_run_is_reported_as_such_and_hides_no_other(tmp_path):
    spec = {"base": {**BASE, "steps": 2, "log_every": 1}, "grid": {"seed": [0, 1, 2]}}
    run_sweep(spec, tmp_path, Executor("debug"))
    empty, garbage, intact = [tmp_path / "runs" / row["run"] for row in sweep_status(tmp_path)]
    (empty / "checkpoint.pt").write_bytes(b"")
    (garbage / "metrics.jsonl").write_text("garbage\n")
    rows = sweep_status(tmp_path)
    assert [row["state"] for row in rows] == ["damaged", "damaged", "done"]
    assert "checkpoint.pt is corrupt" in rows[0]["problem"] and "holds no record" in rows[1]["problem"]
    result = invoke("sweep", "status", str(tmp_path))
    assert result.exit_code == 0 and "1 done, 0 running, 0 failed, 0 pending, 2 damaged" in result.output


def test_a_warning_that_concerns_every_run_is_printed_once(tmp_path):
    spec = write_spec(tmp_path / "grid.json", {**BASE, "steps": 3, "warmup_steps": 5}, {"seed": [0, 1]})
    result = invoke("sweep", "run", str(spec), "--out", str(tmp_path / "sweep"), "--executor", "debug",
                    "--no-progress")
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("Warning: ")] == [
        "Warning: warmup_steps=5 is longer than the run (steps=3): the learning rate never reaches lr; "
        "lower warmup_steps"]


def test_a_job_stopped_at_its_time_limit_is_requeued_and_resumes_its_run(tmp_path):
    """submitit requeues a Checkpointable job SLURM stops at its time limit with the same arguments; the requeued
    job resumes the run from its last checkpoint and trains it to its end."""
    import submitit

    config = TrainConfig(task="linear-regression", task_params={"dim": 2, "points": 3}, model="lsa",
                         model_params={"layers": 1}, steps=20, batch_size=4, log_every=5, checkpoint_every=5,
                         device="cpu")
    with pytest.raises(Stop):  # the time limit, after the checkpoint of step 10
        train(config, tmp_path / "run", progress=False, log_extra=stop_at(15, Stop()))
    assert trained_steps(tmp_path / "run") == 10
    requeued = RemainingTraining().checkpoint(config, tmp_path / "run", 1, None)
    assert isinstance(requeued, submitit.helpers.DelayedSubmission)
    assert requeued.args == (config, tmp_path / "run", 1, None)
    requeued.function(*requeued.args, **requeued.kwargs)
    assert trained_steps(tmp_path / "run") == 20
    train(config, tmp_path / "straight", progress=False)
    assert (tmp_path / "run" / "metrics.jsonl").read_bytes() == (tmp_path / "straight" / "metrics.jsonl").read_bytes()
