"""Whether a training run converged: its smoothed training loss no longer falling over its last fifth.

A claim judged on models still learning says little either way, so every reproduction reports, beside
each verdict, how many of the runs behind it converged.  The measure is the relative decrease of the
smoothed loss from 80 % of the run's steps to its end, (S(0.8 T) − S(T)) / |S(0.8 T)|, where S(s) is
the mean of the logged losses (each already the mean over its logging interval) in the window of
0.1 T steps ending at s.  A run converged when that decrease is at most ``TOLERANCE``; a diverged
run (a non-finite loss) has not.  The tolerance is fixed here, before any verdict: a loss still
falling by more than 5 % over the last fifth of training is still being learned.
"""
from __future__ import annotations

import math
from typing import Sequence

#: the last fraction of a run's steps over which its loss must have stopped falling
LAST_FRACTION = 0.2
#: the width of the smoothing window, as a fraction of the run's steps
WINDOW_FRACTION = 0.1
#: the largest relative decrease over the last fifth of a run that still counts as converged
TOLERANCE = 0.05


def loss_decrease(history: Sequence[dict]) -> float | None:
    """The relative decrease of the smoothed loss over the last fifth of a run's logged ``history`` (records with
    ``step`` and ``loss``); None for a run with no logged loss (an untrained model), NaN for a diverged one."""
    records = [(record["step"], record["loss"]) for record in history if "loss" in record]
    if not records:
        return None
    last = records[-1][0]
    before, after = _smoothed(records, (1 - LAST_FRACTION) * last, last), _smoothed(records, last, last)
    if not (math.isfinite(before) and math.isfinite(after)):
        return math.nan
    if before == 0:
        return 0.0 if after == 0 else -math.inf  # from zero loss up: not falling
    return (before - after) / abs(before)


def _smoothed(records: list[tuple[int, float]], step: float, last: int) -> float:
    """The mean logged loss in the window of ``WINDOW_FRACTION · last`` steps ending at ``step``, or the latest
    record at or before it when none falls in the window (the first record if none precedes ``step``)."""
    window = [loss for at, loss in records if step - WINDOW_FRACTION * last < at <= step]
    if window:
        return math.fsum(window) / len(window)
    earlier = [loss for at, loss in records if at <= step]
    return earlier[-1] if earlier else records[0][1]


def converged(decrease: float) -> bool:
    """Whether a run whose loss fell by ``decrease`` (relative, over its last fifth) converged."""
    return not math.isnan(decrease) and decrease <= TOLERANCE
