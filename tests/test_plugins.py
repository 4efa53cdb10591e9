"""Plugins: a package's entry points add tasks, models and reproductions that icl-sim lists, trains, evaluates and
probes like its own (``examples/plugin``, installed by the test command); a broken plugin is one warning line."""
import dataclasses
import json
from importlib.metadata import EntryPoint

import pytest
import torch
from click.testing import CliRunner

from icl_sim import plugins
from icl_sim.cli import cli
from icl_sim.models import MODELS
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASK_MEMBERS, TASKS, make_task
from icl_sim.theory import GD, PreconditionedGD

needs_example = pytest.mark.skipif("sign-regression" not in plugins.plugin_names("tasks"),
                                   reason="examples/plugin is not installed (the README's test command installs it)")


@needs_example
def test_the_example_plugin_is_listed_and_registered():
    listing = CliRunner().invoke(cli, ["tasks"]).output
    assert "sign-regression  (plugin from icl-sim-example-plugin 0.1.0: icl_sim_example_plugin:SignRegression)" \
        in listing
    assert TASKS["sign-regression"].name == "sign-regression" and "preconditioned-steps" in MODELS


@needs_example
def test_the_plugin_model_is_gd_with_its_preconditioners():
    """With preconditioners η I the plugin's model predicts what icl-sim's GD baseline does with step η, and with a
    general Γ what its preconditioned GD does."""
    task = make_task("linear-regression", dim=3, points=8)
    prompt = task.sample(16, make_generator(1, "eval"), dtype=torch.float64)
    model_class = MODELS["preconditioned-steps"]
    model = model_class(3, 8, model_class.Config(steps=2, initial_step=0.375, init_std=0.0)).double()
    with torch.no_grad():
        predictions = model.layer_predictions(prompt.xs, prompt.ys)
    for steps, prediction in enumerate(predictions, start=1):
        torch.testing.assert_close(prediction, GD(steps, 0.375).predict(prompt.xs, prompt.ys), rtol=1e-10, atol=1e-12)
    preconditioner = torch.tensor([[0.5, 0.1, 0.0], [0.0, 0.3, 0.2], [0.1, 0.0, 0.4]], dtype=torch.float64)
    with torch.no_grad():
        model.preconditioners.copy_(preconditioner.expand(2, 3, 3))
        (_, prediction) = model.layer_predictions(prompt.xs, prompt.ys)
    torch.testing.assert_close(prediction, PreconditionedGD(2, 1.0, preconditioner).predict(prompt.xs, prompt.ys),
                               rtol=1e-10, atol=1e-12)


@needs_example
def test_a_plugin_task_and_model_train_evaluate_and_probe(tmp_path):
    sign = make_task("sign-regression", dim=3, points=8).sample(64, make_generator(0, "eval"))
    assert set(sign.ys.unique().tolist()) <= {-1.0, 1.0}
    commands = [["train", "--task", "sign-regression", "--model", "preconditioned-steps", "--dim", "3", "--points", "8",
                 "--layers", "2", "--steps", "30", "--lr", "0.05", "--batch-size", "32",
                 "--out", str(tmp_path / "run")],
                ["eval", str(tmp_path / "run"), "--num-prompts", "64", "--device", "cpu"],
                ["probe", str(tmp_path / "run"), "--algorithm", "gd", "--steps", "3", "--num-prompts", "64",
                 "--device", "cpu"]]
    for command in commands:
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "run" / "probe" / "gd.json").read_text())
    assert {record["layer"] for record in records} == {1, 2}


@pytest.mark.parametrize("value, problem", [
    ("no_such_module_anywhere:Thing", "failed to load (ModuleNotFoundError"),
    ("icl_sim.tasks:make_task", "it is not a task class (the Task protocol: name, metric"),
    ("icl_sim.tasks:LinearRegression", "its name is 'linear-regression', not the entry's 'other'"),
])
def test_a_broken_plugin_is_one_warning_line_and_left_out(monkeypatch, capsys, value, problem):
    entry = EntryPoint("other", value, "icl_sim.tasks")
    monkeypatch.setattr(plugins, "entry_points", lambda group: [entry] if group == "icl_sim.tasks" else [])
    registry = {}
    plugins.load_plugins("tasks", registry, lambda task: isinstance(task, type) and all(
        hasattr(task, member) for member in TASK_MEMBERS), "a task class (the Task protocol: " +
        ", ".join(TASK_MEMBERS) + ")")
    lines = capsys.readouterr().err.splitlines()
    assert registry == {} and len(lines) == 1
    assert lines[0].startswith("Warning: task plugin 'other' (plugin from an unknown package: ") and problem in lines[0]


@needs_example
def test_a_plugin_reproduction_is_listed_and_runs_with_its_control(tmp_path, monkeypatch):
    """The example plugin's reproduction (Mahankali et al.'s optimal one-step GD) runs like a built-in one: its
    claim held by models trained 300 steps here (within 0.1 of η* I), failed by the untrained ones (0.8 away)."""
    from icl_sim import paper_repro

    assert "one-step-optimum  (plugin from icl-sim-example-plugin" in CliRunner().invoke(cli, ["repro", "list"]).output
    reproduction = paper_repro.REPRODUCTIONS["one-step-optimum"]
    short = dataclasses.replace(reproduction.scales["quick"], steps=300)
    monkeypatch.setitem(paper_repro.REPRODUCTIONS, "one-step-optimum",
                        dataclasses.replace(reproduction, scales={**reproduction.scales, "quick": short}))
    for control, outcome, within in ((None, "held", (0.0, 0.1)), ("untrained", "failed", (0.8, 0.9))):
        (check,) = paper_repro.run_reproduction("one-step-optimum", "quick", tmp_path, device="cpu", progress=False,
                                                control=control)
        assert check.outcome == outcome and all(within[0] < value < within[1] for value in check.per_seed), check
