"""One contract for everything that is registered: tasks, models, baselines and reproductions.

Every entry of ``icl_sim.tasks.TASKS``, ``icl_sim.models.MODELS``, every concrete baseline class
that ``icl_sim.theory`` exports, every predictor a task's ``baselines()`` returns and every
reproduction in ``icl_sim.paper_repro.REPRODUCTIONS`` is collected here, so a new one is tested
by being registered.  The tables below only choose small sizes and the variants worth covering
(each branch of a sampler, each model option); a registered name missing from them is still
tested, at small defaults.  What each family must do:

* a task: its prompts are a pure function of (seed, stream, index), in the dtype and on the device
  asked for, with the documented shapes; a bad parameter or sample argument raises ``ValueError``
  naming it; ``trivial_error()`` agrees with a Monte Carlo estimate of the level its docstring
  defines; its baselines keep the predictor contract;
* a model: seeded initialisation is reproducible; outputs have the prompt's shape and dtype, one
  read-out per layer (or loop), no position peeks at later points, float64 works; a bad config
  value names itself; an interrupted and resumed training run ends bit-identical to a straight one;
* a baseline: no peeking, the target's shape, float64 output (the same from float32 input), bad
  shapes and bad constructor arguments rejected by name;
* a reproduction: declares its claims, each tested by a claim check; runs at smoke scale and writes its checks,
  results and figure; its untrained control runs through the same measure and checks.

Monte Carlo checks allow ``Z = 5`` standard errors (one gaussian-ish statistic: false alarm about
6e-7; the seeds are fixed, so each check is deterministic anyway).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import math

import pytest
import torch
from contract import assert_no_peek
from tiny_runs import assert_identical, parameters, stop_at

import icl_sim.theory as theory
from icl_sim.cli import cli
from icl_sim.config import TrainConfig
from icl_sim.evaluation import METRICS
from icl_sim.models import MODELS, build_model
from icl_sim.paper_repro import REPRODUCTIONS, SCALES, run_reproduction
from icl_sim.run_io import read_metrics
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASKS, make_task
from icl_sim.tasks.boolean import FUNCTIONS
from icl_sim.theory.baselines import Baseline, PointsOnlyBaseline
from icl_sim.theory.boolean_learners import ConjunctionElimination, DisjunctionElimination, HammingKNN, LogisticGD
from icl_sim.training import train

Z = 5.0  # standard errors allowed for one Monte Carlo statistic
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]
FLOATS = [torch.float32, torch.float64]


# == tasks ============================================================================================

def small_task(name: str, **params):
    """Task ``name`` at a small size (its dimension parameter 5, 8 points) unless ``params`` say otherwise."""
    cls = TASKS[name]
    fields = {f.name for f in dataclasses.fields(cls)}
    size = {cls.dim_parameter: 5}
    if "points" in fields:
        size["points"] = 8
    return make_task(name, **{**size, **params})


#: variants beyond each task's small default: every sampler branch the contract should see
TASK_VARIANTS = {
    "linear-regression": [
        # the trivial-error cases: identity, uniform, κ, sparse, spectrum with uniform z and sparse w
        dict(dim=5, points=20, noise=0.5, prior_scale=1.5),
        dict(dim=4, points=20, x_distribution="uniform", x_bound=0.5, noise=0.1),
        dict(dim=6, points=20, condition_number=20.0, prior_scale=0.7),
        dict(dim=8, points=20, sparsity=3, noise=0.3),
        dict(dim=3, points=20, spectrum=(0.5, 2.0, 4.0), x_distribution="uniform", x_bound=2.0, sparsity=1),
        dict(dim=4, pool_size=3, noise=0.1),
        dict(dim=4, condition_number=5.0, rotation="fixed", weight_prior="inverse-covariance", link="relu",
             noise_law="uniform", noise_levels=(0.0, 1.0)),
        dict(dim=4, link="tanh", noise_law="categorical", noise_levels=(0.5, 2.0)),
    ],
    "autoregressive": [
        dict(dim=4, points=10, transition="orthogonal", initial_scale=0.8),
        dict(dim=3, transition="contractive", initial="sparse", noise=0.2),
        dict(dim=4, transition="diagonal-unitary", initial="ones"),
    ],
    "boolean": [dict(function=function, points=12) for function in FUNCTIONS]
    + [dict(function="conjunction", teaching=True), dict(function="parity", teaching=True)],
    "graph-connectivity": [
        dict(nodes=6, min_nodes=4, average_degree=1.5),
        dict(nodes=6, directed=True, average_degree=2.0),
        dict(nodes=6, generator="chain", path_length=2, directed=True),
        dict(nodes=6, generator="bounded-diameter", max_diameter=3, components=2, extra_edges=0.2),
    ],
    "pca": [dict(dim=3, eigengap=3.0)],
    "linear-classification": [dict(dim=3, points=10, flip=0.1)],
    "key-average": [dict(keys=3, link=link) for link in ("linear", "quadratic", "cubic")],
}


def _case_id(name: str, params: dict) -> str:
    return name + "".join(f"-{key}={value}" for key, value in params.items())


TASK_CASES = [(name, {}) for name in TASKS] + [(name, params) for name, variants in TASK_VARIANTS.items()
                                               for params in variants]
TASK_CASE_IDS = [_case_id(*case) for case in TASK_CASES]


def test_task_tables_name_registered_tasks():
    assert set(TASK_VARIANTS) <= set(TASKS)


def _tensors(prompt) -> dict:
    tensors = {"xs": prompt.xs, "ys": prompt.ys, **{f"latent[{key}]": value for key, value in prompt.latent.items()}}
    if prompt.targets is not None:
        tensors["targets"] = prompt.targets
    return tensors


@pytest.mark.parametrize("name, params", TASK_CASES, ids=TASK_CASE_IDS)
def test_task_sampling_is_a_function_of_seed_stream_and_index(name, params):
    task = small_task(name, **params)
    reference = _tensors(task.sample(8, make_generator(21, "train", 3)))
    again = _tensors(task.sample(8, make_generator(21, "train", 3)))
    assert reference.keys() == again.keys()
    for key in reference:
        assert torch.equal(reference[key], again[key]), key
    # what varies from prompt to prompt is random, so it changes with the seed, the stream and the index
    random = [key for key, value in reference.items() if not torch.equal(value, value[:1].expand_as(value))]
    assert "xs" in random
    for other in (make_generator(22, "train", 3), make_generator(21, "eval", 3), make_generator(21, "train", 4)):
        changed = _tensors(task.sample(8, other))
        for key in random:
            assert not torch.equal(reference[key], changed[key]), key


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name, params", TASK_CASES, ids=TASK_CASE_IDS)
def test_task_dtype_device_and_shapes(name, params, dtype, device):
    task = small_task(name, **params)
    generator = make_generator(0, "eval", device=device)
    prompts = [task.sample(3, generator, dtype=dtype)]
    try:  # a curriculum's shorter prompt in fewer dimensions, where the task can honour one
        prompts.append(task.sample(3, generator, dtype=dtype, points=task.points - 1, active_dims=task.dim - 1))
    except ValueError as error:
        assert "points" in str(error) or "active_dims" in str(error), error
    for prompt in prompts:
        batch, n = 3, prompt.xs.shape[1]
        assert prompt.xs.shape == (batch, n, task.dim)
        assert prompt.ys.shape == ((batch, n) if task.target_dim == 1 else (batch, n, task.target_dim))
        assert prompt.target.shape == prompt.ys.shape
        for key, tensor in _tensors(prompt).items():
            assert tensor.device.type == device, key
            if tensor.is_floating_point():
                assert tensor.dtype == dtype, key
                assert torch.isfinite(tensor).all(), key
    assert task.sample(2, make_generator(0, "eval")).xs.dtype == torch.float32  # the default


def _invalid_values(annotation) -> list:
    """Values no field of this annotation accepts: a task's or a model config's dataclass field."""
    kind = str(annotation)
    if kind.startswith("bool"):
        return ["yes", 1, None]
    if kind.startswith("int"):
        return [-1, 2.5, True]
    if kind.startswith("float"):
        return [math.nan, math.inf, "0.1"]
    if kind.startswith("str"):
        return ["no-such-choice"]
    return ["not-a-value"]


TASK_FIELD_CASES = [(name, field.name, value) for name, cls in TASKS.items() for field in dataclasses.fields(cls)
                    for value in _invalid_values(field.type)]


@pytest.mark.parametrize("name, field, value", TASK_FIELD_CASES, ids=[f"{n}-{f}={v!r}" for n, f, v in TASK_FIELD_CASES])
def test_task_invalid_parameters_name_themselves(name, field, value):
    with pytest.raises(ValueError, match=field):
        TASKS[name](**{field: value})
    with pytest.raises(ValueError, match=field):
        make_task(name, **{field: value})


@pytest.mark.parametrize("name", list(TASKS))
def test_task_invalid_sample_arguments_name_themselves(name):
    task = small_task(name)
    generator = make_generator(0, "eval")
    for batch, overrides, named in [(0, {}, "batch_size"), (2, {"points": 0}, "points"),
                                    (2, {"active_dims": task.dim + 1}, "active_dims")]:
        with pytest.raises(ValueError, match=named):
            task.sample(batch, generator, **overrides)


def _coin(target: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.where(torch.rand(target.shape, generator=generator, dtype=torch.float64) < 0.5, 1.0, -1.0)


#: the trivial predictor each metric's ``trivial_error`` describes (see the tasks' docstrings)
TRIVIAL_PREDICTIONS = {
    "squared_error": lambda target, generator: torch.zeros_like(target),  # predicting 0: E‖y‖²/d
    "absolute_cosine": lambda target, generator: torch.full_like(target, target.shape[-1] ** -0.5),  # a fixed guess
    "accuracy": _coin,  # a fair coin, blind to the prompt
}


@pytest.mark.parametrize("name, params", TASK_CASES, ids=TASK_CASE_IDS)
def test_trivial_error_matches_monte_carlo(name, params):
    task = small_task(name, **params)
    reference = getattr(task, "trivial_error", lambda: None)()
    if reference is None:
        pytest.skip(f"{name} has no trivial level with these parameters")
    assert task.metric in TRIVIAL_PREDICTIONS, f"add the trivial predictor of metric {task.metric!r}"
    batch = 4000
    prompt = task.sample(batch, make_generator(14, "eval"), dtype=torch.float64)
    target = prompt.target
    preds = TRIVIAL_PREDICTIONS[task.metric](target, torch.Generator().manual_seed(15))
    scores = METRICS[task.metric].function(preds, target, prompt.dim)
    if task.evaluated_positions == "last":
        scores = scores[:, -1:]
    # the positions of one prompt share its latent function, so they are not independent: one mean per
    # prompt (4000 iid values) with their empirical standard error
    per_prompt = scores.mean(dim=1)
    estimate = float(per_prompt.mean())
    standard_error = float(per_prompt.std()) / math.sqrt(batch)
    # plus float64 rounding: a task whose trivial error has no variance (every label ±1) is estimated exactly
    assert abs(estimate - reference) <= Z * standard_error + 1e-12 * abs(reference), (estimate, reference,
                                                                                     standard_error)
    assert standard_error < 0.05 * abs(reference)  # the check has teeth: a 25% error in the formula would fail


# == baselines ========================================================================================

def _theory_baselines() -> dict:
    """The concrete Baseline classes ``icl_sim.theory`` exports, by name."""
    exported = {name: getattr(theory, name) for name in theory.__all__}
    return {name: obj for name, obj in exported.items()
            if isinstance(obj, type) and issubclass(obj, Baseline) and not inspect.isabstract(obj)}


_EYE = torch.eye(4, dtype=torch.float64)
_POOL = torch.randn(5, 4, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
#: one instance of each exported baseline class, on the task (name, params) whose prompts it reads
THEORY_EXAMPLES = {
    "OLS": lambda: theory.OLS(), "Ridge": lambda: theory.Ridge(0.5), "GD": lambda: theory.GD(3, 0.2),
    "StepwiseGD": lambda: theory.StepwiseGD([0.3, 0.5, 0.1]), "Averaging": lambda: theory.Averaging(),
    "KNN": lambda: theory.KNN(3), "Zero": lambda: theory.Zero(), "Lasso": lambda: theory.Lasso(0.1, steps=50),
    "PreconditionedGD": lambda: theory.PreconditionedGD(3, 0.2, _EYE * 0.5),
    "StepwisePreconditionedGD": lambda: theory.StepwisePreconditionedGD(_EYE.expand(2, 4, 4) * 0.4),
    "GDPlusPlus": lambda: theory.GDPlusPlus(3, 0.3, 0.2),
    "StepwiseGDPlusPlus": lambda: theory.StepwiseGDPlusPlus([0.3, 0.6], [0.2, 0.0]),
    "NetworkGD": lambda: theory.NetworkGD(3, 4, 5, 0.03),
    "Newton": lambda: theory.Newton(5), "RecursiveLeastSquares": lambda: theory.RecursiveLeastSquares(0.5),
    "DiscreteMMSE": lambda: theory.DiscreteMMSE(_POOL, 0.5), "PowerMethod": lambda: theory.PowerMethod(4),
}
EXAMPLE_TASKS = {"PowerMethod": ("pca", dict(dim=4, points=9))}
REGRESSION = ("linear-regression", dict(dim=4, points=9, noise=0.1))
#: other parameterisations and prompts worth the contract that no task's baselines() gives
PARITY = ("boolean", dict(function="parity", points=12))
EXTRA_PREDICTORS = [("parity:HammingKNN(k=3)", HammingKNN(3), PARITY),
                    ("parity:ConjunctionElimination", ConjunctionElimination(), PARITY),
                    ("parity:DisjunctionElimination", DisjunctionElimination(), PARITY),
                    ("LogisticGD(steps=3, lr=0.2)", LogisticGD(steps=3, lr=0.2),
                     ("linear-classification", dict(dim=3, points=10)))]


def test_every_exported_baseline_has_an_example():
    assert set(_theory_baselines()) == set(THEORY_EXAMPLES)


PREDICTOR_CASES = (
    [(name, example(), EXAMPLE_TASKS.get(name, REGRESSION)) for name, example in THEORY_EXAMPLES.items()
     if name in _theory_baselines()]  # a stale name fails test_every_exported_baseline_has_an_example, not collection
    + EXTRA_PREDICTORS
    + [(f"{_case_id(name, params)}:{label}", predictor, (name, params)) for name, params in TASK_CASES
       for label, predictor in small_task(name, **params).baselines().items()])
PREDICTOR_IDS = [case[0] for case in PREDICTOR_CASES]


def _prompt(task_case, batch=8, dtype=torch.float64, seed=13):
    name, params = task_case
    return small_task(name, **params).sample(batch, make_generator(seed, "eval"), dtype=dtype)


@pytest.mark.parametrize("label, predictor, task_case", PREDICTOR_CASES, ids=PREDICTOR_IDS)
def test_baseline_does_not_peek(label, predictor, task_case):
    prompt = _prompt(task_case)
    assert_no_peek(predictor, prompt.xs, prompt.ys)


@pytest.mark.parametrize("label, predictor, task_case", PREDICTOR_CASES, ids=PREDICTOR_IDS)
def test_baseline_computes_in_float64_with_the_target_shape(label, predictor, task_case):
    prompt = _prompt(task_case, batch=4, dtype=torch.float32)
    preds = predictor.predict(prompt.xs, prompt.ys)
    assert preds.shape == prompt.target.shape
    assert preds.dtype == torch.float64 and preds.device == prompt.xs.device
    assert torch.isfinite(preds).all()
    torch.testing.assert_close(preds, predictor.predict(prompt.xs.double(), prompt.ys.double()), rtol=0, atol=0)


@pytest.mark.parametrize("label, predictor, task_case", PREDICTOR_CASES, ids=PREDICTOR_IDS)
def test_baseline_rejects_bad_shapes(label, predictor, task_case):
    prompt = _prompt(task_case)
    with pytest.raises(ValueError, match="xs"):
        predictor.predict(prompt.xs[0], prompt.ys[0])
    if not isinstance(predictor, PointsOnlyBaseline):  # those read the points alone
        with pytest.raises(ValueError, match="ys"):
            predictor.predict(prompt.xs, prompt.ys[:, :-1])


def _invalid_arguments(value) -> list:
    """Values a constructor argument like ``value`` must refuse."""
    if isinstance(value, bool):
        return ["yes", 1, None]
    if isinstance(value, int):
        return [-1, float(value), True]
    if isinstance(value, float):
        return [math.nan, math.inf, str(value)]
    if isinstance(value, torch.Tensor):
        return [value.reshape(-1), torch.full_like(value, math.inf)]
    if isinstance(value, tuple):
        return [(math.nan,) + value[1:]]
    return []


def _constructor_cases() -> list:
    """(class, arguments of a valid instance, argument, invalid value) for every baseline class seen above."""
    cases, seen = [], set()
    for _, predictor, _ in PREDICTOR_CASES:
        cls = type(predictor)
        if cls in seen:
            continue
        seen.add(cls)
        names = list(inspect.signature(cls.__init__).parameters)[1:]
        arguments = {name: getattr(predictor, name) for name in names if hasattr(predictor, name)}
        cases += [(cls, arguments, name, value) for name in arguments for value in _invalid_arguments(arguments[name])]
    return cases


#: known gaps, each a finding to fix in the baseline (strict: the mark must go once it is fixed)
CONSTRUCTOR_GAPS: dict[tuple[str, str, str], str] = {}
CONSTRUCTOR_CASES = [pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=CONSTRUCTOR_GAPS[key]))
                     if (key := (case[0].__name__, case[2], repr(case[3]))) in CONSTRUCTOR_GAPS else case
                     for case in _constructor_cases()]


@pytest.mark.parametrize("cls, arguments, name, value", CONSTRUCTOR_CASES,
                         ids=[f"{c.__name__}-{n}={v!r}"[:60] for c, _, n, v in _constructor_cases()])
def test_baseline_constructor_errors_name_the_parameter(cls, arguments, name, value):
    cls(**arguments)  # the valid arguments are accepted
    with pytest.raises(ValueError, match=name):
        cls(**{**arguments, name: value})


# == models ===========================================================================================

#: small configurations of each model family and its options, with the task (name, params) they suit
MODEL_VARIANTS = {
    "lsa": [dict(layers=2, heads=2, init_scale=0.2, **options) for options in (
        {}, {"parameterisation": "diagonal"}, {"parameterisation": "sparse"}, {"layer_norm": True}, {"mlp": True},
        {"layer_norm": True, "mlp": True},
        {"causal": True}, {"causal": True, "layer_norm": True, "mlp": True})],
    "gpt": [dict(n_layer=3), dict(n_layer=2, n_embd=16, n_head=2, dropout=0.1)],  # n_layer=3: the "tiny" size
    "softmax-attention": [dict(init_scale=0.3, **options) for options in (
        {"layers": 1}, {"layers": 1, "heads": 2}, {"layers": 2, "heads": 2}, {"layers": 1, "kernel": "gaussian"},
        {"layers": 2, "kernel": "gaussian"})],
    "looped": [dict(n_embd=16, n_head=2, loops=4, loop_window=2, block=block) for block in ("softmax", "linear")],
    "looped-lsa-ln": [dict(loops=3, init_scale=0.3, layer_norm=layer_norm) for layer_norm in (True, False)],
    "complex-lsa": [dict(init_noise=0.1)],  # the paper's start is deterministic: noise makes it seeded
    "selection-attention": [dict(parameterization=name) for name in ("W", "KQ")] + [dict(head="relu")],
    "mesa": [dict(layers=2, heads=2, key_size=3, attention=attention) for attention in ("mesa", "linear", "softmax")],
    "ttt": [dict(inner="linear", inner_steps=2), dict(inner="mlp", inner_steps=2), dict(inner="kernel"),
            dict(inner="linear", mini_batch=3, inner_norm=True, token_lr=True)],
    "projected-attention": [{}, dict(activation="linear"), dict(rank=1, feedforward=8)],
}
MODEL_TASKS = {"looped-lsa-ln": ("pca", dict(dim=4, points=7)),
               "complex-lsa": ("autoregressive", dict(dim=4, points=7)),
               "mesa": ("autoregressive", dict(dim=4, points=7))}
MODEL_REGRESSION = ("linear-regression", dict(dim=4, points=7))
VECTOR_LABELS = ("autoregressive", dict(dim=3, points=7, transition="orthogonal"))

MODEL_CASES = (
    [(name, params, MODEL_TASKS.get(name, MODEL_REGRESSION)) for name in MODELS
     for params in MODEL_VARIANTS.get(name, [{}])]
    + [("lsa", dict(layers=2, init_scale=0.2, layer_norm=True, mlp=True), VECTOR_LABELS),
       ("gpt", dict(n_layer=2, n_embd=16, n_head=2), VECTOR_LABELS),
       ("softmax-attention", dict(heads=2, init_scale=0.3), VECTOR_LABELS),
       ("looped", dict(n_embd=16, n_head=2, loops=3, loop_window=1), VECTOR_LABELS)])
MODEL_IDS = [_case_id(name, params) + ("-vector" if task == VECTOR_LABELS else "")
             for name, params, task in MODEL_CASES]


def test_model_tables_name_registered_models():
    assert set(MODEL_VARIANTS) <= set(MODELS) and set(MODEL_TASKS) <= set(MODELS)


def _model(name, params, task_case, seed=0):
    task = small_task(task_case[0], **task_case[1])
    torch.manual_seed(seed)
    return build_model(name, task.dim, task.points, task.target_dim, **params), task


@pytest.mark.parametrize("name, params, task_case", MODEL_CASES, ids=MODEL_IDS)
def test_model_initialisation_is_seeded(name, params, task_case):
    first, second, other = (_model(name, params, task_case, seed)[0].state_dict() for seed in (0, 0, 1))
    assert_identical(first, second)
    assert any(not torch.equal(first[key], other[key]) for key in first)


@pytest.mark.parametrize("name, params, task_case", MODEL_CASES, ids=MODEL_IDS)
def test_model_outputs_one_prediction_per_layer_in_the_prompt_dtype(name, params, task_case):
    model, task = _model(name, params, task_case)
    model.eval()  # dropout off: the forward paths must agree
    depth = getattr(model.config, model.depth_parameter)
    assert depth >= 1, f"give {name}'s {model.depth_parameter} explicitly in MODEL_VARIANTS"
    for points in (task.points, 1):
        prompt = task.sample(3, make_generator(1, "eval"), points=points)
        preds = model(prompt.xs, prompt.ys)
        assert preds.shape == prompt.target.shape and preds.dtype == torch.float32
        layers = model.layer_predictions(prompt.xs, prompt.ys)
        assert len(layers) == depth
        assert all(p.shape == prompt.target.shape and torch.isfinite(p).all() for p in layers)
        torch.testing.assert_close(layers[-1], preds)
        torch.testing.assert_close(model.last_prediction(prompt.xs, prompt.ys), preds[:, -1])
        as_double = model.predict(prompt.xs.double(), prompt.ys.double())  # a Predictor answers like its input
        assert as_double.dtype == torch.float64 and as_double.shape == preds.shape


@pytest.mark.parametrize("name, params, task_case", MODEL_CASES, ids=MODEL_IDS)
def test_model_in_float64_agrees_with_float32(name, params, task_case):
    model, task = _model(name, params, task_case)
    prompt = task.sample(3, make_generator(2, "eval"), dtype=torch.float64)
    single = model.predict(prompt.xs.float(), prompt.ys.float())
    model = model.double().eval()
    doubles = model.layer_predictions(prompt.xs, prompt.ys)
    assert all(p.dtype == torch.float64 and torch.isfinite(p).all() for p in doubles)
    torch.testing.assert_close(doubles[-1].float(), single, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name, params, task_case", MODEL_CASES, ids=MODEL_IDS)
def test_model_does_not_peek_and_reads_its_context(name, params, task_case, dtype, device):
    model, task = _model(name, params, task_case)
    model = model.to(device=device, dtype=dtype)
    prompt = task.sample(3, make_generator(3, "eval", device=device), dtype=torch.float64)
    atol = 1e-6 if dtype == torch.float32 else 1e-12
    assert_no_peek(model, prompt.xs, prompt.ys, atol=atol)
    if dtype != torch.float64 or not model.reads_context:  # a plain network predicts from the query alone
        return
    # a positive control: the predictions after the first point depend on it, far beyond that tolerance
    # (in float64: at GPT-2 initialisation a looped linear block reads its context only at the 1e-5 level)
    xs, ys = prompt.xs.clone(), prompt.ys.clone()
    xs[:, 0] += 10.0  # the size of assert_no_peek's changes
    ys[:, 0] += 10.0
    change = model.predict(xs, ys) - model.predict(prompt.xs, prompt.ys)
    assert change[:, 1:].abs().max() > 100 * atol


MODEL_FIELD_CASES = [(name, field.name, value) for name, cls in MODELS.items()
                     for field in dataclasses.fields(cls.Config) for value in _invalid_values(field.type)]


@pytest.mark.parametrize("name, field, value", MODEL_FIELD_CASES,
                         ids=[f"{n}-{f}={v!r}" for n, f, v in MODEL_FIELD_CASES])
def test_model_invalid_config_values_name_themselves(name, field, value):
    with pytest.raises(ValueError, match=field):
        build_model(name, 3, 5, **{field: value})


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("arguments, keywords, named", [((0, 5), {}, "dim"), ((4.0, 5), {}, "dim"),
                                                        ((3, 0), {}, "points"), ((3, 5), {"target_dim": 0},
                                                                                 "target_dim")])
def test_model_invalid_sizes_name_themselves(name, arguments, keywords, named):
    with pytest.raises(ValueError, match=named):
        build_model(name, *arguments, **keywords)


# == resuming a training run ===========================================================================

def _resume_config(name: str, device: str = "cpu") -> TrainConfig:
    """20 steps of a small ``name`` (dropout on where the family has it), checkpoints every 10."""
    params = dict(MODEL_VARIANTS.get(name, [{}])[0])
    if "dropout" in {field.name for field in dataclasses.fields(MODELS[name].Config)}:
        params["dropout"] = 0.1
    task, task_params = MODEL_TASKS.get(name, MODEL_REGRESSION)
    return TrainConfig(task=task, task_params={**task_params, "dim": 3, "points": 6}, model=name,
                       model_params=params, steps=20, batch_size=16, lr=1e-2, lr_schedule="cosine", warmup_steps=3,
                       loss_on="all", device=device, log_every=5, checkpoint_every=10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_resume_after_ctrl_c_is_bit_identical(tmp_path, name, device):
    config = _resume_config(name, device)
    reference = parameters(train(config, tmp_path / "straight", progress=False))
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "resumed", progress=False, log_extra=stop_at(15, KeyboardInterrupt()))
    resumed = parameters(train(config, tmp_path / "resumed", resume=True, progress=False))
    assert_identical(reference, resumed)
    assert [r["step"] for r in read_metrics(tmp_path / "resumed")] == [5, 10, 15, 20]
    assert read_metrics(tmp_path / "resumed") == read_metrics(tmp_path / "straight")


# == reproductions ====================================================================================

CHECK_FIELDS = {"quantity", "expected", "measured", "tolerance", "relation", "standard_error", "source", "passed",
                "kind", "claim", "per_seed", "every_seed", "deferred", "verdict", "mean", "ci", "seeds_held",
                "decided_at", "convergence", "outcome", "models_converged", "vacuous"}


@pytest.mark.parametrize("name", list(REPRODUCTIONS))
def test_reproduction_declares_every_scale_and_long_where_a_claim_is_decided_there(name):
    entry = REPRODUCTIONS[name]
    decided_at_long = any(claim.decided_at == "long" for claim in entry.claims)
    expected = set(SCALES) if decided_at_long else set(SCALES) - {"long"}
    assert set(entry.scales) == expected
    assert (entry.long_minutes is not None) == decided_at_long


def test_cli_offers_every_scale():
    scale = next(param for param in cli.commands["repro"].get_command(None, "run").params if param.name == "scale")
    assert list(scale.type.choices) == list(SCALES)


@pytest.mark.parametrize("name", list(REPRODUCTIONS))
def test_reproduction_declares_claims_with_sources(name):
    claims = REPRODUCTIONS[name].claims
    assert claims, f"{name} declares no claims"
    for claim in claims:
        assert claim.id and claim.statement and claim.source, claim
        assert claim.decided_at in ("quick", "long", "full"), claim
        # a claim decided above quick says why with a measured number; one decided at quick needs no reason
        assert (claim.decided_at == "quick") == (not claim.reason), claim


@pytest.mark.parametrize("name", list(REPRODUCTIONS))
def test_reproduction_pipeline_and_untrained_control_at_smoke_scale(tmp_path, name):
    """Smoke scale trains for a few steps: the verdicts need not be good, but every file and number must be
    there, every declared claim tested by a claim check, and the untrained control measured the same way."""
    reproduction = REPRODUCTIONS[name]
    checks = run_reproduction(name, "smoke", tmp_path, device="cpu", progress=False)
    control = run_reproduction(name, "smoke", tmp_path, device="cpu", progress=False, control="untrained")
    names = list(reproduction.runs(reproduction.scales["smoke"]))
    # every claim keeps a check that is not a sanity check: its evidence
    assert {check.claim for check in checks if check.kind == "claim"} == {claim.id for claim in reproduction.claims}
    assert [check.quantity for check in control] == [check.quantity for check in checks]
    for file, listed in (("checks.json", checks), ("control.json", control)):
        saved = json.loads((tmp_path / file).read_text())
        assert listed and [row["quantity"] for row in saved] == [check.quantity for check in listed]
        for row in saved:
            assert set(row) == CHECK_FIELDS
            assert math.isfinite(row["measured"]) or file == "control.json", row  # untrained: may never get there
            assert row["relation"] in ("close", "at_most", "at_least") and isinstance(row["passed"], bool)
            if row["kind"] == "claim":
                assert row["decided_at"] == reproduction.claim(row["claim"]).decided_at
                # smoke decides no claim; the control judges every claim whatever its scale
                assert row["verdict"] == ("deferred" if file == "checks.json" else row["outcome"])
                assert row["outcome"] in ("held", "failed", "inconclusive") and len(row["per_seed"]) == 1
                assert row["vacuous"] == (not all(math.isfinite(value) for value in row["per_seed"]))
                # every training run the claim rests on reports its convergence; the untrained models none
                rested_on = sum(map(reproduction.claim(row["claim"]).rests_on, names))
                assert row["models_converged"][1] == (rested_on if file == "checks.json" else 0), row
            else:
                assert row["kind"] == "sanity" and row["claim"] is None and row["verdict"] in ("passed", "failed")
    assert json.loads((tmp_path / "results.json").read_text())
    assert (tmp_path / "figure.png").stat().st_size > 0
