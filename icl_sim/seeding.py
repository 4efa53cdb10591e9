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


def derive_seed(seed: int, stream: str, index: int = 0) -> int:
    """A 63-bit seed for item ``index`` of ``stream`` under the run seed ``seed``."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {sorted(STREAMS)}, got {stream!r}")
    if seed < 0 or index < 0:
        raise ValueError(f"seed and index must be >= 0, got seed={seed}, index={index}")
    state = np.random.SeedSequence([seed, STREAMS[stream], index]).generate_state(1, np.uint64)[0]
    return int(state) & (2**63 - 1)


def make_generator(seed: int, stream: str, index: int = 0, device="cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` on ``device`` for item ``index`` of ``stream``."""
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(derive_seed(seed, stream, index))
    return generator
