import os
import signal
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# make tests/contract.py importable as `contract`
sys.path.insert(0, str(Path(__file__).parent))

# Property tests draw the same examples on every run (a CI verdict must not depend on the day's draw);
# HYPOTHESIS_PROFILE=explore draws new ones, to look for counterexamples on purpose.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """One CPU thread: the test models are tiny, and with two threads a busy core stalls every kernel."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="session")
def ctrl_c_reaches_the_tests():
    """SIGINT delivered as KeyboardInterrupt, as in a terminal, also where the suite was started with it ignored
    (``nohup``, ``&`` in a script; the processes a test starts would inherit that): the Ctrl-C tests send it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
