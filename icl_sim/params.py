"""Typed parameters for tasks and models: list them, and parse ``KEY=VALUE`` strings."""
from __future__ import annotations

import dataclasses
import typing


def parameter_table(cls) -> list[tuple[str, str, object, str]]:
    """(name, type, default, help) for every public field of a dataclass."""
    hints = typing.get_type_hints(cls)
    return [
        (f.name, _type_name(hints[f.name]), f.default, f.metadata.get("help", ""))
        for f in dataclasses.fields(cls)
        if not f.name.startswith("_")
    ]


def parse_parameters(cls, pairs: typing.Iterable[str]) -> dict[str, object]:
    """Turn ``["noise=0.5", "spectrum=1,2,3"]`` into typed keyword arguments for ``cls``."""
    hints = typing.get_type_hints(cls)
    known = {name for name, *_ in parameter_table(cls)}
    parsed: dict[str, object] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise ValueError(f"parameter {pair!r} must have the form KEY=VALUE")
        if key not in known:
            raise ValueError(f"unknown parameter {key!r}; known: {', '.join(sorted(known))}")
        parsed[key] = _coerce(key, text.strip(), hints[key])
    return parsed


def _coerce(name: str, text: str, annotation):
    """Parse ``text`` as ``annotation`` (int, float, str, bool or an optional tuple of floats)."""
    args = typing.get_args(annotation)
    if type(None) in args:
        if text.lower() in ("", "none"):
            return None
        annotation = next(a for a in args if a is not type(None))
    origin = typing.get_origin(annotation)
    try:
        if origin is tuple:
            item = typing.get_args(annotation)[0]
            return tuple(item(part) for part in text.split(",") if part.strip())
        if annotation is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return lowered in ("true", "1", "yes")
        return annotation(text)
    except ValueError:
        raise ValueError(f"{name} must be of type {_type_name(annotation)}, got {text!r}") from None


def _type_name(annotation) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
