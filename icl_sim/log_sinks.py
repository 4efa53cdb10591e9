"""Where a run's metrics records go besides ``metrics.jsonl``: TensorBoard (``log="tensorboard"``) or Weights &
Biases (``log="wandb"``), as nanoGPT and Garg et al. follow their runs.  Every record ``metrics.jsonl`` gets is
written there too, each numeric field a scalar at the record's step.

* TensorBoard: event files in ``RUN_DIR/tensorboard``; a resumed run appends a new event file, whose records from
  the last checkpoint on repeat the steps a killed run had logged past it (TensorBoard shows both).
* W&B: offline unless configured (``WANDB_MODE=online``, W&B's own variable; ``WANDB_PROJECT`` names the project,
  ``icl-sim`` by default), its files in ``RUN_DIR/wandb``, the run's config as W&B's config.  The W&B run id is
  kept in ``RUN_DIR/wandb/run-id``, so a resumed run continues the same W&B run; ``wandb sync RUN_DIR/wandb/offline-*``
  uploads an offline one.
"""
from __future__ import annotations

import importlib
import math
import os
import uuid
from pathlib import Path

from icl_sim.atomic import write_text

#: the places a run can log to besides metrics.jsonl (TrainConfig.log)
LOG_SINKS = ("none", "tensorboard", "wandb")
TENSORBOARD_FOLDER = "tensorboard"
WANDB_FOLDER = "wandb"
#: W&B's mode where the user has not set WANDB_MODE: nothing leaves the machine
WANDB_DEFAULT_MODE = "offline"


def scalars(record: dict) -> dict[str, float]:
    """A metrics record's finite numeric fields but its step: what a sink plots."""
    return {name: value for name, value in record.items()
            if name != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value)}


def _needs(module: str, kind: str):
    """Import ``module`` for log sink ``kind``, or one clear line saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ValueError(f"log {kind!r} needs the {kind} package: pip install 'icl-sim[{kind}]'") from None


class TensorBoardSink:
    """Each metrics record as TensorBoard scalars (torch's SummaryWriter: ``pip install 'icl-sim[tensorboard]'``)."""

    def __init__(self, run_dir, config: dict):
        _needs("tensorboard", "tensorboard")
        from torch.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TENSORBOARD_FOLDER))

    def write(self, record: dict) -> None:
        for name, value in scalars(record).items():
            self.writer.add_scalar(name, value, record["step"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    """Each metrics record as one W&B history row at its step (``pip install 'icl-sim[wandb]'``), offline unless
    ``WANDB_MODE`` says otherwise; the run id is kept in the run directory, so a resumed run continues its W&B run."""

    def __init__(self, run_dir, config: dict):
        wandb = _needs("wandb", "wandb")
        folder = Path(run_dir) / WANDB_FOLDER
        folder.mkdir(exist_ok=True)
        id_file = folder / "run-id"
        if not id_file.exists():
            write_text(id_file, uuid.uuid4().hex[:16])
        self.run = wandb.init(dir=str(run_dir), id=id_file.read_text().strip(), resume="allow",
                              mode=os.environ.get("WANDB_MODE", WANDB_DEFAULT_MODE),
                              project=os.environ.get("WANDB_PROJECT", "icl-sim"), name=Path(run_dir).resolve().name,
                              config=config)

    def write(self, record: dict) -> None:
        self.run.log(scalars(record), step=record["step"])

    def close(self) -> None:
        self.run.finish()


SINKS = {"tensorboard": TensorBoardSink, "wandb": WandbSink}


def open_sink(kind: str, run_dir, config: dict) -> TensorBoardSink | WandbSink | None:
    """The sink ``kind`` names for ``run_dir`` (None for "none"), told the run's ``config`` (W&B records it)."""
    return SINKS[kind](run_dir, config) if kind in SINKS else None
