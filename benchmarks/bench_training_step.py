"""Training-step speed: the LSA's masked token pass against the Γ recursion, and the GPT against Garg et al.'s
HuggingFace GPT-2 reference.

Run: ``python benchmarks/bench_training_step.py [--part {lsa,gpt,compile}] [--repeats 15]`` (every part by
default).  A step is what training does: forward over all N positions, the mean squared error, backward and
one Adam step; d = 20, N = 41.

* lsa: each case runs the path ``layer_predictions`` now takes (ours) against the path it took before (the
  reference): for one layer the Γ recursion on the (B, N, D, D) prefix moments (``moment_predictions``) or,
  with LayerNorm / MLP, the materialised prefixes (``per_prefix_predictions``); for the causal form the
  per-layer moments (``tests/lsa_reference.causal_moment_reference``).  Depth 3 without ``causal`` keeps the Γ
  recursion (a layer reads context tokens updated within the prefix); it is timed against the
  materialised prefixes, the only other exact path.  Both sides are checked equal in float64 first.
* gpt: ``GPT`` against Garg et al.'s ``TransformerModel`` (dtsip, ``src/models.py``): a linear read-in,
  HuggingFace ``GPT2Model`` (n_positions = 2N, dropouts 0, ``use_cache=False``, GPT-2's ``gelu_new``) and a
  linear read-out, at the tiny (3 x 64, 2 heads) and standard (12 x 256, 8 heads) sizes, batch 64.  Both
  compute one function: ours with ``activation="gelu-tanh"`` (``gelu_new``), the reference loaded with our
  weights (HF's Conv1D stores the transpose of nn.Linear's), their predictions checked equal in float64.
  Parameter counts are asserted equal except HF's token embedding ``wte`` (vocab_size x n_embd), which
  ``inputs_embeds`` bypasses and Adam skips (it never gets a gradient).
* compile: the tiny GPT step under ``torch.compile`` against eager: compile time, step times, break-even.

Fairness: both sides run in this process on the same data from identical initial weights, interleaved after
one warm-up each; the ratio is median(reference) / median(ours), at one thread and at torch's default
thread count.  Peak MB: the peak RSS over two steps in a fresh interpreter per side and case, less the RSS
before them (Linux: /proc/self/clear_refs resets the peak).
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import torch
from bench_prefix_solvers import interleaved_medians, load_average
from torch import nn

from icl_sim.models import build_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from garg_reference import GargTransformer  # noqa: E402
from lsa_reference import causal_moment_reference  # noqa: E402

DIM, POINTS = 20, 41
DEFAULT_THREADS = torch.get_num_threads()


def prompt(batch: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian xs (B, N, d) and ys = xᵀw + noise, one w per prompt."""
    generator = torch.Generator().manual_seed(0)
    xs = torch.randn(batch, POINTS, DIM, generator=generator, dtype=dtype)
    w = torch.randn(batch, DIM, 1, generator=generator, dtype=dtype)
    return xs, (xs @ w).squeeze(-1) + 0.1 * torch.randn(batch, POINTS, generator=generator, dtype=dtype)


def training_step(model: nn.Module, predict, xs: torch.Tensor, ys: torch.Tensor):
    """One Adam step on the mean squared error of ``predict(model, xs, ys)`` over all positions."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def step() -> None:
        optimizer.zero_grad()
        (predict(model, xs, ys) - ys).square().mean().backward()
        optimizer.step()

    return step


def lsa_cases(batch: int):
    """(name, LSA parameters, ours, reference), each side a (model, xs, ys) -> predictions function."""
    def moments(model, xs, ys):
        return model.moment_predictions(xs, ys)[-1]

    def per_prefix(model, xs, ys):
        return model.per_prefix_predictions(xs, ys)[-1]

    def causal_moments(model, xs, ys):
        return causal_moment_reference(model, xs, ys)[-1]

    def chosen(model, xs, ys):
        return model(xs, ys)

    for params, reference, label in [
            ({}, moments, "1 layer: token pass vs Γ recursion"),
            ({"heads": 4}, moments, "1 layer, 4 heads: token pass vs Γ recursion"),
            ({"layer_norm": True, "mlp": True}, per_prefix, "1 layer + LN + MLP: token pass vs prefixes"),
            ({"causal": True, "layers": 3}, causal_moments, "causal 3 layers: token pass vs Γ per layer"),
            ({"causal": True, "recurrent": True, "layers": 3}, causal_moments,
             "causal recurrent x3: token pass vs Γ per layer"),
            ({"layers": 3}, per_prefix, "3 layers: Γ recursion vs prefixes")]:
        yield f"{label} (B={batch})", params, chosen, reference


def gpt_cases(batch: int):
    """(name, models) with ``models()`` our GPT and Garg et al.'s model at one size, holding the same weights."""
    for size, (n_embd, n_layer, n_head) in (("tiny", (64, 3, 2)), ("standard", (256, 12, 8))):
        def models(size=size, sizes=(n_embd, n_layer, n_head)) -> tuple[nn.Module, GargTransformer]:
            torch.manual_seed(0)
            ours = build_model("gpt", DIM, POINTS, size=size, activation="gelu-tanh")
            return ours, GargTransformer(DIM, POINTS, *sizes).load_weights_of(ours)

        yield f"GPT {size} {n_layer}x{n_embd}, {n_head} heads (B={batch})", models


def steps(part: str, case: int, batch: int):
    """The two training steps (ours, reference) of case ``case`` of ``part``, from identical weights and data."""
    xs, ys = prompt(batch)
    if part == "lsa":
        _, params, ours, reference = list(lsa_cases(batch))[case]
        torch.manual_seed(0)
        model = build_model("lsa", DIM, POINTS, **params)
        return training_step(model, ours, xs, ys), training_step(copy.deepcopy(model), reference, xs, ys)
    _, models = list(gpt_cases(batch))[case]
    return tuple(training_step(model, _call, xs, ys) for model in models())


def _call(model, xs, ys):
    return model(xs, ys)


def peak_memory_mb(part: str, case: int, side: int, batch: int) -> float:
    """Growth of peak RSS (MB) over two steps of one side, in a fresh one-thread interpreter."""
    command = [sys.executable, __file__, "--memory-of", f"{part},{case},{side}", "--batch", str(batch)]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return float(result.stdout.strip() or "nan")


def _report_memory(part: str, case: int, side: int, batch: int) -> None:
    step = steps(part, case, batch)[side]
    Path("/proc/self/clear_refs").write_text("5")  # Linux: resets the peak RSS (VmHWM) to the current RSS
    before = _status_mb("VmRSS")
    step(), step()
    print(_status_mb("VmHWM") - before)


def _status_mb(key: str) -> float:
    """A memory figure of this process from /proc/self/status, in MB."""
    return int(re.search(rf"{key}:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024


def lsa_deviation(params: dict, ours, reference) -> float:
    """max |ours − reference| / max |reference| of the two paths' predictions in float64, random weights."""
    torch.manual_seed(1)
    model = build_model("lsa", DIM, POINTS, init_scale=0.1, **params).double()
    xs, ys = prompt(8, torch.float64)
    with torch.no_grad():
        expected = reference(model, xs, ys)
        return float((ours(model, xs, ys) - expected).abs().max() / expected.abs().max())


def gpt_sameness(ours: nn.Module, reference: GargTransformer) -> str:
    """Assert equal parameter counts (HF's unused ``wte`` aside) and equal predictions, and say both."""
    count = sum(p.numel() for p in ours.parameters())
    unused = reference.backbone.wte.weight.numel()
    reference_count = sum(p.numel() for p in reference.parameters())
    assert count == reference_count - unused, (count, reference_count, unused)
    xs, ys = prompt(8, torch.float64)
    with torch.no_grad():
        expected = copy.deepcopy(reference).double()(xs, ys)
        deviation = float((copy.deepcopy(ours).double()(xs, ys) - expected).abs().max() / expected.abs().max())
    assert deviation < 1e-10, deviation
    config = reference.backbone.config
    return (f"{count:,} parameters each (HF also holds wte, {unused:,}, unused); same weights, float64 relative "
            f"deviation of predictions {deviation:.1e}; HF attention {config._attn_implementation}, activation "
            f"{config.activation_function}")


def compare(part: str, batch: int, repeats: int) -> None:
    """Print one line per case and thread count: median step times, ratio, peak memory."""
    cases = list(lsa_cases(batch) if part == "lsa" else gpt_cases(batch))
    for case, (name, *sides) in enumerate(cases):
        if part == "lsa":
            print(f"  {name}: float64 relative deviation {lsa_deviation(*sides):.1e}")
        else:
            print(f"  {name}: {gpt_sameness(*sides[0]())}")
        memory = f"{peak_memory_mb(part, case, 0, batch):.0f} / {peak_memory_mb(part, case, 1, batch):.0f}"
        for threads in (1, DEFAULT_THREADS):
            torch.set_num_threads(threads)
            ours, reference = interleaved_medians(*steps(part, case, batch), repeats)
            print(f"{name:<58} {threads:>3} {1e3 * ours:>9.1f} {1e3 * reference:>9.1f} {reference / ours:>6.2f}x "
                  f"{memory:>13}", flush=True)
        torch.set_num_threads(DEFAULT_THREADS)


def compile_gain(batch: int, repeats: int) -> None:
    """torch.compile on the tiny GPT step: compile time (first call) and steady step times against eager."""
    xs, ys = prompt(batch)
    for threads in (1, DEFAULT_THREADS):
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        eager = build_model("gpt", DIM, POINTS, size="tiny")
        compiled = torch.compile(copy.deepcopy(eager))
        start = time.perf_counter()
        compiled_step = training_step(compiled, _call, xs, ys)
        compiled_step()
        first_call = time.perf_counter() - start
        compiled_time, eager_time = interleaved_medians(compiled_step, training_step(eager, _call, xs, ys), repeats)
        saved = eager_time - compiled_time
        break_even = f"{(first_call - compiled_time) / saved:.0f} steps" if saved > 0 else "never"
        print(f"tiny GPT, {threads} thread(s): first compiled step {first_call:.1f} s; step "
              f"{1e3 * compiled_time:.1f} ms compiled vs {1e3 * eager_time:.1f} ms eager "
              f"({eager_time / compiled_time:.2f}x); break-even {break_even}", flush=True)
    torch.set_num_threads(DEFAULT_THREADS)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["lsa", "gpt", "compile"], action="append",
                        help="what to measure (repeatable; all by default)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--batch", type=int, action="append", help="LSA batch sizes (default 64 and 256; GPT 64)")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        part, case, side = args.memory_of.split(",")
        _report_memory(part, int(case), int(side), args.batch[0])
        return
    parts = args.part or ["lsa", "gpt", "compile"]
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, default threads {DEFAULT_THREADS}, load average "
          f"{load_average()}, repeats {args.repeats} (interleaved, median)")
    print(f"{'case':<58} {'thr':>3} {'ours ms':>9} {'ref ms':>9} {'ratio':>7} {'peak MB o/r':>13}")
    if "lsa" in parts:
        for batch in args.batch or [64, 256]:
            compare("lsa", batch, args.repeats)
    needs_transformers = {"gpt"} & set(parts)
    if needs_transformers and importlib.util.find_spec("transformers") is None:
        print("gpt: skipped, HuggingFace transformers is not installed (pip install -e '.[bench]')")
    elif needs_transformers:
        compare("gpt", 64, args.repeats)
    if "compile" in parts:
        compile_gain(64, args.repeats)
    print("ratio = median reference step / median ours; peak MB = peak RSS growth over two steps, ours / reference")



if __name__ == "__main__":
    main()
