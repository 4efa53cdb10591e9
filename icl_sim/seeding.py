"""Deterministic random streams: batch t of a run is a pure function of (seed, stream, t).

Each purpose (training data, evaluation data, model initialisation, task pools, a fixed
covariance, Monte Carlo estimates of a task's constants)
draws from its own stream, so evaluation prompts never coincide with training
prompts and a resumed run sees exactly the batches an uninterrupted one would.
"""
from __future__ import annotations

import numpy as np
import torch

STREAMS = {"train": 0, "eval": 1, "init": 2, "pool": 3, "dropout": 4, "covariance": 5, "moments": 6}


def derive_seed(seed: int, stream: str, index: int = 0, shard: int = 0) -> int:
    """A 63-bit seed for item ``index`` of ``stream`` under the run seed ``seed`` (its part ``shard``; part 0 is
    the whole item's seed, so a batch of one shard is the unsharded batch)."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {sorted(STREAMS)}, got {stream!r}")
    if seed < 0 or index < 0 or shard < 0:
        raise ValueError(f"seed, index and shard must be >= 0, got seed={seed}, index={index}, shard={shard}")
    entropy = [seed, STREAMS[stream], index] + ([shard] if shard else [])
    state = np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]
    return int(state) & (2**63 - 1)


def make_generator(seed: int, stream: str, index: int = 0, device="cpu", shard: int = 0) -> torch.Generator:
    """A fresh ``torch.Generator`` on ``device`` for item ``index`` of ``stream`` (its part ``shard``)."""
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(derive_seed(seed, stream, index, shard))
    return generator


def seed_global_generators(seed: int, device) -> None:
    """Seed torch's global generators on ``device`` (CPU, and the current CUDA device's there), as dropout reads.

    ``torch.manual_seed`` does the same for every accelerator torch knows, queueing each lazily with a
    captured stack trace: called once per training step, that cost 15 % of a small model's step.
    """
    torch.default_generator.manual_seed(seed)
    if torch.device(device).type == "cuda":
        torch.cuda.manual_seed(seed)
