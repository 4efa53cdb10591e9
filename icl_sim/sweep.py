"""Sweeps: a grid of training runs, each in a directory named by its config's hash, run as submitit jobs.

A spec (YAML or JSON) holds ``base``, the options of ``icl-sim train`` by field name (and its shortcuts
``dim``, ``points``, ``layers``, ``loops``, ``loop_window``), and ``grid``, a list of values for each
swept option; ``task_params.KEY`` and ``model_params.KEY`` sweep one task or model parameter::

    base: {task: linear-regression, dim: 5, points: 11, steps: 2000, batch_size: 64}
    grid: {lr: [0.001, 0.01], seed: [0, 1], task_params.noise: [0.0, 0.5]}

Every combination is one run in ``ROOT/runs/HASH``, HASH the sha256 of its resolved TrainConfig's JSON,
so a rerun finds its runs again: a finished one (a checkpoint at ``steps``) is skipped, an interrupted
one resumes, bit for bit.  Runs execute through submitit (Raventós et al. key their runs the same way):
its local executor, a pool of processes on this machine, or SLURM.  ``ROOT/sweep.json`` records the
spec and its runs, ``ROOT/jobs.json`` each run's last job; :func:`sweep_status` reads them back.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Mapping

import submitit

from icl_sim.atomic import write_text
from icl_sim.config import TrainConfig
from icl_sim.evaluation import write_table
from icl_sim.executors import Executor
from icl_sim.failures import RunFailed
from icl_sim.locks import directory_lock, lock_holder
from icl_sim.output_dirs import claim_output
from icl_sim.mapping_files import read_settings_file
from icl_sim.models import InContextModel
from icl_sim.plots import Curve, Panel, draw_figure
from icl_sim.progress import Progress
from icl_sim.provenance import recorded_session
from icl_sim.reports import train_config
from icl_sim.run_io import CONFIG_FILE, load_config, read_metrics, trained_steps
from icl_sim.threads import use_threads
from icl_sim.training import TrainingDiverged, train_to_end
from icl_sim.validation import check_choice

#: what a run of a sweep can be: trained, training now (or queued), stopped before its end, never started, or with
#: a run file that does not read back (edited, truncated)
STATES = ("done", "running", "failed", "pending", "damaged")
SPEC_FILE, JOBS_FILE, RUNS_FOLDER, JOBS_FOLDER = "sweep.json", "jobs.json", "runs", "jobs"


class SweepFailed(RunFailed):
    """Some runs' jobs ended before their runs did."""


#: the most runs a grid may expand to unless ``--max-runs`` allows more: a typo (a range of 10⁶ seeds) is refused
#: before minutes of expansion, not found out after
MAX_RUNS = 10_000


def read_spec(path, max_runs: int = MAX_RUNS) -> dict[str, Any]:
    """The ``base`` and ``grid`` of a YAML or JSON sweep spec, checked for shape: a key given twice or a value
    listed twice in one grid entry is an error (either would run other runs than the spec seems to ask for), and
    so is a grid of more than ``max_runs`` runs."""
    spec = read_settings_file(path, "sweep spec", (".yaml", ".yml", ".json"))
    where = f"sweep spec {str(path)!r}"
    if not isinstance(spec, Mapping) or set(spec) - {"base", "grid"}:
        raise ValueError(f"{where} must be a mapping with the keys base and grid")
    base, grid = spec.get("base") or {}, spec.get("grid") or {}
    if not isinstance(base, Mapping) or not isinstance(grid, Mapping):
        raise ValueError(f"{where}: base and grid must be mappings")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}: grid {key!r} must be a non-empty list of values")
        listed = [json.dumps(value, sort_keys=True) for value in values]
        repeated = next((value for value, text in zip(values, listed) if listed.count(text) > 1), None)
        if repeated is not None:
            raise ValueError(f"{where}: grid {key!r} lists {repeated!r} twice")
    count = math.prod(len(values) for values in grid.values())
    if count > max_runs:
        raise ValueError(f"{where}: its grid has {count} runs, more than --max-runs {max_runs}; pass a larger "
                         f"--max-runs if you mean it")
    return {"base": dict(base), "grid": dict(grid)}


def expand_grid(spec: Mapping[str, Any]) -> list[tuple[dict[str, Any], TrainConfig]]:
    """(swept values, resolved TrainConfig) for every combination of the grid, in the grid's order; two
    combinations that resolve to one run (``lr: [1, 1.0]``) are an error, as that run would train twice."""
    grid = spec["grid"]
    runs, seen = [], {}
    for combination in itertools.product(*grid.values()):
        values = dict(zip(grid, combination))
        config = resolved_config({**spec["base"]}, values)
        earlier = seen.setdefault(run_id(config), values)
        if earlier is not values:
            raise ValueError(f"sweep spec: grid values {earlier} and {values} give the same run; list each value "
                             f"once")
        runs.append((values, config))
    return runs


def resolved_config(base: dict[str, Any], swept: Mapping[str, Any]) -> TrainConfig:
    """``base`` with the ``swept`` values set (``task_params.KEY`` / ``model_params.KEY`` key by key), as
    ``icl-sim train`` resolves it; a parameter set twice (``dim`` and ``task_params.dim``) is an error, as there."""
    values = {**base, **{key: value for key, value in swept.items() if "." not in key}}
    for key, value in swept.items():
        if "." in key:
            group, name = key.split(".", 1)
            check_choice("grid key prefix", group, ("task_params", "model_params"))
            values[group] = {**values.get(group, {}), name: value}
    return train_config(values)


def run_id(config: TrainConfig) -> str:
    """The name of ``config``'s run directory: the first 12 hex digits of the sha256 of its JSON."""
    return hashlib.sha256(config.to_json().encode()).hexdigest()[:12]


class RemainingTraining(submitit.helpers.Checkpointable):
    """A job: train ``config`` in ``run_dir`` to its end, from scratch or resumed from its last checkpoint.

    Checkpointable: a job SLURM stops at its time limit or preempts is requeued with the same arguments (submitit's
    ``checkpoint``) and resumes the run from its last checkpoint, at most ``checkpoint_minutes`` behind.
    """

    def __call__(self, config: TrainConfig, run_dir, threads: int | None = None,
                 log_extra: Callable[[InContextModel], dict] | None = None) -> None:
        use_threads(threads)
        train_to_end(config, run_dir, progress=False, log_extra=log_extra)


def execute_runs(runs: Mapping[str, tuple[TrainConfig, Path]], executor: Executor, root, *,
                 threads: int | None = None, log_extra: Callable[[InContextModel], dict] | None = None,
                 progress: bool = False) -> None:
    """Submit every unfinished run of ``runs`` (key -> (config, run directory)) as a job and wait for them all;
    the local executor starts at most :meth:`Executor.runs_at_once` of them at once, the next as one ends.

    Job files go to ``root/jobs``, each run's job to ``root/jobs.json``.  Raises SweepFailed, once every
    job has ended, if any ended before its run did.  ``progress`` reports each run as its job ends.
    """
    root = Path(root)
    pending = {key: run for key, run in runs.items() if trained_steps(run[1]) < run[0].steps}
    for key, (_, run_dir) in list(pending.items()):
        holder = lock_holder(run_dir)
        if holder is not None:  # a job of an earlier controller (killed) still trains it: never start a second
            print(f"Warning: run {key} is training in another process ({holder}); not started again, see "
                  f"`icl-sim sweep status` for its end", file=sys.stderr)
            del pending[key]
    if not pending:
        return
    submitter = executor.submitit(root / JOBS_FOLDER)
    queue = list(pending.items())
    jobs = {}

    def submit(count: int) -> dict:
        """Submit the next ``count`` runs of the queue; their jobs, also recorded in ``root/jobs.json``."""
        batch = queue[:count]
        del queue[:count]
        if not batch:
            return {}
        controllers = output_to(root / JOBS_FOLDER / CONTROLLER_LOG) if executor.kind == "local" else nullcontext()
        with controllers, submitter.batch():  # the batch submits as it closes, inside the redirection
            submitted = {key: submitter.submit(RemainingTraining(), config, run_dir, threads, log_extra)
                         for key, (config, run_dir) in batch}
        record_jobs(root, {key: {"executor": executor.kind, "job_id": job.job_id} for key, job in submitted.items()})
        jobs.update(submitted)
        return submitted

    failures = {}
    shown = Progress(len(runs), start=len(runs) - len(pending), desc="sweep", unit="run", enabled=progress,
                     fraction=0, seconds=0)
    try:
        for key, job in _as_they_end(submit(executor.runs_at_once(threads) or len(queue)), submit):
            try:
                job.result()
            except Exception as error:  # a job's failure is reported by run; the others still finish
                failures[key] = job_error(error)
            ended = "failed" if key in failures else "done"
            shown.advance(shown.done + 1, _final_loss(pending[key][1]), f"{ended} ({key})")
    except KeyboardInterrupt:  # the jobs got the terminal's SIGINT too: each checkpoints and stops
        _wait_for(jobs.values(), INTERRUPT_WAIT_SECONDS)
        raise
    finally:
        shown.close()
    if failures:
        key, error = next(iter(failures.items()))
        diverged = all(DIVERGED in failure for failure in failures.values())
        advice = ("a diverged run does not resume: sweep other settings (a lower lr) in a new spec and --out"
                  if diverged else "run again to resume them")
        raise SweepFailed(f"{len(failures)} of {len(runs)} runs failed, e.g. {key}: {error} (job logs in "
                          f"{root / JOBS_FOLDER}); {advice}")


#: where the local executor's job controllers write: they inherit this process's terminal otherwise, and on Ctrl-C
#: each prints its own traceback over the sweep's message
CONTROLLER_LOG = "controllers.log"
#: seconds an interrupted sweep waits for its jobs to write their checkpoints and end
INTERRUPT_WAIT_SECONDS = 60


@contextlib.contextmanager
def output_to(path: Path):
    """Point this process's stdout and stderr file descriptors at ``path`` (appended), so that the processes
    started meanwhile inherit it; restored on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for descriptor, copy in zip((1, 2), saved):
            os.dup2(copy, descriptor)
            os.close(copy)


#: seconds between two looks at which of a sweep's jobs have ended
POLL_SECONDS = 0.5


def _as_they_end(jobs: Mapping[str, submitit.Job], submit: Callable[[int], Mapping[str, submitit.Job]]):
    """(key, job) of each of ``jobs`` as it ends, polling, and of the jobs ``submit(count)`` starts in the places
    of the ``count`` that just ended; a debug job runs in this process when its result is asked for, so it counts
    as ended (asking it ``done()`` would run it, and a failed one again on ``result()``)."""
    remaining = dict(jobs)
    while remaining:
        ended = [key for key, job in remaining.items() if isinstance(job, submitit.DebugJob) or job.done()]
        for key in ended:
            yield key, remaining.pop(key)
        remaining.update(submit(len(ended)))
        if remaining and not ended:
            time.sleep(POLL_SECONDS)


def _final_loss(run_dir: Path) -> str | None:
    """The last logged loss of the run in ``run_dir`` as text, None if it has none (or its metrics do not read)."""
    try:
        records = read_metrics(run_dir)
    except (OSError, ValueError):
        return None
    return f"{records[-1]['loss']:.4g}" if records else None


def _wait_for(jobs, seconds: float) -> None:
    """Wait up to ``seconds`` for ``jobs`` to end (an interrupted job checkpoints first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(job.done() for job in jobs):
        time.sleep(0.5)


#: how a job's error line names a run whose loss diverged
DIVERGED = TrainingDiverged.__name__


def job_error(error: Exception) -> str:
    """One line for a failed job: the exception its own code raised.  submitit's FailedJobError wraps the job's
    traceback between dashed rules, after its own frames; the traceback's last line is the job's error."""
    if isinstance(error, submitit.core.utils.FailedJobError):
        parts = str(error).split("-" * 22)
        trace = parts[1] if len(parts) > 2 else str(error)
        lines = [line.strip() for line in trace.splitlines() if line.strip()]
        return lines[-1] if lines else "the job failed (no traceback)"
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def record_jobs(root: Path, jobs: Mapping[str, dict]) -> None:
    """Add ``jobs`` (run -> executor and job id) to ``root/jobs.json``, atomically."""
    write_text(root / JOBS_FILE, json.dumps({**read_json(root / JOBS_FILE), **jobs}, indent=2) + "\n")


def run_sweep(spec: Mapping[str, Any], root, executor: Executor = Executor(), *, threads: int | None = None,
              progress: bool = False) -> list:
    """Run the grid of ``spec`` in ``root`` (skipping finished runs, resuming interrupted ones), wait for its
    jobs (``progress``: reporting each as it ends), and write the summary; returns :func:`sweep_status`'s rows.
    Raises SweepFailed if a job failed."""
    root = Path(root)
    expanded = expand_grid(spec)
    executor.job_gpus()  # refused before anything is written
    with directory_lock(root, "sweep root"):
        claim_output(root, "sweep")
        _refuse_another_sweep(root, spec)
        runs = {run_id(config): (config, root / RUNS_FOLDER / run_id(config)) for _, config in expanded}
        write_text(root / SPEC_FILE, json.dumps({"spec": spec, "runs": [{"id": run_id(config), "values": values}
                                                                         for values, config in expanded]},
                                                indent=2) + "\n")
        try:
            with recorded_session(root):
                execute_runs(runs, executor, root, threads=threads, progress=progress)
        finally:
            rows = sweep_status(root)
            write_summary(root, rows)
    return rows


def _refuse_another_sweep(root: Path, spec: Mapping[str, Any]) -> None:
    """A sweep directory holds one spec: a rerun resumes it, another spec would replace its record (and drop its
    runs from ``sweep status``), so it is refused."""
    recorded = read_json(root / SPEC_FILE).get("spec")
    if recorded is not None and json.dumps(recorded, sort_keys=True) != json.dumps(spec, sort_keys=True):
        raise ValueError(f"{str(root)!r} holds another sweep (its {SPEC_FILE} records a different spec); "
                         f"give a new --out for this one")


def sweep_status(root) -> list[dict]:
    """One row per run of the sweep in ``root``: its id, swept values, state (STATES), steps, final loss and, for a
    damaged run, the problem with its files (one damaged run does not hide the others)."""
    root = Path(root)
    if not (root / SPEC_FILE).is_file():
        raise ValueError(f"{str(root)!r} holds no sweep (no {SPEC_FILE}); run `icl-sim sweep run SPEC --out ROOT`")
    jobs = read_json(root / JOBS_FILE)
    rows = []
    for run in read_json(root / SPEC_FILE)["runs"]:
        run_dir = root / RUNS_FOLDER / run["id"]
        try:
            steps = trained_steps(run_dir)
            config = load_config(run_dir) if (run_dir / CONFIG_FILE).is_file() else None
            metrics = read_metrics(run_dir)
        except ValueError as error:
            rows.append({"run": run["id"], **run["values"], "state": "damaged", "steps": None, "final_loss": None,
                         "problem": str(error)})
            continue
        state = _state(config, steps, jobs.get(run["id"]), root / JOBS_FOLDER)
        if state == "done" and not metrics:
            state, problem = "damaged", f"{run_dir / 'metrics.jsonl'} holds no record of the trained run"
        else:
            problem = None
        rows.append({"run": run["id"], **run["values"], "state": state, "steps": steps,
                     "final_loss": metrics[-1]["loss"] if metrics else None, "problem": problem})
    return rows


def _state(config: TrainConfig | None, steps: int, job: Mapping[str, str] | None, folder: Path) -> str:
    if config is not None and steps >= config.steps:
        return "done"
    if job is None:
        return "pending"
    return "running" if _job_alive(job, folder) else "failed"


def _job_alive(job: Mapping[str, str], folder: Path) -> bool:
    """Whether a run's job is still queued or running: its process on this machine, or its SLURM state."""
    if job["executor"] == "slurm":
        return submitit.SlurmJob(folder=folder, job_id=job["job_id"]).state in ("PENDING", "RUNNING", "REQUEUED",
                                                                              "CONFIGURING", "COMPLETING")
    pid = int(job["job_id"])  # a local job's id is the process id of its controller on this machine
    try:
        os.kill(pid, 0)  # signal 0: does the process exist?
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    stat = Path(f"/proc/{pid}/stat")  # Linux: a process that exited but is not yet reaped is a zombie, state Z
    return not stat.is_file() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def write_summary(root: Path, rows: list[dict]) -> list[Path]:
    """``summary.{csv,json}`` (the rows) and, once a run is done, ``summary.{png,pdf}``: final loss against the
    first swept option, one line per combination of the others.  Written atomically into ``root``."""
    paths = list(write_table(rows, root, "summary"))
    swept = list(read_json(root / SPEC_FILE)["spec"]["grid"])
    done = [row for row in rows if row["state"] == "done" and row["final_loss"] is not None]
    if not done:
        return paths
    first, others = (swept[0], swept[1:]) if swept else ("run", [])
    lines: dict[str, list[tuple[Any, float]]] = {}
    for row in done:
        label = ", ".join(f"{key}={row[key]}" for key in others) or "final loss"
        lines.setdefault(label, []).append((row[first], row["final_loss"]))
    values = list({json.dumps(row[first]): row[first] for row in rows}.values())  # in grid order, lists too
    numeric = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values)
    curves = [Curve(label, *zip(*sorted((value if numeric else values.index(value), loss) for value, loss in points)))
              for label, points in lines.items()]
    xlabel = first if numeric else f"{first} (position in grid: {', '.join(map(str, values))})"
    caption = f"final training loss of the {len(done)} finished runs of the sweep in {root.name}"
    return paths + draw_figure(root / "summary", [Panel(xlabel, "final training loss", curves)], caption)


def read_json(path: Path) -> dict:
    """The JSON object in ``path``; an empty one if there is no file."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); restore or delete it") from None
