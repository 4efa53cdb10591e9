"""``icl-sim repro run`` as a user meets it: seed blocks, the summary of claims apart from sanity checks, exit
codes, the untrained control and the full-scale rehearsal."""
import dataclasses
import json

import pytest
from click.testing import CliRunner
from test_evidence import TOY

import icl_sim.paper_repro as paper_repro
from icl_sim import catalogue
from icl_sim.cli import cli
from icl_sim.paper_repro.spec import Claim


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_smoke_scale_reports_claims_apart_from_sanity_and_exits_0(tmp_path):
    out = tmp_path / "vo"
    result = invoke("repro", "run", "von-oswald-2023", "--scale", "smoke", "--seeds", "2", "--first-seed", "3",
                    "--out", str(out), "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "von-oswald-2023: claims: 0 held, 3 failed, 0 deferred (of 3); sanity: 1 of 1" in result.output
    assert "smoke scale tests the pipeline only" in result.output
    assert sorted(path.name for path in (out / "runs" / "lsa").iterdir()) == ["seed-3", "seed-4"]
    assert all(len(row["per_seed"]) == 2 for row in json.loads((out / "checks.json").read_text())
               if row["kind"] == "claim")


@pytest.fixture
def toy(monkeypatch):
    """The toy reproduction of test_evidence registered: its claim 'learns' holds, 'never' is deferred."""
    monkeypatch.setitem(paper_repro.REPRODUCTIONS, "toy", TOY)
    listed = catalogue.read()
    monkeypatch.setattr(catalogue, "read", lambda: {**listed, "reproductions": [*listed["reproductions"], "toy"]})
    return TOY


def test_a_failed_claim_exits_1_and_a_deferred_one_does_not(toy, tmp_path, monkeypatch):
    result = invoke("repro", "run", "toy", "--out", str(tmp_path / "a"), "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "toy: claims: 1 held, 0 failed, 1 deferred (of 2); sanity: 1 of 1" in result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("[HELD] claim learns") and lines[1].startswith("[DEFERRED] claim never")
    assert lines[2].startswith("[PASS] two plus two")
    undeferred = (toy.claims[0], Claim("never", "it never errs", "Fig. 2"))
    monkeypatch.setitem(paper_repro.REPRODUCTIONS, "toy", dataclasses.replace(toy, claims=undeferred))
    failing = invoke("repro", "run", "toy", "--out", str(tmp_path / "b"), "--device", "cpu", "--no-progress")
    assert failing.exit_code == 1 and "claims: 1 held, 1 failed, 0 deferred (of 2)" in failing.output


def test_the_untrained_control_exits_1_when_a_claim_holds_for_it(toy, tmp_path):
    result = invoke("repro", "run", "toy", "--control", "untrained", "--out", str(tmp_path), "--device", "cpu",
                    "--no-progress")
    assert result.exit_code == 1
    assert "toy, untrained control: the untrained models fail 1 of 2 claims (never); they HOLD learns" in result.output
    assert json.loads((tmp_path / "control.json").read_text())[0]["claim"] == "learns"
    vo = invoke("repro", "run", "von-oswald-2023", "--scale", "smoke", "--control", "untrained", "--out",
                str(tmp_path / "vo"), "--device", "cpu", "--no-progress")
    assert vo.exit_code == 0, vo.output
    assert "the untrained models fail 3 of 3 claims (one-gd-step, gd-weights, out-of-distribution)" in vo.output


def test_the_full_scale_is_rehearsed_with_each_runs_cost(tmp_path):
    result = invoke("repro", "run", "von-oswald-2023", "--scale", "full", "--rehearse", "--out", str(tmp_path),
                    "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.output
    for seed in range(3):
        assert f"    lsa/seed-{seed}: 242 parameters, peak memory" in result.output
    assert "5,000 steps" in result.output and "von-oswald-2023: rehearsed 10 checks on 3 runs; full scale: 3 runs" \
        in result.output
    assert sorted(path.name for path in (tmp_path / "runs" / "lsa").iterdir()) == ["seed-0"]
    assert (tmp_path / "rehearsal.json").is_file() and (tmp_path / "figure.png").is_file()


@pytest.mark.parametrize("args, message", [
    (["--scale", "quick", "--rehearse"], "--rehearse rehearses the full scale"),
    (["--scale", "full", "--rehearse", "--control", "untrained"], "--rehearse rehearses the full scale"),
    (["--control", "shuffled"], "'shuffled' is not 'untrained'"),
    (["--first-seed", "-1"], "--first-seed"),
    (["--scale", "smoke", "--executor", "slurm"], "--executor applies to --scale full only: at --scale smoke"),
    (["--gpus", "2"], "--gpus applies to --scale full only: at --scale quick"),
    (["--scale", "full", "--rehearse", "--executor", "local"], "--executor applies to --scale full only: in a rehe"),
])
def test_bad_evidence_options_are_one_line_errors(tmp_path, args, message):
    result = invoke("repro", "run", "von-oswald-2023", *args, "--out", str(tmp_path / "x"))
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "x").exists()
