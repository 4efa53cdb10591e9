"""The example notebooks (``examples/notebooks``, jupytext py:percent files) run end to end at their small size and
open as notebooks with their markdown and code cells."""
import runpy
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "examples" / "notebooks").glob("*.py"))


def test_there_are_the_four_notebooks_the_docs_name():
    assert [path.stem for path in NOTEBOOKS] == ["compare_baseline", "garg_checkpoint", "probe_layers",
                                                 "verify_formula"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_at_its_small_size(path, tmp_path, monkeypatch, capsys):
    if path.stem == "garg_checkpoint":
        pytest.importorskip("transformers")
    monkeypatch.setenv("ICL_SIM_EXAMPLE_SMALL", "1")
    monkeypatch.delenv("GARG_RUN", raising=False)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()  # each notebook prints what it found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_opens_as_a_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    cells = jupytext.read(path)["cells"]
    kinds = [cell["cell_type"] for cell in cells]
    assert kinds[0] == "markdown" and "code" in kinds and cells[0]["source"].startswith("# ")
