"""``icl-sim repro run`` as a user meets it: seed blocks, the summary of claims apart from sanity checks, exit
codes, the untrained control and the full-scale rehearsal."""
import dataclasses
import json

import pytest
from click.testing import CliRunner
from test_evidence import DECIDING, TOY, deciding_checks

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
    # smoke decides no claim: every one is deferred, its values shown
    assert ("von-oswald-2023: claims: 0 held, 0 failed, 0 inconclusive, 2 deferred (of 2); sanity: 1 of 5"
            in result.output)
    assert "smoke scale tests the pipeline only" in result.output
    assert sorted(path.name for path in (out / "runs" / "lsa").iterdir()) == ["seed-3", "seed-4"]
    assert all(len(row["per_seed"]) == 2 for row in json.loads((out / "checks.json").read_text())
               if row["kind"] == "claim")


def register(monkeypatch, reproduction):
    """``reproduction`` registered as the CLI sees the package's own."""
    monkeypatch.setitem(paper_repro.REPRODUCTIONS, reproduction.name, reproduction)
    listed = catalogue.read()
    monkeypatch.setattr(catalogue, "read",
                        lambda: {**listed, "reproductions": [*listed["reproductions"], reproduction.name]})
    return reproduction


@pytest.fixture
def toy(monkeypatch):
    """The toy reproduction of test_evidence registered: its claim 'learns' holds, 'never' is deferred."""
    return register(monkeypatch, TOY)


def test_a_gallery_reusing_the_runs_of_repro_run_reports_the_minutes_they_took(toy, tmp_path):
    """``repro run`` keeps its minutes beside the runs it trained; a gallery refresh that only reuses them reports
    those minutes, not its own few seconds; a rerun that trains nothing keeps them."""
    from icl_sim.paper_repro.gallery import MINUTES_FILE, refresh_gallery

    runs = tmp_path / "runs"
    assert invoke("repro", "run", "toy", "--scale", "quick", "--out", str(runs / "toy-quick"), "--device", "cpu",
                  "--no-progress").exit_code == 0
    kept = json.loads((runs / "toy-quick" / MINUTES_FILE).read_text())["minutes"]
    assert kept > 0
    (runs / "toy-quick" / MINUTES_FILE).write_text(json.dumps({"minutes": 12.5}))  # as if training took 12.5
    assert invoke("repro", "run", "toy", "--scale", "quick", "--out", str(runs / "toy-quick"), "--device", "cpu",
                  "--no-progress").exit_code == 0
    records = refresh_gallery({"toy": toy}, tmp_path / "figures", runs, device="cpu")
    assert records["toy"].scales["quick"].elapsed.minutes == 12.5


def test_a_failed_claim_exits_1_and_a_deferred_one_does_not(toy, tmp_path, monkeypatch):
    result = invoke("repro", "run", "toy", "--out", str(tmp_path / "a"), "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "toy: claims: 1 held, 0 failed, 0 inconclusive, 1 deferred (of 2); sanity: 1 of 1" in result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("[HELD] claim learns")
    assert lines[1].startswith("[DEFERRED] claim never (decided at full)")
    assert lines[2].startswith("[PASS] two plus two")
    undeferred = (toy.claims[0], Claim("never", "it never errs", "Fig. 2"))
    monkeypatch.setitem(paper_repro.REPRODUCTIONS, "toy", dataclasses.replace(toy, claims=undeferred))
    failing = invoke("repro", "run", "toy", "--out", str(tmp_path / "b"), "--device", "cpu", "--no-progress")
    assert failing.exit_code == 1 and "claims: 1 held, 1 failed, 0 inconclusive, 0 deferred (of 2)" in failing.output


def test_each_scale_decides_its_claims_and_exits_1_only_on_a_failure_it_decides(monkeypatch, tmp_path):
    """The reproduction of test_evidence whose claims are decided at quick, long and full, through the CLI."""
    register(monkeypatch, DECIDING)
    quick = invoke("repro", "run", "deciding", "--out", str(tmp_path / "quick"), "--device", "cpu", "--no-progress")
    assert quick.exit_code == 1, quick.output  # its claim 'failed' is decided at quick
    assert "deciding: claims: 2 held, 1 failed, 1 inconclusive, 2 deferred (of 6); sanity: 1 of 1" in quick.output
    assert "[DEFERRED] claim at-long (decided at long), steps: mean 10 over 3 seeds" in quick.output
    without_failure = dataclasses.replace(DECIDING, claims=tuple(claim for claim in DECIDING.claims
                                                                 if claim.id != "failed"),
                                          checks=lambda results, settings: [
                                              check for check in deciding_checks(results, settings)
                                              if check.claim != "failed"])
    register(monkeypatch, without_failure)
    inconclusive = invoke("repro", "run", "deciding", "--out", str(tmp_path / "quick-2"), "--device", "cpu",
                          "--no-progress")
    assert inconclusive.exit_code == 0, inconclusive.output  # an inconclusive claim fails nothing
    register(monkeypatch, DECIDING)
    long = invoke("repro", "run", "deciding", "--scale", "long", "--out", str(tmp_path / "long"), "--device", "cpu",
                  "--no-progress")
    assert long.exit_code == 1 and "claims: 3 held, 1 failed, 1 inconclusive, 1 deferred (of 6)" in long.output
    assert sorted(path.name for path in (tmp_path / "long" / "runs" / "flat").iterdir()) == [
        f"seed-{seed}" for seed in range(5)]
    control = invoke("repro", "run", "deciding", "--control", "untrained", "--out", str(tmp_path / "quick"),
                     "--device", "cpu", "--no-progress")
    assert control.exit_code == 1  # the untrained models hold 'failed'
    assert ("deciding, untrained control: the untrained models fail 4 of 6 claims by a finite value (held, "
            "inconclusive, at-long, at-full); VACUOUS (only a non-finite value fails): vacuous; they HOLD failed"
            in control.output)


def test_a_scale_a_reproduction_lacks_is_a_one_line_error_and_all_skips_it(monkeypatch, tmp_path):
    result = invoke("repro", "run", "von-oswald-2023", "--scale", "long", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2, result.output
    assert "scale: reproduction 'von-oswald-2023' has no long scale (its claims are decided at quick)" in result.output
    assert not (tmp_path / "x").exists()
    monkeypatch.setattr(paper_repro, "REPRODUCTIONS", {"toy": TOY, "deciding": DECIDING})
    both = invoke("repro", "run", "--all", "--scale", "long", "--out", str(tmp_path / "all"), "--device", "cpu",
                  "--no-progress")
    assert "no long scale (their claims are decided at other scales), skipped: toy" in both.output
    assert sorted(path.name for path in (tmp_path / "all").iterdir()) == ["deciding-long"]


def test_the_untrained_control_exits_1_when_a_claim_holds_for_it(toy, tmp_path):
    result = invoke("repro", "run", "toy", "--control", "untrained", "--out", str(tmp_path), "--device", "cpu",
                    "--no-progress")
    assert result.exit_code == 1
    assert ("toy, untrained control: the untrained models fail 1 of 2 claims by a finite value (never); they HOLD "
            "learns" in result.output)
    assert json.loads((tmp_path / "control.json").read_text())[0]["claim"] == "learns"
    vo = invoke("repro", "run", "von-oswald-2023", "--scale", "smoke", "--control", "untrained", "--out",
                str(tmp_path / "vo"), "--device", "cpu", "--no-progress")
    assert vo.exit_code == 0, vo.output
    assert "the untrained models fail 2 of 2 claims by a finite value (one-gd-step, gd-weights)" in vo.output


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


def test_the_gallery_redraws_its_page_and_the_readme_table_from_the_records_alone(monkeypatch, tmp_path):
    from icl_sim.paper_repro.gallery import README_BEGIN, README_END
    register(monkeypatch, TOY)
    monkeypatch.setattr(paper_repro, "REPRODUCTIONS", {"toy": TOY})
    figures, readme = tmp_path / "figures", tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\n{README_END}\n")
    missing = invoke("repro", "gallery", "--redraw", "--figures", str(figures))
    assert missing.exit_code == 2 and "has no records.json to draw from" in missing.output
    ran = invoke("repro", "gallery", "--scale", "quick", "--figures", str(figures), "--runs", str(tmp_path / "runs"),
                 "--device", "cpu", "--no-progress")
    assert ran.exit_code == 0 and "toy: claims at their deciding scales: 1 held, 1 deferred (of 2)" in ran.output
    (figures / "README.md").unlink()
    redrawn = invoke("repro", "gallery", "--redraw", "--figures", str(figures), "--readme", str(readme))
    assert redrawn.exit_code == 0, redrawn.output
    assert "| [toy](#toy) |" in (figures / "README.md").read_text()
    assert "| [`toy`](figures/README.md#toy) |" in readme.read_text()
    with_names = invoke("repro", "gallery", "toy", "--redraw", "--figures", str(figures))
    assert with_names.exit_code == 2 and "--redraw draws every reproduction from the records" in with_names.output
