"""Per-position evaluation of predictors on held-out prompts, with bootstrap intervals.

Every predictor sees the same float64 prompts drawn from the ``eval`` stream (never
the training stream), the task's metric is computed per prompt and per position,
and the result is one tidy table: a record per (predictor, position).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import torch
import torch.nn.functional as F
from tqdm import tqdm

from icl_sim.atomic import atomic_path, write_text
from icl_sim.memory import check_fits
from icl_sim.predictor import Predictor
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.tasks.base import check_task
from icl_sim.tensor_validation import check_device
from icl_sim.validation import check_choice, check_int

EVAL_STREAM = "eval"


@dataclass(frozen=True)
class Metric:
    """A per-element score ``function(preds, targets, dim) -> (B, N)`` and its axis label."""

    function: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
    label: str


def squared_error(preds: torch.Tensor, targets: torch.Tensor, dim: int) -> torch.Tensor:
    """‖pred − y‖² / d: Garg et al.'s normalisation, so predicting 0 scores E[‖y‖²]/d."""
    errors = (preds - targets) ** 2
    return (errors.sum(dim=-1) if errors.ndim == 3 else errors) / dim


def sign_accuracy(preds: torch.Tensor, targets: torch.Tensor, dim: int) -> torch.Tensor:
    """1 where the predicted label, +1 if pred > 0 else −1, equals the ±1 target, else 0.

    An undecided score of exactly 0 counts as the label −1 (as a tie does for the majority
    baselines), so every predictor is scored as a classifier.
    """
    labels = torch.where(preds > 0, 1.0, -1.0).to(preds.dtype)
    return (labels == targets).to(preds.dtype)


def cosine(preds: torch.Tensor, targets: torch.Tensor, dim: int) -> torch.Tensor:
    """Cosine similarity between vector predictions and targets (B, N, k) -> (B, N)."""
    return F.cosine_similarity(preds, targets, dim=-1)


def absolute_cosine(preds: torch.Tensor, targets: torch.Tensor, dim: int) -> torch.Tensor:
    """|cosine|: agreement of directions up to sign (principal components have no sign)."""
    return cosine(preds, targets, dim).abs()


def argmax_in_set(preds: torch.Tensor, targets: torch.Tensor, dim: int) -> torch.Tensor:
    """1 where the arg-max of the logits (B, N, k) is a class the multi-hot target marks, else 0: (B, N)."""
    return targets.gather(-1, preds.argmax(dim=-1, keepdim=True)).squeeze(-1).gt(0).to(preds.dtype)


# A new metric is one entry here; tasks name it in their ``metric`` attribute.
METRICS: dict[str, Metric] = {
    "squared_error": Metric(squared_error, "squared error (ŷ − y)² / d"),
    "accuracy": Metric(sign_accuracy, "accuracy"),
    "cosine": Metric(cosine, "cosine similarity"),
    "absolute_cosine": Metric(absolute_cosine, "|cosine similarity|"),
    "next_vertex_accuracy": Metric(argmax_in_set, "accuracy of the arg-max vertex"),
}


def prompt_errors(predictor: Predictor, prompt: Prompt, metric: str) -> torch.Tensor:
    """The metric of ``predictor`` on every prompt and position, (B, N) in float64."""
    check_choice("metric", metric, sorted(METRICS))
    with torch.no_grad():
        preds = predictor.predict(prompt.xs, prompt.ys)
    target = prompt.target
    if preds.shape != target.shape:
        raise ValueError(f"predict returned shape {tuple(preds.shape)}, expected {tuple(target.shape)}")
    return METRICS[metric].function(preds.to(torch.float64), target.to(torch.float64), prompt.dim)


def bootstrap_interval(values: torch.Tensor, *, resamples: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean and percentile-bootstrap interval over prompts of ``values`` (P, N); each result is (N,).

    All ``resamples`` index sets (R, P) are drawn at once from a generator seeded with
    ``seed``, turned into counts, and the R resampled means are one (R, P) @ (P, N) product.
    """
    if values.ndim != 2 or values.shape[0] < 1:
        raise ValueError(f"values must have shape (P, N) with P >= 1, got {tuple(values.shape)}")
    check_int("resamples", resamples, 1)
    if not isinstance(confidence, float) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")
    check_int("seed", seed, 0)
    values = values.detach().to("cpu", torch.float64)
    count = values.shape[0]
    generator = torch.Generator().manual_seed(seed)
    indices = torch.randint(count, (resamples, count), generator=generator)
    counts = torch.zeros(resamples, count, dtype=torch.float64).scatter_add_(
        1, indices, torch.ones(resamples, count, dtype=torch.float64))
    means = counts @ values / count
    alpha = (1.0 - confidence) / 2
    low, high = torch.quantile(means, torch.tensor([alpha, 1.0 - alpha], dtype=torch.float64), dim=0)
    return values.mean(dim=0), low, high


def _eval_generator(seed: int, index: int, device) -> torch.Generator:
    """The generator of evaluation batch ``index``; evaluation must never reuse training data."""
    if EVAL_STREAM == "train":
        raise RuntimeError("evaluation prompts must not come from the 'train' stream")
    return make_generator(seed, EVAL_STREAM, index, device)


def eval_prompts(task, *, num_prompts: int = 1280, batch_size: int = 256, seed: int = 0, device="cpu",
                 points: int | None = None) -> Iterator[Prompt]:
    """The evaluation prompts in float64, batch t drawn from ``make_generator(seed, "eval", t)``."""
    check_int("num_prompts", num_prompts, 1)
    check_int("batch_size", batch_size, 1)
    check_int("seed", seed, 0)
    check_device("device", device)
    for index, start in enumerate(range(0, num_prompts, batch_size)):
        size = min(batch_size, num_prompts - start)
        yield task.sample(size, _eval_generator(seed, index, device), points=points, dtype=torch.float64)


def evaluate(predictors: Mapping[str, Predictor], task, *, num_prompts: int = 1280, batch_size: int = 256,
             seed: int = 0, device="cpu", points: int | None = None, bootstrap: int = 1000,
             confidence: float = 0.95, progress: bool = False) -> list[dict]:
    """Per-position ``task.metric`` of every predictor on the same held-out prompts.

    Returns one record per (predictor, slice, position): ``predictor``, ``position``
    (the number of in-context examples), ``metric``, ``mean``, ``ci_low``, ``ci_high``
    (percentile bootstrap over prompts), ``num_prompts`` and ``slice`` ("all", or a
    subset the task names in ``slices``).  Tasks that label only the final query
    (``evaluated_positions == "last"``) get records for that position alone.  Work that
    cannot fit in the available memory is refused up front (:func:`evaluation_bytes`);
    ``progress`` shows a bar over the batches on stderr.
    """
    if not predictors:
        raise ValueError("predictors must name at least one predictor")
    for name, predictor in predictors.items():
        if not isinstance(predictor, Predictor):
            raise ValueError(f"predictors[{name!r}] must be a Predictor (with predict(xs, ys)), "
                             f"got {type(predictor).__name__}")
    check_task("task", task)
    check_choice("task.metric", task.metric, sorted(METRICS))
    check_int("num_prompts", num_prompts, 1)
    check_int("batch_size", batch_size, 1)
    check_int("bootstrap", bootstrap, 1)
    last_only = task.evaluated_positions == "last"
    positions = 1 if last_only else (points or task.points)
    check_fits("num_prompts", num_prompts, evaluation_bytes(num_prompts, positions, len(predictors), bootstrap))
    errors: dict[tuple[str, str], list[torch.Tensor]] = {}
    batches = eval_prompts(task, num_prompts=num_prompts, batch_size=batch_size, seed=seed, device=device,
                           points=points)
    for prompt in tqdm(batches, total=math.ceil(num_prompts / batch_size), desc="eval", disable=not progress):
        masks = {"all": torch.ones(prompt.batch_size, dtype=torch.bool), **task.slices(prompt)}
        for name, predictor in predictors.items():
            values = prompt_errors(predictor, prompt, task.metric).cpu()
            values = values[:, -1:] if last_only else values
            for slice_name, mask in masks.items():
                errors.setdefault((name, slice_name), []).append(values[mask.cpu()])

    records = []
    for (name, slice_name), batches in errors.items():
        values = torch.cat(batches)
        if len(values) == 0:
            continue
        positions = [prompt.points - 1] if last_only else range(values.shape[1])
        mean, low, high = bootstrap_interval(values, resamples=bootstrap, confidence=confidence, seed=seed)
        records.extend(
            {"predictor": name, "position": position, "metric": task.metric, "mean": m, "ci_low": lo,
             "ci_high": hi, "num_prompts": len(values), "slice": slice_name}
            for position, m, lo, hi in zip(positions, mean.tolist(), low.tolist(), high.tolist()))
    return records


def evaluation_bytes(num_prompts: int, positions: int, predictors: int, bootstrap: int = 1000) -> int:
    """Estimated peak memory of :func:`evaluate`, in bytes.

    The float64 metric of every prompt, position and predictor is kept until the end, and each
    bootstrap draws (resamples × prompts) int64 indices turned into float64 counts.
    """
    return 8 * num_prompts * (positions * predictors + 2 * bootstrap)


def write_table(records: Sequence[Mapping], directory, stem: str = "results") -> tuple[Path, Path]:
    """Atomically write ``records`` as ``stem.csv`` and ``stem.json`` in ``directory``; return both paths."""
    directory = Path(directory)
    csv_path, json_path = directory / f"{stem}.csv", directory / f"{stem}.json"
    fields = list(dict.fromkeys(key for record in records for key in record))
    with atomic_path(csv_path) as temporary, open(temporary, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(records)
    write_text(json_path, json.dumps([dict(record) for record in records], indent=2) + "\n")
    return csv_path, json_path
