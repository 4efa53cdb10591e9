"""The GPU path measured in one short run: training step time and MFU, probe time, bf16 and compile.

Run: ``benchmarks/gpu_check.sh`` on a CUDA machine (under 5 minutes), which calls this script and then the
test suite's CUDA cases.  ``python benchmarks/gpu_check.py --tiny`` runs every section at toy sizes on
whatever device there is, to check the script itself.

Sections (one printed line each):
- the standard GPT's training step (12 × 256, 8 heads; d = 20, N = 41, batch 64, as Garg et al.):
  float32, bf16 autocast, and bf16 autocast under ``torch.compile``, each with fused Adam on CUDA.
  FLOPs per step are counted by torch's own ``FlopCounterMode`` (forward + backward matmuls and
  attention), and MFU is achieved FLOP/s over the device's dense bf16 peak (``--peak-tflops``).
- the tiny GPT's step (d = 5, batch 64): eager, compiled, and compiled with CUDA graphs (``compile_mode=
  "reduce-overhead"``), which replay its many small kernels with one launch.
- the probe of a 12-layer GPT on 4,096 prompts (``icl_sim.probing.probe``, GD, shared step size).
- ensembles: K = 8 runs as one batched computation against the 8 runs one after another
  (``bench_ensemble.measure``, one-layer LSAs and tiny GPTs), the throughput ratio.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.probing import probe
from icl_sim.tasks import make_task
from icl_sim.training import (make_optimizer, make_scheduler, optimisation_step, training_batch,
                              training_forward)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ensemble import CASES, measure  # noqa: E402

#: dense bf16 peak of an H100/H200 SXM in TFLOP/s (NVIDIA's data sheet, without sparsity)
H200_BF16_TFLOPS = 989.0


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def step_function(config: TrainConfig, device: torch.device):
    """``train``'s own step (:func:`icl_sim.training.optimisation_step`) of ``config``'s model, bf16 autocast
    on CUDA if ``config.amp``, compiled if ``config.compile``, as a closure over the step index; and the model."""
    task = make_task(config.task, **config.task_params)
    torch.manual_seed(0)
    model = build_model(config.model, task.dim, task.points, task.target_dim, **config.model_params).to(device)
    forward = training_forward(model, config, device)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config)

    def step(index: int) -> torch.Tensor:
        prompt = training_batch(task, config, index, device)
        return optimisation_step(model, optimizer, scheduler, prompt, task, config, index, device,
                                 forward=forward).detach()

    return step, model


def flops_per_step(step) -> int:
    """FLOPs of one training step as torch counts them (matmuls, convolutions and attention)."""
    with FlopCounterMode(display=False) as counter:
        step(0)
    return counter.get_total_flops()


def median_step_seconds(step, device: torch.device, warmup: int, repeats: int) -> float:
    for index in range(warmup):
        step(index)
    synchronize(device)
    times = []
    for index in range(warmup, warmup + repeats):
        start = time.perf_counter()
        step(index)
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def training_steps(args, device: torch.device) -> None:
    size = "tiny" if args.tiny else "standard"
    config = TrainConfig(task="linear-regression", task_params={"dim": 20, "points": 41}, model="gpt",
                         model_params={"size": size}, batch_size=64, loss_on="all", device=device.type, lr=1e-4)
    flops = None
    for label, amp, compiled in (("float32", False, False), ("bf16 autocast", True, False),
                                 ("bf16 autocast + compile", True, True)):
        if amp and device.type != "cuda" and not args.tiny:
            continue
        if amp and device.type != "cuda":
            label += " (autocast is CUDA only: float32 here)"
        step, model = step_function(dataclasses.replace(config, amp=amp, compile=compiled), device)
        flops = flops or flops_per_step(step)
        start = time.perf_counter()
        seconds = median_step_seconds(step, device, args.warmup, args.repeats)
        warm = time.perf_counter() - start
        achieved = flops / seconds / 1e12
        parameters = sum(p.numel() for p in model.parameters())
        print(f"gpt {size} ({parameters:,} parameters) train step, {label}: {seconds * 1e3:.2f} ms, "
              f"{flops / 1e9:.2f} GFLOP/step, {achieved:.2f} TFLOP/s, MFU {achieved / args.peak_tflops:.1%} "
              f"(warm-up and repeats {warm:.1f} s)", flush=True)


def launch_bound_steps(args, device: torch.device) -> None:
    """The tiny GPT on d = 5 (garg-2022's quick run): a step of small kernels, eager against ``torch.compile``
    and against its CUDA graphs (``compile_mode="reduce-overhead"``)."""
    config = TrainConfig(task="linear-regression", task_params={"dim": 5, "points": 11}, model="gpt",
                         model_params={"size": "tiny"}, batch_size=64, loss_on="all", device=device.type,
                         lr=1e-4)
    variants = {"eager": config, "compile": dataclasses.replace(config, compile=True),
                "CUDA graphs": dataclasses.replace(config, compile=True, compile_mode="reduce-overhead")}
    seconds = {label: median_step_seconds(step_function(variant, device)[0], device, args.warmup, args.repeats)
               for label, variant in variants.items()}
    print("gpt tiny on d = 5, batch 64, train step: " + ", ".join(
        f"{label} {1e3 * value:.2f} ms ({seconds['eager'] / value:.2f}x)" for label, value in seconds.items()),
        flush=True)


def probe_time(args, device: torch.device) -> None:
    prompts = 64 if args.tiny else 4096
    task = make_task("linear-regression")
    torch.manual_seed(0)
    model = build_model("gpt", task.dim, task.points, size="tiny" if args.tiny else "standard").to(device).eval()
    start = time.perf_counter()
    result = probe(model, task, "gd", num_prompts=prompts, device=device)
    synchronize(device)
    print(f"probe gd of a {len(result['best'])}-layer GPT on {prompts} prompts: "
          f"{time.perf_counter() - start:.1f} s", flush=True)


def ensemble_throughput(args, device: torch.device) -> None:
    runs, steps = (2, 3) if args.tiny else (8, 50)
    for label, config in CASES.items():
        if "loss on all" in label or "1 x 32" in label:
            continue
        seconds = measure(config, runs, steps, repeats=1 if args.tiny else 3, device=device.type)
        print(f"ensemble of {runs}, {label}: {seconds['sequential'] / seconds['ensemble']:.2f}x the throughput of "
              f"{runs} sequential runs ({runs * steps / seconds['ensemble']:.0f} run-steps/s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes, any device: checks the script itself")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--peak-tflops", type=float, default=H200_BF16_TFLOPS,
                        help="the device's dense bf16 peak, for MFU")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__} on {name}", flush=True)
    training_steps(args, device)
    launch_bound_steps(args, device)
    probe_time(args, device)
    ensemble_throughput(args, device)


if __name__ == "__main__":
    main()
