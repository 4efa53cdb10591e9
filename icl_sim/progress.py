"""Progress of a long loop (training steps, a sweep's runs) on stderr, readable with or without a terminal.

On a terminal it is a tqdm bar with the latest loss; elsewhere (a log file, a SLURM job, a pipe) a bar's
carriage returns are unreadable, so it is one status line every ``fraction`` of the loop, no more often than
every ``seconds`` (EVERY_FRACTION, EVERY_SECONDS), and one at the end:
``train: step 400/2000  loss 0.1234  12 s elapsed, ~48 s left``.
"""
from __future__ import annotations

import sys
import time

from tqdm import tqdm


#: a status line (without a terminal) is due once this fraction of the loop and these seconds have passed
EVERY_FRACTION, EVERY_SECONDS = 0.1, 30.0


class Progress:
    """Counts ``done`` of ``total`` units (from ``start``) and shows them on stderr if ``enabled``."""

    def __init__(self, total: int, *, start: int = 0, desc: str, unit: str = "step", enabled: bool = True,
                 fraction: float | None = None, seconds: float | None = None):
        self.total, self.start, self.done, self.desc, self.unit = total, start, start, desc, unit
        self.enabled = enabled
        self.fraction = EVERY_FRACTION if fraction is None else fraction
        self.seconds = EVERY_SECONDS if seconds is None else seconds
        self.began = self.shown_at = time.monotonic()
        self.shown, self.loss = start, None
        self.bar = (tqdm(total=total, initial=start, desc=desc, dynamic_ncols=True, file=sys.stderr)
                    if enabled and sys.stderr.isatty() else None)

    def advance(self, done: int, loss: str | None = None, note: str = "") -> None:
        """``done`` units are complete; ``loss`` (text: one loss or a range; None: the last one still holds) and
        ``note`` describe the latest."""
        added, self.done = done - self.done, done
        self.loss = loss if loss is not None else self.loss
        if self.bar is not None:
            if loss is not None:
                self.bar.set_postfix_str(f"loss {loss}", refresh=False)
            self.bar.update(added)
        elif self.enabled and (done == self.total or self._due()):
            self._line(note)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def _due(self) -> bool:
        """A line is due once both ``fraction`` of the total and ``seconds`` have passed since the last."""
        now = time.monotonic()
        return self.done - self.shown >= self.fraction * self.total and now - self.shown_at >= self.seconds

    def _line(self, note: str) -> None:
        elapsed = time.monotonic() - self.began
        self.shown, self.shown_at = self.done, time.monotonic()
        parts = [f"{self.desc}: {self.unit} {self.done}/{self.total}{f' {note}' if note else ''}"]
        if self.loss is not None:
            parts.append(f"loss {self.loss}")
        timing = f"{elapsed:.0f} s elapsed"
        if self.start < self.done < self.total:
            timing += f", ~{elapsed / (self.done - self.start) * (self.total - self.done):.0f} s left"
        print("  ".join([*parts, timing]), file=sys.stderr, flush=True)
