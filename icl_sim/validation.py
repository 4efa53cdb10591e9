"""One-line checks that turn bad parameters into ``ValueError`` naming the parameter (plain values; torch
objects are checked in ``icl_sim.tensor_validation``, so that the CLI can validate without loading torch)."""
from __future__ import annotations

import math

#: the largest integer a setting may take: int64's, what torch, numpy and the saved runs hold (a step, a seed)
LARGEST_INT = 2**63 - 1


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
