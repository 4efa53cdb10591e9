"""Snapshots (``keep_every``): the weights every K steps, each the weights a run stopped at that step has."""
import json

import pytest

from tiny_runs import assert_identical, parameters

from icl_sim.run_io import load_run, snapshot_path, snapshot_steps
from icl_sim.training import train
from test_training import tiny_config


def test_snapshots_are_the_weights_of_the_run_at_their_steps(tmp_path):
    """At a constant rate the first 10 steps of a 20-step run are a 10-step run: its snapshot of step 10 is that
    run's model, its snapshot of step 20 its final model."""
    config = tiny_config(steps=20, lr_schedule="constant", warmup_steps=0, keep_every=5)
    train(config, tmp_path / "run", progress=False)
    assert snapshot_steps(tmp_path / "run") == [5, 10, 15, 20]
    train(tiny_config(steps=10, lr_schedule="constant", warmup_steps=0), tmp_path / "ten", progress=False)
    assert_identical(parameters(load_run(tmp_path / "run", step=10)), parameters(load_run(tmp_path / "ten")))
    assert_identical(parameters(load_run(tmp_path / "run", step=20)), parameters(load_run(tmp_path / "run")))


def test_a_missing_or_damaged_snapshot_is_one_line(tmp_path):
    train(tiny_config(steps=10, keep_every=5), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match=r"keeps no snapshot of step 7; it keeps steps 5, 10$"):
        load_run(tmp_path / "run", step=7)
    path = snapshot_path(tmp_path / "run", 5)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ValueError, match=f"cannot read {path}"):
        load_run(tmp_path / "run", step=5)
    train(tiny_config(steps=10), tmp_path / "plain", progress=False)
    with pytest.raises(ValueError, match=r"it keeps none \(train with --keep-every K"):
        load_run(tmp_path / "plain", step=10)


def test_keep_every_is_saved_only_when_set(tmp_path):
    assert "keep_every" not in tiny_config().to_json() and '"keep_every": 5' in tiny_config(keep_every=5).to_json()
    with pytest.raises(ValueError, match="keep_every"):
        tiny_config(keep_every=-1)


def test_eval_and_probe_of_a_snapshot_are_those_of_the_run_stopped_there(tmp_path):
    """`eval --step 10` of a 20-step run at a constant rate gives the 10-step run's numbers, in eval-step-10; so do
    `probe` and `probe-latent`, in probe-step-10."""
    from click.testing import CliRunner

    from icl_sim.cli import cli

    train(tiny_config(steps=20, lr_schedule="constant", warmup_steps=0, keep_every=10), tmp_path / "run",
          progress=False)
    train(tiny_config(steps=10, lr_schedule="constant", warmup_steps=0), tmp_path / "ten", progress=False)
    for run, step in ((tmp_path / "run", ["--step", "10"]), (tmp_path / "ten", [])):
        for command in (["eval", str(run), "--num-prompts", "64", "--device", "cpu", *step],
                        ["probe", str(run), "--algorithm", "gd", "--steps", "3", "--num-prompts", "64",
                         "--device", "cpu", *step],
                        ["probe-latent", str(run), "--latent", "w", "--num-fit", "64", "--num-prompts", "64",
                         "--device", "cpu", *step]):
            result = CliRunner().invoke(cli, command)
            assert result.exit_code == 0, result.output
    snapshot = json.loads((tmp_path / "run" / "eval-step-10" / "results.json").read_text())
    stopped = json.loads((tmp_path / "ten" / "eval" / "results.json").read_text())
    assert [record["mean"] for record in snapshot] == [record["mean"] for record in stopped]
    assert "lsa at step 10 (trained)" in {record["predictor"] for record in snapshot}
    for table in ("gd.json", "latent-w.json"):
        assert (json.loads((tmp_path / "run" / "probe-step-10" / table).read_text())
                == json.loads((tmp_path / "ten" / "probe" / table).read_text()))
