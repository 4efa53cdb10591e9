"""mkdocs hook: let mkdocstrings read ``icl_sim`` as it is installed.  setup.cfg maps three of its subpackages from
top-level folders (``tasks/``, ``theory/``, ``paper_repro/`` become ``icl_sim.tasks``, ``icl_sim.theory``,
``icl_sim.paper_repro``), which griffe, reading source folders, cannot follow; so the build reads a tree of links
laid out as the installed package, in ``LAYOUT`` (mkdocs.yml's ``paths`` of the python handler), made anew when
mkdocs loads this hook (before mkdocstrings reads its ``paths``)."""
from __future__ import annotations

import configparser
import functools
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


@functools.cache
def gallery_entries() -> dict:
    """The gallery's records (``figures/records.json``), read once a build for both the pages and the summary
    table (``on_pre_build`` forgets them, so ``mkdocs serve`` rereads them on each rebuild)."""
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import read_records

    return read_records(REPRODUCTIONS, ROOT / "figures")


def on_pre_build(config):
    gallery_entries.cache_clear()


def on_files(files, config):
    """One page per reproduction, ``reproductions/NAME.md``, drawn from the gallery's records (``figures/``) as
    ``figures/README.md`` is, with its figures beside it; and the figures the other pages draw."""
    from mkdocs.structure.files import File

    from icl_sim.paper_repro.gallery import figure_name, reproduction_page

    for name, entry in gallery_entries().items():
        files.append(File.generated(config, f"reproductions/{name}.md", content=reproduction_page(name, entry)))
        for scale in entry.scales:
            image = f"{figure_name(name, scale)}.png"
            files.append(File.generated(config, f"reproductions/{image}", abs_src_path=str(ROOT / "figures" / image)))
    for image in ("lsa-2-layer-gd-plus-plus-per-step.png", "gpt-d5-linear-regression.png"):  # drawn on the how-to pages
        files.append(File.generated(config, f"figures/{image}", abs_src_path=str(ROOT / "figures" / image)))
    return files


def on_page_markdown(markdown, page, config, files):
    """The reproductions page ends with the gallery's summary table, each name linking to its page."""
    if page.file.src_uri != "reproductions.md":
        return markdown
    from icl_sim.paper_repro.gallery import summary_table

    table = summary_table(gallery_entries(), lambda name: f"reproductions/{name}.md")
    return markdown + "\n\n" + "\n".join(table) + "\n"
