"""One run on several processes: ``torchrun`` and DistributedDataParallel, with results independent of their number.

Batch t of a run is ``batch_shards`` shards of equal size, shard s drawn from (seed, t, s)
(:mod:`icl_sim.seeding`); rank r of W processes takes shards r, r + W, r + 2W, ... and
DistributedDataParallel averages the ranks' gradients.  Every loss is a mean over equally sized
shards, so W processes take the optimiser step of the whole batch, as one process does, up to the
order of floating-point reductions (dropout excepted: its masks depend on how the batch is split).
Only rank 0 writes the run directory.

``icl_sim.training.train`` joins the process group that ``torchrun`` describes in its environment:
``torchrun --nproc_per_node K -m icl_sim.cli train ...`` trains one run on K processes.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import distributed, nn
from torch.nn.parallel import DistributedDataParallel

#: the environment ``torchrun`` gives each process it starts
TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class World:
    """This process's place among the processes that train one run: its ``rank`` among ``size``."""

    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        """Rank 0, the one that writes the run directory."""
        return self.rank == 0

    def shards(self, batch_shards: int) -> range:
        """The shards of every batch this rank draws."""
        if batch_shards % self.size:
            raise ValueError(f"batch_shards ({batch_shards}) must be a multiple of the number of processes "
                             f"({self.size}, torchrun --nproc_per_node); the run's batch is split by shard")
        return range(self.rank, batch_shards, self.size)

    def barrier(self) -> None:
        """Wait for every rank (nothing to wait for alone)."""
        if self.size > 1:
            distributed.barrier()

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over the ranks (the value itself alone)."""
        if self.size == 1:
            return value
        total = value.detach().clone()
        distributed.all_reduce(total)
        return total / self.size


def current_world() -> World:
    """The world of the process group this process has joined; a world of one if it has joined none."""
    if distributed.is_available() and distributed.is_initialized():
        return World(distributed.get_rank(), distributed.get_world_size())
    return World()


def launched_by_torchrun() -> bool:
    """Whether ``torchrun`` started this process (its environment names a rank, a world size and a master)."""
    return all(name in os.environ for name in TORCHRUN_VARIABLES)


@contextlib.contextmanager
def process_group(device: torch.device) -> Iterator[tuple[torch.device, World]]:
    """Yield this process's device and world, joining torchrun's process group for the block if it was not joined.

    The backend is nccl on CUDA (each process on GPU ``LOCAL_RANK``), gloo on CPU.  Outside torchrun
    (or inside a group joined already) nothing is set up and nothing is torn down.
    """
    if not launched_by_torchrun() or distributed.is_initialized():
        yield device, current_world()
        return
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        yield device, current_world()
    finally:
        distributed.destroy_process_group()


class DistributedModel(DistributedDataParallel):
    """A module computing ``training_predictions`` as its forward (:class:`icl_sim.training.TrainingPredictions`)
    under DistributedDataParallel, which synchronises what that forward runs; with the ``training_predictions``
    the training loss calls."""

    def __init__(self, forward: nn.Module, device: torch.device):
        super().__init__(forward, device_ids=[device.index] if device.type == "cuda" else None)

    def training_predictions(self, xs, ys, step, last_only):
        return self(xs, ys, step, last_only)


def parallel(forward: nn.Module, device: torch.device, world: World) -> nn.Module:
    """``forward`` (see :class:`DistributedModel`) under DistributedDataParallel when several processes train it."""
    return DistributedModel(forward, device) if world.size > 1 else forward
