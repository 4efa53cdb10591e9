"""mkdocs hook: let mkdocstrings read ``icl_sim`` as it is installed.  setup.cfg maps three of its subpackages from
top-level folders (``tasks/``, ``theory/``, ``paper_repro/`` become ``icl_sim.tasks``, ``icl_sim.theory``,
``icl_sim.paper_repro``), which griffe, reading source folders, cannot follow; so the build reads a tree of links
laid out as the installed package, in ``LAYOUT`` (mkdocs.yml's ``paths`` of the python handler), made anew when
mkdocs loads this hook (before mkdocstrings reads its ``paths``)."""
from __future__ import annotations

import configparser
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the tree of links griffe reads (git ignores it)
LAYOUT = ROOT / "build" / "docs-layout"


def installed_layout(root: Path, into: Path) -> Path:
    """Links under ``into`` laid out as the installed packages of setup.cfg's ``package_dir`` map; returns ``into``."""
    setup = configparser.ConfigParser()
    setup.read(root / "setup.cfg")
    mapping = dict(map(str.strip, line.split("=")) for line in setup["options"]["package_dir"].splitlines() if line)
    for package, folder in sorted(mapping.items()):  # parents first: a child inside its parent's folder is there
        target = into.joinpath(*package.split("."))
        if "." not in package:
            target.mkdir(parents=True)
            for entry in (root / folder).iterdir():
                (target / entry.name).symlink_to(entry)
        elif not target.exists():
            target.symlink_to(root / folder)
    return into


# made on import: mkdocs imports its hooks before the plugins read their configuration
shutil.rmtree(LAYOUT, ignore_errors=True)
installed_layout(ROOT, LAYOUT)
