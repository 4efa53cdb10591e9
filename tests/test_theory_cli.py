"""``icl-sim theory``: list, show and verify, with a stand-in claim and the registered ones."""
import json

import pytest
import sympy
import torch
from click.testing import CliRunner

from icl_sim import catalogue
from icl_sim.cli import cli
from icl_sim.checks import exact, monte_carlo
from icl_sim.claims import CLAIMS, Claim
from icl_sim.theory.symbolic import Step


def mean_of_square(seed):
    """E[z²] = 1 for z ~ N(0, 1), by Monte Carlo."""
    z = torch.randn(20_000, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return [monte_carlo("E[z^2]", 1.0, z**2), exact("2 + 2", 4.0, 2 + 2)]


def derive_square():
    z = sympy.Symbol("z")
    density = sympy.exp(-z**2 / 2) / sympy.sqrt(2 * sympy.pi)
    moment = sympy.Integral(z**2 * density, (z, -sympy.oo, sympy.oo))
    return [Step("second moment of a standard normal", moment), Step("result", moment.doit())]


STAND_IN = Claim("gaussian-second-moment", "any probability textbook", "E[z²] = 1", derive_square,
                      mean_of_square)
WRONG = Claim("wrong-moment", "nowhere", "E[z²] = 2 (false)", derive_square,
                   lambda seed: [monte_carlo("E[z^2]", 2.0, torch.randn(1000, dtype=torch.float64) ** 2)])


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.setitem(CLAIMS, STAND_IN.name, STAND_IN)
    monkeypatch.setitem(CLAIMS, WRONG.name, WRONG)
    listed = catalogue.read()  # the command line lists and checks claims from the catalogue
    monkeypatch.setattr(catalogue, "read", lambda: {**listed, "claims": list(CLAIMS),
                                                    "theory": catalogue.theory_listing(CLAIMS)})


def invoke(*args):
    return CliRunner().invoke(cli, ["theory", *args])


def test_list_and_show(stand_ins):
    listed = invoke("list")
    assert listed.exit_code == 0 and "gaussian-second-moment" in listed.output and "textbook" in listed.output
    shown = invoke("show", "gaussian-second-moment")
    assert shown.exit_code == 0 and "(2) result" in shown.output
    assert "\\int" in invoke("show", "gaussian-second-moment", "--latex").output


def test_verify_json_passes_and_fails(stand_ins):
    result = invoke("verify", "gaussian-second-moment", "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["passed"] and [c["passed"] for c in report["claims"][0]["checks"]] == [True, True]
    check = report["claims"][0]["checks"][0]
    assert check["tolerance"] == pytest.approx(3 * check["standard_error"])
    failed = invoke("verify", "wrong-moment")
    assert failed.exit_code == 1 and "[FAIL] wrong-moment" in failed.output


def test_unknown_claim_is_a_usage_error(stand_ins):
    result = invoke("show", "no-such-thing")
    assert result.exit_code == 2 and result.stderr.startswith("Error: claim must be one of")
