"""Which algorithm does layer ℓ run?  Match a model's per-layer predictions with algorithm steps.

For every layer ℓ of a trained model and every step k of an algorithm (GD, preconditioned
GD, GD++, Newton, a ridge path, the power method) both predict the final query of the
same held-out prompts, and four metrics compare them:

* ``residual_cosine`` (Fu et al. 2023): cosine between the error vectors ŷ_model − y and
  ŷ_alg − y across prompts; higher is closer.
* ``sensitivity_cosine`` (von Oswald et al. 2023): mean cosine of ∂ŷ/∂x_query; higher is closer.
* ``squared_prediction_difference`` (Akyürek et al. 2023, SPD): mean (ŷ_model − ŷ_alg)²; lower is closer.
* ``weight_difference`` (Akyürek et al. 2023, ILWD): mean ‖ŵ_model − ŵ_alg‖², the implicit
  weights being least-squares fits to each predictor's outputs on 2d probe queries; lower is closer.

Two kinds of step parameters set an algorithm's hyper-parameters (step size, γ, preconditioner):

* ``shared`` (Fu et al. 2023; Akyürek et al. 2023): one setting for all steps, the one under
  which every layer has a step that predicts most like it, i.e. the least
  Σ_ℓ min_k (ŷ_layer ℓ − ŷ_step k)² on separate tuning prompts.  This asks how many steps of
  the classic algorithm each layer amounts to.
* ``per-step`` (von Oswald et al. 2023; Ahn et al. 2023): one step per layer, each with its own
  parameters, tuned jointly on the task's risk (``icl_sim.theory.step_tuning``) without looking
  at the model; only ties in risk (GD's steps commute) are broken by closeness to the layers.
  This asks whether layer ℓ *is* step ℓ of the best L-step algorithm of that family.

The sensitivity and weight metrics need scalar labels; for vector labels (PCA) the other two
are reported.

Layers are read out ``direct`` (the model's own read-out after each layer: the LSA's query
label slot, the GPT's final LayerNorm and read-out) or ``fitted``: a linear read-out of each
layer's hidden state fitted by least squares on the tuning prompts (Fu et al. 2023), for
models whose intermediate layers do not predict directly.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

import torch
from tqdm import tqdm

from icl_sim.evaluation import eval_prompts
from icl_sim.models import InContextModel
from icl_sim.probe_metrics import HIGHER_IS_CLOSER, behaviours, compare, last, last_predictions
from icl_sim.predictor import replicated_query_predictor
from icl_sim.prompt import Prompt
from icl_sim.tasks.base import check_task
from icl_sim.theory import GD, GDPlusPlus, Newton, PowerMethod, PreconditionedGD, Ridge, optimal_preconditioner
from icl_sim.theory.baselines import StatisticsBaseline, linear_query_predictor
from icl_sim.theory.prefix import as_float64, context_statistics
from icl_sim.theory.step_tuning import STEP_FAMILIES, tune_steps
from icl_sim.validation import check_choice, check_int

LEARNING_RATES = tuple(float(v) for v in torch.logspace(-2, 0.5, 26, dtype=torch.float64))
CURVATURE_CORRECTIONS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


@dataclass(frozen=True)
class Algorithm:
    """An algorithm as a family of predictors: ``build(k, **hyper)`` for hyper-parameters from ``grid(prompt)``."""

    name: str
    build: Callable[..., object]
    grid: Callable[[Prompt], Sequence[dict]]

    def fitted_run(self, steps, tuning: Prompt, model_tuning: list[torch.Tensor],
                   cache: ContextStatistics | None = None, progress: bool = False) -> tuple[dict, list]:
        """The one hyper-parameter setting whose steps best cover the model's layers, and its steps.

        ``steps`` is K (steps 1..K) or an explicit increasing sequence of step counts.
        """
        counts = range(1, steps + 1) if isinstance(steps, int) else steps
        grid = list(self.grid(tuning))
        members = [[self.build(step, **hyper) for step in counts] for hyper in grid]
        index = _closest_run(members, tuning, model_tuning, cache, progress)
        return grid[index], members[index]


class ContextStatistics:
    """Context statistics Ĝ, b̂ computed once per context and shared by every candidate predictor.

    A probe tries every step count of every hyper-parameter setting on the same prompts (1,080
    predictors for ``gd``); predictors of the GD family (``StatisticsBaseline``) depend on a
    context only through Ĝ and b̂, so ``query_predictor(predictor)`` computes those once per
    context.  A context is recognised by its tensors' storage, shape, strides and version (the
    cache holds the tensors, so their storage cannot be reused while it lives); other
    predictors pass through unchanged.  One cache lives for one ``probe`` call.
    """

    def __init__(self):
        self._entries: dict[tuple, tuple] = {}
        self._steps: dict[tuple, list[torch.Tensor]] = {}

    def query_predictor(self, predictor) -> Callable:
        if not isinstance(predictor, StatisticsBaseline):
            return predictor.query_predictor

        def from_cache(xs: torch.Tensor, ys: torch.Tensor):
            if predictor.steps_family() is None or predictor.steps == 0:
                return predictor.statistics_query_predictor(*self.statistics(xs, ys))
            return linear_query_predictor(self.step_weights(xs, ys, predictor))

        return from_cache

    def statistics(self, xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key = _context_key(xs, ys)
        if key not in self._entries:
            self._entries[key] = (xs, ys, context_statistics(*as_float64(xs, ys)))
        return self._entries[key][2]

    def step_weights(self, xs: torch.Tensor, ys: torch.Tensor, predictor: StatisticsBaseline) -> torch.Tensor:
        """``predictor``'s weights on this context, read off the iteration of its family run once to the most
        steps asked so far: ask for the longest first, and steps 1..K cost K steps, not K(K + 1)/2."""
        key = (_context_key(xs, ys), predictor.steps_family())
        if len(self._steps.get(key, ())) < predictor.steps:
            self._steps[key] = list(predictor.weight_steps(*self.statistics(xs, ys), predictor.steps))
        return self._steps[key][predictor.steps - 1]


def _context_key(xs: torch.Tensor, ys: torch.Tensor) -> tuple:
    return tuple((t.data_ptr(), tuple(t.shape), t.stride(), t._version, t.dtype, str(t.device)) for t in (xs, ys))


def _learning_rates(prompt: Prompt) -> list[dict]:
    return [{"lr": lr} for lr in LEARNING_RATES]


def _preconditioned(prompt: Prompt) -> list[dict]:
    """Ahn et al.'s optimal one-layer preconditioner for the prompts' mean covariance, times a tuned step."""
    covariance = prompt.latent["covariance"].to(torch.float64).mean(dim=0)
    preconditioner = optimal_preconditioner(covariance.cpu(), prompt.points - 1)
    return [{"lr": lr, "preconditioner": preconditioner} for lr in LEARNING_RATES]


def _gd_plus_plus(prompt: Prompt) -> list[dict]:
    return [{"lr": lr, "gamma": gamma} for lr in LEARNING_RATES[::2] for gamma in CURVATURE_CORRECTIONS]


ALGORITHMS = {
    "gd": Algorithm("gd", lambda k, lr: GD(k, lr), _learning_rates),
    "preconditioned-gd": Algorithm("preconditioned-gd",
                                   lambda k, lr, preconditioner: PreconditionedGD(k, lr, preconditioner),
                                   _preconditioned),
    "gd-plus-plus": Algorithm("gd-plus-plus", lambda k, lr, gamma: GDPlusPlus(k, lr, gamma), _gd_plus_plus),
    "newton": Algorithm("newton", lambda k: Newton(k), lambda prompt: [{}]),
    # the ridge path: step k is λ = 10^(2 − k/2), from heavy shrinkage towards least squares
    "ridge": Algorithm("ridge", lambda k: Ridge(10.0 ** (2 - k / 2)), lambda prompt: [{}]),
    "power-method": Algorithm("power-method", lambda k: PowerMethod(k), lambda prompt: [{}]),
}


READOUTS = ("direct", "fitted")
STEP_PARAMS = ("shared", "per-step")
#: steps of a run with shared step parameters unless asked otherwise
DEFAULT_STEPS = 10


def probe(model: InContextModel, task, algorithm: str, *, steps: int | None = None, step_params: str = "shared",
          num_prompts: int = 1024, seed: int = 0, device="cpu", readout: str = "direct",
          step_counts: Sequence[int] | None = None, progress: bool = False) -> dict:
    """Records ``{layer, algorithm, step, metric, value}`` for every layer × step, and the best step per layer.

    ``algorithm`` must be one the task declares in ``probe_algorithms``.
    Layers are 1-based; ``best`` maps each layer to the step with the highest residual cosine;
    ``parameters`` holds the algorithm's hyper-parameters (per step: lists over steps, and the
    steps' risk on the tuning prompts).  ``steps`` defaults to 10 for shared step parameters
    and to the number of layers per step.  ``step_counts`` (shared step parameters only) replaces
    steps 1..K by an increasing sequence of step counts, e.g. powers of two for an algorithm
    matched on a log scale (Fu et al. 2023's GD heatmap); records then name the count as ``step``.
    ``progress`` shows bars over the hyper-parameter settings and the steps on stderr.
    """
    if not isinstance(model, InContextModel):
        raise ValueError(f"model must be an InContextModel (icl_sim.models.build_model), got {type(model).__name__}")
    check_task("task", task)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    if algorithm not in task.probe_algorithms:
        raise ValueError(f"algorithm {algorithm!r} does not solve the {task.name} task; it declares "
                         f"{', '.join(task.probe_algorithms) or 'none'}")
    check_choice("readout", readout, READOUTS)
    check_choice("step_params", step_params, STEP_PARAMS)
    if step_params == "per-step" and algorithm not in STEP_FAMILIES:
        raise ValueError(f"step_params 'per-step' needs an algorithm with per-step parameters "
                         f"({', '.join(STEP_FAMILIES)}); got {algorithm!r}")
    if steps is not None:
        check_int("steps", steps, 1)
    if step_counts is not None:
        step_counts = list(step_counts)
        if step_params != "shared" or steps is not None:
            raise ValueError("step_counts needs step_params 'shared' and no steps")
        for index, count in enumerate(step_counts):
            check_int(f"step_counts[{index}]", count, 0)
        if not step_counts or any(b <= a for a, b in zip(step_counts, step_counts[1:])):
            raise ValueError(f"step_counts must be a non-empty increasing sequence, got {step_counts}")
    tuning, probes = probe_prompts(task, num_prompts, seed, device)
    model.check_prompt(tuning.xs, tuning.ys)  # the task's prompts fit the model (d, labels per point)
    model = copy.deepcopy(model).to(device=device, dtype=torch.float64).eval()
    scalar = probes.target.ndim == 2
    if readout == "direct":
        query_predictor = model.query_predictor
    else:
        query_predictor = partial(replicated_query_predictor, _fitted_readouts(model, tuning))
    model_tuning = last_predictions(query_predictor, tuning)
    model_outputs = behaviours(query_predictor, probes, scalar)
    cache = ContextStatistics()
    if step_params == "shared":
        parameters, runs = ALGORITHMS[algorithm].fitted_run(step_counts or steps or DEFAULT_STEPS, tuning,
                                                            model_tuning, cache, progress)
    else:
        parameters, runs = _tuned_run(algorithm, steps or len(model_tuning), tuning, model_tuning, cache)
    records = []
    labels = step_counts or range(1, len(runs) + 1)
    outputs = [behaviours(cache.query_predictor(predictor), probes, scalar)[0]  # the longest first, as above
               for predictor in tqdm(runs[::-1], desc="probe: steps", disable=not progress)][::-1]
    for step, algorithm_output in zip(labels, outputs):
        for layer, layer_output in enumerate(model_outputs, start=1):
            for metric, value in compare(layer_output, algorithm_output, last(probes.target)).items():
                records.append({"layer": layer, "algorithm": algorithm, "step": step, "metric": metric,
                                "value": value})
    plain = {name: value.tolist() if isinstance(value, torch.Tensor) else value for name, value in parameters.items()}
    return {"records": records, "best": best_steps(records), "parameters": plain}


def probe_prompts(task, num_prompts: int, seed: int, device="cpu") -> tuple[Prompt, Prompt]:
    """The tuning prompts (hyper-parameters, read-outs) and the probe prompts (metrics), from disjoint seeds."""
    return tuple(next(eval_prompts(task, num_prompts=num_prompts, batch_size=num_prompts, seed=seed + offset,
                                   device=device)) for offset in (1_000_003, 0))


def _tuned_run(algorithm: str, steps: int, tuning: Prompt, model_tuning: list[torch.Tensor],
               cache: ContextStatistics | None = None) -> tuple[dict, list]:
    """The risk-optimal K-step parameters (and their risk), and its steps 1..K.

    Tuned steps whose risks the tuning prompts cannot tell apart (GD's steps in another
    order; near-optima of preconditioned GD) are equally good answers; of those, the one whose
    steps best cover the model's layers is returned.
    """
    tuned = tune_steps(algorithm, tuning.xs, tuning.ys, steps)
    equally_good = [candidate for candidate in tuned if candidate.indistinguishable_from(tuned[0])]
    runs = [candidate.run() for candidate in equally_good]
    chosen = _closest_run(runs, tuning, model_tuning, cache)
    return {**equally_good[chosen].parameters, "risk": equally_good[chosen].risk}, runs[chosen]


def _fitted_readouts(model: InContextModel, tuning: Prompt) -> Callable:
    """Per-layer linear read-outs of the hidden state, least squares (with an intercept) on the tuning prompts."""
    with torch.no_grad():
        features = model.layer_features(tuning.xs, tuning.ys)
    target = last(tuning.target)
    target = target.unsqueeze(-1) if target.ndim == 1 else target
    maps = []
    for feature in features:
        design = _with_intercept(last(feature))
        gram = design.mT @ design
        ridge = 1e-10 * gram.diagonal().mean() * torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
        maps.append(torch.linalg.solve(gram + ridge, design.mT @ target))

    def layered(xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        outputs = [_with_intercept(feature) @ weights for feature, weights in zip(model.layer_features(xs, ys), maps)]
        return [output.squeeze(-1) if output.shape[-1] == 1 else output for output in outputs]

    return layered


def _with_intercept(features: torch.Tensor) -> torch.Tensor:
    return torch.cat([features, torch.ones_like(features[..., :1])], dim=-1)


def _closest_run(members: list[list], tuning: Prompt, model_tuning: list[torch.Tensor],
                 cache: ContextStatistics | None = None, progress: bool = False) -> int:
    """The index of the run (steps 1..K) whose steps best cover the model's layers."""
    if len(members) == 1:
        return 0
    layers = torch.stack(model_tuning)  # (L, B, ...)
    cache = cache or ContextStatistics()

    def mismatch(run: list) -> float:
        # (K, B, ...), the longest first (ContextStatistics.step_weights)
        steps = torch.stack([last_predictions(cache.query_predictor(member), tuning)[0]
                             for member in reversed(run)]).flip(0)
        differences = (layers[:, None] - steps[None]).square().flatten(2).mean(dim=-1)  # (L, K)
        return float(differences.min(dim=1).values.sum())

    indices = tqdm(range(len(members)), desc="probe: hyper-parameters", disable=not progress)
    return min(indices, key=lambda index: mismatch(members[index]))


def best_steps(records: Sequence[dict], metric: str = "residual_cosine") -> dict[int, int]:
    """For each layer, the step whose ``metric`` is closest."""
    best: dict[int, tuple[float, int]] = {}
    sign = 1.0 if HIGHER_IS_CLOSER[metric] else -1.0
    for record in records:
        if record["metric"] == metric:
            score = sign * record["value"]
            if record["layer"] not in best or score > best[record["layer"]][0]:
                best[record["layer"]] = (score, record["step"])
    return {layer: step for layer, (_, step) in sorted(best.items())}
