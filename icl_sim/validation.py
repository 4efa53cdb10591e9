"""One-line checks that turn bad parameters into ``ValueError`` naming the parameter."""
from __future__ import annotations

import math

import torch


def check_int(name: str, value, minimum: int = 0, maximum: int | None = None, *,
              maximum_name: str | None = None) -> None:
    """Require an integer in [minimum, maximum]; ``maximum_name`` says where a maximum set by other parameters
    comes from (e.g. "nodes - 1"), so that the message names them too."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = ""
        if maximum is not None:
            upper = f" and <= {maximum}" if maximum_name is None else f" and <= {maximum_name} = {maximum}"
        raise ValueError(f"{name} must be >= {minimum}{upper}, got {value}")


def check_float(name: str, value, minimum: float = -math.inf, *, strict: bool = False,
                maximum: float = math.inf) -> None:
    """Require a finite real number above ``minimum`` (strictly if ``strict``) and at most ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    below = value <= minimum if strict else value < minimum
    if below or value > maximum:
        lower = f"> {minimum}" if strict else f">= {minimum}"
        upper = "" if maximum == math.inf else f" and <= {maximum}"
        raise ValueError(f"{name} must be {lower}{upper}, got {value}")


def checked_floats(name: str, values) -> tuple[float, ...]:
    """``values`` as a tuple of finite numbers, an entry named ``name[i]``; a non-sequence names ``name``."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}")
    values = tuple(values)
    for index, value in enumerate(values):
        check_float(f"{name}[{index}]", value)
    return values


def check_choice(name: str, value, choices) -> None:
    """Require ``value`` to be one of ``choices``, of the same type (so 2.0 is not the choice 2, nor True 1)."""
    if not any(type(value) is type(choice) and value == choice for choice in choices):
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")


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
