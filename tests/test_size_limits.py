"""Sizes that cannot work are refused up front with an estimate naming the setting that makes them large; legal but
probably unintended settings are one ``Warning:`` line; a config file's top-level shortcuts resolve as a sweep's."""
import dataclasses
import json

import pytest
from click.testing import CliRunner

from icl_sim import reports
from icl_sim.cli import cli
from icl_sim.config import TrainConfig, read_config_file
from icl_sim.models import MODELS
from icl_sim.reports import config_warnings, train_config, training_memory
from icl_sim.sweep import resolved_config

SMALL = ["--batch-size", "8", "--device", "cpu", "--no-progress"]
#: every model family at its defaults, and variants whose parameters or depth count differently
MODEL_CONFIGS = [(name, {}) for name in MODELS] + [
    ("lsa", {"layers": 5, "mlp": True, "layer_norm": True}), ("lsa", {"layers": 4, "recurrent": True}),
    ("lsa", {"layers": 3, "parameterisation": "sparse"}), ("lsa", {"layers": 3, "parameterisation": "diagonal"}),
    ("gpt", {"n_layer": 5, "n_embd": 32, "n_head": 4}), ("softmax-attention", {"layers": 4, "heads": 2}),
    ("disentangled", {"layers": 3}), ("looped", {"loops": 30, "loop_window": 15}), ("deep-linear", {"width": 9})]


def invoke(*args):
    return CliRunner().invoke(cli, [str(arg) for arg in args])


#: labels per point where a model allows only one number (complex-lsa and mesa predict the next state: target_dim = dim;
#: selection-attention and looped-softmax-ngd one ±1 label)
TARGET_DIMS = {"complex-lsa": 4, "mesa": 4, "selection-attention": 1, "looped-softmax-ngd": 1}


@pytest.mark.parametrize("name, params", MODEL_CONFIGS)
def test_the_parameter_count_without_building_is_the_models(name, params):
    model_class = MODELS[name]
    config = model_class.Config(**params)
    target_dim = TARGET_DIMS.get(name, 2)
    built = model_class(4, 7, config, target_dim)
    assert model_class.parameter_count(4, 7, config, target_dim) == sum(p.numel() for p in built.parameters())


def test_a_huge_model_is_counted_without_being_built():  # built, its 10^8 layers would not fit in memory
    count = MODELS["gpt"].parameter_count(3, 6, MODELS["gpt"].Config(n_layer=10**8), 1)
    assert count > 10**8 * 12 * 64 ** 2


@pytest.mark.parametrize("args, named", [
    (["--model", "gpt", "--layers", "100000000"], "n_layer=100000000"),
    (["--model", "gpt", "--points", "20000000"], "points=20000000"),
    (["--layers", "100000000"], "layers=100000000"),
    (["--model", "disentangled", "--layers", "60"], "layers=60"),
    (["--model", "gpt", "--model-param", "n_embd=10000000000", "--model-param", "n_head=1"], "n_embd=10000000000"),
    (["--task", "graph-connectivity", "--task-param", "nodes=100000000"], "nodes=100000000"),
])
def test_a_size_that_cannot_fit_is_refused_naming_it_before_anything_is_written(tmp_path, args, named):
    result = invoke("train", *SMALL, *args, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {named} needs about "), result.stderr
    assert "of memory (estimate)" in lines[0] and "batch" not in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_the_batch_size_is_named_when_it_makes_training_large(monkeypatch):
    monkeypatch.setattr(reports, "available_bytes", lambda: 10**6)
    monkeypatch.setattr(reports, "check_fits", lambda name, value, needed: (_ for _ in ()).throw(
        ValueError(f"{name}={value}")))
    with pytest.raises(ValueError, match="^batch_size=4096$"):
        train_config({"batch_size": 4096}, dim=3, points=6, layers=2)


def test_the_estimate_grows_with_every_size():
    base = train_config({"batch_size": 8}, dim=3, points=6)
    for change in ({"batch_size": 16}, {"task_params": {"dim": 6, "points": 6}},
                   {"task_params": {"dim": 3, "points": 12}}, {"model_params": {"layers": 2}},
                   {"model_params": {"heads": 2}}):
        assert training_memory(dataclasses.replace(base, **change)) > training_memory(base), change


@pytest.mark.parametrize("args, named", [
    (["--steps", "99999999999999999999999"], "'--steps'"),
    (["--seed", str(2 ** 64)], "'--seed'"),
    (["--dim", str(2 ** 64)], "'--dim'"),
    (["--dim", "3", "--curriculum-dims", "50:1:10"], "curriculum_dims starts at 50, above the task's dim (3)"),
    (["--points", "6", "--curriculum-points", "7:1:10"], "curriculum_points starts at 7, above the task's points (6)"),
    (["--model", "deep-linear", "--layers", "1"], "layers does not apply to model 'deep-linear', whose layers is fixed"),
])
def test_an_impossible_value_is_an_error_naming_the_option(tmp_path, args, named):
    result = invoke("train", *SMALL, *args, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_steps_count_past_int64_in_a_config_file_is_an_error(tmp_path):
    (tmp_path / "run.yaml").write_text("steps: 99999999999999999999999\n")
    result = invoke("train", "--config", tmp_path / "run.yaml", "--out", tmp_path / "run")
    assert result.exit_code == 2 and "steps must be >= 1 and <= 9223372036854775807" in result.stderr


@pytest.mark.parametrize("args, warning", [
    (["--warmup-steps", "10"], "Warning: warmup_steps=10 is longer than the run (steps=4)"),
    (["--points", "1"], "Warning: points=1: every prompt is its query alone"),
])
def test_a_probably_unintended_value_is_one_warning_line(tmp_path, args, warning):
    result = invoke("train", *SMALL, "--steps", "4", *args, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("Warning: ")] == [
        next(line for line in result.stderr.splitlines() if line.startswith(warning))]


def test_more_threads_than_cores_is_one_warning_line():
    result = invoke("--threads", "100000", "tasks")
    assert result.exit_code == 0
    assert result.stderr.startswith("Warning: threads=100000 is more than the ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_warmup_as_long_as_the_run_and_a_real_prompt_are_not_warned_about():
    assert config_warnings(train_config({"steps": 4, "warmup_steps": 4}, dim=3, points=6)) == []


def test_a_config_file_takes_top_level_shortcuts_as_a_sweep_base_does(tmp_path):
    settings = {"dim": 3, "points": 6, "layers": 2, "steps": 4, "task_params": {"noise": 0.1}}
    (tmp_path / "run.yaml").write_text("dim: 3\npoints: 6\nlayers: 2\nsteps: 4\ntask_params: {noise: 0.1}\n")
    from_file = train_config(read_config_file(tmp_path / "run.yaml"))
    assert from_file == resolved_config(settings, {})
    assert from_file == TrainConfig(task_params={"dim": 3, "points": 6, "noise": 0.1}, model_params={"layers": 2},
                                    steps=4)
    result = invoke("train", "--config", tmp_path / "run.yaml", "--device", "cpu", "--batch-size", "4",
                    "--no-progress", "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output


def test_the_command_line_overrides_a_config_files_shortcut(tmp_path):
    (tmp_path / "run.yaml").write_text("dim: 3\npoints: 6\n")
    assert train_config(read_config_file(tmp_path / "run.yaml"), dim=4).task_params["dim"] == 4
    assert train_config(read_config_file(tmp_path / "run.yaml"), task_params=["dim=5"]).task_params["dim"] == 5


@pytest.mark.parametrize("text, named", [
    ("dim: 3\ntask_params: {dim: 4}\n", "dim=3 and task_params dim=4 both set the task parameter 'dim'"),
    ("layers: 2\nmodel_params: {layers: 3}\n", "layers=2 and model_params layers=3"),
    ("loops: 2\n", "loops applies to looped models only"),
])
def test_a_config_file_setting_a_parameter_twice_is_refused_as_a_sweep_spec_is(tmp_path, text, named):
    (tmp_path / "run.yaml").write_text(text)
    result = invoke("train", "--config", tmp_path / "run.yaml", "--out", tmp_path / "run")
    assert result.exit_code == 2 and named in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


def test_probe_steps_past_the_bound_are_an_error_and_up_to_it_run_without_a_warning(tmp_path):
    """Steps 1..K of a shared setting are one iteration (linear in K), so up to the bound needs no warning."""
    assert invoke("train", *SMALL, "--dim", "2", "--points", "4", "--steps", "1", "--out", tmp_path / "run"
                  ).exit_code == 0
    for steps in (str(10 ** 30), "1001"):
        result = invoke("probe", tmp_path / "run", "--algorithm", "gd", "--steps", steps)
        assert result.exit_code == 2 and "'--steps'" in result.stderr and not (tmp_path / "run" / "probe").exists()
    result = invoke("probe", tmp_path / "run", "--algorithm", "gd", "--steps", "1000", "--num-prompts", "8",
                    "--device", "cpu", "--json")
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert {record["step"] for record in json.loads(result.stdout)["records"]} == set(range(1, 1001))


def test_a_run_of_many_flop_is_warned_about_with_its_hours():
    config = train_config({"model": "gpt", "steps": 10 ** 8, "batch_size": 64}, dim=5, points=11)
    built = MODELS["gpt"](5, 11, MODELS["gpt"].Config(**config.model_params), 1)
    flop = 6 * sum(p.numel() for p in built.parameters()) * 64 * 11 * 10 ** 8
    assert reports.training_flop(config) == flop
    warning = next(text for text in config_warnings(config) if "FLOP" in text)
    assert warning.startswith(f"training this config is about {flop:.1e} FLOP") and f"{flop / 3.6e15:.3g} hours" in warning
    assert not any("FLOP" in text for text in config_warnings(dataclasses.replace(config, steps=1000)))


def test_available_memory_is_the_least_of_the_machine_the_cgroup_and_the_slurm_job(tmp_path, monkeypatch):
    """On a shared node the machine's free memory is not the job's: its cgroup's room and SLURM's --mem bound it."""
    from icl_sim import memory

    (tmp_path / "meminfo").write_text("MemTotal: 100000000 kB\nMemAvailable: 50000000 kB\n")
    (tmp_path / "memory.max").write_text("8000000000\n")
    (tmp_path / "memory.current").write_text("3000000000\n")
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "meminfo")
    monkeypatch.setattr(memory, "CGROUP_LIMIT", tmp_path / "memory.max")
    monkeypatch.setattr(memory, "CGROUP_USE", tmp_path / "memory.current")
    for name in ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU"):
        monkeypatch.delenv(name, raising=False)
    assert memory.available_bytes() == 5_000_000_000  # the cgroup's room, below the machine's 51.2 GB
    monkeypatch.setenv("SLURM_MEM_PER_CPU", "1000")
    monkeypatch.setenv("SLURM_CPUS_ON_NODE", "2")
    assert memory.available_bytes() == 2000 * 2**20
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "4000")
    assert memory.available_bytes() == 4000 * 2**20
    (tmp_path / "memory.max").write_text("max\n")
    monkeypatch.delenv("SLURM_MEM_PER_NODE")
    monkeypatch.delenv("SLURM_MEM_PER_CPU")
    assert memory.available_bytes() == 50_000_000 * 1024  # no limit but the machine's
