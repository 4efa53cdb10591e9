"""Typed output directories: a directory holds one kind of output (a training run, a sweep, one reproduction at
one scale), and a command refuses a directory that holds another, as ``train`` refuses another run.

A training run is known by its ``config.json``.  A sweep's root and a reproduction's directory record what they
hold in ``.icl-sim-output.json`` when first written; one written before that record existed is known by its files
(``sweep.json``; ``checks.json`` or ``control.json``) and takes the record of the first command that claims it.
"""
from __future__ import annotations

import json
from pathlib import Path

from icl_sim.atomic import write_text

RECORD_FILE = ".icl-sim-output.json"
#: the files by which an unrecorded directory's kind is known
KNOWN_BY = {"run": ("config.json",), "sweep": ("sweep.json",), "reproduction": ("checks.json", "control.json")}


def claim_output(directory, kind: str, **identity) -> None:
    """Record that ``directory`` holds output of ``kind`` (with ``identity``, e.g. the reproduction and its scale),
    or refuse it in one line if it holds another kind or another identity.  A run directory records nothing
    (its ``config.json`` says what it is)."""
    directory = Path(directory)
    wanted = {"kind": kind, **identity}
    found = held_output(directory)
    if found is not None and (found["kind"] != kind or any(found.get(key, value) != value
                                                           for key, value in identity.items())):
        raise ValueError(f"{str(directory)!r} holds {_described(found)}; give another --out for {_described(wanted)}")
    if kind != "run" and found != wanted:
        write_text(directory / RECORD_FILE, json.dumps(wanted, sort_keys=True) + "\n")


def held_output(directory) -> dict | None:
    """What ``directory`` holds ({"kind": ..., and its identity where recorded}), or None if nothing of icl-sim's."""
    directory = Path(directory)
    record = directory / RECORD_FILE
    if record.is_file():
        try:
            found = json.loads(record.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            found = None
        if isinstance(found, dict) and found.get("kind") in KNOWN_BY:
            return found
        raise ValueError(f"{record} is not an icl-sim output record; restore it, or delete it if {str(directory)!r} "
                         f"holds nothing you need")
    for kind, files in KNOWN_BY.items():
        if any((directory / name).is_file() for name in files):
            return {"kind": kind}
    return None


def _described(output: dict) -> str:
    if output["kind"] == "reproduction" and "name" in output:
        return f"the reproduction {output['name']} at {output['scale']} scale"
    return {"run": "a training run", "sweep": "a sweep", "reproduction": "a reproduction"}[output["kind"]]
