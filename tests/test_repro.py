"""The von-oswald-2023 reproduction end to end at quick scale, and its re-use of a finished run."""
import dataclasses
import json
import re

import pytest

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.paper_repro import run_reproduction, von_oswald_2023
from icl_sim.paper_repro.gallery import gallery_page
from icl_sim.paper_repro.runs import train_or_reuse

pytestmark = pytest.mark.slow  # the quick-scale run: about 13 s (smoke scale: tests/test_contracts.py)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("von-oswald")
    return out, run_reproduction("von-oswald-2023", "quick", out, device="cpu", progress=False)


def test_quick_scale_passes_every_check_and_writes_its_files(quick_run):
    out, checks = quick_run
    assert [check.passed for check in checks] == [True] * 6
    saved = json.loads((out / "checks.json").read_text())
    assert [row["quantity"] for row in saved] == [check.quantity for check in checks]
    assert all({"kind", "claim", "verdict", "per_seed", "mean", "ci"} <= set(row) for row in saved)
    results = {row["quantity"]: row["value"] for row in json.loads((out / "results.json").read_text())}
    assert results["gd_step_size"] == pytest.approx(6.09, abs=0.05)  # η* for U(-0.5, 0.5)^10, N = 10
    assert abs(results["loss_model"] - results["loss_gd"]) / results["loss_gd"] < 0.05
    assert (out / "figure.png").stat().st_size > 10_000


def test_a_finished_run_is_reused_and_a_foreign_one_refused(quick_run, monkeypatch):
    out, checks = quick_run
    assert [c.measured for c in run_reproduction("von-oswald-2023", "quick", out, device="cpu",
                                                 progress=False)] == [c.measured for c in checks]
    other = dataclasses.replace(von_oswald_2023.SCALES["quick"], lr=5e-3)
    monkeypatch.setitem(von_oswald_2023.SCALES, "quick", other)
    with pytest.raises(ValueError, match="another config"):
        run_reproduction("von-oswald-2023", "quick", out, device="cpu", progress=False)



def test_a_run_with_tuple_parameters_is_reused(tmp_path):
    """Parameters that JSON stores as lists (a spectrum tuple) still match the declared config."""
    config = TrainConfig(task="linear-regression", task_params={"dim": 2, "points": 4, "spectrum": (2.0, 0.5)},
                         steps=2, batch_size=4, device="cpu", checkpoint_every=1)
    _, first = train_or_reuse(config, tmp_path / "run", progress=False)
    _, again = train_or_reuse(config, tmp_path / "run", progress=False)
    assert again == first and len(first) >= 1


def test_the_gallery_page_keeps_each_check_in_one_table_row():
    """Quantities such as |L_LSA − L_GD| hold pipes; the page escapes them so each check stays one row."""
    check = Check("gap |a − b| / b", 0.05, 0.01, relation="at_most", source="Fig. 2")
    page = gallery_page({"von-oswald-2023": (von_oswald_2023.REPRODUCTION, [check])})
    row = next(line for line in page.splitlines() if line.startswith("| gap"))
    assert re.split(r"(?<!\\)\|", row)[1:-1] == [" gap \\|a − b\\| / b ", " 0.01 ", " ≤ 0.05 ", " Fig. 2 ", " pass "]
