"""The default thread count (the cores other work leaves idle) and the per-step seeding of dropout."""
import subprocess
import sys

import pytest
import torch

from icl_sim import threads
from icl_sim.seeding import seed_global_generators


@pytest.mark.parametrize("cores, load, expected", [(2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 2.0, 1), (2, 7.5, 1),
                                                   (16, 3.2, 13), (16, 0.0, 16), (1, 0.0, 1)])
def test_idle_cores_are_all_cores_minus_the_load_at_least_one(monkeypatch, cores, load, expected):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(threads, "allocated_cores", lambda: cores)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (load, load, load))
    assert threads.idle_cores() == expected


def test_a_slurm_job_or_an_affinity_mask_is_what_this_process_may_use(monkeypatch):
    """On a shared node the node's cores and load are other jobs': the allocation decides."""
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (40.0, 40.0, 40.0))
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert threads.allocated_cores() == 3 and threads.idle_cores() == 1  # a busy node outside SLURM
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "8")
    assert threads.allocated_cores() == 8 and threads.idle_cores() == 8


def test_use_threads_sets_torch_and_refuses_zero():
    before = torch.get_num_threads()
    try:
        assert threads.use_threads(1) == 1 and torch.get_num_threads() == 1
        with pytest.raises(ValueError, match="threads"):
            threads.use_threads(0)
    finally:
        torch.set_num_threads(before)


def test_seeding_the_cpu_generator_is_torch_manual_seed_for_dropout():
    torch.manual_seed(12345)
    expected = torch.nn.functional.dropout(torch.ones(1000), 0.5)
    torch.manual_seed(0)
    seed_global_generators(12345, "cpu")
    assert torch.equal(torch.nn.functional.dropout(torch.ones(1000), 0.5), expected)


def test_threads_chosen_before_torch_loads_reach_torch():
    script = ("import os, sys; os.environ.pop('OMP_NUM_THREADS', None)\n"
              "from icl_sim.threads import use_threads\nassert 'torch' not in sys.modules\nuse_threads(1)\n"
              "import torch\nprint(torch.get_num_threads())")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "1", result.stderr
