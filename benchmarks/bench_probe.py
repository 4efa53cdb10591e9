"""Speed ratio of the probe's per-layer behaviours: shared-context queries against the straightforward computation.

Run: ``python benchmarks/bench_probe.py`` (``OMP_NUM_THREADS=1`` on a busy machine).  A 12-layer GPT
("standard": n_embd 256, 8 heads) on linear regression (d = 20, N = 41) in float64, as ``icl-sim probe``
runs it.  Ours: ``probe_metrics.behaviours`` (one pass per context for the final query and the 2d probe
queries, one backward pass per layer through the query's own path).  Reference: every prompt copied
2d times, one backward pass per layer through the whole prompt (``tests/probe_reference.py``).  Both run
in this process on the same prompts; the reference on fewer of them, so the ratio compares prompts/s.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from icl_sim.evaluation import eval_prompts
from icl_sim.models import build_model
from icl_sim.probe_metrics import behaviours
from icl_sim.prompt import Prompt
from icl_sim.tasks import make_task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from probe_reference import reference_behaviours  # noqa: E402

TARGET_PROMPTS = 4096


def timed(function, device: torch.device) -> tuple[float, object]:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = function()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def main() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ours_prompts, reference_prompts = (TARGET_PROMPTS, 256) if device.type == "cuda" else (256, 16)
    task = make_task("linear-regression")
    torch.manual_seed(0)
    model = build_model("gpt", task.dim, task.points, size="standard").to(device=device, dtype=torch.float64).eval()
    prompt = next(eval_prompts(task, num_prompts=ours_prompts, batch_size=ours_prompts, seed=0, device=device))
    subset = Prompt(prompt.xs[:reference_prompts], prompt.ys[:reference_prompts])
    behaviours(model.query_predictor, Prompt(prompt.xs[:2], prompt.ys[:2]), True)  # warm-up
    ours_time, ours = timed(lambda: behaviours(model.query_predictor, prompt, True), device)
    reference_time, reference = timed(lambda: reference_behaviours(model.layer_predictions, subset), device)
    difference = max(float((mine[:reference_prompts] - theirs).abs().max() / theirs.abs().max())
                     for fast, slow in zip(ours, reference)
                     for mine, theirs in zip((fast.prediction, fast.sensitivity, fast.weights),
                                             (slow.prediction, slow.sensitivity, slow.weights)))
    ours_rate, reference_rate = ours_prompts / ours_time, reference_prompts / reference_time
    print(f"GPT standard (12 layers), linear regression d={task.dim} N={task.points}, float64, {device}, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"{'':<10} {'prompts':>8} {'seconds':>9} {'prompts/s':>10}")
    print(f"{'ours':<10} {ours_prompts:>8} {ours_time:>9.2f} {ours_rate:>10.2f}")
    print(f"{'reference':<10} {reference_prompts:>8} {reference_time:>9.2f} {reference_rate:>10.2f}")
    print(f"speed-up {ours_rate / reference_rate:.1f}x; largest relative difference {difference:.1e}")
    if ours_prompts < TARGET_PROMPTS:
        print(f"extrapolated to {TARGET_PROMPTS} prompts (linear in prompts, not measured): "
              f"ours {TARGET_PROMPTS / ours_rate:.0f} s, reference {TARGET_PROMPTS / reference_rate:.0f} s")


if __name__ == "__main__":
    main()
