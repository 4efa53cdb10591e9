"""Measures shared by the graph-connectivity reproductions (Sanford et al. 2024; Saparov et al. 2024).

Thin compositions of the library's pieces: per-query correctness from ``icl_sim.evaluation``'s
accuracy metric at the query position, its 95 % bootstrap band (``bootstrap_interval``) over all
prompts or a slice (the task's ``hard_pairs``), and the accuracy of L rounds of boolean
squaring / cubing (``ReachabilityRounds``) inside and beyond power^L hops.
"""
from __future__ import annotations

import math

import torch

from icl_sim.evaluation import bootstrap_interval, prompt_errors
from icl_sim.prompt import Prompt
from icl_sim.theory.graph_algorithms import ReachabilityRounds


def query_correct(predictor, prompt: Prompt) -> torch.Tensor:
    """1 where ``predictor``'s answer at the query (the last position) is right, else 0: (B,) float64.

    A trained model answers in its training precision (float32; the 0/1 tokens are exact in it) on a copy of the
    prompt; the baselines read the float64 prompt.
    """
    if isinstance(predictor, torch.nn.Module):
        dtype = next(predictor.parameters()).dtype
        prompt = Prompt(prompt.xs.to(dtype), prompt.ys.to(dtype), prompt.latent)
        predictor = predictor.eval()
    return prompt_errors(predictor, prompt, "accuracy")[:, -1]


def accuracy_band(correct: torch.Tensor, mask: torch.Tensor | None = None, *, band: bool = True) -> dict:
    """Mean accuracy over the prompts in ``mask`` (all if None), its 95 % bootstrap band (NaN unless ``band``), its
    binomial standard error √(p(1 − p)/count) and the count."""
    picked = correct if mask is None else correct[mask]
    if picked.numel() == 0:
        return {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "standard_error": math.nan, "count": 0}
    p, count = float(picked.mean()), int(picked.numel())
    low = high = math.nan
    if band:
        _, low, high = (float(v[0]) for v in bootstrap_interval(picked[:, None]))
    return {"mean": p, "ci_low": low, "ci_high": high, "standard_error": math.sqrt(p * (1 - p) / count),
            "count": count}


def rounds_accuracy(prompt: Prompt, rounds: int, power: int) -> dict:
    """``ReachabilityRounds(rounds, power)`` on ``prompt``: its accuracy on the queries it should answer exactly
    (unreachable, or reachable within power^rounds hops) and on the reachable ones beyond, with their counts,
    and on the reachable queries at each distance (``by_distance``)."""
    correct = query_correct(ReachabilityRounds(rounds, power), prompt)
    distance = prompt.latent["distance"]
    inside = (distance < 0) | (distance <= power**rounds)
    return {"rounds": rounds, "power": power,
            "inside": accuracy_band(correct, inside, band=False)["mean"], "inside_count": int(inside.sum()),
            "beyond": accuracy_band(correct, ~inside, band=False)["mean"], "beyond_count": int((~inside).sum()),
            "by_distance": {d: float(correct[distance == d].mean())
                            for d in range(1, int(distance.max()) + 1) if bool((distance == d).any())}}


def rounds_needed(prompt: Prompt, power: int = 2) -> torch.Tensor:
    """Per query, the fewest rounds L with ``ReachabilityRounds(L, power)`` right: ⌈log_power d⌉ (0 if unreachable
    or adjacent), (B,) long — read off the baseline's answers for L = 0, 1, ..., not from the formula."""
    needed = torch.full_like(prompt.latent["distance"], -1)
    rounds = 0
    while bool((needed < 0).any()):
        correct = query_correct(ReachabilityRounds(rounds, power), prompt) > 0.5
        needed = torch.where((needed < 0) & correct, rounds, needed)
        rounds += 1
    return needed
