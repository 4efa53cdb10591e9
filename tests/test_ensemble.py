"""Ensembles: K runs trained as one batched computation equal the same runs trained alone, file for file.

Tolerance: vmap may change the order of floating-point reductions (a batched matmul), so weights and
losses are compared to a relative 1e-5 in float32; the non-float fields of metrics records, the
configs and the schedules exactly.  The LSA runs use Adam and AdamW and come out bit-identical on this
CPU.  The GPT runs use SGD: a GPT's key biases have an exactly zero gradient (softmax ignores a
constant added to every score), so theirs is rounding noise, which Adam divides by its own size and
turns into steps of ±lr whose sign depends on the reduction order, alone or in an ensemble alike.
"""
import dataclasses

import pytest
import torch

from tiny_runs import Stop, parameters, stop_at

from icl_sim.config import TrainConfig
from icl_sim.distributed import TORCHRUN_VARIABLES
from icl_sim.ensemble import train_ensemble
from icl_sim.run_io import load_checkpoint, read_metrics
from icl_sim.training import train

RTOL = 1e-5
MODELS = {"lsa": {"layers": 2}, "gpt": {"n_layer": 1, "n_embd": 16, "n_head": 2}}


def sweep(model: str, steps: int = 20) -> list[TrainConfig]:
    """Three runs of one architecture: two sharing optimiser settings (other seeds, pools, noise), one not."""
    base = TrainConfig(task_params={"dim": 3, "points": 6}, model=model, model_params=MODELS[model], steps=steps,
                       batch_size=16, lr=1e-2, lr_schedule="cosine", warmup_steps=3, device="cpu", log_every=5,
                       checkpoint_every=10, loss_on="all", optimizer="adam" if model == "lsa" else "sgd")
    other = dict(lr=3e-3, optimizer="adamw", weight_decay=0.1) if model == "lsa" else dict(lr=3e-2)
    return [base,
            dataclasses.replace(base, seed=1, task_params={"dim": 3, "points": 6, "pool_size": 4, "noise": 0.3}),
            dataclasses.replace(base, seed=2, grad_clip=0.05, **other)]


def assert_close_states(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=RTOL, atol=1e-7, msg=name)


def assert_same_records(first: list[dict], second: list[dict]) -> None:
    assert [record["step"] for record in first] == [record["step"] for record in second]
    for ours, theirs in zip(first, second):
        assert ours["loss"] == pytest.approx(theirs["loss"], rel=RTOL)
        assert {k: v for k, v in ours.items() if k != "loss"} == {k: v for k, v in theirs.items() if k != "loss"}


@pytest.mark.parametrize("model", MODELS)
def test_ensemble_equals_separate_runs(tmp_path, model):
    configs = sweep(model)
    models = train_ensemble(configs, [tmp_path / f"ensemble-{i}" for i in range(3)], progress=False)
    for index, config in enumerate(configs):
        alone = train(config, tmp_path / f"alone-{index}", progress=False)
        assert_close_states(parameters(models[index]), parameters(alone))
        assert_same_records(read_metrics(tmp_path / f"ensemble-{index}"), read_metrics(tmp_path / f"alone-{index}"))
        ours, theirs = load_checkpoint(tmp_path / f"ensemble-{index}"), load_checkpoint(tmp_path / f"alone-{index}")
        assert ours.keys() == theirs.keys() and ours["step"] == theirs["step"] == config.steps
        assert ours["scheduler"] == theirs["scheduler"]
        assert ours["optimizer"]["param_groups"] == theirs["optimizer"]["param_groups"]
        for entry, reference in zip(ours["optimizer"]["state"].values(), theirs["optimizer"]["state"].values()):
            assert_close_states(entry, reference)
        assert (tmp_path / f"ensemble-{index}" / "config.json").read_text() == \
            (tmp_path / f"alone-{index}" / "config.json").read_text()
    # the weights really differ between runs: each run kept its own seed, data and optimiser
    assert not torch.allclose(next(models[0].parameters()), next(models[1].parameters()))


def test_interrupted_ensemble_resumes_as_an_ensemble_or_alone(tmp_path):
    """Runs stopped at different steps resume in groups that share a step; a run resumes alone too."""
    configs = sweep("lsa")
    straight = [parameters(train(config, tmp_path / f"alone-{i}", progress=False)) for i, config in enumerate(configs)]
    run_dirs = [tmp_path / f"crashed-{i}" for i in range(3)]
    every_five = [dataclasses.replace(config, checkpoint_every=5) for config in configs]
    with pytest.raises(Stop):  # the third run's record of step 15 raises: the 9th call, 3 runs logging every 5 steps
        train_ensemble(every_five, run_dirs, progress=False, log_extra=stop_at(45, Stop()))
    assert [load_checkpoint(run_dir)["step"] for run_dir in run_dirs] == [15, 15, 10]
    with pytest.raises(ValueError, match="different steps"):
        train_ensemble(every_five, run_dirs, resume=True, progress=False)
    resumed = train_ensemble(every_five[:2], run_dirs[:2], resume=True, progress=False)
    resumed.append(train(every_five[2], run_dirs[2], resume=True, progress=False))
    for index, model in enumerate(resumed):
        assert_close_states(parameters(model), straight[index])
        assert_same_records(read_metrics(run_dirs[index]), read_metrics(tmp_path / f"alone-{index}"))


def test_an_ensemble_of_a_model_with_a_scalar_weight_resumes(tmp_path):
    """A 0-dimensional weight (ttt's learned inner rate) has Adam entries of the step count's shape: resumed as an
    ensemble, its runs still end as they would straight (the step count was once stacked with them and broke
    Adam's resume: "a Tensor with 3 elements cannot be converted to Scalar")."""
    base = TrainConfig(task_params={"dim": 3, "points": 6}, model="ttt", model_params={"inner_steps": 1}, steps=10,
                       batch_size=16, lr=1e-2, device="cpu", log_every=5, checkpoint_every=5)
    configs = [dataclasses.replace(base, seed=seed) for seed in range(3)]
    straight = [parameters(train(config, tmp_path / f"alone-{i}", progress=False)) for i, config in enumerate(configs)]
    run_dirs = [tmp_path / f"crashed-{i}" for i in range(3)]
    with pytest.raises(Stop):  # the first run's record of step 10: the 4th call, 3 runs logging every 5 steps
        train_ensemble(configs, run_dirs, progress=False, log_extra=stop_at(20, Stop()))
    assert [load_checkpoint(run_dir)["step"] for run_dir in run_dirs] == [5, 5, 5]
    for model, reference in zip(train_ensemble(configs, run_dirs, resume=True, progress=False), straight):
        assert_close_states(parameters(model), reference)


@pytest.mark.parametrize("change, field", [
    (dict(model_params={"layers": 3}), "model_params"),
    (dict(batch_size=8), "batch_size"),
    (dict(task_params={"dim": 4, "points": 6}), "dim"),
    (dict(steps=30), "steps"),
])
def test_refuses_runs_of_another_architecture_or_batch_shape(tmp_path, change, field):
    configs = sweep("lsa")
    with pytest.raises(ValueError, match=field):
        train_ensemble([configs[0], dataclasses.replace(configs[1], **change)], [tmp_path / "a", tmp_path / "b"],
                       progress=False)
    assert not (tmp_path / "a").exists()


def test_refuses_dropout_and_shared_directories(tmp_path):
    config = dataclasses.replace(sweep("gpt")[0], model_params={**MODELS["gpt"], "dropout": 0.1})
    with pytest.raises(ValueError, match="dropout"):
        train_ensemble([config], [tmp_path / "a"], progress=False)
    with pytest.raises(ValueError, match="distinct"):
        train_ensemble(sweep("lsa")[:2], [tmp_path / "a", tmp_path / "a"], progress=False)


def test_refuses_a_torchrun_launch_whose_every_process_would_write_every_run(tmp_path, monkeypatch):
    for name, value in zip(TORCHRUN_VARIABLES, ("0", "0", "2", "127.0.0.1", "29500")):
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="without torchrun"):
        train_ensemble(sweep("lsa")[:2], [tmp_path / "a", tmp_path / "b"], progress=False)
    assert not (tmp_path / "a").exists()
