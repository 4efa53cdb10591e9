"""Settings files (YAML, JSON, TOML) parsed strictly: a key given twice in one mapping is an error.

PyYAML and the json module keep the last of two equal keys without a word, so a spec with ``grid:`` twice
would run half its grid; TOML refuses duplicates itself.  Both a sweep spec and ``train --config`` read
their file here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib


#: bounds no real settings file approaches, checked before anything is built from one: the values it holds once its
#: YAML aliases are expanded (a "billion laughs" file holds 10⁹ in a few lines) and how deep its values nest
MAX_VALUES, MAX_DEPTH = 100_000, 32


class TooLarge(ValueError):
    """A settings file beyond MAX_VALUES or MAX_DEPTH."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key that occurs twice in one mapping, and a document whose aliases
    expand beyond MAX_VALUES values or MAX_DEPTH levels (counted on the composed nodes, before any is built)."""

    def construct_document(self, node):
        _check_bounds(node, lambda node: [child for pair in node.value for child in pair]
                      if isinstance(node, yaml.MappingNode) else node.value
                      if isinstance(node, yaml.SequenceNode) else [])
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        self.flatten_mapping(node)  # merge keys (<<) first, as the safe loader does
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the safe loader's own error follows
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class DuplicateKey(ValueError):
    """A JSON object with a key given twice."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = next((key for key in keys if keys.count(key) > 1), None)
    if repeated is not None:
        raise DuplicateKey(f"key {repeated!r} is given twice")
    return dict(pairs)


PARSERS = {
    ".yaml": lambda text: yaml.load(text, Loader=_UniqueKeyLoader),
    ".yml": lambda text: yaml.load(text, Loader=_UniqueKeyLoader),
    ".json": lambda text: json.loads(text, object_pairs_hook=_unique_pairs),
    ".toml": tomllib.loads,
}


def read_settings_file(path, what: str, suffixes=tuple(PARSERS)) -> Any:
    """The parsed content of the settings file ``path`` (a ``what``, e.g. "sweep spec", named in every error),
    one of ``suffixes``; an unreadable, undecodable or unparsable file, or a repeated key, is a one-line
    ``ValueError`` naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise ValueError(f"{what} must end in {', '.join(suffixes)}; got {str(path)!r}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read {what} {str(path)!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text (a binary file?)") from None
    try:
        data = PARSERS[suffix](text)
        _check_bounds(data, lambda value: list(value.keys()) + list(value.values()) if isinstance(value, dict)
                      else value if isinstance(value, list) else [])
    except RecursionError:  # the JSON parser's, on nesting thousands deep
        raise ValueError(f"cannot parse {what} {str(path)!r}: it nests deeper than {MAX_DEPTH} levels") from None
    except (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError, DuplicateKey, TooLarge) as error:
        raise ValueError(f"cannot parse {what} {str(path)!r}: {' '.join(str(error).split())}") from None
    return data


def _check_bounds(root, children) -> None:
    """Refuse ``root`` if it holds more than MAX_VALUES values, counting every reference to a shared value again
    (as building it would), nests deeper than MAX_DEPTH, or contains itself; ``children(value)`` lists a value's
    parts.  Iterative, and each shared value is counted once and then multiplied: fast on any input."""
    sizes: dict[int, int] = {}
    stack = [(root, 1, False)]
    open_values: set[int] = set()
    while stack:
        value, depth, done = stack.pop()
        if done:
            open_values.discard(id(value))
            sizes[id(value)] = 1 + sum(sizes[id(child)] for child in children(value))
            if sizes[id(value)] > MAX_VALUES:
                raise TooLarge(f"it holds more than {MAX_VALUES} values once its aliases are expanded")
            continue
        if depth > MAX_DEPTH:
            raise TooLarge(f"it nests deeper than {MAX_DEPTH} levels")
        if id(value) in open_values:
            raise TooLarge("a value contains itself (a recursive alias)")
        if id(value) in sizes:
            continue
        open_values.add(id(value))
        stack.append((value, depth, True))
        stack.extend((child, depth + 1, False) for child in children(value))
