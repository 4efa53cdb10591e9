"""Tiny training runs: train and evaluate as every task family's end-to-end test does; compare runs bit for bit."""
import json

import torch

from icl_sim.config import TrainConfig
from icl_sim.reports import evaluate_run
from icl_sim.training import train

TINY_GPT = {"n_layer": 1, "n_embd": 32, "n_head": 2}


def train_and_evaluate(run_dir, task, task_params, *, model="gpt", model_params=TINY_GPT, steps=250, lr=3e-3,
                       num_prompts=128, **config):
    """Train ``steps`` steps on CPU, evaluate with ``icl-sim eval``'s code, check the files; return the records."""
    options = {"loss_on": "all", **config}
    train(TrainConfig(task=task, task_params=task_params, model=model, model_params=model_params, steps=steps,
                      batch_size=64, lr=lr, device="cpu", log_every=50, checkpoint_every=steps, **options),
          run_dir, progress=False)
    records, paths = evaluate_run(run_dir, num_prompts=num_prompts, device="cpu")
    assert all(path.is_file() for path in paths.values())
    assert json.loads(paths["json"].read_text()) == json.loads(json.dumps(records))
    return records


def parameters(model) -> dict:
    """A detached copy of ``model``'s state, to compare runs bit for bit."""
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def assert_identical(first: dict, second: dict) -> None:
    """Two state dicts hold the same tensors, bit for bit."""
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


class Stop(Exception):
    """A crash in the middle of training (anything but Ctrl-C)."""


def stop_at(step_to_stop: int, exception: BaseException):
    """A ``log_extra`` (metrics every 5 steps) that raises ``exception`` at the record of step ``step_to_stop``."""
    calls = {"n": 0}

    def log_extra(model):
        calls["n"] += 1
        if calls["n"] * 5 == step_to_stop:
            raise exception
        return {}

    return log_extra
