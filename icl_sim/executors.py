"""Where training runs execute: local processes, SLURM jobs, or one after another in this process (submitit).

Kept apart from ``icl_sim.sweep`` so that the command line can take an executor's options without loading torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icl_sim.threads import allocated_cores
from icl_sim.validation import check_choice, check_int

#: where runs execute: local processes, SLURM jobs, or one after another in this process (submitit's debug
#: executor: what a rehearsal of the full scale uses, and a way to step through a sweep in a debugger)
EXECUTORS = ("local", "slurm", "debug")


@dataclass(frozen=True)
class Executor:
    """Where runs execute: ``local`` (one process per run on this machine), ``slurm`` (one job per run) or
    ``debug`` (in this process, one run after another), with
    ``gpus_per_node`` GPUs per job (None: one where this machine has CUDA; submitit hides the others) and at most
    ``parallel`` runs at once (None: see :meth:`runs_at_once`)."""

    kind: str = "local"
    partition: str | None = None
    timeout_min: int = 24 * 60
    gpus_per_node: int | None = None
    parallel: int | None = None

    def __post_init__(self):
        check_choice("executor", self.kind, EXECUTORS)
        if self.parallel is not None:
            check_int("parallel", self.parallel, 1)
        if self.partition is not None and self.kind != "slurm":
            raise ValueError(f"partition names a SLURM partition, which the {self.kind} executor has none of: drop "
                             f"--partition or pass --executor slurm")

    def runs_at_once(self, threads: int | None) -> int | None:
        """How many runs the local executor starts at once (None: no limit here; SLURM queues its jobs itself,
        at most ``parallel`` of an array at once, and ``debug`` runs one after another).  ``parallel`` where given,
        else one per GPU where CUDA is available, else as many as the cores hold at ``threads`` threads each:
        a process per run of a large sweep, all at once, would share the cores (or one GPU's memory) between
        hundreds of processes."""
        if self.kind != "local":
            return None
        if self.parallel is not None:
            return self.parallel
        import torch

        if torch.cuda.is_available():
            return torch.cuda.device_count()
        return max(1, allocated_cores() // (threads or 1))

    def job_gpus(self) -> int:
        """GPUs per job: ``gpus_per_node``, else one where this machine has CUDA; a local job cannot have more than
        this machine has (an error before anything is written, not a job that silently trains on the CPU)."""
        import torch

        gpus = int(torch.cuda.is_available()) if self.gpus_per_node is None else self.gpus_per_node
        if self.kind != "slurm" and gpus > torch.cuda.device_count():
            raise ValueError(f"--gpus {gpus}: this machine has {torch.cuda.device_count()} CUDA devices; give at most "
                             f"that, or run the jobs under SLURM (--executor slurm)")
        return gpus

    def submitit(self, folder: Path):
        """The submitit executor (``submitit.AutoExecutor``) writing its job files to ``folder``."""
        import submitit

        try:
            executor = submitit.AutoExecutor(folder=folder, cluster=self.kind)
        except RuntimeError as error:  # submitit's SLURM executor needs srun on PATH
            raise ValueError(f"executor {self.kind!r} is not available here: {error}") from None
        gpus = self.job_gpus()
        executor.update_parameters(timeout_min=self.timeout_min, gpus_per_node=gpus)
        if self.partition:
            executor.update_parameters(slurm_partition=self.partition)
        if self.kind == "slurm" and self.parallel is not None:
            executor.update_parameters(slurm_array_parallelism=self.parallel)
        return executor
