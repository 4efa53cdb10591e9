"""TensorBoard and W&B logging (``log="tensorboard"`` / ``"wandb"``): the same records as metrics.jsonl, read back from
TensorBoard's event file and from W&B's offline run file."""
import json
import struct

import pytest

from icl_sim.run_io import read_metrics
from icl_sim.training import train
from test_training import tiny_config



def test_tensorboard_gets_every_metrics_record(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
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


def wandb_history(run_file) -> list[dict]:
    """The history rows of a W&B run file: a 7-byte header (":W&B", ident, version), then LevelDB's log format
    (32 KiB blocks of chunks, each a 7-byte header of CRC, length and type: 1 a whole record, 2-4 its first, middle
    and last pieces), each record a ``wandb_internal_pb2.Record``."""
    from wandb.proto.wandb_internal_pb2 import Record
    data, block = run_file.read_bytes(), 32768
    assert data[:4] == b":W&B"
    position, pieces, rows = 7, b"", []
    while position + 7 <= len(data):
        left = block - position % block
        _, length, kind = struct.unpack("<IHB", data[position:position + 7]) if left >= 7 else (0, 0, 0)
        if length == 0 and kind == 0:  # a block's zero padding
            position += left
            continue
        pieces += data[position + 7:position + 7 + length]
        position += 7 + length
        if kind in (1, 4):
            record = Record.FromString(pieces)
            pieces = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def test_wandb_gets_every_metrics_record_offline_and_a_resumed_run_continues_it(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)  # the default: offline, nothing leaves the machine
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = tmp_path / "run"
    train(tiny_config(steps=10, log="wandb"), run, progress=False)
    train(tiny_config(steps=20, log="wandb"), run, progress=False, resume=True)
    run_files = sorted((run / "wandb").glob("offline-run-*/run-*.wandb"))
    run_id = (run / "wandb" / "run-id").read_text()
    assert len(run_files) == 2 and all(path.name == f"run-{run_id}.wandb" for path in run_files)
    rows = [row for path in run_files for row in wandb_history(path)]
    records = read_metrics(run)
    assert [row["_step"] for row in rows] == [record["step"] for record in records]
    for name in ("loss", "lr", "points"):
        assert [row[name] for row in rows] == [pytest.approx(record[name], rel=1e-12) for record in records]
