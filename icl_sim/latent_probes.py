"""Latent probes: does layer ℓ's hidden state at the final query encode the task's hidden function?

For every layer ℓ a probe maps the layer's features at the final query,
``model.layer_features(xs, ys)[ℓ][:, -1]`` (B, width), to a latent target (B, k):

* ``w`` or any other latent key of the task's prompts: (B,) becomes (B, 1), (B, k) stays,
  (B, d, d) (e.g. the autoregressive task's ``W``) is flattened; booleans and integers are
  cast to float64 (an integer index is then regressed as a number).
* ``xty``: (1/n) Σ_{j<N} y_j x_j over the n = N − 1 context points (Xᵀy/n; (B, d·k) for vector labels).

This is Akyürek et al. 2023 ("What learning algorithm is in-context learning?
Investigations with linear models", ICLR), §4.3: linear and MLP probes for w and Xᵀy from
every layer; Yang et al. 2023 (looped transformers) read per-loop states the same way.

Probes (fitted on ``num_fit`` prompts, scored on ``num_prompts`` held-out prompts):

* ``linear``: closed-form ridge in float64 with an unpenalised intercept,
  W = (X̃ᵀX̃ + λ I)⁻¹ X̃ᵀỸ on centred features X̃ and targets Ỹ, b = ȳ − x̄ W, where λ is
  *relative*: λ = ``ridge`` · tr(X̃ᵀX̃) / width (invariant to the scale of the features).
* ``mlp``: one hidden ReLU layer (``mlp_hidden`` units) on standardised features and targets,
  ``mlp_steps`` full-batch Adam steps at ``mlp_lr``; initial weights drawn on the CPU from
  ``make_generator(seed, "init", layer)`` and moved, so every device starts alike.

Score: R² = 1 − Σ_c SSE_c / Σ_c SST_c over the target's k coordinates (1 − MSE/Var, the
variance pooled over coordinates) on the held-out prompts; 0 is "predicts the mean", negative
is worse than that.

Control task (Hewitt & Liang 2019, "Designing and Interpreting Probes with Control Tasks",
EMNLP): the same probe, fitted and scored the same way, on a target that carries no
information about the prompt's latent; selectivity = R²(target) − R²(control).

* ``permuted`` (default): prompt i's control label is the real target of prompt π(i), π a
  fixed random permutation (of the fit prompts, and separately of the held-out prompts).
  The control has exactly the target's marginal distribution and dimension but is
  independent of prompt i's features, so its held-out R² is ≈ 0 (slightly below 0 for a
  probe that overfits) and its fit R² (``control_fit_r2``) measures how much the probe can
  memorise, Hewitt & Liang's concern: a high-capacity probe's real-target fit R² is only
  as meaningful as its gap to ``control_fit_r2``.
* ``query-projection``: a fixed random linear map of the query x, x_query R with R (d, k)
  Gaussian: a function of the input (as Hewitt & Liang's control is of the word type) that is
  independent of the latent.  Layers that keep x_query in their state score ≈ 1 here, so
  their selectivity says "the probe reads the input, not only the latent".

Records ``{layer, target, probe, metric, value}``, layers 1-based; metrics ``r2``,
``control_r2`` and ``selectivity`` (held-out), ``fit_r2`` and ``control_fit_r2`` (on the fit
prompts).  Randomness: fit prompts come from the ``train`` stream at batch indices from
``FIT_INDEX`` on (far past any training run's steps, so never the model's own training
batches), held-out prompts from :func:`icl_sim.evaluation.eval_prompts` (the ``eval``
stream); permutations and R from ``make_generator(seed, "pool", ·)`` on the CPU.
"""
from __future__ import annotations

import copy

import torch
from tqdm import tqdm

from icl_sim.evaluation import eval_prompts
from icl_sim.models import InContextModel
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.validation import check_choice, check_float, check_int

PROBES = ("linear", "mlp")
CONTROLS = ("permuted", "query-projection")
DERIVED_TARGETS = ("xty",)
FIT_INDEX = 10**9  # fit prompts: train-stream batches FIT_INDEX, FIT_INDEX + 1, ...
METRICS = ("r2", "control_r2", "selectivity", "fit_r2", "control_fit_r2")


def latent_targets(prompt: Prompt, target: str) -> torch.Tensor:
    """The probe target of every prompt, (B, k) in float64; ``target`` is ``xty`` or a latent key."""
    if target == "xty":
        context_xs, context_ys = prompt.xs[:, :-1], prompt.ys[:, :-1]
        labels = context_ys.unsqueeze(-1) if context_ys.ndim == 2 else context_ys
        moments = torch.einsum("bnd,bnk->bdk", context_xs.to(torch.float64), labels.to(torch.float64))
        return moments.flatten(1) / max(context_xs.shape[1], 1)
    if target not in prompt.latent:
        allowed = ", ".join([*DERIVED_TARGETS, *sorted(prompt.latent)])
        raise ValueError(f"target must be one of {allowed}; got {target!r}")
    value = prompt.latent[target]
    if value.ndim == 0 or value.shape[0] != prompt.batch_size:
        raise ValueError(f"target {target!r} must have one row per prompt, got shape {tuple(value.shape)}")
    return value.to(torch.float64).reshape(prompt.batch_size, -1)


def fit_linear_probe(features: torch.Tensor, targets: torch.Tensor, ridge: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Ridge with an unpenalised intercept: (W (width, k), b (k,)), λ = ridge · tr(X̃ᵀX̃) / width."""
    features, targets = features.to(torch.float64), targets.to(torch.float64)
    feature_mean, target_mean = features.mean(dim=0), targets.mean(dim=0)
    centred = features - feature_mean
    gram = centred.mT @ centred
    penalty = ridge * gram.diagonal().mean()
    if not penalty > 0:  # all-constant features: the probe is the intercept
        penalty = torch.ones((), dtype=gram.dtype, device=gram.device)
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    weights = torch.linalg.solve(gram + penalty * eye, centred.mT @ (targets - target_mean))
    return weights, target_mean - feature_mean @ weights


def fit_mlp_probes(features: torch.Tensor, targets: torch.Tensor, *, hidden: int = 64, steps: int = 300,
                   lr: float = 1e-2, generator: torch.Generator | None = None):
    """G independent one-hidden-layer ReLU probes, one per target set: ``targets`` is (G, B, k).

    Features and targets are standardised on these prompts; returns ``predict(features) -> (G, B', k)``.
    The G probes share nothing (Adam is per-parameter), so fitting them together is fitting each alone.
    """
    features, targets = features.to(torch.float64), targets.to(torch.float64)
    groups, width, outputs = targets.shape[0], features.shape[1], targets.shape[2]
    f_mean, f_std = features.mean(dim=0), features.std(dim=0).clamp_min(1e-12)
    t_mean, t_std = targets.mean(dim=1, keepdim=True), targets.std(dim=1, keepdim=True).clamp_min(1e-12)
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    options = {"generator": generator, "dtype": torch.float64}
    first = (torch.randn(groups, width, hidden, **options) / width**0.5).to(features.device).requires_grad_()
    second = (torch.randn(groups, hidden, outputs, **options) / hidden**0.5).to(features.device).requires_grad_()
    first_bias = torch.zeros(groups, 1, hidden, dtype=torch.float64, device=features.device, requires_grad=True)
    second_bias = torch.zeros(groups, 1, outputs, dtype=torch.float64, device=features.device, requires_grad=True)
    parameters = [first, first_bias, second, second_bias]

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        standard = (inputs.to(torch.float64) - f_mean) / f_std
        hidden_units = torch.relu(torch.einsum("bw,gwh->gbh", standard, first) + first_bias)
        return hidden_units @ second + second_bias

    standard_targets = (targets - t_mean) / t_std
    optimiser = torch.optim.Adam(parameters, lr=lr)
    with torch.enable_grad():
        for _ in range(steps):
            optimiser.zero_grad(set_to_none=True)
            loss = (forward(features) - standard_targets).square().mean(dim=(1, 2)).sum()
            loss.backward()
            optimiser.step()

    def predict(inputs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return forward(inputs) * t_std + t_mean

    return predict


def r_squared(predictions: torch.Tensor, targets: torch.Tensor) -> float:
    """1 − Σ SSE / Σ SST over all coordinates of (B, k) targets (nan if the targets are constant)."""
    residual = (predictions - targets).square().sum()
    total = (targets - targets.mean(dim=0)).square().sum()
    return float(1 - residual / total) if total > 0 else float("nan")


def probe_latent(model: InContextModel, task, target: str, *, probes=("linear",), control: str = "permuted",
                 num_fit: int = 2048, num_prompts: int = 1024, batch_size: int = 512, ridge: float = 1e-3,
                 mlp_hidden: int = 64, mlp_steps: int = 300, mlp_lr: float = 1e-2, seed: int = 0,
                 device="cpu", progress: bool = False) -> list[dict]:
    """Records ``{layer, target, probe, metric, value}`` for every layer × probe (see the module docstring).

    ``progress`` shows a bar over the layers on stderr.
    """
    probes = (probes,) if isinstance(probes, str) else tuple(probes)
    if not probes:
        raise ValueError(f"probes must name at least one of {', '.join(PROBES)}")
    for name in probes:
        check_choice("probe", name, PROBES)
    check_choice("control", control, CONTROLS)
    check_int("num_fit", num_fit, 2)
    check_int("num_prompts", num_prompts, 2)
    check_int("batch_size", batch_size, 1)
    check_float("ridge", ridge, 0.0, strict=True)
    check_int("mlp_hidden", mlp_hidden, 1)
    check_int("mlp_steps", mlp_steps, 1)
    check_float("mlp_lr", mlp_lr, 0.0, strict=True)
    check_int("seed", seed, 0)

    fit_batches = [task.sample(min(batch_size, num_fit - start), make_generator(seed, "train", FIT_INDEX + index,
                                                                               device), dtype=torch.float64)
                   for index, start in enumerate(range(0, num_fit, batch_size))]
    latent_targets(fit_batches[0], target)  # a bad target name fails before any model work
    held_out = list(eval_prompts(task, num_prompts=num_prompts, batch_size=batch_size, seed=seed, device=device))
    model = copy.deepcopy(model).to(device=device, dtype=torch.float64).eval()
    fit = _features_and_targets(model, fit_batches, target)
    test = _features_and_targets(model, held_out, target)
    fit_control, test_control = (_control(data, control, seed, offset) for data, offset in ((fit, 0), (test, 1)))

    records = []
    layers = tqdm(list(zip(fit["features"], test["features"])), desc="probe-latent: layers", disable=not progress)
    for layer, (fit_features, test_features) in enumerate(layers, start=1):
        for name in probes:
            if name == "linear":
                both = torch.cat([fit["targets"], fit_control], dim=1)
                weights, bias = fit_linear_probe(fit_features, both, ridge)
                k = fit["targets"].shape[1]
                fit_pred, test_pred = (f @ weights + bias for f in (fit_features, test_features))
                fit_pred = torch.stack([fit_pred[:, :k], fit_pred[:, k:]])
                test_pred = torch.stack([test_pred[:, :k], test_pred[:, k:]])
            else:
                generator = make_generator(seed, "init", layer)
                predict = fit_mlp_probes(fit_features, torch.stack([fit["targets"], fit_control]),
                                         hidden=mlp_hidden, steps=mlp_steps, lr=mlp_lr, generator=generator)
                fit_pred, test_pred = predict(fit_features), predict(test_features)
            values = {"r2": r_squared(test_pred[0], test["targets"]),
                      "control_r2": r_squared(test_pred[1], test_control),
                      "fit_r2": r_squared(fit_pred[0], fit["targets"]),
                      "control_fit_r2": r_squared(fit_pred[1], fit_control)}
            values["selectivity"] = values["r2"] - values["control_r2"]
            records.extend({"layer": layer, "target": target, "probe": name, "metric": metric,
                            "value": values[metric]} for metric in METRICS)
    return records


def _features_and_targets(model: InContextModel, prompts: list[Prompt], target: str) -> dict:
    """Per-layer final-query features (P, width), targets (P, k) and query xs (P, d) of a list of batches."""
    per_batch = []
    with torch.no_grad():
        for prompt in prompts:
            layers = model.layer_features(prompt.xs, prompt.ys)
            per_batch.append([feature[:, -1].to(torch.float64) for feature in layers])
    return {"features": [torch.cat(layer) for layer in zip(*per_batch)],
            "targets": torch.cat([latent_targets(prompt, target) for prompt in prompts]),
            "queries": torch.cat([prompt.xs[:, -1].to(torch.float64) for prompt in prompts])}


def _control(data: dict, control: str, seed: int, offset: int) -> torch.Tensor:
    """The control labels (P, k): targets of permuted prompts, or a fixed random projection of x_query."""
    targets = data["targets"]
    if control == "permuted":
        order = torch.randperm(targets.shape[0], generator=make_generator(seed, "pool", 2 * offset))
        return targets[order.to(targets.device)]
    queries = data["queries"]
    projection = torch.randn(queries.shape[1], targets.shape[1], generator=make_generator(seed, "pool", 1),
                             dtype=torch.float64) / queries.shape[1] ** 0.5
    return queries @ projection.to(queries.device)
