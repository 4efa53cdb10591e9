"""Plugins: tasks, models and reproductions that other installed packages declare, used like the built-in ones.

A package declares them as entry points in the groups ``icl_sim.tasks`` (a Task class whose ``name`` is the entry's
name), ``icl_sim.models`` (an InContextModel class) and ``icl_sim.reproductions`` (a Reproduction whose ``name`` is
the entry's name); see ``examples/plugin``.  The registries (``TASKS``, ``MODELS``, ``REPRODUCTIONS``) are
:class:`WithPlugins`: they load the plugins the first time they are read, not when icl-sim's packages are imported
(a plugin imports icl-sim itself, so loading it then would be circular).  A plugin that fails to load, is not of
its group's kind, or takes a built-in's name is left out with one warning line naming it; it never stops icl-sim.
The names alone (:func:`plugin_names`) are read without importing anything, for the command line's choices and
listings.
"""
from __future__ import annotations

import sys
from importlib.metadata import EntryPoint, entry_points
from typing import Callable, MutableMapping

GROUPS = {"tasks": "icl_sim.tasks", "models": "icl_sim.models", "reproductions": "icl_sim.reproductions"}


def plugin_entries(kind: str) -> list[EntryPoint]:
    """The entry points of ``kind`` ("tasks", "models", "reproductions") that installed packages declare."""
    return sorted(entry_points(group=GROUPS[kind]), key=lambda entry: entry.name)


def plugin_names(kind: str) -> list[str]:
    """The names of ``kind``'s plugins, without importing them."""
    return [entry.name for entry in plugin_entries(kind)]


def describe(entry: EntryPoint) -> str:
    """Where a plugin comes from: its package (and version) and object."""
    package = f"{entry.dist.name} {entry.dist.version}" if entry.dist is not None else "an unknown package"
    return f"plugin from {package}: {entry.value}"


def load_plugins(kind: str, registry: MutableMapping[str, object], accepts: Callable[[object], bool],
                 what: str) -> None:
    """Add ``kind``'s plugins to ``registry`` under their entry names: each one ``accepts`` takes (``what`` says
    what that is, for the warning); any other is left out with a one-line warning on stderr."""
    for entry in plugin_entries(kind):
        if entry.name in registry:
            _warn(kind, entry, f"its name is taken by a built-in {kind[:-1]}")
            continue
        try:
            loaded = entry.load()
        except Exception as error:  # a broken plugin is the plugin author's, and must not stop icl-sim
            first_line = str(error).splitlines()[0] if str(error) else ""
            _warn(kind, entry, f"it failed to load ({type(error).__name__}: {first_line})")
            continue
        if not accepts(loaded):
            _warn(kind, entry, f"it is not {what}")
            continue
        if getattr(loaded, "name", entry.name) != entry.name:
            _warn(kind, entry, f"its name is {loaded.name!r}, not the entry's {entry.name!r}")
            continue
        registry[entry.name] = loaded


class WithPlugins(dict):
    """A registry of built-in entries that adds ``kind``'s plugins (:func:`load_plugins`) when first read."""

    def __init__(self, built_ins: dict, kind: str, accepts: Callable[[object], bool], what: str):
        super().__init__(built_ins)
        self._pending: tuple | None = (kind, accepts, what)

    def _loaded(self) -> "WithPlugins":
        if self._pending is not None:
            kind, accepts, what = self._pending
            self._pending = None  # a read while the plugins load sees the built-ins, and loads nothing again
            load_plugins(kind, self, accepts, what)
        return self

    def __getitem__(self, key):
        return dict.__getitem__(self._loaded(), key)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self._loaded(), key)

    def __iter__(self):
        return dict.__iter__(self._loaded())

    def __len__(self) -> int:
        return dict.__len__(self._loaded())

    def get(self, key, default=None):
        return dict.get(self._loaded(), key, default)

    def keys(self):
        return dict.keys(self._loaded())

    def values(self):
        return dict.values(self._loaded())

    def items(self):
        return dict.items(self._loaded())


def _warn(kind: str, entry: EntryPoint, problem: str) -> None:
    print(f"Warning: {kind[:-1]} plugin {entry.name!r} ({describe(entry)}) left out: {problem}", file=sys.stderr)
