"""The run directory: ``config.json``, ``checkpoint.pt`` (with its sha256), ``metrics.jsonl`` and results.

Everything read back from a run directory is validated before use: the config against TrainConfig's
schema, the checkpoint against its recorded checksum and the config's model shapes, every metrics
record as JSON.  A bad file ends in a one-line ``ValueError`` naming it and what to do.
"""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import json
import os
import pickle
import shutil
import time
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from icl_sim.atomic import atomic_path, write_text
from icl_sim.config import ADDED_FIELDS, TrainConfig
from icl_sim.memory import format_bytes
from icl_sim.models import MODELS, InContextModel, build_model
from icl_sim.params import typed_parameters
from icl_sim.tasks import TASKS, make_task
from icl_sim.validation import check_choice

CONFIG_FILE = "config.json"
CONFIG_CHECKSUM_FILE = "config.json.sha256"
CHECKPOINT_FILE = "checkpoint.pt"
CHECKSUM_FILE = "checkpoint.pt.sha256"
METRICS_FILE = "metrics.jsonl"
SNAPSHOTS_FOLDER = "snapshots"

#: what every checkpoint holds, and the type of each entry
CHECKPOINT_ENTRIES = {"step": int, "model": dict, "optimizer": dict, "scheduler": dict, "window_loss": torch.Tensor,
                      "window_steps": int, "initial_loss": float}


def save_config(run_dir, config: TrainConfig) -> None:
    """Atomically write ``config.json`` and record its sha256, so that a hand edit is noticed when it is read back.

    As for the checkpoint, the checksum file lists the new file's digest and the one of the file it replaces, and
    is written first: wherever a process is killed, the ``config.json`` it leaves has a listed digest.
    """
    run_dir = Path(run_dir)
    text = config.to_json() + "\n"
    _record_digest(run_dir, CONFIG_CHECKSUM_FILE, hashlib.sha256(text.encode()).hexdigest())
    write_text(run_dir / CONFIG_FILE, text)


def load_config(run_dir, *, verified: bool = True) -> TrainConfig:
    """The run's TrainConfig; every field present (but those added since it was saved), none unknown, every
    value (task and model too) valid, and (``verified``) the file the one the run wrote: its sha256 recorded in
    ``config.json.sha256``.  A config without that record cannot be told from a hand edit, so it is refused too."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"run directory {str(run_dir)!r} has no {CONFIG_FILE}: not an icl-sim run")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read {path}: {error}; restore it from a copy") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a JSON object of training settings, got {type(data).__name__}")
    fields = [spec.name for spec in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(data) - set(fields))
    missing = [name for name in fields if name not in data and name not in ADDED_FIELDS]
    if unknown or missing:
        problem = f"unknown key {unknown[0]!r}" if unknown else f"missing key {missing[0]!r}"
        raise ValueError(f"{path}: {problem} (edited, or written by another icl-sim version); restore it as it was "
                         f"or retrain in a new --out")
    try:
        config = TrainConfig(**typed_parameters(TrainConfig, data))
        check_choice("task", config.task, tuple(TASKS))
        check_choice("model", config.model, tuple(MODELS))
        make_task(config.task, **config.task_params)
        MODELS[config.model].Config(**typed_parameters(MODELS[config.model].Config, config.model_params))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
    recorded = _recorded_digests(run_dir, CONFIG_CHECKSUM_FILE)
    if verified and _sha256(path) not in recorded:
        problem = (f"was edited after the run wrote it (its sha256 is not the one recorded in {CONFIG_CHECKSUM_FILE})"
                   if recorded else f"has no {CONFIG_CHECKSUM_FILE} beside it, so a hand edit cannot be ruled out")
        raise ValueError(f"{path} {problem}: its model and data may no longer be the checkpoint's; restore it as it "
                         f"was, train a new run in a new --out, or, if you edited it on purpose, accept it with "
                         f"`icl-sim train --resume --force-unverified --out {run_dir}`")
    return config


def accept_unverified_config(run_dir) -> TrainConfig:
    """Accept the run's ``config.json`` as it is now, edited or without its checksum (``--force-unverified``): its
    settings still valid, it is saved again with the time of acceptance in ``unverified_edit`` and a new sha256."""
    config = dataclasses.replace(load_config(run_dir, verified=False),
                                 unverified_edit=time.strftime("%Y-%m-%d %H:%M:%S"))
    save_config(run_dir, config)
    return config


def save_checkpoint(run_dir, state: dict) -> None:
    """Atomically write ``checkpoint.pt`` (the CHECKPOINT_ENTRIES) and record its sha256.

    The checksum file lists the digest of the new checkpoint and of the one it replaces, and is
    written before the new one is renamed into place: wherever a process is killed, the
    ``checkpoint.pt`` it leaves has a listed digest.
    """
    run_dir = Path(run_dir)
    with atomic_path(run_dir / CHECKPOINT_FILE) as temporary:
        try:
            with open(temporary, "wb") as file:  # through a file: a small full write is an OSError
                torch.save(state, file)
        except (OSError, RuntimeError) as error:
            # a large checkpoint's failed write surfaces from torch's zip writer as a RuntimeError, raised again
            # while the first is handled: a full disk is told by the space left, not by the error's type
            needed, free = _saved_size(state), shutil.disk_usage(run_dir).free
            code = getattr(error, "errno", None)
            if code not in (errno.ENOSPC, errno.EDQUOT) and needed <= free:
                raise
            code = code if code in (errno.ENOSPC, errno.EDQUOT) else errno.ENOSPC
            raise OSError(code, f"{os.strerror(code)} (the checkpoint needs about {format_bytes(needed)}, "
                                f"{format_bytes(free)} are free)", str(run_dir / CHECKPOINT_FILE)) from None
        _record_digest(run_dir, CHECKSUM_FILE, _sha256(temporary))


def load_checkpoint(run_dir, device="cpu") -> dict:
    """The verified state of ``checkpoint.pt``: its sha256 recorded, tensors only, every entry present."""
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.is_file():
        raise ValueError(f"run directory {str(run_dir)!r} has no {CHECKPOINT_FILE}")
    if not (Path(run_dir) / CHECKSUM_FILE).is_file():
        raise ValueError(f"{path} has no {CHECKSUM_FILE} beside it: not an icl-sim checkpoint (or one from an "
                         f"older icl-sim); retrain in a new --out")
    if _sha256(path) not in _recorded_digests(run_dir):
        raise ValueError(f"{path} is corrupt or truncated (its sha256 is not the one recorded in {CHECKSUM_FILE}); "
                         f"delete it and run train --resume to retrain from step 0")
    try:
        with warnings.catch_warnings():  # torch warns about a foreign pickle's protocol before refusing it
            warnings.simplefilter("ignore", UserWarning)
            state = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(f"{path} holds objects other than tensors; refusing to load it "
                         f"(not an icl-sim checkpoint?)") from None
    except Exception as error:  # torch.load can fail in many ways on a file it did not write
        raise ValueError(f"cannot read {path}: {type(error).__name__}: {_first_line(error)}") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not an icl-sim checkpoint: it holds a {type(state).__name__}, not a dict")
    for key, kind in CHECKPOINT_ENTRIES.items():
        if key not in state:
            raise ValueError(f"{path} is not an icl-sim checkpoint: it lacks {key!r}")
        if not isinstance(state[key], kind) or (kind is int and isinstance(state[key], bool)):
            shown = repr(state[key]) if isinstance(state[key], (int, float, str)) else type(state[key]).__name__
            raise ValueError(f"{path} is not an icl-sim checkpoint: its {key!r} is {shown}, not {kind.__name__}")
    for key in ("step", "window_steps"):
        if state[key] < 0:
            raise ValueError(f"{path} is not an icl-sim checkpoint: its {key!r} is {state[key]}, below 0")
    return state


def trained_steps(run_dir) -> int:
    """The steps the run in ``run_dir`` has checkpointed (0 if none)."""
    return load_checkpoint(run_dir)["step"] if (Path(run_dir) / CHECKPOINT_FILE).is_file() else 0


def load_model_state(model: InContextModel, state: dict, run_dir, *, config_name: str = CONFIG_FILE,
                     advice: str = "restore the config") -> None:
    """Load a checkpoint's weights into ``model``; a weight of another name or shape is a one-line error saying
    that the checkpoint does not fit ``config_name`` (the config ``model`` was built from), and ``advice``."""
    expected = model.state_dict()
    for name in sorted(expected.keys() | state.keys()):
        found, wanted = _shape(state.get(name)), _shape(expected.get(name))
        if found != wanted:
            raise ValueError(f"{Path(run_dir) / CHECKPOINT_FILE} does not fit {config_name}: weight {name!r} is "
                             f"{found} in the checkpoint, {wanted} by the config; {advice}")
        if state[name].is_floating_point() and not bool(torch.isfinite(state[name]).all()):
            raise ValueError(f"{Path(run_dir) / CHECKPOINT_FILE}: weight {name!r} holds NaN or infinite values, "
                             f"which training never saves (the file was altered); retrain in a new --out")
    model.load_state_dict(state)


def check_optimizer_state(state: dict, run_dir) -> None:
    """Refuse a checkpoint whose optimiser state holds NaN or infinite values: training never saves one (a diverged
    step stops before its checkpoint), so the file was altered, and resumed it would diverge at once."""
    for index, entries in state["optimizer"].get("state", {}).items():
        for name, value in entries.items():
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"{Path(run_dir) / CHECKPOINT_FILE}: the optimiser's {name!r} of parameter {index} "
                                 f"holds NaN or infinite values, which training never saves (the file was altered); "
                                 f"retrain in a new --out")


def load_initial_weights(model: InContextModel, source, device="cpu") -> None:
    """Load the trained weights of the run in ``source`` into ``model``, a new run's start (``init_from``): its
    checkpoint verified, every weight of the same name and shape; any problem a one-line error naming init_from."""
    try:
        state = load_checkpoint(source, device)["model"]
        load_model_state(model, state, source, config_name="the new run's config",
                         advice="init_from needs a run of the same model and task shapes (dim, points, layers, ...)")
    except ValueError as error:
        raise ValueError(f"init_from {str(source)!r}: {error}") from None


def build_run_model(config: TrainConfig) -> InContextModel:
    """The (untrained) model that ``config`` describes, sized by its task."""
    task = make_task(config.task, **config.task_params)
    return build_model(config.model, task.dim, task.points, task.target_dim, **config.model_params)


def load_run(run_dir, device="cpu", *, step: int | None = None) -> InContextModel:
    """The trained model of a run directory, validated, in evaluation mode: a Predictor; with ``step``, the
    weights its snapshot of that step kept (``keep_every``) instead of the latest checkpoint's."""
    model = build_run_model(load_config(run_dir))
    weights = load_checkpoint(run_dir, device)["model"] if step is None else load_snapshot(run_dir, step, device)
    load_model_state(model, weights, run_dir)
    return model.to(device).eval()


def snapshot_path(run_dir, step: int) -> Path:
    return Path(run_dir) / SNAPSHOTS_FOLDER / f"step-{step}.safetensors"


def save_snapshot(run_dir, step: int, weights: dict[str, torch.Tensor]) -> None:
    """Atomically keep ``weights`` as the snapshot of ``step`` (safetensors: tensors only, nothing to unpickle;
    each tensor copied, so weights that share storage are saved apart)."""
    with atomic_path(snapshot_path(run_dir, step)) as temporary:
        save_file({name: value.detach().cpu().clone().contiguous() for name, value in weights.items()},
                  str(temporary))


def snapshot_steps(run_dir) -> list[int]:
    """The steps whose snapshots ``run_dir`` keeps, in order."""
    folder = Path(run_dir) / SNAPSHOTS_FOLDER
    names = (path.name for path in folder.glob("step-*.safetensors")) if folder.is_dir() else ()
    return sorted(int(name[len("step-"):-len(".safetensors")]) for name in names
                  if name[len("step-"):-len(".safetensors")].isdigit())


def load_snapshot(run_dir, step: int, device="cpu") -> dict[str, torch.Tensor]:
    """The weights of the snapshot of ``step``; a missing or unreadable one is a one-line error."""
    path = snapshot_path(run_dir, step)
    if not path.is_file():
        kept = snapshot_steps(run_dir)
        raise ValueError(f"run directory {str(run_dir)!r} keeps no snapshot of step {step}; it keeps "
                         + (f"steps {', '.join(map(str, kept))}" if kept else
                            "none (train with --keep-every K to keep the weights every K steps)"))
    try:
        return load_file(str(path), device=str(device))
    except Exception as error:  # safetensors raises its own errors on a damaged header or a truncated file
        raise ValueError(f"cannot read {path}: {type(error).__name__}: {_first_line(error)}") from None


def read_metrics(run_dir) -> list[dict]:
    """The records of ``metrics.jsonl``, oldest first (see :func:`_metric_lines`)."""
    return [record for _, record in _metric_lines(run_dir)]


def check_metrics_history(run_dir, step: int, log_every: int) -> None:
    """Refuse a run whose ``metrics.jsonl`` lacks a record its checkpoint at ``step`` has logged (every multiple of
    ``log_every`` up to ``step``): resumed, it would continue a history with a gap."""
    logged = {record["step"] for record in read_metrics(run_dir)}
    missing = next((due for due in range(log_every, step + 1, log_every) if due not in logged), None)
    if missing is not None:
        path = Path(run_dir) / METRICS_FILE
        problem = "is missing" if not path.is_file() else f"lacks the record of step {missing}"
        raise ValueError(f"{path} {problem}, though the checkpoint has trained {step} steps: the run's history has a "
                         f"gap from step {missing}; restore {METRICS_FILE} as it was, or retrain in a new --out")


def truncate_metrics(run_dir, step: int) -> None:
    """Keep the records up to ``step`` byte for byte and drop the rest, so a resumed run logs each step once."""
    kept = [line for line, record in _metric_lines(run_dir) if record["step"] <= step]
    write_text(Path(run_dir) / METRICS_FILE, "".join(f"{line}\n" for line in kept))


def _metric_lines(run_dir) -> list[tuple[str, dict]]:
    """(line, record) for every record of ``metrics.jsonl``.

    A run killed while appending leaves a torn last line: it is dropped.  Any other line that is
    not a JSON record with a ``step`` is an error naming the file and the line.
    """
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    numbered = [(number, line) for number, line in enumerate(path.read_text().splitlines(), start=1) if line.strip()]
    records = []
    for number, line in numbered:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == numbered[-1][0]:
                break
            raise ValueError(f"{path}, line {number}: not a JSON record ({error}); delete or repair that line") \
                from None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise ValueError(f"{path}, line {number}: a metrics record needs an integer 'step'; delete or repair "
                             f"that line")
        records.append((line, record))
    return records


def _recorded_digests(run_dir, name: str = CHECKSUM_FILE) -> list[str]:
    path = Path(run_dir) / name
    return path.read_text(errors="replace").split() if path.is_file() else []


def _record_digest(run_dir, name: str, digest: str) -> None:
    """Atomically list ``digest`` in the checksum file ``name``, with the newest one listed before it (the
    digest of the file about to be replaced)."""
    listed = [digest, *_recorded_digests(run_dir, name)[:1]]
    write_text(Path(run_dir) / name, "".join(f"{entry}\n" for entry in listed))


def _sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _saved_size(state: dict) -> int:
    """The bytes ``torch.save`` writes for ``state``, counted without storing them (a full disk's message)."""
    counter = _ByteCounter()
    torch.save(state, counter)
    return counter.size


class _ByteCounter(io.RawIOBase):
    """A write-only file that keeps nothing but the number of bytes written to it."""

    def __init__(self):
        super().__init__()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.size += len(data)
        return len(data)


def _shape(tensor) -> tuple[int, ...] | str:
    return tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else "absent"


def _first_line(error: BaseException) -> str:
    return next(iter(str(error).splitlines()), "")
