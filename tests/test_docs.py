"""The documentation site builds without a warning (``mkdocs build --strict``) and documents every command and the
public API from the docstrings."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icl_sim.cli import cli

pytest.importorskip("mkdocs")
ROOT = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly_with_every_command_and_the_api(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr
    commands = (tmp_path / "cli" / "index.html").read_text()
    assert all(f"icl-sim {name}" in commands for name in cli.commands)
    assert "load_run" in (tmp_path / "api" / "runs" / "index.html").read_text()
    assert "from_hf_gpt2" in (tmp_path / "api" / "models" / "index.html").read_text()
    assert "WithPlugins" in (tmp_path / "plugins" / "index.html").read_text()
    # the subpackages setup.cfg maps from top-level folders (docs/hooks.py lays them out as installed)
    for page, name in (("tasks", "make_task"), ("theory", "Ridge"), ("reproductions", "claim_check")):
        assert name in (tmp_path / "api" / page / "index.html").read_text(), page
    # one page per reproduction in the gallery's records, with its figure, linked from the reproductions page
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import read_records

    recorded = read_records(REPRODUCTIONS, ROOT / "figures")
    index = (tmp_path / "reproductions" / "index.html").read_text()
    for name in recorded:
        page = (tmp_path / "reproductions" / name / "index.html").read_text()
        assert f'src="../{name}.png"' in page and f'href="{name}/"' in index, name
