"""Where a run's metrics records go besides ``metrics.jsonl``: TensorBoard (``log="tensorboard"``), as nanoGPT and
Garg et al. follow their runs.  Every record ``metrics.jsonl`` gets is written there too, each numeric field a
scalar at the record's step, in ``RUN_DIR/tensorboard``; a resumed run appends a new event file, whose records
from the last checkpoint on repeat the steps a killed run had logged past it (TensorBoard shows both).
"""
from __future__ import annotations

import math
from pathlib import Path

#: the places a run can log to besides metrics.jsonl (TrainConfig.log)
LOG_SINKS = ("none", "tensorboard")
TENSORBOARD_FOLDER = "tensorboard"


class TensorBoardSink:
    """Each metrics record as TensorBoard scalars (torch's SummaryWriter: ``pip install 'icl-sim[tensorboard]'``)."""

    def __init__(self, run_dir):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ValueError("log 'tensorboard' needs the tensorboard package: pip install 'icl-sim[tensorboard]'"
                             ) from None
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TENSORBOARD_FOLDER))

    def write(self, record: dict) -> None:
        for name, value in record.items():
            if name != "step" and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value):
                self.writer.add_scalar(name, value, record["step"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def open_sink(kind: str, run_dir) -> TensorBoardSink | None:
    """The sink ``kind`` names for ``run_dir`` (None for "none")."""
    return TensorBoardSink(run_dir) if kind == "tensorboard" else None
