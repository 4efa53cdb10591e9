"""The evidence framework: claim checks over seeds with their interval, claims, deferral, the untrained control,
seed blocks, the gallery page and the full-scale rehearsal, on a reproduction small enough to run in seconds."""
import dataclasses
import json
import math
import shutil
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from scipy import stats

from icl_sim.checks import Check, claim_check, read_checks, write_checks
from icl_sim.config import TrainConfig
from icl_sim.paper_repro import von_oswald_2023
from icl_sim.paper_repro.evidence import (DEFAULT_SEEDS, check_claim_wiring, claim_verdicts, failed, held_claims,
                                          summary_line)
from icl_sim.paper_repro.gallery import MINUTES_FILE, GalleryEntry, gallery_page, refresh_gallery
from icl_sim.paper_repro.rehearsal import (H200_BF16_FLOPS, REHEARSAL_FILE, REHEARSAL_FIT_STEPS, REHEARSAL_PROMPTS,
                                           REHEARSAL_STEPS, UTILISATION, RunCost,
                                           StepCost, fewer_prompts, rehearse)
from icl_sim.paper_repro.runner import CONTROL_FILE, run_reproduction, seed_block
from icl_sim.paper_repro.spec import Claim, Paper, Reproduction
from icl_sim.run_io import load_config, trained_steps
from icl_sim.tasks import LinearRegression
from icl_sim.training import initial_model


# == claim checks ======================================================================================

def test_the_interval_is_student_t_over_seeds():
    values = [0.01, 0.03, 0.02, 0.05]
    check = claim_check("c", "gap", 0.1, values, relation="at_most")
    low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert check.measured == pytest.approx(np.mean(values))
    assert check.ci == (pytest.approx(low), pytest.approx(high))
    assert check.passed and check.seeds_held == 4 and check.verdict == "held"


@pytest.mark.parametrize("relation, expected, tolerance, values, passed, held", [
    ("at_most", 0.05, 0.0, [0.01, 0.02, 0.06], False, 2),   # mean 0.03 below the bound, but its interval is not
    ("at_most", 0.05, 0.0, [0.01, 0.02, 0.03], True, 3),
    ("at_least", 0.9, 0.0, [0.95, 0.96, 0.97], True, 3),
    ("at_least", 0.9, 0.05, [0.93, 0.96, 0.97], False, 2),  # the margin is cleared by the interval too
    ("close", 1.0, 0.1, [0.98, 1.0, 1.02], True, 3),
    ("close", 1.0, 0.1, [0.8, 1.0, 1.2], False, 1),
    ("at_most", 0.05, 0.0, [0.01], True, 1),                # one seed: no interval, the value decides
    ("at_most", 0.05, 0.0, [0.01, math.nan], False, 1),
])
def test_a_claim_check_holds_when_its_interval_lies_on_the_required_side(relation, expected, tolerance, values,
                                                                          passed, held):
    check = claim_check("c", "q", expected, values, relation=relation, tolerance=tolerance)
    assert (check.passed, check.seeds_held) == (passed, held)


def test_an_every_seed_claim_needs_each_seed():
    values = [0.51, 0.52, 0.49]
    assert not claim_check("c", "q", 0.5, values, relation="at_least", every_seed=True).passed
    assert claim_check("c", "q", 0.45, values, relation="at_least", every_seed=True).passed


def test_kinds_take_their_own_fields():
    with pytest.raises(ValueError, match="claim"):
        Check("q", 1.0, 1.0, kind="claim")
    with pytest.raises(ValueError, match="sanity"):
        Check("q", 1.0, 1.0, per_seed=(1.0,))
    with pytest.raises(ValueError, match="kind"):
        Check("q", 1.0, 1.0, kind="evidence")
    with pytest.raises(ValueError, match="per_seed"):
        claim_check("c", "q", 1.0, [])
    assert Check("q", 1.0, 1.0).verdict == "passed"


def test_a_claim_check_line_names_the_claim_the_seeds_and_the_interval():
    line = claim_check("gd", "gap", 0.1, [0.01, 0.02, 0.03], relation="at_most", source="Fig. 2").describe()
    assert line == ("[HELD] claim gd, gap: mean 0.02 over 3 seeds (0.01, 0.02, 0.03), 95 % CI [-0.004841, 0.04484], "
                    "held in 3 of 3; required ≤ 0.1  [Fig. 2]")
    wide = claim_check("gd", "gap", 0.1, [0.01, 0.03], relation="at_most").describe()
    assert wide.startswith("[FAILED] claim gd, gap: mean 0.02 over 2 seeds") and "held in 2 of 2" in wide
    deferred = dataclasses.replace(claim_check("gd", "gap", 0.1, [0.5], relation="at_most"), deferred=True)
    assert deferred.verdict == "deferred" and deferred.describe().startswith("[DEFERRED]")


# == claims and their verdicts =========================================================================

def _declared(*claims, name="toy"):
    return Reproduction(name=name, paper=PAPER, summary="s", caption="c", scales=TOY_SCALES, runs=toy_runs,
                        measure=toy_measure, checks=toy_checks, figure=toy_figure, quick_minutes=0.1,
                        claims=claims)


def test_a_deferred_claim_must_say_why():
    with pytest.raises(ValueError, match="reason"):
        Claim("peak", "a peak", "Fig. 1", needs="full")
    with pytest.raises(ValueError, match="needs"):
        Claim("peak", "a peak", "Fig. 1", needs="gpu", reason="r")
    claim = Claim("peak", "a peak", "Fig. 1", needs="full", reason="ratio 0.83 at quick scale")
    assert claim.deferred_at("quick") and claim.deferred_at("smoke") and not claim.deferred_at("full")


def test_checks_must_match_the_declared_claims():
    reproduction = _declared(Claim("a", "A", "Fig. 1"), Claim("b", "B", "Fig. 2"))
    a = claim_check("a", "q", 1.0, [1.0, 1.0])
    with pytest.raises(ValueError, match=r"claims \['b'\] have no claim check"):
        check_claim_wiring(reproduction, [a])
    with pytest.raises(ValueError, match="undeclared claims"):
        check_claim_wiring(reproduction, [a, claim_check("c", "q", 1.0, [1.0, 1.0])])
    with pytest.raises(ValueError, match="different numbers of seeds"):
        check_claim_wiring(reproduction, [a, claim_check("b", "q", 1.0, [1.0])])
    with pytest.raises(ValueError, match="declares no claims"):
        _declared()
    with pytest.raises(ValueError, match="each claim id once"):
        _declared(Claim("a", "A", "Fig. 1"), Claim("a", "A again", "Fig. 1"))


def test_claims_are_counted_apart_from_sanity_checks():
    reproduction = _declared(Claim("a", "A", "Fig. 1"), Claim("b", "B", "Fig. 2"),
                             Claim("c", "C", "Fig. 3", needs="full", reason="r"))
    held = claim_check("a", "q", 1.0, [1.0, 1.0])
    half = [claim_check("b", "q1", 1.0, [1.0, 1.0]), claim_check("b", "q2", 1.0, [1.0, 3.0])]
    deferred = dataclasses.replace(claim_check("c", "q", 1.0, [5.0, 5.0]), deferred=True)
    sanity = [Check("s1", 1.0, 1.0), Check("s2", 1.0, 2.0)]
    checks = [held, *half, deferred, *sanity]
    assert [entry.verdict for entry in claim_verdicts(reproduction, checks)] == ["held", "failed", "deferred"]
    assert [entry.seeds_held for entry in claim_verdicts(reproduction, checks)] == [2, 1, 0]
    assert summary_line(reproduction, checks) == "claims: 1 held, 1 failed, 1 deferred (of 3); sanity: 1 of 2"
    assert failed(reproduction, checks)
    assert not failed(reproduction, [held, *half[:1], deferred, sanity[0]])  # a deferred claim fails nothing
    assert held_claims(reproduction, checks) == ["a"]


def test_seed_blocks():
    assert DEFAULT_SEEDS == {"smoke": 1, "quick": 3, "full": 3}
    assert seed_block("quick") == range(0, 3) and seed_block("smoke") == range(0, 1)
    assert seed_block("full", 2, first_seed=10) == range(10, 12)
    for bad in [dict(seeds=0), dict(first_seed=-1)]:
        with pytest.raises(ValueError, match=next(iter(bad))):
            seed_block("quick", **bad)


# == a toy reproduction, end to end ====================================================================

PAPER = Paper("A. Author", "A toy", "nowhere", "0000.00000")
TASK = LinearRegression(dim=2, points=4)


@dataclass(frozen=True)
class ToySettings:
    steps: int
    test_prompts: int


TOY_SCALES = {"smoke": ToySettings(3, 64), "quick": ToySettings(4, 64), "full": ToySettings(50, 4096)}


def toy_runs(settings):
    return {"lsa": TrainConfig(task=TASK.name, task_params=dataclasses.asdict(TASK), model="lsa", steps=settings.steps,
                               batch_size=8, lr=1e-2, checkpoint_every=settings.steps, log_every=1)}


def toy_measure(measurement):
    """The first weight of each seed's model (to see which models were measured) and its test loss."""
    prompt = measurement.prompts(TASK, "test", measurement.settings.test_prompts)
    rows = []
    for seed, model in enumerate(measurement.models["lsa"]):
        first = float(next(model.parameters()).detach().flatten()[0])
        with torch.no_grad():
            loss = float((model.double().predict(prompt.xs, prompt.ys)[:, -1] - prompt.ys[:, -1]).square().mean())
        rows += [{"seed": seed, "quantity": "first_weight", "value": first},
                 {"seed": seed, "quantity": "loss", "value": loss}]
    return {"rows": rows, "prompts": prompt.xs.shape[0], "histories": measurement.histories["lsa"]}


def toy_checks(results, settings):
    losses = [row["value"] for row in results["rows"] if row["quantity"] == "loss"]
    return [claim_check("learns", "loss at the query", 100.0, losses, relation="at_most", source="Fig. 1"),
            claim_check("never", "loss at the query", -1.0, losses, relation="at_most", source="Fig. 2"),
            Check("two plus two", 4.0, 2.0 + 2.0, source="arithmetic")]


def toy_figure(results, settings):
    from icl_sim.plots import Curve, Panel
    return [Panel("seed", "loss", [Curve("loss", [0, 1], [1.0, 1.0])])]


TOY = _declared(Claim("learns", "it learns", "Fig. 1"),
                Claim("never", "it never errs", "Fig. 2", needs="full", reason="a loss below -1 is out of reach"))


def test_seeds_train_in_their_own_directories_and_a_deferred_claim_is_reported_so(tmp_path):
    checks = run_reproduction(TOY, "quick", tmp_path, device="cpu", progress=False, first_seed=4)
    assert sorted(path.name for path in (tmp_path / "runs" / "lsa").iterdir()) == ["seed-4", "seed-5", "seed-6"]
    assert [load_config(tmp_path / "runs" / "lsa" / f"seed-{seed}").seed for seed in (4, 5, 6)] == [4, 5, 6]
    saved = json.loads((tmp_path / "checks.json").read_text())
    assert [(row["kind"], row["claim"], row["verdict"]) for row in saved] == [
        ("claim", "learns", "held"), ("claim", "never", "deferred"), ("sanity", None, "passed")]
    assert len(saved[0]["per_seed"]) == 3 and saved[0]["mean"] == pytest.approx(np.mean(saved[0]["per_seed"]))
    assert saved[0]["ci"][0] <= saved[0]["mean"] <= saved[0]["ci"][1]
    assert not failed(TOY, checks)


def test_the_untrained_control_measures_the_models_at_step_0(tmp_path):
    trained = run_reproduction(TOY, "smoke", tmp_path, device="cpu", progress=False, seeds=2)
    control = run_reproduction(TOY, "smoke", tmp_path, device="cpu", progress=False, seeds=2, control="untrained")
    saved = json.loads((tmp_path / CONTROL_FILE).read_text())
    assert [row["quantity"] for row in saved] == [check.quantity for check in control]
    assert not any(row["deferred"] for row in saved)  # the control judges every claim, deferred or not
    assert [check.per_seed for check in control] != [check.per_seed for check in trained]
    with pytest.raises(ValueError, match="control"):
        run_reproduction(TOY, "smoke", tmp_path, device="cpu", progress=False, control="shuffled")


def test_the_control_feeds_measure_the_initial_weights(tmp_path):
    measured = []
    original = TOY.measure

    def spy(measurement):
        measured.append([model.state_dict() for model in measurement.models["lsa"]])
        assert measurement.histories["lsa"] == [[], []]
        return original(measurement)

    run_reproduction(dataclasses.replace(TOY, measure=spy), "smoke", tmp_path, device="cpu", progress=False,
                     seeds=2, first_seed=7, control="untrained")
    config = toy_runs(TOY_SCALES["smoke"])["lsa"]
    for seed, state in zip((7, 8), measured[0]):
        expected = initial_model(dataclasses.replace(config, seed=seed), torch.device("cpu")).state_dict()
        assert all(torch.equal(state[key], expected[key]) for key in expected)
    assert not (tmp_path / "runs").exists()  # the control trains nothing


# == the gallery page ==================================================================================

def test_the_gallery_page_opens_with_the_verdicts_and_tables_claims_apart_from_sanity(tmp_path):
    name = "von-oswald-2023"
    checks = run_reproduction(von_oswald_2023.REPRODUCTION, "smoke", tmp_path, device="cpu", progress=False, seeds=2)
    control = run_reproduction(von_oswald_2023.REPRODUCTION, "smoke", tmp_path, device="cpu", progress=False,
                               seeds=2, control="untrained")
    page = gallery_page({name: GalleryEntry(von_oswald_2023.REPRODUCTION, checks, control, 0.25),
                         "toy": GalleryEntry(TOY, toy_checks({"rows": [
                             {"seed": 0, "quantity": "loss", "value": 1.0},
                             {"seed": 1, "quantity": "loss", "value": 2.0}]}, None),
                             toy_checks({"rows": [{"seed": 0, "quantity": "loss", "value": 1.0}]}, None), 0.1)})
    lines = page.splitlines()
    header = lines.index("| reproduction | claims held | deferred | failed | sanity checks | quick minutes |")
    assert lines[header + 2] == f"| [{name}](#{name}) | 0 of 3 | 0 | 3 | 1 of 1 | 0.2 |"
    assert lines[header + 3] == "| [toy](#toy) | 1 of 2 | 0 | 1 | 1 of 1 | 0.1 |"
    claim_rows = [line for line in lines if line.startswith("| **one-gd-step**")]
    assert len(claim_rows) == 1 and claim_rows[0].endswith("| **FAILED** | fails |")
    assert "| relative L2 distance of predictions | 0 of 2 seeds |" in page
    toy_rows = [line for line in lines if line.startswith("| **learns**")]
    assert toy_rows[0].endswith("| held | **holds** |")  # the toy's untrained control holds its claim
    assert "| two plus two | 4 | 4 ± 0 | arithmetic | passed |" in page
    assert page.index("| claim | check |") < page.index("| sanity check |")


def test_the_gallery_page_keeps_each_check_in_one_table_row():
    """Quantities such as |L_LSA − L_GD| hold pipes; the page escapes them so each check stays one row."""
    import re
    check = claim_check("one-gd-step", "gap |a − b| / b", 0.05, [0.01], relation="at_most", source="Fig. 2")
    claims = [claim_check(claim.id, "q", 1.0, [1.0]) for claim in von_oswald_2023.CLAIMS[1:]]
    page = gallery_page({"von-oswald-2023": GalleryEntry(von_oswald_2023.REPRODUCTION, [check, *claims], [], 1.0)})
    row = next(line for line in page.splitlines() if "gap \\|a" in line)
    assert re.split(r"(?<!\\)\|", row)[2:7] == [" gap \\|a − b\\| / b ", " 1 of 1 seeds ", " 0.01 ", " ≤ 0.05 ",
                                                " Fig. 2 "]


def test_checks_read_back_as_written(tmp_path):
    checks = [*toy_checks({"rows": [{"seed": 0, "quantity": "loss", "value": 1.5},
                                    {"seed": 1, "quantity": "loss", "value": 2.5}]}, None),
              dataclasses.replace(claim_check("c", "q", 1.0, [0.5, math.nan]), deferred=True)]
    read = read_checks(write_checks(checks, tmp_path))
    assert [check.describe() for check in read] == [check.describe() for check in checks]
    assert read[:3] == checks[:3] and read[3].verdict == "deferred"


def test_a_named_gallery_refresh_reruns_those_and_keeps_the_others_entries(tmp_path):
    reproductions = {"toy": TOY, "toy-b": dataclasses.replace(TOY, name="toy-b")}
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    first = refresh_gallery(reproductions, figures, runs, names=["toy"], device="cpu")
    assert list(first) == ["toy"] and "toy-b" not in (figures / "README.md").read_text()
    (runs / "toy-quick" / MINUTES_FILE).write_text(json.dumps({"minutes": 12.5}))  # toy's stored entry, marked
    second = refresh_gallery(reproductions, figures, runs, names=["toy-b"], device="cpu")
    assert list(second) == ["toy", "toy-b"] and second["toy"].minutes == 12.5
    assert [check.describe() for check in second["toy"].checks] == [check.describe() for check in first["toy"].checks]
    page = (figures / "README.md").read_text()
    assert "| [toy](#toy) | 1 of 2 | 1 | 0 | 1 of 1 | 12.5 |" in page and "| [toy-b](#toy-b) |" in page
    assert sorted(path.name for path in figures.iterdir()) == ["README.md", "toy-b.pdf", "toy-b.png", "toy.pdf",
                                                               "toy.png"]



def test_a_gallery_refresh_that_reuses_finished_runs_keeps_the_minutes_of_the_refresh_that_trained_them(tmp_path):
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    refresh_gallery({"toy": TOY}, figures, runs, device="cpu")
    (runs / "toy-quick" / MINUTES_FILE).write_text(json.dumps({"minutes": 12.5}))  # the training refresh's minutes
    assert refresh_gallery({"toy": TOY}, figures, runs, device="cpu")["toy"].minutes == 12.5  # reused: kept
    shutil.rmtree(runs / "toy-quick" / "runs" / "lsa" / "seed-0")
    assert refresh_gallery({"toy": TOY}, figures, runs, device="cpu")["toy"].minutes < 12.5  # trained again: measured

# == rehearsal of the full scale =======================================================================

def test_a_rehearsal_builds_the_full_runs_trains_a_few_steps_and_projects_their_cost(tmp_path):
    costs, checks = rehearse(TOY, tmp_path, device="cpu", seeds=2)
    assert [cost.run for cost in costs] == ["lsa/seed-0", "lsa/seed-1"]  # costed over the block ...
    run_dir = tmp_path / "runs" / "lsa" / "seed-0"
    assert trained_steps(run_dir) == REHEARSAL_STEPS and load_config(run_dir).steps == REHEARSAL_STEPS
    assert not (tmp_path / "runs" / "lsa" / "seed-1").exists()  # ... trained and measured on its first seed
    model = initial_model(toy_runs(TOY_SCALES["full"])["lsa"], torch.device("cpu"))
    cost = costs[0]
    assert cost.steps == 50 and cost.step.parameters == sum(p.numel() for p in model.parameters())
    assert cost.step.flops > 0 and cost.step.seconds > 0 and cost.step.peak_bytes > 4 * 4 * cost.step.parameters
    assert cost.total_flops == 50 * cost.step.flops
    assert cost.h200_hours == pytest.approx(cost.total_flops / (UTILISATION * H200_BF16_FLOPS) / 3600)
    saved = json.loads((tmp_path / REHEARSAL_FILE).read_text())
    assert [row["run"] for row in saved] == ["lsa/seed-0", "lsa/seed-1"]
    results = json.loads((tmp_path / "results.json").read_text())
    assert {row["quantity"] for row in results} == {"first_weight", "loss"}
    assert (tmp_path / "figure.png").stat().st_size > 0 and len(checks) == 3
    assert all(len(check.per_seed) == 1 for check in checks if check.kind == "claim")


def test_a_rehearsal_shrinks_the_held_out_prompts_and_a_probes_fit_only():
    assert fewer_prompts(TOY_SCALES["full"]) == ToySettings(50, REHEARSAL_PROMPTS)
    assert fewer_prompts(ToySettings(50, 10)) == ToySettings(50, min(10, REHEARSAL_PROMPTS))

    @dataclass(frozen=True)
    class Probing:
        steps: int
        probe_fit_prompts: int
        mlp_probe_fit_steps: int

    assert fewer_prompts(Probing(500_000, 65_536, 2000)) == Probing(500_000, REHEARSAL_PROMPTS, REHEARSAL_FIT_STEPS)


def test_a_run_costs_its_step_times_its_steps():
    cost = RunCost("r", 10, StepCost(1, 1, 0.1, 3e9))
    assert cost.total_flops == 3e10 and cost.hours_here == pytest.approx(1 / 3600)
    assert cost.h200_hours == pytest.approx(3e10 / (0.4 * 989e12) / 3600)


def test_a_step_too_large_for_this_machine_is_measured_on_part_of_its_batch_and_scaled(monkeypatch):
    """With (pretended) room for a quarter of the batch, the step runs on 1/4 of it: its FLOPs, linear in the
    batch, scale back to the whole batch's exactly; on the real machine the same step runs whole."""
    from icl_sim.paper_repro import rehearsal

    task = LinearRegression(dim=2, points=9)
    config = TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="gpt", steps=4, batch_size=16,
                         loss_on="all", model_params={"n_layer": 1, "n_embd": 16, "n_head": 2})
    device = torch.device("cpu")
    whole = rehearsal.step_cost(config, device)
    quarter = rehearsal.training_memory(dataclasses.replace(config, batch_size=4))
    monkeypatch.setattr(rehearsal, "available_bytes", lambda: int(quarter / rehearsal.MEMORY_SHARE) + 1)
    cut = rehearsal.step_cost(config, device)
    assert (whole.batch_fraction, cut.batch_fraction) == (1, 4)
    assert cut.flops == whole.flops and cut.parameters == whole.parameters
    assert "measured on 1/4 of the batch" in RunCost("r", 4, cut).describe()


def test_python_callers_rehearse_by_name(tmp_path):
    from icl_sim.paper_repro import rehearse_reproduction
    with pytest.raises(ValueError, match="name must be one of"):
        rehearse_reproduction("no-such-paper", tmp_path)


def test_a_curriculum_run_is_costed_at_its_full_size():
    """FLOPs scale with the prompt length; the step costed is a late one, where the curriculum has grown it."""
    from icl_sim.config import Curriculum
    from icl_sim.paper_repro.rehearsal import step_cost

    task = LinearRegression(dim=2, points=9)
    plain = TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="gpt", steps=40, batch_size=4,
                        loss_on="all", model_params={"n_layer": 1, "n_embd": 16, "n_head": 2})
    growing = dataclasses.replace(plain, curriculum_points=Curriculum(3, 2, 10))
    short = dataclasses.replace(plain, task_params={**plain.task_params, "points": 3})
    device = torch.device("cpu")
    assert step_cost(growing, device).flops == step_cost(plain, device).flops > 2 * step_cost(short, device).flops
