"""Training runs inside a reproduction: reuse a finished run, resume an unfinished one."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from icl_sim.config import TrainConfig
from icl_sim.models import InContextModel
from icl_sim.run_io import CONFIG_FILE, load_config, load_run, read_metrics, trained_steps
from icl_sim.training import train


def train_or_reuse(config: TrainConfig, run_dir, *, progress: bool,
                   log_extra: Callable[[InContextModel], dict] | None = None) -> tuple[InContextModel, list[dict]]:
    """The trained model of ``config`` in ``run_dir`` and its metric history, training only what is missing.

    A directory holding a different config is refused rather than overwritten.
    """
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        model = train(config, run_dir, progress=progress, log_extra=log_extra)
    else:
        saved = load_config(run_dir)
        if saved.to_json() != config.to_json():  # as saved: JSON has lists where the config has tuples
            raise ValueError(f"out directory {str(run_dir)!r} holds a run with another config; choose another --out")
        if trained_steps(run_dir) < config.steps:
            model = train(config, run_dir, resume=True, progress=progress, log_extra=log_extra)
        else:
            model = load_run(run_dir, config.device)
    return model, read_metrics(run_dir)
