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


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key that occurs twice in one mapping."""

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
        return PARSERS[suffix](text)
    except (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError, DuplicateKey) as error:
        raise ValueError(f"cannot parse {what} {str(path)!r}: {' '.join(str(error).split())}") from None
