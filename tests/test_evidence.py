"""The evidence framework: claim checks over seeds with their interval, claims, deferral, the untrained control,
seed blocks, the gallery page and the full-scale rehearsal, on a reproduction small enough to run in seconds."""
import dataclasses
import json
import math
import shutil
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from scipy import stats

from icl_sim.checks import Check, claim_check, read_checks, write_checks
from icl_sim.config import TrainConfig
from icl_sim.paper_repro import von_oswald_2023
from icl_sim.paper_repro.evidence import (DEFAULT_SEEDS, check_claim_wiring, claim_verdicts, control_outcomes,
                                          failed, held_claims, summary_line)
from icl_sim.paper_repro.gallery import (MINUTES_FILE, RECORDS_FILE, Elapsed, GalleryEntry, ScaleRecord, Stopwatch,
                                        gallery_page, minutes_text, refresh_gallery)
from icl_sim.paper_repro.rehearsal import (H200_BF16_FLOPS, REHEARSAL_FILE, REHEARSAL_FIT_STEPS, REHEARSAL_PROMPTS,
                                           REHEARSAL_STEPS, UTILISATION, RunCost,
                                           StepCost, fewer_prompts, rehearse)
from icl_sim.paper_repro.runner import CONTROL_FILE, REPEAT_STRIDE, run_reproduction, seed_block
from icl_sim.provenance import ENVIRONMENT_FILE
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


@pytest.mark.parametrize("relation, expected, tolerance, values, outcome, held", [
    ("at_most", 0.05, 0.0, [0.01, 0.02, 0.06], "inconclusive", 2),  # mean 0.03 below the bound, its interval across
    ("at_most", 0.05, 0.0, [0.01, 0.02, 0.03], "held", 3),
    ("at_most", 0.05, 0.0, [0.07, 0.08, 0.09], "failed", 0),         # the interval [0.055, 0.105] wholly above
    ("at_least", 0.9, 0.0, [0.95, 0.96, 0.97], "held", 3),
    ("at_least", 0.9, 0.05, [0.93, 0.96, 0.97], "inconclusive", 2),  # the margin is cleared by the interval too
    ("at_least", 0.9, 0.05, [0.5, 0.6, 0.7], "failed", 0),
    ("close", 1.0, 0.1, [0.98, 1.0, 1.02], "held", 3),
    ("close", 1.0, 0.1, [0.8, 1.0, 1.2], "inconclusive", 1),
    ("close", 1.0, 0.1, [1.3, 1.31, 1.32], "failed", 0),             # wholly above the band
    ("close", 1.0, 0.1, [0.5, 0.51, 0.52], "failed", 0),             # wholly below it
    ("at_most", 0.05, 0.0, [0.01], "held", 1),                       # one seed: no interval, the value decides
    ("at_most", 0.05, 0.0, [0.06], "failed", 0),
    ("at_most", 0.05, 0.0, [0.01, math.nan], "failed", 1),           # a value that cannot be computed shows nothing
])
def test_a_claim_check_is_held_failed_or_inconclusive_by_where_its_interval_lies(relation, expected, tolerance,
                                                                                 values, outcome, held):
    check = claim_check("c", "q", expected, values, relation=relation, tolerance=tolerance)
    assert (check.outcome, check.verdict, check.passed, check.seeds_held) == (outcome, outcome, outcome == "held", held)
    low, high = check.ci or (check.measured, check.measured)
    if outcome == "inconclusive":  # the interval straddles the bound (its edge the band's, for close)
        edges = ([expected - tolerance, expected + tolerance] if relation == "close"
                 else [expected - tolerance if relation == "at_most" else expected + tolerance])
        assert any(low < edge < high for edge in edges)


def test_a_non_finite_value_is_vacuous_evidence():
    assert claim_check("c", "q", 0.05, [math.nan, math.nan], relation="at_most").vacuous
    assert claim_check("c", "q", 0.05, [0.01, math.inf], relation="at_most").vacuous
    assert not claim_check("c", "q", 0.05, [0.07, 0.08], relation="at_most").vacuous


def test_an_every_seed_claim_needs_each_seed():
    values = [0.51, 0.52, 0.49]
    assert claim_check("c", "q", 0.5, values, relation="at_least", every_seed=True).outcome == "failed"  # one seed
    assert claim_check("c", "q", 0.45, values, relation="at_least", every_seed=True).outcome == "held"


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
    assert wide.startswith("[INCONCLUSIVE] claim gd, gap: mean 0.02 over 2 seeds") and "held in 2 of 2" in wide
    above = claim_check("gd", "gap", 0.1, [0.2, 0.21, 0.22], relation="at_most").describe()
    assert above.startswith("[FAILED] claim gd, gap: mean 0.21 over 3 seeds") and "held in 0 of 3" in above
    deferred = dataclasses.replace(claim_check("gd", "gap", 0.1, [0.5], relation="at_most"), deferred=True,
                                   decided_at="long", convergence={"lsa/seed-0": 0.2})
    assert deferred.verdict == "deferred"
    assert deferred.describe() == ("[DEFERRED] claim gd (decided at long), gap: mean 0.5 over 1 seed (0.5), held in 0 "
                                   "of 1; required ≤ 0.1; models converged 0 of 1")


# == claims and their verdicts =========================================================================

def _declared(*claims, name="toy", scales=None, **fields):
    return Reproduction(name=name, paper=PAPER, summary="s", caption="c", scales=scales or TOY_SCALES, runs=toy_runs,
                        measure=toy_measure, checks=toy_checks, figure=toy_figure, quick_minutes=0.1,
                        claims=claims, **fields)


def test_a_claim_decided_above_quick_must_say_why_with_a_measured_number():
    for scale in ("long", "full"):
        with pytest.raises(ValueError, match="reason"):
            Claim("peak", "a peak", "Fig. 1", decided_at=scale)
        with pytest.raises(ValueError, match="measured number"):
            Claim("peak", "a peak", "Fig. 1", decided_at=scale, reason="the model is too small")
    with pytest.raises(ValueError, match="decided_at"):
        Claim("peak", "a peak", "Fig. 1", decided_at="gpu", reason="ratio 0.83")
    with pytest.raises(ValueError, match="decided_at"):
        Claim("peak", "a peak", "Fig. 1", decided_at="smoke")  # smoke tests the pipeline: it decides nothing
    full = Claim("peak", "a peak", "Fig. 1", decided_at="full", reason="ratio 0.83 at quick scale")
    assert [full.deferred_at(scale) for scale in ("smoke", "quick", "long", "full")] == [True, True, True, False]
    long = Claim("peak", "a peak", "Fig. 1", decided_at="long", reason="the loss still falls 12 % at quick")
    assert [long.deferred_at(scale) for scale in ("smoke", "quick", "long", "full")] == [True, True, False, False]
    assert [Claim("a", "A", "Fig. 1").deferred_at(scale) for scale in ("smoke", "quick")] == [True, False]


def test_a_claim_rests_on_the_runs_it_names():
    claim = Claim("a", "A", "Fig. 1", runs=("gpt-*", "lsa"))
    assert [claim.rests_on(run) for run in ("gpt-d5", "lsa", "lsa-2", "mlp")] == [True, True, False, False]
    assert Claim("b", "B", "Fig. 1").rests_on("anything")


def test_a_long_scale_comes_with_its_minutes_and_only_where_a_claim_needs_it():
    long_claim = Claim("l", "L", "Fig. 1", decided_at="long", reason="the loss still falls 12 % at quick")
    with pytest.raises(ValueError, match=r"scales \['long'\]"):
        _declared(long_claim)
    with pytest.raises(ValueError, match="long_minutes"):
        _declared(long_claim, scales={**TOY_SCALES, "long": TOY_SCALES["quick"]})
    with pytest.raises(ValueError, match="unknown scales"):
        _declared(Claim("a", "A", "Fig. 1"), scales={**TOY_SCALES, "huge": TOY_SCALES["full"]})
    with pytest.raises(ValueError, match=r"seeds\['long'\]"):
        _declared(Claim("a", "A", "Fig. 1"), seeds={"long": 0})
    with pytest.raises(ValueError, match="scale: reproduction 'toy' has no long scale"):
        TOY.settings("long")


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
    reproduction = _declared(Claim("a", "A", "Fig. 1"), Claim("b", "B", "Fig. 2"), Claim("c", "C", "Fig. 3"),
                             Claim("d", "D", "Fig. 4", decided_at="full", reason="ratio 0.83 at quick"))
    held = claim_check("a", "q", 1.0, [1.0, 1.0])
    failing = [claim_check("b", "q1", 1.0, [1.0, 1.0]), claim_check("b", "q2", 1.0, [3.0, 3.0]),
               claim_check("b", "q3", 1.0, [0.0, 2.0])]  # one failure fails the claim, whatever else is inconclusive
    inconclusive = [claim_check("c", "q1", 1.0, [1.0, 1.0]), claim_check("c", "q2", 1.0, [0.0, 2.0])]
    deferred = dataclasses.replace(claim_check("d", "q", 1.0, [5.0, 5.0]), deferred=True)
    sanity = [Check("s1", 1.0, 1.0), Check("s2", 1.0, 2.0)]
    checks = [held, *failing, *inconclusive, deferred, *sanity]
    verdicts = claim_verdicts(reproduction, checks)
    assert [entry.verdict for entry in verdicts] == ["held", "failed", "inconclusive", "deferred"]
    assert [entry.seeds_held for entry in verdicts] == [2, 0, 0, 0]
    assert summary_line(reproduction, checks) == ("claims: 1 held, 1 failed, 1 inconclusive, 1 deferred (of 4); "
                                                  "sanity: 1 of 2")
    assert failed(reproduction, checks)
    # neither an inconclusive nor a deferred claim fails a run; a failed sanity check does
    assert not failed(reproduction, [held, failing[0], *inconclusive, deferred, sanity[0]])
    assert failed(reproduction, [held, failing[0], *inconclusive, deferred, *sanity])
    assert held_claims(reproduction, checks) == ["a"]


def test_the_untrained_control_fails_a_claim_only_by_a_finite_value():
    reproduction = _declared(*(Claim(claim, claim.upper(), "Fig. 1") for claim in "abcd"))
    control = [claim_check("a", "q", 0.1, [0.5, 0.51, 0.52], relation="at_most"),         # finite, wrong side
               claim_check("b", "q", 0.1, [math.nan, math.nan, math.nan], relation="at_most"),  # 0/0: vacuous
               claim_check("b", "q2", 0.1, [0.01, 0.02, 0.03], relation="at_most"),
               claim_check("c", "q", 0.1, [0.0, 0.1, 0.2], relation="at_most"),            # across the bound
               claim_check("d", "q", 0.1, [0.01, 0.02, 0.03], relation="at_most")]        # could not have failed
    assert control_outcomes(reproduction, control) == {"a": "fails", "b": "vacuous", "c": "inconclusive",
                                                       "d": "holds"}
    # a finite failure beside a non-finite one is a real control
    both = [*control[:2], claim_check("b", "q3", 0.1, [0.5, 0.51, 0.52], relation="at_most")]
    assert control_outcomes(_declared(Claim("a", "A", "Fig. 1"), Claim("b", "B", "Fig. 2")), both) == {
        "a": "fails", "b": "fails"}


def test_seed_blocks():
    assert DEFAULT_SEEDS == {"smoke": 1, "quick": 3, "long": 5, "full": 3}
    assert seed_block("quick") == range(0, 3) and seed_block("smoke") == range(0, 1)
    assert seed_block("long") == range(0, 5)
    assert seed_block("quick", declared={"quick": 6}) == range(0, 6)  # the reproduction's own count (Ahn et al.: 6)
    assert seed_block("quick", 2, declared={"quick": 6}) == range(0, 2)  # --seeds over both
    assert seed_block("long", declared={"quick": 6}) == range(0, 5)
    assert seed_block("full", 2, first_seed=10) == range(10, 12)
    assert seed_block("quick", 2, first_seed=REPEAT_STRIDE - 2) == range(REPEAT_STRIDE - 2, REPEAT_STRIDE)
    for bad in [dict(seeds=0), dict(first_seed=-1), dict(first_seed=REPEAT_STRIDE),
                dict(seeds=3, first_seed=REPEAT_STRIDE - 2)]:
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
                Claim("never", "it never errs", "Fig. 2", decided_at="full",
                      reason="a loss below -1 is out of reach (every loss is ≥ 0)"))


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


def test_a_reproduction_may_declare_more_seeds_than_its_scales_default(tmp_path):
    """Where the paper averages more seeds (Ahn et al. 2024: 6) the reproduction says so; --seeds still overrides."""
    six = dataclasses.replace(TOY, seeds={"smoke": 6})
    checks = run_reproduction(six, "smoke", tmp_path / "declared", device="cpu", progress=False)
    assert {len(check.per_seed) for check in checks if check.kind == "claim"} == {6}
    assert len(list((tmp_path / "declared" / "runs" / "lsa").iterdir())) == 6
    given = run_reproduction(six, "smoke", tmp_path / "given", device="cpu", progress=False, seeds=2)
    assert {len(check.per_seed) for check in given if check.kind == "claim"} == {2}


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


# == a reproduction whose claims are decided at each scale ==============================================

@dataclass(frozen=True)
class DecidingSettings:
    steps: int


DECIDING_SCALES = {"smoke": DecidingSettings(4), "quick": DecidingSettings(10), "long": DecidingSettings(12),
                   "full": DecidingSettings(40)}


def deciding_runs(settings):
    """Two runs on one reused batch: ``flat`` barely moves (its loss is flat: converged), ``learning`` takes large
    steps (its loss still falls over its last fifth: not converged)."""
    common = dict(task=TASK.name, task_params=dataclasses.asdict(TASK), model="lsa", steps=settings.steps,
                  batch_size=256, batch_redraw_every=settings.steps, checkpoint_every=settings.steps, log_every=1)
    return {"flat": TrainConfig(lr=1e-12, **common), "learning": TrainConfig(lr=0.05, **common)}


def deciding_measure(measurement):
    """Per seed: the steps trained, the learning run's loss ratio last / first (NaN untrained: there is no loss to
    divide) and the seed's place in its block (0, 1, 2, ...)."""
    rows = []
    for seed, (flat, learning) in enumerate(zip(measurement.histories["flat"], measurement.histories["learning"])):
        losses = [record["loss"] for record in learning]
        rows += [{"seed": seed, "quantity": "steps", "value": flat[-1]["step"] if flat else 0},
                 {"seed": seed, "quantity": "loss ratio", "value": losses[-1] / losses[0] if losses else math.nan},
                 {"seed": seed, "quantity": "place", "value": seed}]
    return {"rows": rows}


def deciding_checks(results, settings):
    values = {quantity: [row["value"] for row in results["rows"] if row["quantity"] == quantity]
              for quantity in ("steps", "loss ratio", "place")}
    trained = [min(steps, 1) for steps in values["steps"]]
    return [claim_check("held", "trained", 0.5, trained, relation="at_least", source="Fig. 1"),
            claim_check("failed", "trained", 0.5, trained, relation="at_most", source="Fig. 2"),
            claim_check("inconclusive", "place × trained", 0.5, [place * flag for place, flag in
                                                                  zip(values["place"], trained)],
                        relation="at_least", source="Fig. 3"),
            claim_check("at-long", "steps", 11, values["steps"], relation="at_least", source="Fig. 4"),
            claim_check("at-full", "steps", 40, values["steps"], relation="at_least", source="Fig. 5"),
            claim_check("vacuous", "loss ratio last / first", 1.0, values["loss ratio"], relation="at_most",
                        source="Fig. 6"),
            Check("two plus two", 4.0, 2.0 + 2.0, source="arithmetic")]


def deciding_figure(results, settings):
    from icl_sim.plots import Curve, Panel
    return [Panel("seed", "steps", [Curve("steps", [0, 1], [1.0, 1.0])])]


DECIDING = Reproduction(
    name="deciding", paper=PAPER, summary="claims decided at each scale", caption="c", scales=DECIDING_SCALES,
    runs=deciding_runs, measure=deciding_measure, checks=deciding_checks, figure=deciding_figure, quick_minutes=0.1,
    long_minutes=0.1, claims=(
        Claim("held", "trained models are trained", "Fig. 1", runs=("flat",)),
        Claim("failed", "trained models are untrained", "Fig. 2", runs=("flat",),
              analysis="a trained model has trained steps: the claim is false by construction."),
        Claim("inconclusive", "later seeds are trained more", "Fig. 3", runs=("flat",)),
        Claim("at-long", "at least 11 steps are taken", "Fig. 4", decided_at="long",
              reason="quick takes 10 steps", runs=("flat",)),
        Claim("at-full", "at least 40 steps are taken", "Fig. 5", decided_at="full",
              reason="long takes 12 steps", runs=("flat",)),
        Claim("vacuous", "training lowers the loss", "Fig. 6", runs=("learning",))))


def test_each_claim_is_decided_at_its_scale_deferred_below_it(tmp_path):
    quick = {check.claim: check for check in run_reproduction(DECIDING, "quick", tmp_path / "quick", device="cpu",
                                                               progress=False) if check.kind == "claim"}
    assert {claim: check.verdict for claim, check in quick.items()} == {
        "held": "held", "failed": "failed", "inconclusive": "inconclusive", "at-long": "deferred",
        "at-full": "deferred", "vacuous": "held"}
    assert quick["at-long"].outcome == "failed"  # measured and shown below its scale, not judged
    long = {check.claim: check for check in run_reproduction(DECIDING, "long", tmp_path / "long", device="cpu",
                                                              progress=False) if check.kind == "claim"}
    assert [check.per_seed for check in long.values()][3] == (12.0,) * 5  # the long scale's 5 default seeds
    assert long["at-long"].verdict == "held" and long["at-full"].verdict == "deferred"
    assert {check.decided_at for check in long.values()} == {"quick", "long", "full"}


def test_each_claim_reports_the_convergence_of_the_runs_it_rests_on(tmp_path):
    checks = run_reproduction(DECIDING, "quick", tmp_path, device="cpu", progress=False)
    rows = {row["claim"]: row for row in json.loads((tmp_path / "checks.json").read_text()) if row["kind"] == "claim"}
    for claim, run in (("held", "flat"), ("vacuous", "learning")):
        expected = {}
        for seed in range(3):  # the relative fall of the mean loss of steps 8-9 against steps 7-8's window, by hand
            losses = [json.loads(line)["loss"] for line in
                      (tmp_path / "runs" / run / f"seed-{seed}" / "metrics.jsonl").read_text().splitlines()]
            before, after = losses[7], np.mean(losses[9:10])  # windows of 0.1 T = 1 step ending at 0.8 T and T
            expected[f"{run}/seed-{seed}"] = (before - after) / abs(before)
        assert rows[claim]["convergence"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert rows[claim]["models_converged"] == [sum(value <= 0.05 for value in expected.values()), 3]
    assert all(value == 0 for value in rows["held"]["convergence"].values())  # lr 1e-12 on one batch: flat
    assert rows["vacuous"]["models_converged"] == [1, 3]  # large steps: two of three runs still falling by > 5 %
    assert "models converged 1 of 3" in next(check.describe() for check in checks if check.claim == "vacuous")


def test_the_control_of_a_claim_defined_only_after_training_is_vacuous(tmp_path):
    run_reproduction(DECIDING, "quick", tmp_path, device="cpu", progress=False, control="untrained")
    rows = json.loads((tmp_path / CONTROL_FILE).read_text())
    vacuous = {row["claim"]: row["vacuous"] for row in rows if row["kind"] == "claim"}
    assert vacuous == {"held": False, "failed": False, "inconclusive": False, "at-long": False, "at-full": False,
                       "vacuous": True}
    assert all(row["models_converged"] == [0, 0] for row in rows if row["kind"] == "claim")  # nothing trained
    outcomes = control_outcomes(DECIDING, read_checks(tmp_path / CONTROL_FILE))
    assert outcomes == {"held": "fails", "failed": "holds", "inconclusive": "fails", "at-long": "fails",
                        "at-full": "fails", "vacuous": "vacuous"}


# == the gallery ========================================================================================

def _table(page: str, header: str) -> list[list[str]]:
    """The rows under the Markdown table whose header line starts with ``header``, as lists of cells."""
    import re
    lines = page.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_the_gallery_decides_each_claim_at_its_scale_and_the_readme_table_is_the_pages(tmp_path):
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    figures.mkdir()
    readme = tmp_path / "README.md"
    from icl_sim.paper_repro.gallery import README_BEGIN, README_END
    readme.write_text(f"# a project\n\n{README_BEGIN}\nold table\n{README_END}\n\nmore text\n")
    entries = refresh_gallery({"deciding": DECIDING}, figures, runs, device="cpu", readme=readme)
    assert list(entries["deciding"].scales) == ["quick", "long"]
    page = (figures / "README.md").read_text()
    summary = _table(page, "| reproduction |")
    assert summary == [["[deciding](#deciding)", "4 / 1 / 1", "3 / 1 / 1", "1 (not rehearsed)", "1 of 1",
                        "4 / 1 / 0 / 1", summary[0][6], summary[0][7]]]
    assert all(cell.endswith(" CPU") and float(cell.split()[0]) >= 0 for cell in summary[0][6:8])
    claims = {row[0].split("**")[1]: row for row in _table(page, "| claim | decided at |")}
    assert {claim: (row[1], row[2]) for claim, row in claims.items()} == {
        "held": ("quick", "held"), "failed": ("quick", "**FAILED**"), "inconclusive": ("quick", "inconclusive"),
        "at-long": ("long", "held"), "at-full": ("full", "deferred"), "vacuous": ("quick", "held")}
    assert claims["at-long"][5].startswith("10 [10, 10], held in 0 of 3")  # quick: shown, not judged
    assert claims["at-long"][6].startswith("12 [12, 12], held in 5 of 5")
    assert claims["held"][7] == "3 of 3" and claims["vacuous"][7] == "1 of 3"
    assert claims["at-long"][7] == "5 of 5" and claims["at-full"][7] == "5 of 5 (long)"
    assert [claims[claim][8] for claim in ("held", "failed", "vacuous")] == ["fails", "**holds**", "**vacuous**"]
    assert "*failed: the paper's claim not reproduced at quick scale.* a trained model has trained steps" in page
    assert "*inconclusive: the paper's claim inconclusive at quick scale.* the module records no analysis" in page
    assert "*vacuous: its untrained control is vacuous*" in page
    assert "*at-long, decided at long:* quick takes 10 steps" in page
    assert "![deciding, quick scale](deciding.png)" in page and "![deciding, long scale](deciding-long.png)" in page
    assert {path.name for path in figures.iterdir()} >= {"deciding.png", "deciding-long.png", "records.json"}
    text = readme.read_text()
    assert text.startswith(f"# a project\n\n{README_BEGIN}\n| reproduction | paper |") and "old table" not in text
    assert text.endswith(f"{README_END}\n\nmore text\n")
    table = _table(text, "| reproduction | paper |")
    assert table[0][0] == "[`deciding`](figures/README.md#deciding)" and table[0][2:] == summary[0][1:]


def test_the_gallery_page_keeps_each_check_in_one_table_row():
    """Quantities such as |L_LSA − L_GD| hold pipes; the page escapes them so each check stays one row."""
    check = claim_check("one-gd-step", "gap |a − b| / b", 0.05, [0.01], relation="at_most", source="Fig. 2")
    claims = [claim_check(claim.id, "q", 1.0, [1.0]) for claim in von_oswald_2023.CLAIMS[1:]]
    entry = GalleryEntry(von_oswald_2023.REPRODUCTION, {"quick": ScaleRecord([check, *claims], [], Elapsed(1.0))})
    rows = _table(gallery_page({"von-oswald-2023": entry}), "| claim | decided at |")
    assert rows[0][1:6] == ["quick", "held", "gap \\|a − b\\| / b", "≤ 0.05", "0.01, held in 1 of 1"]
    assert rows[0][9] == "Fig. 2"


def test_a_check_only_the_long_scale_measures_gets_its_own_row():
    """Long may measure more than quick (a grid point quick leaves out): the page lists every quantity of either."""
    shared = [claim_check("at-long", "steps", 11, [10.0, 10.0], relation="at_least"), Check("s", 1.0, 1.0)]
    more = [claim_check("at-long", quantity, 11, [12.0] * 5, relation="at_least") for quantity in ("steps", "extra point")]
    entry = GalleryEntry(DECIDING, {"quick": ScaleRecord(shared, [], Elapsed(1.0)), "long": ScaleRecord(more, [], Elapsed(2.0))})
    rows = _table(gallery_page({"deciding": entry}), "| claim | decided at |")
    assert [(row[3], row[5], row[6]) for row in rows] == [
        ("steps", "10 [10, 10], held in 0 of 2", "12 [12, 12], held in 5 of 5"),
        ("extra point", "—", "12 [12, 12], held in 5 of 5")]
    assert rows[0][1:3] == ["long", "held"]


def test_checks_read_back_as_written(tmp_path):
    checks = [*toy_checks({"rows": [{"seed": 0, "quantity": "loss", "value": 1.5},
                                    {"seed": 1, "quantity": "loss", "value": 2.5}]}, None),
              dataclasses.replace(claim_check("c", "q", 1.0, [0.5, math.nan]), deferred=True, decided_at="long",
                                  convergence={"lsa/seed-0": 0.01, "lsa/seed-1": math.nan})]
    read = read_checks(write_checks(checks, tmp_path))
    assert [check.describe() for check in read] == [check.describe() for check in checks]
    assert read[:3] == checks[:3] and read[3].verdict == "deferred" and read[3].models_converged == (1, 2)


def test_a_named_gallery_refresh_reruns_those_and_keeps_the_others_records(tmp_path):
    reproductions = {"toy": TOY, "toy-b": dataclasses.replace(TOY, name="toy-b")}
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    first = refresh_gallery(reproductions, figures, runs, names=["toy"], device="cpu")
    assert list(first) == ["toy"] and "toy-b" not in (figures / "README.md").read_text()
    records = json.loads((figures / RECORDS_FILE).read_text())
    records["toy"]["quick"]["cpu_minutes"] = 12.5  # toy's record, marked
    (figures / RECORDS_FILE).write_text(json.dumps(records))
    second = refresh_gallery(reproductions, figures, runs, names=["toy-b"], device="cpu")
    assert list(second) == ["toy", "toy-b"] and second["toy"].scales["quick"].elapsed.cpu_minutes == 12.5
    assert ([check.describe() for check in second["toy"].scales["quick"].checks]
            == [check.describe() for check in first["toy"].scales["quick"].checks])
    summary = _table((figures / "README.md").read_text(), "| reproduction |")
    assert [row[0] for row in summary] == ["[toy](#toy)", "[toy-b](#toy-b)"] and summary[0][6:] == ["12.5 CPU", "—"]
    assert sorted(path.name for path in figures.iterdir() if not path.name.endswith(".lock")) == [
        "README.md", ENVIRONMENT_FILE, RECORDS_FILE, "toy-b.pdf", "toy-b.png", "toy.pdf", "toy.png"]
    assert [session["outcome"] for session in json.loads((figures / ENVIRONMENT_FILE).read_text())["sessions"]] == [
        "completed", "completed"]  # each refresh's provenance


def test_concurrent_gallery_refreshes_of_different_names_lose_no_record(tmp_path):
    """Each refresh records its reproduction under a lock as soon as it is done, rereading the others' records."""
    import threading
    reproductions = {name: dataclasses.replace(TOY, name=name) for name in ("toy", "toy-b", "toy-c")}
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    threads = [threading.Thread(target=refresh_gallery, args=(reproductions, figures, runs),
                                kwargs=dict(names=names, device="cpu")) for names in (["toy", "toy-c"], ["toy-b"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert list(json.loads((figures / RECORDS_FILE).read_text())) == ["toy", "toy-b", "toy-c"]


def test_the_stopwatch_counts_cpu_apart_from_waiting():
    """A sleep takes wall time and next to no CPU; a busy loop takes the CPU seconds ``time.process_time`` counts
    (to the 10 ms ticks of ``os.times``), whatever the machine's load stretches its wall time to."""
    stopwatch = Stopwatch()
    time.sleep(0.3)
    slept = stopwatch.elapsed()
    assert slept.minutes * 60 >= 0.3 and slept.cpu_minutes * 60 < 0.05
    stopwatch, start = Stopwatch(), time.process_time()
    while time.process_time() - start < 0.3:
        pass
    busy = stopwatch.elapsed()
    assert busy.cpu_minutes * 60 == pytest.approx(time.process_time() - start, abs=0.03)
    assert busy.minutes >= busy.cpu_minutes - 0.02 / 60


def test_a_record_keeps_the_cpu_minutes_and_an_older_one_reads_as_wall_minutes(tmp_path):
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    elapsed = refresh_gallery({"toy": TOY}, figures, runs, device="cpu")["toy"].scales["quick"].elapsed
    assert elapsed.cpu_minutes is not None and 0 < elapsed.cpu_minutes
    assert json.loads((runs / "toy-quick" / MINUTES_FILE).read_text())["cpu_minutes"] == elapsed.cpu_minutes
    assert minutes_text(elapsed) == f"{elapsed.cpu_minutes:.1f} CPU"
    assert minutes_text(Elapsed(12.5)) == "12.5 wall"  # a record made before CPU time was measured


def test_a_gallery_refresh_that_reuses_finished_runs_keeps_the_minutes_of_the_refresh_that_trained_them(tmp_path):
    figures, runs = tmp_path / "figures", tmp_path / "runs"
    refresh_gallery({"toy": TOY}, figures, runs, device="cpu")
    (runs / "toy-quick" / MINUTES_FILE).write_text(json.dumps({"minutes": 12.5}))  # the training refresh's minutes
    minutes = lambda: refresh_gallery({"toy": TOY}, figures, runs, device="cpu")["toy"].scales["quick"].elapsed.minutes
    assert minutes() == 12.5  # reused: kept
    shutil.rmtree(runs / "toy-quick" / "runs" / "lsa" / "seed-0")
    assert minutes() < 12.5  # trained again: measured

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
