"""Whether a run converged: the relative fall of its smoothed loss over its last fifth, against closed forms."""
import math

import pytest

from icl_sim.convergence import TOLERANCE, converged, loss_decrease


def _history(losses, every=1):
    return [{"step": every * (index + 1), "loss": loss} for index, loss in enumerate(losses)]


@pytest.mark.parametrize("rate", [0.0, 1e-3, 0.01, 0.05])
def test_an_exponential_loss_falls_by_its_rate_over_the_last_fifth(rate):
    """L(s) = exp(−r s) over 100 steps: the windows of 10 steps ending at 80 and 100 are one sum shifted by 20 steps,
    so the relative fall is 1 − exp(−20 r) exactly."""
    history = _history([math.exp(-rate * step) for step in range(1, 101)])
    assert loss_decrease(history) == pytest.approx(1 - math.exp(-20 * rate), rel=1e-12, abs=1e-15)
    assert converged(loss_decrease(history)) == (1 - math.exp(-20 * rate) <= TOLERANCE)


def test_a_sparse_log_falls_back_to_the_latest_record_before_each_end():
    """Logged every 25 steps, no record falls in a window of 10 steps ending at 80: the one at 75 stands for it."""
    history = _history([4.0, 3.0, 2.0, 1.0], every=25)  # steps 25, 50, 75, 100
    assert loss_decrease(history) == pytest.approx((2.0 - 1.0) / 2.0)


def test_a_rising_loss_has_converged_a_diverged_one_has_not_and_an_untrained_model_has_no_value():
    assert loss_decrease(_history([1.0] * 85 + [2.0] * 15)) == pytest.approx(-1.0)
    assert converged(loss_decrease(_history([1.0] * 85 + [2.0] * 15)))
    assert math.isnan(loss_decrease(_history([1.0] * 99 + [math.nan])))
    assert not converged(loss_decrease(_history([1.0] * 99 + [math.inf])))
    assert loss_decrease([]) is None and loss_decrease([{"step": 5, "accuracy": 1.0}]) is None
    assert loss_decrease(_history([0.0] * 100)) == 0.0
