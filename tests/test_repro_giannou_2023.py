"""Giannou et al. (2023): the reproduction's settings are the authors' code's, its measure builds the construction
(or, for the control, the same architecture at random) per seed, and its program answers are the closed forms."""
import math

import torch

from icl_sim.paper_repro import giannou_2023 as repro
from icl_sim.paper_repro.runner import Measurement
from icl_sim.theory.subleq import random_subleq_programs, run_subleq, steps_to_halt


def test_settings_are_the_authors():
    for scale in ("quick", "full"):
        settings = repro.SCALES[scale]
        assert settings.loops == 20 and {1.0, 10.0, 100.0, math.inf} <= set(settings.temperatures)  # run.sh: 20, 10
        assert max(settings.factorial_inputs) == 7 and settings.list_length == 7  # the notebooks' inputs
    programs = random_subleq_programs(1, torch.Generator().manual_seed(0))
    assert (programs.scratch, programs.cells, programs.columns, programs.bits) == (8, 8, 32, 8)  # run.sh: 8,8,32,8
    assert repro.PAPER_TEMPERATURE == 10.0 and repro.PROGRAM_TEMPERATURE == 100.0
    assert repro.runs(repro.SCALES["quick"]) == {}


def test_program_answers_are_the_closed_forms():
    for seed in range(4):
        for name, (program, answer) in repro.program_suite(seed, repro.SCALES["quick"]).items():
            final = run_subleq(program, steps_to_halt(program, 2000))[-1]["memory"][0].tolist()
            assert answer(final) and not answer([value + 1 for value in final]), (seed, name)


def _measured(control, seeds=(5, 6)):
    measurement = Measurement(repro.SCALES["smoke"], torch.device("cpu"), {}, {}, {}, seeds=seeds, control=control)
    results = repro.measure(measurement)
    return results, {check.quantity: check for check in repro.checks(results, repro.SCALES["smoke"])}


def test_the_construction_holds_every_claim_and_its_random_initialisation_none():
    results, checks = _measured(None)
    claims = [check for check in checks.values() if check.kind == "claim"]
    assert len(claims) == 3 and all(check.per_seed == (1.0, 1.0) and check.passed for check in claims)
    control, control_checks = _measured("untrained")
    for check in control_checks.values():
        if check.kind == "claim":
            assert check.per_seed == (0.0, 0.0) and not check.passed
    assert {row["seed"] for row in results["rows"]} == {5, 6}
    assert len(repro.figure(results, repro.SCALES["smoke"])) == 3
