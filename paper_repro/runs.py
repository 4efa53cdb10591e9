"""Training runs inside a reproduction: reuse a finished run, resume an unfinished one."""
from __future__ import annotations

from typing import Callable

from icl_sim.config import TrainConfig
from icl_sim.models import InContextModel
from icl_sim.run_io import read_metrics
from icl_sim.training import train_to_end


def train_or_reuse(config: TrainConfig, run_dir, *, progress: bool,
                   log_extra: Callable[[InContextModel], dict] | None = None) -> tuple[InContextModel, list[dict]]:
    """The trained model of ``config`` in ``run_dir`` and its metric history, training only what is missing
    (:func:`icl_sim.training.train_to_end`)."""
    return train_to_end(config, run_dir, progress=progress, log_extra=log_extra), read_metrics(run_dir)
