"""The listings (``tasks``, ``theory list``, ``repro list``) and the names a command checks first, kept in a file,
so that a listing or an unknown name's error needs no torch (about a second, not five).

``catalogue.json`` beside this module is built from the registries by ``python -m icl_sim.catalogue``; the
registries stay the source of truth, and tests/test_cli.py holds the file equal to a fresh build.  Importing this module loads none of the numerical
libraries; only :func:`build` does.
"""
from __future__ import annotations

import json
from pathlib import Path

from icl_sim.plugins import describe, plugin_entries, plugin_names
from icl_sim.validation import check_choice

CATALOGUE_FILE = Path(__file__).with_name("catalogue.json")


#: the catalogue's listings that installed plugins extend: listing -> plugin kind
PLUGIN_LISTINGS = {"tasks": "tasks", "repro": "reproductions", "reproductions": "reproductions"}


def built() -> dict:
    """The catalogue as last built: the built-in entries."""
    return json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))


def read() -> dict:
    """The catalogue as last built, with installed plugins added, read from their packages' entry points without
    importing them."""
    listings = built()
    for listing, kind in PLUGIN_LISTINGS.items():
        entries = plugin_entries(kind)
        listings[listing] += ([entry.name for entry in entries] if listing == "reproductions" else
                              [f"{entry.name}  ({describe(entry)})" for entry in entries])
    return listings


def check_name(kind: str, parameter: str, name: str) -> None:
    """Refuse ``name`` unless the catalogue lists it among its ``kind`` ("reproductions", "claims")."""
    check_choice(parameter, name, read()[kind])


def build() -> dict:
    """The catalogue from the registries, built-in entries only (this imports the numerical libraries)."""
    from icl_sim.claims import CLAIMS
    from icl_sim.paper_repro import REPRODUCTIONS

    reproductions = {name: value for name, value in REPRODUCTIONS.items()
                     if name not in plugin_names("reproductions")}
    return {"tasks": tasks_listing(), "theory": theory_listing(CLAIMS), "repro": repro_listing(reproductions),
            "reproductions": list(reproductions), "claims": list(CLAIMS)}


def tasks_listing() -> list[str]:
    from icl_sim.params import parameter_table
    from icl_sim.tasks import TASKS

    lines = []
    for name, task_class in TASKS.items():
        if name in plugin_names("tasks"):
            continue
        algorithms = ", ".join(task_class.probe_algorithms) or "none"
        lines.append(f"{name}  (metric: {task_class.metric}; probe algorithms: {algorithms})")
        lines.append(f"    {(task_class.__doc__ or '').strip().splitlines()[0]}")
        for parameter, type_name, default, help_text in parameter_table(task_class):
            lines.append(f"    {parameter:<18} {type_name:<24} default {default!r:<10} {help_text}")
    return lines + ["Set any of these with  icl-sim train --task NAME --task-param KEY=VALUE"]


def theory_listing(claims) -> list[str]:
    return [line for claim in claims.values()
            for line in (f"{claim.name:<30} {claim.summary}", f"{'':<30} source: {claim.source}")]


def repro_listing(reproductions) -> list[str]:
    lines = []
    for name, reproduction in reproductions.items():
        paper = reproduction.paper
        long = f", long ≈ {reproduction.long_minutes:g} min" if reproduction.long_minutes is not None else ""
        lines.append(f"{name}  {paper.authors.split(',')[0]} et al., {paper.venue} "
                     f"(quick scale ≈ {reproduction.quick_minutes:g} min{long})")
        lines.append(f"    {reproduction.summary}")
        for claim in reproduction.claims:
            lines.append(f"    claim {claim.id} (decided at {claim.decided_at}): {claim.statement} [{claim.source}]")
    return lines


def main() -> None:
    """Rebuild ``catalogue.json`` (atomically)."""
    from icl_sim.atomic import write_text

    write_text(CATALOGUE_FILE, json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {CATALOGUE_FILE}")


if __name__ == "__main__":
    main()
