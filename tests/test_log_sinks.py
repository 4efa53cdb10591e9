"""TensorBoard logging (``log="tensorboard"``): the same records as metrics.jsonl, read back from the event file."""
import pytest

from icl_sim.run_io import read_metrics
from icl_sim.training import train
from test_training import tiny_config

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def test_tensorboard_gets_every_metrics_record(tmp_path):
    train(tiny_config(steps=20, log="tensorboard"), tmp_path / "run", progress=False)
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    records = read_metrics(tmp_path / "run")
    for name in ("loss", "lr"):
        logged = [(scalar.step, scalar.value) for scalar in events.Scalars(name)]
        assert logged == [(record["step"], pytest.approx(record[name], rel=1e-6)) for record in records]
    assert '"log": "tensorboard"' in (tmp_path / "run" / "config.json").read_text()


def test_no_other_sink_by_default(tmp_path):
    train(tiny_config(steps=5), tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "tensorboard").exists() and '"log":' not in tiny_config().to_json()
