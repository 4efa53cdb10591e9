"""Failures that are results, not mistakes: a run that diverged, a sweep whose jobs died.

The command line reports a :class:`RunFailed` in one line with exit status 1 (``icl_sim.cli.errors``),
apart from bad input (status 2) and bugs (a traceback).
"""


class RunFailed(RuntimeError):
    """Training ran and did not finish: what was saved is kept, and the message says how to go on."""


class Terminated(KeyboardInterrupt):
    """SIGTERM during training (what SLURM sends before it kills a job): handled as Ctrl-C, so the run is
    checkpointed; the command line then exits with status 143 (128 + SIGTERM)."""
