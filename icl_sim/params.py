"""Typed parameters for tasks, models and the training config: list them, and parse ``KEY=VALUE`` strings."""
from __future__ import annotations

import collections.abc
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
    """Turn ``["noise=0.5", "spectrum=1,2,3"]`` into typed keyword arguments for ``cls``.

    A key given twice (``dim=3``, ``dim=4``) is an error, not a silent choice.
    """
    values, pairs_by_name = {}, {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"parameter {pair!r} must have the form KEY=VALUE")
        name = parameter_name(key)
        if name in pairs_by_name:
            raise ValueError(f"parameter {name} given twice ({pairs_by_name[name]} and {pair}); give it once")
        values[name], pairs_by_name[name] = text.strip(), pair
    return typed_parameters(cls, values)


def typed_parameters(cls, values: typing.Mapping) -> dict[str, object]:
    """``values`` (e.g. read from a config file) as keyword arguments for dataclass ``cls``.

    Unknown names raise ``ValueError``; text for a field that is not text is parsed as in
    ``KEY=VALUE`` (so YAML's ``lr: 1e-3``, a string there, is a float); a mapping for a
    dataclass-typed field builds that dataclass; any other value passes unchanged, for
    ``cls`` to validate.
    """
    hints = typing.get_type_hints(cls)
    known = {name for name, *_ in parameter_table(cls)}
    typed: dict[str, object] = {}
    for key, value in values.items():
        key = parameter_name(key)
        if key not in known:
            raise ValueError(f"unknown parameter {key!r}; known: {', '.join(sorted(known))}")
        typed[key] = _typed(key, value, hints[key])
    return typed


def parameter_name(key) -> str:
    """A parameter's field name as written in text (``x-distribution`` names ``x_distribution``)."""
    return str(key).strip().replace("-", "_")


def _typed(name: str, value, annotation):
    if isinstance(value, str):
        return value if annotation is str else _coerce(name, value.strip(), annotation)
    kind = non_optional(annotation)
    if is_mapping(kind) and not isinstance(value, collections.abc.Mapping):
        raise ValueError(f"{name} must be a mapping of parameter names to values, got {value!r}")
    if dataclasses.is_dataclass(kind) and isinstance(value, collections.abc.Mapping):
        try:
            return kind(**value)
        except TypeError as error:
            raise ValueError(f"{name}: {error}") from None
    if dataclasses.is_dataclass(kind) and value is not None and not isinstance(value, kind):
        # e.g. YAML reads an unquoted 3:1 as the base-60 integer 181
        raise ValueError(f"{name} must be a {kind.__name__}, as text (quoted in YAML) or a mapping; got {value!r}")
    return value


def is_mapping(annotation) -> bool:
    """Whether ``annotation`` is a mapping type (``dict``, ``Mapping[str, Any]``, ...)."""
    kind = typing.get_origin(annotation) or annotation
    return isinstance(kind, type) and issubclass(kind, collections.abc.Mapping)


def non_optional(annotation):
    """``X`` for ``X | None``, else the annotation itself."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if type(None) in typing.get_args(annotation) and len(args) == 1 else annotation


def _coerce(name: str, text: str, annotation):
    """Parse ``text`` as ``annotation``: int, float, str, bool, a tuple of numbers, a class with ``parse``, optional."""
    if type(None) in typing.get_args(annotation):
        if text.lower() in ("", "none"):
            return None
        annotation = non_optional(annotation)
    if callable(getattr(annotation, "parse", None)):
        try:
            return annotation.parse(text)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
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
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be of type {_type_name(annotation)}, got {text!r}") from None


def _type_name(annotation) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
