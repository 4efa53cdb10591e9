"""The run directory: ``config.json``, ``checkpoint.pt``, ``metrics.jsonl`` and results, all self-describing."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from icl_sim.atomic import atomic_path, write_text
from icl_sim.config import TrainConfig
from icl_sim.models import InContextModel, build_model
from icl_sim.tasks import make_task

CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "checkpoint.pt"
METRICS_FILE = "metrics.jsonl"


def save_config(run_dir, config: TrainConfig) -> None:
    write_text(Path(run_dir) / CONFIG_FILE, config.to_json() + "\n")


def load_config(run_dir) -> TrainConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"run directory {str(run_dir)!r} has no {CONFIG_FILE}: not an icl-sim run")
    return TrainConfig.from_json(path.read_text())


def save_checkpoint(run_dir, state: dict) -> None:
    """Atomically write ``checkpoint.pt`` (model, optimiser, scheduler, step)."""
    with atomic_path(Path(run_dir) / CHECKPOINT_FILE) as temporary:
        torch.save(state, temporary)


def load_checkpoint(run_dir, device="cpu") -> dict:
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.is_file():
        raise ValueError(f"run directory {str(run_dir)!r} has no {CHECKPOINT_FILE}")
    return torch.load(path, map_location=device, weights_only=True)


def build_run_model(config: TrainConfig) -> InContextModel:
    """The (untrained) model that ``config`` describes, sized by its task."""
    task = make_task(config.task, **config.task_params)
    return build_model(config.model, task.dim, task.points, task.target_dim, **config.model_params)


def load_run(run_dir, device="cpu") -> InContextModel:
    """The trained model of a run directory, in evaluation mode: a Predictor."""
    config = load_config(run_dir)
    model = build_run_model(config)
    model.load_state_dict(load_checkpoint(run_dir, device)["model"])
    return model.to(device).eval()


def read_metrics(run_dir) -> list[dict]:
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
