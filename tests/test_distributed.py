"""One run on two processes (torchrun, gloo, CPU) equals the same run on one, up to float reduction order."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.distributed import World
from icl_sim.run_io import load_checkpoint, read_metrics
from icl_sim.seeding import derive_seed
from icl_sim.training import train

#: two processes sum their halves of each gradient in another order than one process does: float32 rounding
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
OPTIONS = {"dim": 3, "points": 6, "batch-size": 16, "batch-shards": 2, "lr": 0.05, "device": "cpu", "log-every": 2,
           "checkpoint-every": 4}


def own_rendezvous() -> str:
    """The environment in which a second command in torchrun's workers meets on a store of its own (rank 0's, on a
    free port): the agent's store still holds the first command's group."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"TORCHELASTIC_USE_AGENT_STORE=False MASTER_PORT={probe.getsockname()[1]}"


@pytest.mark.slow
def test_two_processes_train_and_resume_the_one_process_run(tmp_path):
    """torchrun trains 4 steps on two processes, then resumes to 8 (a second launch of the CLI in the same
    workers, with a rendezvous of its own); weights and logged losses equal one process's 8 steps."""
    reference = train(TrainConfig(task_params={"dim": 3, "points": 6}, steps=8, batch_size=16, batch_shards=2,
                                  lr=0.05, device="cpu", log_every=2, checkpoint_every=4), tmp_path / "one",
                      progress=False)
    cli = f"{sys.executable} -m icl_sim.cli"
    fresh = " ".join([f"{cli} train --steps 4 --out {tmp_path / 'two'} --no-progress"]
                     + [f"--{name} {value}" for name, value in OPTIONS.items()])
    resumed = f"{own_rendezvous()} {cli} train --resume --steps 8 --out {tmp_path / 'two'} --no-progress"
    unshardable = f"{own_rendezvous()} {cli} train --batch-shards 1 --device cpu --out {tmp_path / 'three'}"
    launched = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                               "--no-python", "sh", "-c", f"{fresh} && {resumed} && {unshardable}"],
                              capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert launched.stdout.count("for 8 steps") == 2, launched.stderr[-2000:]  # both ranks trained and resumed
    # ... as two processes of one group: one batch shard cannot be split between them
    assert "Error: batch_shards (1) must be a multiple of the number of processes (2" in launched.stderr
    assert not (tmp_path / "three").exists()
    weights = load_checkpoint(tmp_path / "two")["model"]
    assert weights.keys() == reference.state_dict().keys()
    for name, tensor in reference.state_dict().items():
        torch.testing.assert_close(weights[name], tensor, **TOLERANCE)
    two, one = read_metrics(tmp_path / "two"), read_metrics(tmp_path / "one")
    assert [record["step"] for record in two] == [record["step"] for record in one] == [2, 4, 6, 8]
    np.testing.assert_allclose([r["loss"] for r in two], [r["loss"] for r in one], **TOLERANCE)
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == sorted(
        path.name for path in (tmp_path / "one").iterdir())  # rank 0 wrote the run, nothing else was left
    assert json.loads((tmp_path / "two" / "config.json").read_text())["batch_shards"] == 2


def test_one_shard_is_the_unsharded_stream():
    """Shard 0 of batch t has the seed batch t had before batches had shards; other shards have seeds of their own."""
    for seed, step in [(0, 0), (3, 17)]:
        expected = int(np.random.SeedSequence([seed, 0, step]).generate_state(1, np.uint64)[0]) & (2**63 - 1)
        assert derive_seed(seed, "train", step, shard=0) == expected
        assert derive_seed(seed, "train", step, shard=1) not in (expected, derive_seed(seed, "train", step + 1))


@pytest.mark.parametrize("size", [1, 2, 4])
def test_the_ranks_share_out_every_shard_once(size):
    shards = [shard for rank in range(size) for shard in World(rank, size).shards(8)]
    assert sorted(shards) == list(range(8))


def test_a_world_that_does_not_divide_the_shards_is_refused():
    with pytest.raises(ValueError, match=r"batch_shards \(4\) must be a multiple of the number of processes \(3"):
        World(1, 3).shards(4)
    with pytest.raises(ValueError, match=r"batch_size \(10\) must be a multiple of batch_shards \(4\)"):
        TrainConfig(batch_size=10, batch_shards=4)
