"""The command line: the console script's one-line error (every bad input: test_bad_cli_inputs.py), train -> eval
-> files end to end, the library calls behind probe, probe-latent and compare-weights giving what they print, and
a fast, torch-free --help for every command, and options given once."""
import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import torch
from click.testing import CliRunner

import icl_sim.cli as cli_module
from icl_sim import catalogue
from icl_sim.cli import choices, cli
from icl_sim.config import TrainConfig
from icl_sim.latent_probes import CONTROLS, PROBES
from icl_sim.models import MODELS
from icl_sim.paper_repro import SCALES
from icl_sim.paper_repro.gallery import GALLERY_SCALES
from icl_sim.paper_repro.runner import CONTROLS as REPRO_CONTROLS
from icl_sim.probing import READOUTS, STEP_PARAMS
from icl_sim.reports import (CHECKPOINT_FORMATS, PRECONDITIONERS, compare_weights_run, probe_latent_run,
                             probe_run)
from icl_sim.executors import EXECUTORS
from icl_sim.tasks import TASKS
from icl_sim.training import train

TINY = ["--dim", "3", "--points", "6", "--steps", "10", "--batch-size", "8", "--device", "cpu", "--no-progress",
        "--log-every", "5"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_console_script_reports_one_line():
    result = subprocess.run([sys.executable, "-c", "from icl_sim.cli import main; main()", "train", "--task", "nope",
                             "--out", "x"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"Error: task must be one of {', '.join(TASKS)}; got 'nope'"]


def test_tasks_lists_every_parameter():
    result = invoke("tasks")
    assert result.exit_code == 0
    for word in ("linear-regression", "noise", "prior_scale", "condition_number", "pool_size", "sparsity"):
        assert word in result.output


def test_train_eval_resume_round_trip(tmp_path):
    run = tmp_path / "run"
    assert invoke("train", *TINY, "--task-param", "noise=0.1", "--out", str(run)).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    assert config["task_params"] == {"dim": 3, "points": 6, "noise": 0.1} and config["loss_on"] == "last"

    result = invoke("eval", str(run), "--num-prompts", "64", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("squared error (ŷ − y)² / d at the last position")  # the metric, named
    records = json.loads((run / "eval" / "results.json").read_text())
    predictors = {r["predictor"] for r in records}
    assert predictors == {"lsa (trained)", "OLS", "Averaging", "3-NN", "Zero", "Ridge (Bayes)"}
    assert (run / "eval" / "results.csv").read_text().startswith("predictor,position,metric,mean")
    assert (run / "eval" / "error_curve.png").stat().st_size > 1000

    again = invoke("train", *TINY, "--out", str(run))
    assert again.exit_code == 2 and "already holds a run" in again.stderr
    bad_resume = invoke("train", "--resume", "--lr", "0.5", "--out", str(run))
    assert bad_resume.exit_code == 2 and "--lr" in bad_resume.stderr
    extended = invoke("train", "--resume", "--steps", "15", "--out", str(run), "--no-progress")
    assert extended.exit_code == 0, extended.output
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [5, 10, 15]


def test_gpt_defaults_to_loss_on_all_positions(tmp_path):
    run = tmp_path / "gpt"
    assert invoke("train", *TINY, "--model", "gpt", "--layers", "1", "--model-param", "n_embd=16",
                  "--out", str(run)).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    assert config["loss_on"] == "all" and config["model_params"] == {"n_embd": 16, "n_layer": 1}


def test_repro_list_names_the_papers_and_their_claims():
    result = invoke("repro", "list")
    assert result.exit_code == 0 and "von-oswald-2023" in result.output
    assert ("    claim one-gd-step (decided at quick): A trained one-layer LSA predicts as one step of GD"
            in result.output)


@pytest.fixture(scope="module")
def lsa_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("lsa") / "run"
    train(TrainConfig(task_params={"dim": 3, "points": 8, "condition_number": 2.0}, model_params={"layers": 2},
                      steps=20, batch_size=32, device="cpu", log_every=10), run, progress=False)
    return run


def same_as_printed(value, result):
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(value))


def test_probe_prints_what_probe_run_returns(lsa_run, tmp_path):
    result, paths = probe_run(lsa_run, "gd", steps=3, num_prompts=64, device="cpu", out_dir=tmp_path)
    same_as_printed(result, invoke("probe", str(lsa_run), "--algorithm", "gd", "--steps", "3", "--num-prompts", "64",
                                   "--device", "cpu", "--json"))
    assert paths["json"].read_text() == (lsa_run / "probe" / "gd.json").read_text()
    assert paths["csv"].name == "gd.csv" and paths["figure"].stat().st_size > 1000


def test_probe_latent_prints_what_probe_latent_run_returns(lsa_run, tmp_path):
    records, paths = probe_latent_run(lsa_run, "w", num_fit=64, num_prompts=64, device="cpu", out_dir=tmp_path)
    same_as_printed(records, invoke("probe-latent", str(lsa_run), "--latent", "w", "--num-fit", "64",
                                    "--num-prompts", "64", "--device", "cpu", "--json"))
    assert paths["json"].read_text() == (lsa_run / "probe" / "latent-w.json").read_text()


@pytest.mark.parametrize("preconditioner", ["identity", "optimal"])
def test_compare_weights_prints_what_compare_weights_run_returns(lsa_run, preconditioner, tmp_path):
    records, paths = compare_weights_run(lsa_run, 0.5, preconditioner, out_dir=tmp_path)
    same_as_printed(records, invoke("compare-weights", str(lsa_run), "--lr", "0.5", "--preconditioner",
                                    preconditioner, "--json"))
    written = lsa_run / "compare-weights" / f"{preconditioner}-lr0.5.json"
    assert paths["json"].read_text() == written.read_text() and paths["figure"].stat().st_size > 1000


def test_probe_readouts_write_separate_files(lsa_run):
    for readout in ("direct", "fitted"):
        assert invoke("probe", str(lsa_run), "--algorithm", "gd", "--steps", "2", "--num-prompts", "32",
                      "--device", "cpu", "--readout", readout, "--no-progress").exit_code == 0
    direct, fitted = (json.loads((lsa_run / "probe" / name).read_text()) for name in ("gd.json", "gd-fitted.json"))
    assert direct != fitted


def test_cli_holds_no_sampling_fitting_or_plotting():
    source = "".join(path.read_text() for path in Path(cli_module.__file__).parent.glob("*.py"))
    for name in ("torch", "make_generator", "plot_", "probe(", "probe_latent(", "compare_to_construction",
                 "make_task", "load_run"):
        assert name not in source, name


@pytest.mark.parametrize("arguments, environment", [(["--threads", "1"], {}), ([], {"ICL_SIM_THREADS": "1"})])
def test_threads_from_the_option_or_the_environment(arguments, environment):
    torch.set_num_threads(2)
    result = CliRunner().invoke(cli, [*arguments, "tasks"], env=environment)
    assert result.exit_code == 0 and torch.get_num_threads() == 1


def test_zero_threads_is_one_line_naming_the_option():
    result = CliRunner().invoke(cli, ["--threads", "0", "tasks"])
    assert result.exit_code == 2 and "--threads" in result.output.strip().splitlines()[-1]


def every_command(group=cli, path=()):
    """(path, command) for the root, every group and every command of the command tables, loaded."""
    yield path, group
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        if isinstance(command, click.Group):
            yield from every_command(command, (*path, name))
        else:
            yield (*path, name), command


HEAVY = ("torch", "sympy", "matplotlib", "seaborn")


def test_every_help_starts_without_torch_sympy_or_matplotlib():
    """One subprocess asks every command for --help, noting after each the heavy modules loaded so far."""
    show_every_help = ("import json, sys\nfrom icl_sim.cli import main\nimported = {}\n"
                       "for path in json.loads(sys.argv[1]):\n"
                       "    sys.argv = ['icl-sim', *path, '--help']\n"
                       "    try:\n        main()\n    except SystemExit:\n        pass\n"
                       f"    imported[' '.join(path)] = [name for name in {HEAVY!r} if name in sys.modules]\n"
                       "print(json.dumps(imported))")
    paths = [list(path) for path, _ in every_command()]
    result = subprocess.run([sys.executable, "-c", show_every_help, json.dumps(paths)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"", "train", "repro run", "theory verify", "sweep run"} <= set(imported)
    assert imported == {" ".join(path): [] for path in paths}


#: commands that list or refuse a name from the catalogue, with what each prints
LISTINGS = [(["tasks"], "linear-regression  (metric"), (["theory", "list"], "source:"),
            (["repro", "list"], "claim one-gd-step"), (["repro", "run", "nope"], "Error: name must be one of"),
            (["theory", "show", "nope"], "Error: claim must be one of"),
            (["theory", "verify", "one-step-gd-optimal-step", "nope"], "Error: claim must be one of")]


def test_listings_and_unknown_names_start_without_torch_sympy_or_matplotlib():
    listing = ("import sys\nfrom icl_sim.cli import main\nsys.argv = ['icl-sim', *sys.argv[1:]]\n"
               "try:\n    main()\nexcept SystemExit:\n    pass\n"
               f"print('heavy:', [name for name in {HEAVY!r} if name in sys.modules])")
    for args, shown in LISTINGS:
        result = subprocess.run([sys.executable, "-c", listing, *args], capture_output=True, text=True)
        assert shown in result.stdout + result.stderr, (args, result.stderr)
        assert result.stdout.strip().splitlines()[-1] == "heavy: []", args


def test_the_catalogue_is_the_registries():
    """catalogue.json is what the registries list now: rebuild it with `python -m icl_sim.catalogue`."""
    assert catalogue.built() == catalogue.build()


@pytest.mark.parametrize("light, registry", [(choices.MODELS, tuple(sorted(MODELS))), (choices.READOUTS, READOUTS),
                                             (choices.STEP_PARAMS, STEP_PARAMS),
                                             (choices.PRECONDITIONERS, PRECONDITIONERS), (choices.SCALES, SCALES),
                                             (choices.CHECKPOINT_FORMATS, CHECKPOINT_FORMATS),
                                             (choices.EXECUTORS, EXECUTORS), (choices.LATENT_PROBES, PROBES),
                                             (choices.LATENT_CONTROLS, CONTROLS),
                                             (choices.CONTROLS, REPRO_CONTROLS),
                                             (choices.GALLERY_SCALES, GALLERY_SCALES)])
def test_light_choices_equal_their_registries(light, registry):
    assert light == registry


def single_value_options():
    """(command path, option) for every option of every command that takes one value (click's --help aside)."""
    return [(path, param) for path, command in every_command() for param in command.params
            if isinstance(param, click.Option) and param.expose_value and not (param.multiple or param.count)]


@pytest.mark.parametrize("path, param", single_value_options(),
                         ids=lambda value: " ".join(value) if isinstance(value, tuple) else value.opts[0])
def test_every_single_value_option_given_twice_is_one_line(path, param, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if param.is_flag:
        first, second = param.opts[0], (param.secondary_opts or param.opts)[0]
        args, typed = [first, second], f"{first} and {second}"
    else:
        first, second = ["1"] * param.nargs, ["2"] * param.nargs
        args, typed = [param.opts[0], *first, param.opts[-1], *second], f"{' '.join(first)} and {' '.join(second)}"
    result = invoke(*path, *args)
    names = "/".join(param.opts + param.secondary_opts)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"Error: {names} given twice ({typed}); give it once"]
    assert list(tmp_path.iterdir()) == []


def test_repeatable_options_keep_every_value():
    train_command = cli.get_command(None, "train")
    context = train_command.make_context("train", ["--task-param", "noise=0.1", "--task-param", "dim=3",
                                                   "--model-param", "layers=2", "--out", "x"])
    assert context.params["task_params"] == ("noise=0.1", "dim=3") and context.params["model_params"] == ("layers=2",)
    probe_latent = cli.get_command(None, "probe-latent")
    context = probe_latent.make_context("probe-latent", [".", "--latent", "w", "--probe", "linear", "--probe", "mlp"])
    assert context.params["probes"] == ("linear", "mlp")


@pytest.mark.parametrize("group", [cli_module.COMMANDS, cli_module.REPRO_COMMANDS, cli_module.THEORY_COMMANDS])
def test_lazy_help_is_the_commands_own(group):
    for name, lazy in group.items():
        command = lazy.load()
        assert command.name == name and lazy.help == command.get_short_help_str(limit=1000)


@pytest.mark.parametrize("command", [["eval"], ["probe"], ["probe-latent"], ["theory", "verify"], ["repro", "run"],
                                     ["repro", "gallery"], ["train"]])
def test_long_commands_take_a_progress_flag(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0 and "--progress / --no-progress" in result.output


def test_theory_show_renders_valid_latex_and_readable_plain_symbols():
    from icl_sim.claims import CLAIMS
    from icl_sim.claims.rendering import render

    for claim in CLAIMS.values():
        for step in claim.derive():
            latex, plain = render(step, latex=True), render(step)
            depth = 0
            for character in latex:
                depth += {"{": 1, "}": -1}.get(character, 0)
                assert depth >= 0, latex
            assert depth == 0 and latex.isascii(), latex
            assert not re.search(r"[^\s_]__[^\s_]", plain), plain  # sympy's mangling of _ and ^ in names
