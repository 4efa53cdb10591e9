"""The README's Python example runs as written, on the directory its quickstart command makes."""
import re
from pathlib import Path

import pytest

from icl_sim.paper_repro import von_oswald_2023
from icl_sim.paper_repro import run_reproduction

README = Path(__file__).resolve().parents[1] / "README.md"


def python_example() -> str:
    """The README's first Python code block."""
    return re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL).group(1)


def test_the_quickstart_writes_the_run_the_python_example_loads(tmp_path, monkeypatch):
    quickstart = re.search(r"icl-sim repro run (\S+) --scale quick --out (\S+)", README.read_text())
    name, out = quickstart.groups()
    monkeypatch.chdir(tmp_path)
    run_reproduction(name, "smoke", out, seeds=1, device="cpu", progress=False)
    namespace: dict = {}
    exec(compile(python_example(), "README.md", "exec"), namespace)
    assert namespace["preds"].shape == namespace["gd"].shape == (64, 11)


def test_the_python_examples_step_size_is_the_tasks_best_one_step():
    written = float(re.search(r"GD\(steps=1, lr=([0-9.]+)\)", python_example()).group(1))
    assert written == pytest.approx(von_oswald_2023.best_gd_step_size(), abs=0.005)


def test_the_reproductions_table_is_the_gallerys():
    """The README's reproductions table is drawn from the committed gallery records (`icl-sim repro gallery
    --readme README.md`, or `--redraw` after a change to a claim's declaration): the two cannot disagree."""
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import README_BEGIN, README_END, read_records, readme_table

    lines = README.read_text().splitlines()
    table = lines[lines.index(README_BEGIN) + 1:lines.index(README_END)]
    assert table == readme_table(read_records(REPRODUCTIONS, README.parent / "figures"))


def test_no_table_cell_of_the_readme_is_over_200_characters():
    """The README is the landing page: details live in docs/, so no table cell runs past 200 characters."""
    cells = [cell for line in README.read_text().splitlines() if line.startswith("| ")
             for cell in line.strip("|").split(" | ")]
    assert cells and max(map(len, cells)) <= 200, max(cells, key=len)


def test_the_reference_pages_name_every_model_task_and_claim():
    """docs/reference lists every built-in model and task in its tables, and the how-to counts the claims right:
    a new registration without its row is caught here (plugins document themselves)."""
    from icl_sim import plugins
    from icl_sim.claims import CLAIMS
    from icl_sim.models import MODELS
    from icl_sim.tasks import TASKS

    docs = README.parent / "docs"

    def rows(page):
        return set(re.findall(r"^\| `([a-z0-9-]+)` \|", (docs / "reference" / page).read_text(), re.MULTILINE))

    assert set(MODELS) - set(plugins.plugin_names("models")) <= rows("models.md")
    assert set(TASKS) - set(plugins.plugin_names("tasks")) <= rows("tasks.md")
    numbers = {12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen"}
    assert f"holds {numbers[len(CLAIMS)]} *claims*" in (docs / "how-to" / "verify.md").read_text()
    claims = set(re.findall(r"`([a-z0-9-]+)`", "\n".join(line.split(" | ")[0] for line in
                                                        (docs / "how-to" / "verify.md").read_text().splitlines()
                                                        if line.startswith("| `"))))
    assert claims == set(CLAIMS)


def test_the_readmes_totals_are_the_gallerys():
    """The one sentence of totals beside the table counts what the records hold (reproductions, claims and
    verdicts where decided), so it cannot go stale after a gallery refresh."""
    from collections import Counter

    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import read_records

    entries = read_records(REPRODUCTIONS, README.parent / "figures")
    verdicts = Counter(report.verdict for entry in entries.values() for report in entry.claims())
    text = " ".join(README.read_text().split())
    assert (f"{len(entries)} reproductions, {sum(verdicts.values())} claims, of which {verdicts['held']} held, "
            f"{verdicts['failed']} failed and {verdicts['inconclusive']} inconclusive where they are decided, and "
            f"{verdicts['deferred']} deferred to full") in text


def test_the_readme_says_how_long_the_quick_and_long_scales_take():
    """The README's running times are the sums of the CPU minutes each reproduction of the gallery declares for its
    quick and long scales (measured on this 2-core machine), so adding or re-timing one cannot leave them stale."""
    from icl_sim.paper_repro import REPRODUCTIONS
    from icl_sim.paper_repro.gallery import read_records

    gallery = [entry.reproduction for entry in read_records(REPRODUCTIONS, README.parent / "figures").values()]
    quick = sum(reproduction.quick_minutes for reproduction in gallery)
    long = sum(reproduction.long_minutes or 0 for reproduction in gallery)
    text = " ".join(README.read_text().split())
    assert f"about {quick:.0f} CPU minutes at quick scale and {long:.0f} at long" in text
