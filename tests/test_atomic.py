"""Atomic writes reach the disk: the new file is synced before its rename, the directory after it."""
import os

from icl_sim import atomic


def test_a_write_syncs_the_file_before_the_rename_and_the_directory_after(tmp_path, monkeypatch):
    events = []
    sync, replace = os.fsync, os.replace

    def recorded_sync(descriptor):
        target = os.readlink(f"/proc/self/fd/{descriptor}")
        events.append(("fsync", "directory" if os.path.isdir(target) else os.path.basename(target)[:6]))
        sync(descriptor)

    def recorded_replace(source, target):
        events.append(("replace", os.path.basename(target)))
        replace(source, target)

    monkeypatch.setattr(atomic.os, "fsync", recorded_sync)
    monkeypatch.setattr(atomic.os, "replace", recorded_replace)
    atomic.write_text(tmp_path / "run.json", "{}\n")
    assert events == [("fsync", ".run.j"), ("replace", "run.json"), ("fsync", "directory")]
    assert (tmp_path / "run.json").read_text() == "{}\n" and not list(tmp_path.glob(".*.tmp"))
