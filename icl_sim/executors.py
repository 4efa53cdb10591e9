"""Where training runs execute: local processes, SLURM jobs, or one after another in this process (submitit).

Kept apart from ``icl_sim.sweep`` so that the command line can take an executor's options without loading torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icl_sim.validation import check_choice

#: where runs execute: local processes, SLURM jobs, or one after another in this process (submitit's debug
#: executor: what a rehearsal of the full scale uses, and a way to step through a sweep in a debugger)
EXECUTORS = ("local", "slurm", "debug")


@dataclass(frozen=True)
class Executor:
    """Where runs execute: ``local`` (one process per run on this machine), ``slurm`` (one job per run) or
    ``debug`` (in this process, one run after another), with
    ``gpus_per_node`` GPUs per job (None: one where this machine has CUDA; submitit hides the others)."""

    kind: str = "local"
    partition: str | None = None
    timeout_min: int = 24 * 60
    gpus_per_node: int | None = None

    def __post_init__(self):
        check_choice("executor", self.kind, EXECUTORS)

    def submitit(self, folder: Path):
        """The submitit executor (``submitit.AutoExecutor``) writing its job files to ``folder``."""
        import submitit
        import torch

        try:
            executor = submitit.AutoExecutor(folder=folder, cluster=self.kind)
        except RuntimeError as error:  # submitit's SLURM executor needs srun on PATH
            raise ValueError(f"executor {self.kind!r} is not available here: {error}") from None
        gpus = int(torch.cuda.is_available()) if self.gpus_per_node is None else self.gpus_per_node
        executor.update_parameters(timeout_min=self.timeout_min, gpus_per_node=gpus)
        if self.partition:
            executor.update_parameters(slurm_partition=self.partition)
        return executor
