"""The hostile inputs of issue 40 as properties (hypothesis), beside their table-driven cases in
tests/test_hostile_inputs.py: for every draw, a bound is refused in one ``ValueError`` naming what is too large,
before any work, and what is within it is accepted.

* seed blocks: any ``first_seed`` and ``seeds`` reaching 10⁶ (``REPEAT_STRIDE``) are refused, any below accepted;
* sweep grids: a grid of more runs than ``max_runs`` is refused whatever its shape, and a grid whose values name one
  run twice (an integer and its float, ``lr: [1, 1.0]``) is refused however the values are written;
* settings files: nesting beyond ``MAX_DEPTH`` is refused at every depth past it, in JSON and YAML; YAML aliases
  that expand beyond ``MAX_VALUES`` are refused whatever the fan-out;
* forged checkpoints: any negative step or count, with a recomputed checksum, is refused on load.
"""
from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icl_sim.mapping_files import MAX_DEPTH, MAX_VALUES, read_settings_file
from icl_sim.paper_repro.runner import REPEAT_STRIDE, seed_block
from icl_sim.run_io import CHECKPOINT_FILE, load_checkpoint
from icl_sim.sweep import expand_grid, read_spec
from icl_sim.training import train
from test_run_validation import config, record_checksum

files = settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)


@settings(deadline=None)
@given(first=st.integers(0, 2 * REPEAT_STRIDE), count=st.integers(1, 2 * REPEAT_STRIDE))
def test_a_seed_block_reaching_the_stride_is_refused_naming_its_setting(first, count):
    if first + count <= REPEAT_STRIDE:
        assert seed_block("quick", count, first) == range(first, first + count)
    else:
        with pytest.raises(ValueError, match="first_seed" if first >= REPEAT_STRIDE else "seeds"):
            seed_block("quick", count, first)


@files
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5), max_runs=st.integers(1, 2000))
def test_a_grid_over_max_runs_is_refused_before_expansion(tmp_path, sizes, max_runs):
    grid = {f"model_params.p{index}": list(range(size)) for index, size in enumerate(sizes)}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"base": {"steps": 1}, "grid": grid}))
    if math.prod(sizes) <= max_runs:
        assert read_spec(path, max_runs)["grid"] == grid
    else:
        with pytest.raises(ValueError, match=f"its grid has {math.prod(sizes)} runs, more than --max-runs"):
            read_spec(path, max_runs)


@settings(deadline=None)  # the first draw imports the task and model registries
@given(rates=st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=3, unique=True), data=st.data())
def test_a_grid_naming_one_run_twice_is_refused_however_written(rates, data):
    """Each learning rate once as an integer, and one of them again as its float: the same run twice."""
    repeated = data.draw(st.sampled_from(rates))
    spec = {"base": {"task": "linear-regression", "dim": 2, "points": 4, "steps": 1}, "grid": {"lr": [*rates]}}
    assert len(expand_grid(spec)) == len(rates)
    spec["grid"]["lr"] = [*rates, float(repeated)]
    with pytest.raises(ValueError, match="give the same run"):
        expand_grid(spec)


@files
@given(depth=st.integers(1, 3 * MAX_DEPTH), suffix=st.sampled_from([".json", ".yaml"]))
def test_nesting_past_the_bound_is_refused_at_every_depth(tmp_path, depth, suffix):
    text = "[" * depth + "1" + "]" * depth  # valid JSON and YAML flow syntax alike
    path = tmp_path / f"settings{suffix}"
    path.write_text(text)
    if depth <= MAX_DEPTH - 1:
        read_settings_file(path, "settings")
    elif depth > MAX_DEPTH:
        with pytest.raises(ValueError, match=f"deeper than {MAX_DEPTH} levels"):
            read_settings_file(path, "settings")


@files
@given(fan_out=st.integers(2, 12))
def test_aliases_expanding_past_the_bound_are_refused_whatever_the_fan_out(tmp_path, fan_out):
    """A "billion laughs" document: each level lists the previous one ``fan_out`` times, until the expansion
    passes MAX_VALUES; the same document one level shorter (within the bound) is read."""
    levels = math.ceil(math.log(MAX_VALUES) / math.log(fan_out)) + 1
    lines = ["a0: &a0 [1]"] + [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]"
                               for level in range(1, levels + 1)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"more than {MAX_VALUES} values once its aliases are expanded"):
        read_settings_file(path, "settings")
    shorter = [line for line in lines if sum(fan_out ** k for k in range(int(line[1:line.index(":")]) + 1))
               < MAX_VALUES // 2]
    path.write_text("\n".join(shorter) + "\n")
    read_settings_file(path, "settings")


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("forged") / "run"
    train(config(5), run_dir, progress=False)
    return run_dir


@files
@given(key=st.sampled_from(["step", "window_steps"]), value=st.integers(-10**12, -1))
def test_a_forged_negative_count_is_refused_whatever_its_value(trained_run, tmp_path, key, value):
    state = torch.load(trained_run / CHECKPOINT_FILE, weights_only=True)
    torch.save({**state, key: value}, tmp_path / CHECKPOINT_FILE)
    record_checksum(tmp_path)  # the forger recomputes the checksum
    with pytest.raises(ValueError, match=f"its {key!r} is {value}, below 0"):
        load_checkpoint(tmp_path)
