"""The one verdict type: its relations, its Monte Carlo constructors and the line it prints."""
import json
import math

import pytest
import torch

from icl_sim.checks import Check, exact, mean_and_standard_error, monte_carlo, two_sample, write_checks


@pytest.mark.parametrize("relation, expected, measured, tolerance, passed", [
    ("close", 1.0, 1.05, 0.1, True), ("close", 1.0, 1.2, 0.1, False), ("close", 1.0, float("nan"), 0.1, False),
    ("at_most", 0.1, 0.09, 0.0, True), ("at_most", 0.1, 0.11, 0.0, False),
    ("at_most", 0.1, 0.09, 0.02, False),  # the margin must be cleared too
    ("at_least", 0.99, 0.995, 0.0, True), ("at_least", 0.99, 0.98, 0.0, False),
    ("at_least", 0.0, 0.05, 0.04, True), ("at_least", 0.0, 0.05, 0.06, False)])
def test_relations(relation, expected, measured, tolerance, passed):
    assert Check("x", expected, measured, tolerance, relation).passed is passed


def test_bad_relation_names_the_parameter():
    with pytest.raises(ValueError, match="relation"):
        Check("x", 1.0, 1.0, relation="roughly")


def test_lines_read_as_a_person_would_say_them():
    assert Check("loss gap", 0.1, 0.023, relation="at_most").describe() == \
        "[PASS] loss gap: measured 0.023, required ≤ 0.1"
    line = Check("cosine", 0.99, 0.95, relation="at_least", source="Fig. 2").describe()
    assert line == "[FAIL] cosine: measured 0.95, required ≥ 0.99  [Fig. 2]"
    assert exact("2 + 2", 4.0, 4.0).describe() == "[PASS] 2 + 2: measured 4, expected 4 ± 1e-10"


def test_monte_carlo_tolerance_is_three_standard_errors_or_the_floor():
    samples = torch.tensor([0.0, 2.0] * 50, dtype=torch.float64)
    standard_error = float(samples.std()) / 10
    assert mean_and_standard_error(samples) == (1.0, pytest.approx(standard_error))
    check = monte_carlo("mean", 1.0, samples, source="a textbook")
    assert check.source == "a textbook"
    assert (check.measured, check.standard_error) == (1.0, pytest.approx(standard_error))
    assert check.tolerance == pytest.approx(3 * standard_error) and check.passed
    assert monte_carlo("mean", 1.0, samples, floor=1.0).tolerance == 1.0
    one_sided = monte_carlo("mean > 0.8", 0.8, samples, relation="at_least", floor=1.0)
    assert one_sided.tolerance == pytest.approx(3 * standard_error) and not one_sided.passed  # 1 − 0.3 < 0.8


def test_two_sample_adds_both_variances():
    a = torch.tensor([0.0, 2.0] * 8, dtype=torch.float64)
    b = torch.tensor([1.0, 3.0] * 32, dtype=torch.float64)
    check = two_sample("difference", a, b)
    assert check.standard_error == pytest.approx(math.sqrt(float(a.var()) / 16 + float(b.var()) / 64))
    assert (check.expected, check.measured) == (1.0, 2.0)


def test_written_checks_carry_their_verdicts(tmp_path):
    path = write_checks([Check("a", 1.0, 1.0), Check("b", 0.0, 1.0, relation="at_most")], tmp_path)
    rows = json.loads(path.read_text())
    assert [(row["quantity"], row["passed"]) for row in rows] == [("a", True), ("b", False)]
