"""One-line checks of torch objects (generators, dtypes, devices) that raise ``ValueError`` naming the parameter."""
from __future__ import annotations

import torch


def check_generator(name: str, value) -> None:
    """Require a ``torch.Generator``: every sampler draws from an explicit one (``icl_sim.seeding``)."""
    if not isinstance(value, torch.Generator):
        raise ValueError(f"{name} must be a torch.Generator (icl_sim.seeding.make_generator), "
                         f"got {type(value).__name__}")


def check_float_dtype(name: str, value) -> None:
    """Require a floating-point ``torch.dtype`` (float32, float64, ...)."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"{name} must be a floating-point torch.dtype such as torch.float32, got {value!r}")


def check_device(name: str, value) -> torch.device:
    """``value`` as a ``torch.device`` that this machine has, else ``ValueError`` naming ``name``."""
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError):
        raise ValueError(f"{name} must be a device such as 'cpu' or 'cuda', got {value!r}") from None
    if device.type == "cuda" and (not torch.cuda.is_available()
                                  or (device.index or 0) >= torch.cuda.device_count()):
        raise ValueError(f"{name} {value!r} is not available on this machine")
    return device
