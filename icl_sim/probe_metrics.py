"""How one layered predictor behaves on probe prompts, and how two behaviours compare.

A *layered* predictor maps (xs, ys) to a list of per-layer predictions (B, N[, k]).  Its
behaviour on the final query of each probe prompt is three things: the prediction ŷ, the
sensitivity ∂ŷ/∂x_query (von Oswald et al. 2023) and the implicit linear weights, least-squares
fits to its outputs on 2d probe queries that share the prompt's context (Akyürek et al. 2023).
``compare`` turns two behaviours into the four probe metrics (see ``icl_sim.probing``).

All 1 + 2d queries of a prompt share its context: a predictor is given as its
``query_predictor`` (context -> queries -> per-layer predictions), which models and linear
baselines implement by processing the context once (``icl_sim.predictor`` has the
one-prompt-per-query default).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from icl_sim.prompt import Prompt
from icl_sim.theory.formulas import implicit_weights

HIGHER_IS_CLOSER = {"residual_cosine": True, "sensitivity_cosine": True, "squared_prediction_difference": False,
                    "weight_difference": False}


@dataclass(frozen=True)
class Behaviour:
    """One predictor's behaviour on the probe prompts: final predictions, sensitivities, implicit weights."""

    prediction: torch.Tensor
    sensitivity: torch.Tensor | None
    weights: torch.Tensor | None


#: prompts per forward pass: bounds the memory of deep models and of the 2d probe queries per prompt
CHUNK_PROMPTS = 256


def behaviours(query_predictor: Callable, prompt: Prompt, scalar: bool) -> list[Behaviour]:
    """Per layer: the final-query prediction, ∂ŷ/∂x_query and the implicit weights (scalar labels only).

    ``query_predictor(context_xs, context_ys)`` returns queries (B, Q, d) -> per-layer predictions.
    """
    parts = [_chunk_outputs(query_predictor, Prompt(prompt.xs[start:end], prompt.ys[start:end]), scalar)
             for start, end in _chunks(prompt.batch_size)]
    return [Behaviour(*(None if pieces[0] is None else torch.cat(pieces)
                      for pieces in zip(*((o.prediction, o.sensitivity, o.weights) for o in layer))))
            for layer in zip(*parts)]


def last_predictions(query_predictor: Callable, prompt: Prompt) -> list[torch.Tensor]:
    """Each layer's final-query predictions, without gradients, chunk by chunk."""
    with torch.no_grad():
        parts = [[preds[:, 0] for preds in query_predictor(prompt.xs[start:end, :-1], prompt.ys[start:end, :-1])(
                     prompt.xs[start:end, -1:])]
                 for start, end in _chunks(prompt.batch_size)]
    return [torch.cat(pieces) for pieces in zip(*parts)]


def _chunks(batch: int) -> list[tuple[int, int]]:
    return [(start, min(start + CHUNK_PROMPTS, batch)) for start in range(0, batch, CHUNK_PROMPTS)]


def _chunk_outputs(query_predictor: Callable, prompt: Prompt, scalar: bool) -> list[Behaviour]:
    """The final query and the 2d probe queries, each evaluated against the context of its prompt."""
    with torch.no_grad():  # only ∂ŷ/∂x_query is asked for, so a model's context pass needs no graph
        predict = query_predictor(prompt.xs[:, :-1], prompt.ys[:, :-1])
    query = prompt.xs[:, -1:].clone().requires_grad_(scalar)
    with torch.enable_grad():
        layers = [p[:, 0] for p in predict(query)]
        # one backward pass per layer, through the query's own path: on CPU cheaper than one batched over layers
        sensitivities = [torch.autograd.grad(p.sum(), query, retain_graph=True)[0][:, 0] if scalar else None
                         for p in layers]
    weights = _implicit_weights(predict, prompt) if scalar else [None] * len(layers)
    return [Behaviour(p.detach(), s, w) for p, s, w in zip(layers, sensitivities, weights)]


def _implicit_weights(predict: Callable, prompt: Prompt) -> list[torch.Tensor]:
    """Least-squares weights of each layer's outputs on 2d probe queries sharing each prompt's context."""
    batch, _, dim = prompt.xs.shape
    generator = torch.Generator(device=prompt.xs.device).manual_seed(0)
    queries = torch.randn(batch, 2 * dim, dim, generator=generator, device=prompt.xs.device, dtype=torch.float64)
    queries = queries * prompt.xs[:, :-1].std(dim=(1, 2), keepdim=True)
    with torch.no_grad():
        layers = predict(queries)
    return [implicit_weights(queries, outputs) for outputs in layers]


def compare(model: Behaviour, algorithm: Behaviour, target: torch.Tensor) -> dict[str, float]:
    errors_model = (model.prediction - target).flatten()
    errors_algorithm = (algorithm.prediction - target).flatten()
    metrics = {
        "residual_cosine": float(torch.nn.functional.cosine_similarity(errors_model, errors_algorithm, dim=0)),
        "squared_prediction_difference": float((model.prediction - algorithm.prediction).square().mean()),
    }
    if model.sensitivity is not None:
        cosines = torch.nn.functional.cosine_similarity(model.sensitivity, algorithm.sensitivity, dim=-1)
        metrics["sensitivity_cosine"] = float(cosines.mean())
        metrics["weight_difference"] = float((model.weights - algorithm.weights).square().sum(dim=-1).mean())
    return metrics


def last(values: torch.Tensor) -> torch.Tensor:
    """The final position of (B, N) or (B, N, k) values."""
    return values[:, -1]
