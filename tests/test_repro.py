"""The von-oswald-2023 reproduction end to end at quick scale over its three default seeds, its untrained control,
and its re-use of a finished run."""
import dataclasses
import json

import pytest

from icl_sim.config import TrainConfig
from icl_sim.paper_repro import run_reproduction, von_oswald_2023
from icl_sim.paper_repro.evidence import held_claims
from icl_sim.paper_repro.runs import train_or_reuse

pytestmark = pytest.mark.slow  # the quick-scale run, three seeds as one ensemble (smoke scale: tests/test_contracts.py)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("von-oswald")
    return out, run_reproduction("von-oswald-2023", "quick", out, device="cpu", progress=False)


def test_quick_scale_holds_every_claim_over_three_seeds_and_writes_its_files(quick_run):
    out, checks = quick_run
    assert [(check.kind, check.verdict, len(check.per_seed)) for check in checks] == [("claim", "held", 3)] * 5 + [
        ("sanity", "passed", 0)] * 5
    saved = json.loads((out / "checks.json").read_text())
    assert [row["quantity"] for row in saved] == [check.quantity for check in checks]
    assert all({"kind", "claim", "verdict", "per_seed", "mean", "ci"} <= set(row) for row in saved)
    results = {row["quantity"]: row["value"] for row in json.loads((out / "results.json").read_text())}
    assert results["gd_step_size"] == pytest.approx(6.06, abs=0.05)  # η* = nσ²/(μ₄ + (d + n − 2)σ⁴), U(-0.5, 0.5)^10
    assert abs(results["loss_model"] - results["loss_gd"]) / results["loss_gd"] < 0.05
    assert (out / "figure.png").stat().st_size > 10_000


def test_the_untrained_control_fails_every_claim(quick_run):
    out, _ = quick_run
    control = run_reproduction("von-oswald-2023", "quick", out, control="untrained", device="cpu", progress=False)
    assert held_claims(von_oswald_2023.REPRODUCTION, control) == []
    assert all(not check.passed and check.seeds_held == 0 for check in control if check.kind == "claim")


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
