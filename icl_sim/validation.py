"""One-line checks that turn bad parameters into ``ValueError`` naming the parameter."""
from __future__ import annotations

import math


def check_int(name: str, value, minimum: int = 0, maximum: int | None = None) -> None:
    """Require an integer in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
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


def check_choice(name: str, value, choices) -> None:
    """Require ``value`` to be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")
