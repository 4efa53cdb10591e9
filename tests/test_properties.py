"""Property tests (hypothesis) over the public API: random shapes, dtypes and parameter values.

What holds for every draw:

* a call either works (the documented shape and dtype) or raises a one-line ``ValueError`` that
  names the offending parameter: baselines, tasks and their ``sample``, models and their
  ``predict``, ``evaluate``;
* every prefix predictor of ``icl_sim.theory`` (each concrete ``Baseline``) does not peek at later
  points, and permuting the context before position i leaves the prediction at i unchanged unless
  the class declares itself order-dependent by design (then a witness shows the dependence);
* the iterative baselines reach OLS at the rate their theory gives: GD's error contracts by
  ρ = max |1 − lr·λ(Ĝ_i)| per step, Newton's by e ↦ e² from e₀ = max |1 − αλ²|, and ridge is within
  λ/(λ_min(G_i) + λ) of OLS (relative, in weights);
* OLS from float32 inputs agrees with float64 within the least-squares perturbation bound
  (Golub & Van Loan, Thm. 5.3.1) of the prefix's condition number.

Fixed-example references (numpy loops per prefix, the contract suite's fixed prompts) live in
tests/test_baselines.py, tests/test_algorithms.py and tests/test_contracts.py; this file adds the
random coverage.  Prompts are drawn from a seeded torch generator whose seed and sizes hypothesis
chooses, so every example is reproducible from its printed draw; the draws are the same on every run
(the "ci" profile of tests/conftest.py; HYPOTHESIS_PROFILE=explore draws new ones).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil

import numpy as np
import pytest
import torch
from contract import assert_no_peek
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import icl_sim.theory
from icl_sim.evaluation import evaluate
from icl_sim.models import MODELS, build_model
from icl_sim.seeding import make_generator
from icl_sim.tasks import TASKS, make_task
from icl_sim.theory import (GD, KNN, OLS, Averaging, DiscreteMMSE, GDPlusPlus, Lasso, NetworkGD, Newton, PowerMethod,
                            PreconditionedGD, RecursiveLeastSquares, Ridge, StepwiseGD, StepwiseGDPlusPlus,
                            StepwisePreconditionedGD, Zero)
from icl_sim.theory.baselines import Baseline
from icl_sim.theory.boolean_learners import (ConjunctionElimination, DisjunctionElimination, HammingKNN,
                                             LogisticGD, MajorityLabel, ParityElimination)
from icl_sim.theory.graph_algorithms import BFSReachability, DegreeHeuristic, ReachabilityRounds
from icl_sim.theory.normalized_gd import ExponentialNGD
from icl_sim.theory.sequence_baselines import OneStepGD, TopEigenvector, VectorOLS

FLOATS = [torch.float32, torch.float64]
#: bounded runs: the whole file stays well under a minute on two cores
FEW = settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(FEW, max_examples=25)

# == prompts ===========================================================================================

SEEDS = st.integers(0, 2 ** 31 - 1)


def gaussian(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def linear_prompt(seed: int, batch: int, points: int, dim: int, noise: float = 0.1):
    """Gaussian xs (B, N, d) and y = wᵀx + noise, float64."""
    xs, w = gaussian(seed, batch, points, dim), gaussian(seed + 1, batch, dim, 1)
    return xs, (xs @ w).squeeze(-1) + noise * gaussian(seed + 2, batch, points)


def graph_prompt(seed: int, batch: int, nodes: int):
    """Random adjacency rows as node tokens and a one-hot (s, t) query token: xs (B, n + 1, 2n)."""
    generator = torch.Generator().manual_seed(seed)
    adjacency = (torch.rand(batch, nodes, nodes, generator=generator) < 0.3).double()
    ends = torch.randint(nodes, (batch, 2), generator=generator)
    query = torch.cat([torch.nn.functional.one_hot(ends[:, 0], nodes), torch.nn.functional.one_hot(ends[:, 1], nodes)],
                      dim=-1).double()
    xs = torch.cat([torch.nn.functional.pad(adjacency, (0, nodes)), query[:, None]], dim=1)
    return xs, torch.zeros(batch, nodes + 1, dtype=torch.float64)


@st.composite
def prompts(draw, kind: str, dim: int | None = None, min_points: int = 1):
    """(xs, ys) of a prompt kind, float64: "scalar" labels, "vector" labels (B, N, k), "points" (labels (B, N, d),
    as the PCA task's directions) or "graph" tokens."""
    seed, batch = draw(SEEDS), draw(st.integers(1, 3))
    if kind == "graph":
        return graph_prompt(seed, batch, draw(st.integers(2, 5)))
    points, dim = draw(st.integers(min_points, 9)), dim or draw(st.integers(1, 5))
    xs, ys = linear_prompt(seed, batch, points, dim)
    if kind in ("vector", "points"):  # a points-only predictor's output, (B, N, d), has the shape of its labels
        ys = gaussian(seed + 3, batch, points, dim if kind == "points" else draw(st.integers(1, 3)))
    if draw(st.booleans()):  # the ±1 inputs and labels of the Boolean tasks: ties everywhere
        return torch.where(xs > 0, 1.0, -1.0).double(), torch.where(ys > 0, 1.0, -1.0).double()
    scale = draw(st.sampled_from([1e-3, 1.0]))  # larger data need smaller steps: GD++'s transform would overflow
    return scale * xs, scale * ys


# == every prefix predictor in icl_sim.theory ============================================================

def _theory_baselines() -> set[type]:
    """Every concrete ``Baseline`` subclass defined in a module of ``icl_sim.theory``."""
    for module in pkgutil.walk_packages(icl_sim.theory.__path__, "icl_sim.theory."):
        importlib.import_module(module.name)
    found, pending = set(), [Baseline]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if not inspect.isabstract(subclass) and subclass.__module__.startswith("icl_sim.theory."):
                found.add(subclass)
    return found


STEP = st.floats(0.01, 1.0)
CORRECTION = st.floats(-0.5, 0.5)


def _matrices(dim: int, *leading: int):
    return SEEDS.map(lambda seed: 0.3 * gaussian(seed, *leading, dim, dim) + torch.eye(dim, dtype=torch.float64) / dim)


def _stepwise_gd_plus_plus():
    return st.integers(0, 4).flatmap(lambda k: st.builds(StepwiseGDPlusPlus, st.lists(STEP, min_size=k, max_size=k),
                                                         st.lists(CORRECTION, min_size=k, max_size=k)))


#: per class: the prompt kind it reads, and a strategy of valid instances for inputs of dimension d
EXAMPLES = {
    OLS: ("scalar", lambda d: st.just(OLS())),
    Ridge: ("scalar", lambda d: st.builds(Ridge, st.floats(1e-3, 10.0))),
    GD: ("scalar", lambda d: st.builds(GD, st.integers(0, 8), STEP)),
    StepwiseGD: ("scalar", lambda d: st.builds(StepwiseGD, st.lists(STEP, max_size=4))),
    Averaging: ("scalar", lambda d: st.just(Averaging())),
    KNN: ("scalar", lambda d: st.builds(KNN, st.integers(1, 5))),
    Zero: ("scalar", lambda d: st.just(Zero())),
    PreconditionedGD: ("scalar", lambda d: st.builds(PreconditionedGD, st.integers(0, 6), STEP, _matrices(d))),
    StepwisePreconditionedGD: ("scalar", lambda d: st.integers(1, 4).flatmap(
        lambda k: st.builds(StepwisePreconditionedGD, _matrices(d, k)))),
    GDPlusPlus: ("scalar", lambda d: st.builds(GDPlusPlus, st.integers(0, 6), STEP, CORRECTION)),
    StepwiseGDPlusPlus: ("scalar", lambda d: _stepwise_gd_plus_plus()),
    Newton: ("scalar", lambda d: st.builds(Newton, st.integers(0, 12), st.floats(0.1, 2.0))),
    RecursiveLeastSquares: ("scalar", lambda d: st.builds(RecursiveLeastSquares, st.floats(1e-2, 10.0))),
    DiscreteMMSE: ("scalar", lambda d: st.builds(DiscreteMMSE, st.integers(1, 5).flatmap(
        lambda m: SEEDS.map(lambda seed: gaussian(seed, m, d))), st.floats(0.1, 2.0))),
    LogisticGD: ("scalar", lambda d: st.builds(LogisticGD, st.integers(0, 6), STEP)),
    ExponentialNGD: ("scalar", lambda d: st.builds(ExponentialNGD, st.integers(0, 6), STEP, st.floats(0.0, 2.0))),
    ConjunctionElimination: ("scalar", lambda d: st.just(ConjunctionElimination())),
    DisjunctionElimination: ("scalar", lambda d: st.just(DisjunctionElimination())),
    ParityElimination: ("scalar", lambda d: st.just(ParityElimination())),
    HammingKNN: ("scalar", lambda d: st.builds(HammingKNN, st.integers(1, 5))),
    MajorityLabel: ("scalar", lambda d: st.just(MajorityLabel())),
    PowerMethod: ("points", lambda d: st.builds(PowerMethod, st.integers(0, 8))),
    TopEigenvector: ("points", lambda d: st.just(TopEigenvector())),
    OneStepGD: ("vector", lambda d: st.builds(OneStepGD, STEP)),
    VectorOLS: ("vector", lambda d: st.just(VectorOLS())),
    BFSReachability: ("graph", lambda d: st.just(BFSReachability())),
    ReachabilityRounds: ("graph", lambda d: st.builds(ReachabilityRounds, st.integers(0, 3), st.sampled_from([2, 3]))),
    DegreeHeuristic: ("graph", lambda d: st.just(DegreeHeuristic())),
    Lasso: ("scalar", lambda d: st.builds(Lasso, st.floats(1e-3, 1.0), st.integers(1, 50))),
    NetworkGD: ("scalar", lambda d: st.builds(NetworkGD, st.integers(1, 3), st.integers(2, 5), st.integers(0, 5),
                                              st.floats(1e-3, 0.1))),
}
CLASSES = sorted(EXAMPLES, key=lambda cls: cls.__name__)


def test_every_theory_baseline_has_an_example():
    assert {cls.__name__ for cls in _theory_baselines()} == {cls.__name__ for cls in EXAMPLES}


@st.composite
def predictor_and_prompt(draw, cls: type, min_points: int = 1):
    kind, example = EXAMPLES[cls]
    xs, ys = draw(prompts(kind, min_points=min_points))
    return draw(example(xs.shape[-1])), xs, ys


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@FEW
@given(data=st.data())
def test_baseline_predicts_any_valid_prompt_in_float64(cls, data):
    predictor, xs, ys = data.draw(predictor_and_prompt(cls))
    dtype = data.draw(st.sampled_from(FLOATS))
    preds = predictor.predict(xs.to(dtype), ys.to(dtype))
    assert preds.shape == ys.shape and preds.dtype == torch.float64
    assert bool(torch.isfinite(preds).all())


#: prompts that fit no predictor: each corruption names the argument it breaks
CORRUPTIONS = {
    "ys one point short": (lambda xs, ys: (xs, ys[:, :-1]), "ys"),
    "xs without a batch": (lambda xs, ys: (xs[0], ys[0]), "xs"),
    "ys with 4 dimensions": (lambda xs, ys: (xs, ys.reshape(*ys.shape[:2], -1)[..., None, :]), "ys"),
    "no points": (lambda xs, ys: (xs[:, :0], ys[:, :0]), "xs"),
    "NaN in xs": (lambda xs, ys: (xs.index_fill(1, torch.tensor([0]), math.nan), ys), "xs"),
    "xs a nested list": (lambda xs, ys: (xs.tolist(), ys), "xs"),
}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@FEW
@given(data=st.data(), corruption=st.sampled_from(sorted(CORRUPTIONS)))
def test_baseline_rejects_a_broken_prompt_by_name(cls, data, corruption):
    predictor, xs, ys = data.draw(predictor_and_prompt(cls))
    corrupt, named = CORRUPTIONS[corruption]
    bad_xs, bad_ys = corrupt(xs, ys)
    if EXAMPLES[cls][0] == "points" and named == "ys":
        assert predictor.predict(bad_xs, bad_ys).shape == xs.shape  # it reads the points alone
        return
    with pytest.raises(ValueError, match=named) as error:
        predictor.predict(bad_xs, bad_ys)
    assert "\n" not in str(error.value)


#: values no hyper-parameter should have to fear: each either works or is refused by name
WILD = st.one_of(st.integers(-3, 12), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                 st.text(max_size=3), st.lists(st.floats(-2.0, 2.0), max_size=3))


@pytest.mark.parametrize("cls", [cls for cls in CLASSES if len(inspect.signature(cls).parameters)],
                         ids=lambda cls: cls.__name__)
@SOME
@given(data=st.data(), value=WILD)
def test_baseline_hyper_parameters_work_or_are_refused_by_name(cls, data, value):
    predictor, xs, ys = data.draw(predictor_and_prompt(cls))
    names = list(inspect.signature(cls).parameters)
    name = data.draw(st.sampled_from(names))
    arguments = {key: getattr(predictor, key) for key in names}
    try:
        changed = cls(**{**arguments, name: value})
    except ValueError as error:
        assert name in str(error) and "\n" not in str(error), error
        return
    with np.errstate(all="ignore"):
        preds = changed.predict(xs, ys)  # a huge but finite step may overflow: the shape is the contract
    assert preds.shape == ys.shape


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@FEW
@given(data=st.data())
def test_baseline_does_not_peek(cls, data):
    predictor, xs, ys = data.draw(predictor_and_prompt(cls))
    assert_no_peek(predictor, xs, ys, atol=1e-9)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
@FEW
@given(data=st.data())
def test_permuting_the_context_leaves_the_prediction(cls, data):
    if not cls.order_invariant:
        pytest.skip(f"{cls.__name__} is order-dependent by design (test_order_dependence_is_real)")
    predictor, xs, ys = data.draw(predictor_and_prompt(cls, min_points=2))
    position = data.draw(st.integers(1, xs.shape[1] - 1))
    order = torch.cat([torch.randperm(position, generator=torch.Generator().manual_seed(data.draw(SEEDS))),
                       torch.arange(position, xs.shape[1])])
    reference = predictor.predict(xs, ys)[:, position]
    permuted = predictor.predict(xs[:, order], ys[:, order])[:, position]
    # sums and factorisations in another order: rounding of a well-conditioned float64 computation
    torch.testing.assert_close(permuted, reference, rtol=1e-7, atol=1e-9)


def _witness_tie(predictor):
    """Two context points as near to the query as each other (Euclidean and Hamming), labels ±1: k = 1 takes the
    earlier."""
    def witness():
        xs = torch.tensor([[[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]]], dtype=torch.float64)
        return predictor, xs, torch.tensor([[1.0, -1.0, 0.0]], dtype=torch.float64), 2
    return witness


def _witness_parity():
    """The same point labelled +1 then −1: the contradicting (later) example is ignored."""
    xs = torch.ones(1, 3, 1, dtype=torch.float64)
    return ParityElimination(), xs, torch.tensor([[1.0, -1.0, 0.0]], dtype=torch.float64), 2


def _witness_graph(predictor):
    """Edge 0 → 1 and the query (0, 1): swapping node tokens 0 and 2 asks about a graph without that edge."""
    def witness():
        xs = torch.zeros(1, 4, 6, dtype=torch.float64)
        xs[0, 0, 1] = 1.0
        xs[0, 3, 0] = xs[0, 3, 4] = 1.0
        return predictor, xs, torch.zeros(1, 4, dtype=torch.float64), 3
    return witness


#: the classes that declare themselves order-dependent, each with a prompt whose context order matters
ORDER_WITNESSES = {KNN: _witness_tie(KNN(1)), HammingKNN: _witness_tie(HammingKNN(1)),
                   ParityElimination: _witness_parity, BFSReachability: _witness_graph(BFSReachability()),
                   ReachabilityRounds: _witness_graph(ReachabilityRounds(1)),
                   DegreeHeuristic: _witness_graph(DegreeHeuristic())}


def test_order_dependent_classes_are_the_declared_ones():
    assert {cls for cls in _theory_baselines() if not cls.order_invariant} == set(ORDER_WITNESSES)


@pytest.mark.parametrize("cls", list(ORDER_WITNESSES), ids=lambda cls: cls.__name__)
def test_order_dependence_is_real(cls):
    """What the declaration claims: reversing the context before the witness position changes its prediction."""
    predictor, xs, ys, position = ORDER_WITNESSES[cls]()
    declaring = next(base for base in cls.__mro__ if "order_invariant" in vars(base))
    assert "order-dependent by design" in inspect.getdoc(declaring).replace("\n", " ").lower()
    reversed_order = torch.cat([torch.arange(position).flip(0), torch.arange(position, xs.shape[1])])
    before = predictor.predict(xs, ys)[:, position]
    after = predictor.predict(xs[:, reversed_order], ys[:, reversed_order])[:, position]
    assert not torch.equal(before, after)


# == the iterative baselines reach OLS at their theoretical rates ======================================

@st.composite
def well_conditioned(draw):
    """Linear prompts with N ≥ 6d points; positions i ≥ 2d, where Ĝ_i is invertible (and its κ moderate)."""
    dim = draw(st.integers(1, 4))
    xs, ys = linear_prompt(draw(SEEDS), draw(st.integers(1, 2)), draw(st.integers(6 * dim, 6 * dim + 6)), dim)
    return xs, ys, range(2 * dim, xs.shape[1])


def prefix_spectrum_and_solution(xs, ys, b, i):
    """Independent reference (numpy): eigenvalues of G_i = X_{<i}ᵀX_{<i} and w* = lstsq(X_{<i}, y_{<i})."""
    design, targets = xs[b, :i].numpy(), ys[b, :i].numpy()
    return np.linalg.eigvalsh(design.T @ design), np.linalg.lstsq(design, targets, rcond=None)[0]


#: rounding of the float64 iterations and of OLS, relative to ‖x_i‖‖w*‖, far below the rates asserted
ROUNDING = 1e-9


@SOME
@given(prompt=well_conditioned(), steps=st.integers(1, 400), fraction=st.floats(0.05, 1.0))
def test_gd_approaches_ols_at_its_contraction_factor(prompt, steps, fraction):
    """w_k − w* = −(I − lr Ĝ_i)^k w*, so |x_iᵀ(w_k − w*)| ≤ ‖x_i‖‖w*‖ ρ^k with ρ = max|1 − lr λ(Ĝ_i)| < 1 for
    lr = fraction/λ_max: GD → OLS as steps → ∞ at a small enough step."""
    xs, ys, positions = prompt
    largest = max(float(prefix_spectrum_and_solution(xs, ys, b, i)[0][-1]) / i
                  for b in range(xs.shape[0]) for i in positions)
    lr = fraction / largest
    gaps = (GD(steps, lr).predict(xs, ys) - OLS().predict(xs, ys)).abs()
    for b in range(xs.shape[0]):
        for i in positions:
            spectrum, solution = prefix_spectrum_and_solution(xs, ys, b, i)
            rate = np.abs(1 - lr * spectrum / i).max()
            assert rate < 1
            scale = float(xs[b, i].norm()) * np.linalg.norm(solution)
            assert float(gaps[b, i]) <= scale * (rate ** steps + ROUNDING), (b, i, rate)


@SOME
@given(prompt=well_conditioned(), lam=st.floats(1e-10, 1e2))
def test_ridge_approaches_ols_as_lambda_vanishes(prompt, lam):
    """w_λ − w* = −λ (G_i + λI)⁻¹ w*, so |x_iᵀ(w_λ − w*)| ≤ ‖x_i‖‖w*‖ λ/(λ_min(G_i) + λ)."""
    xs, ys, positions = prompt
    gaps = (Ridge(lam).predict(xs, ys) - OLS().predict(xs, ys)).abs()
    for b in range(xs.shape[0]):
        for i in positions:
            spectrum, solution = prefix_spectrum_and_solution(xs, ys, b, i)
            scale = float(xs[b, i].norm()) * np.linalg.norm(solution)
            assert float(gaps[b, i]) <= scale * (lam / (spectrum[0] + lam) + ROUNDING)


@SOME
@given(prompt=well_conditioned(), steps=st.integers(0, 12), scale=st.floats(0.2, 1.99))
def test_newton_approaches_ols_quadratically(prompt, steps, scale):
    """Each eigenvalue μ of M_k S follows 1 − μ ← (1 − μ)² from μ₀ = αλ², α = scale/‖SSᵀ‖_F (Fu et al. 2023), so
    |x_iᵀ(w_k − w*)| ≤ ‖x_i‖‖w*‖ e^(2^k) with e = max|1 − αλ²| < 1.  (scale = 2 on a rank-one S, d = 1, has
    e = 1: no convergence, as ``Newton``'s docstring says; so does a scale within rounding of 2, where e as
    computed rounds to 1, hence scale ≤ 1.99.)"""
    xs, ys, positions = prompt
    gaps = (Newton(steps, scale).predict(xs, ys) - OLS().predict(xs, ys)).abs()
    for b in range(xs.shape[0]):
        for i in positions:
            spectrum, solution = prefix_spectrum_and_solution(xs, ys, b, i)
            error = np.abs(1 - scale * spectrum ** 2 / np.sqrt((spectrum ** 4).sum())).max()
            assert error < 1
            bound = error ** (2 ** steps) + ROUNDING
            assert float(gaps[b, i]) <= float(xs[b, i].norm()) * np.linalg.norm(solution) * bound


@SOME
@given(prompt=well_conditioned(), noise=st.floats(0.0, 1.0))
def test_ols_from_float32_agrees_with_float64_within_the_conditioning(prompt, noise):
    """Rounding xs, ys to float32 perturbs them by ε = √d·u₃₂ (normwise, u₃₂ = 2⁻²⁴); least-squares perturbation
    theory (Golub & Van Loan, Thm. 5.3.1) bounds ‖ŵ − w‖/‖w‖ ≤ ε(2κ/cos θ + κ² tan θ) + O(ε²), κ the condition
    number of X_{<i} and sin θ = ‖r‖/‖y_{<i}‖.  The prediction adds x_i's own rounding; a factor 2 covers O(ε²)."""
    xs, noiseless, positions = prompt
    ys = noiseless + noise * gaussian(7, *noiseless.shape)
    single = OLS().predict(xs.float(), ys.float())
    double = OLS().predict(xs, ys)
    unit = 2.0 ** -24
    epsilon = math.sqrt(xs.shape[-1]) * unit
    for b in range(xs.shape[0]):
        for i in positions:
            design, targets = xs[b, :i].numpy(), ys[b, :i].numpy()
            singular = np.linalg.svd(design, compute_uv=False)
            kappa = singular[0] / singular[-1]
            solution = np.linalg.lstsq(design, targets, rcond=None)[0]
            sine = np.linalg.norm(targets - design @ solution) / np.linalg.norm(targets)
            cosine = math.sqrt(max(1 - sine ** 2, 0.0))
            assume(epsilon * kappa < 0.1 and cosine > 0.1)
            relative = 2 * epsilon * (2 * kappa / cosine + kappa ** 2 * sine / cosine)
            bound = float(xs[b, i].norm()) * np.linalg.norm(solution) * (relative + unit * (1 + relative))
            assert abs(float(single[b, i] - double[b, i])) <= bound + 1e-12


# == tasks, models and evaluation: work or name the parameter ==========================================

def _wild_for(annotation: str):
    """Random values for a dataclass field: mostly of its own type (in and out of range), sometimes not."""
    own = {"int": st.integers(-3, 40), "float": st.floats(allow_nan=True, allow_infinity=True),
           "bool": st.booleans(), "str": st.text(max_size=8)}.get(annotation.split(" ")[0].split("|")[0], st.none())
    return st.one_of(own, WILD)


@SOME
@given(data=st.data())
def test_task_parameters_work_or_are_refused_by_name(data):
    name = data.draw(st.sampled_from(sorted(TASKS)))
    fields = {field.name: field for field in dataclasses.fields(TASKS[name])}
    field = data.draw(st.sampled_from(sorted(fields)))
    value = data.draw(_wild_for(str(fields[field].type)))
    try:
        task = make_task(name, **{field: value})
    except ValueError as error:
        assert field in str(error) and "\n" not in str(error), error
        return
    dtype = data.draw(st.sampled_from(FLOATS))
    prompt = task.sample(2, make_generator(0, "eval"), dtype=dtype)
    assert prompt.xs.shape == (2, task.points, task.dim) and prompt.xs.dtype == dtype


SAMPLE_ARGUMENTS = {
    "batch_size": st.one_of(st.integers(-1, 4), st.floats(0.5, 3.0), st.none()),
    "generator": st.sampled_from(["a generator", 0, None, "seed"]),
    "dtype": st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool, "float32", None]),
    "points": st.one_of(st.none(), st.integers(-1, 12), st.floats(1.0, 4.0)),
    "active_dims": st.one_of(st.none(), st.integers(-1, 8)),
}


@SOME
@given(data=st.data())
def test_sample_arguments_work_or_are_refused_by_name(data):
    task = make_task(data.draw(st.sampled_from(sorted(TASKS))))
    changed = data.draw(st.lists(st.sampled_from(sorted(SAMPLE_ARGUMENTS)), min_size=1, max_size=2, unique=True))
    arguments = {"batch_size": 2, "generator": make_generator(1, "eval"), "dtype": torch.float32}
    for name in changed:
        value = data.draw(SAMPLE_ARGUMENTS[name])
        arguments[name] = make_generator(2, "eval") if value == "a generator" else value
    batch_size, generator = arguments.pop("batch_size"), arguments.pop("generator")
    try:
        prompt = task.sample(batch_size, generator, **arguments)
    except ValueError as error:
        assert any(name in str(error) for name in changed) and "\n" not in str(error), (changed, error)
        return
    assert prompt.xs.shape[0] == batch_size and prompt.xs.dtype == arguments["dtype"]


#: small sizes for the families whose defaults are large
#: models built for at least this many points (selection-attention: two tokens and the query)
MIN_POINTS = {"selection-attention": 3}
MODEL_SIZES = {"gpt": dict(n_layer=1, n_embd=8, n_head=1), "looped": dict(n_embd=8, n_head=1, loops=2, loop_window=1)}
#: the models of one scalar label per point (complex-lsa and mesa predict a sequence's next state, a label of the
#: state's size: tests/test_contracts.py checks them on autoregressive prompts)
SCALAR_LABEL_MODELS = sorted(name for name in MODELS if name not in ("complex-lsa", "mesa"))


@SOME
@given(data=st.data())
def test_model_config_values_work_or_are_refused_by_name(data):
    name = data.draw(st.sampled_from(SCALAR_LABEL_MODELS))
    fields = {field.name: field for field in dataclasses.fields(MODELS[name].Config)}
    field = data.draw(st.sampled_from(sorted(fields)))
    value = data.draw(_wild_for(str(fields[field].type)))
    assume(not (field in ("n_embd", "n_layer", "layers", "loops", "width") and isinstance(value, int)
                and value > 12))  # sizes, not validation: large ones only cost time
    try:
        model = build_model(name, 3, 5, **{**MODEL_SIZES.get(name, {}), field: value})
    except ValueError as error:
        assert field in str(error) and "\n" not in str(error), error
        return
    assert model.predict(*linear_prompt(0, 2, 5, 3)).shape == (2, 5)


@SOME
@given(data=st.data(), dtype=st.sampled_from(FLOATS))
def test_model_predict_works_on_fitting_prompts_and_names_the_misfit(data, dtype):
    name = data.draw(st.sampled_from(SCALAR_LABEL_MODELS))
    dim, points = data.draw(st.integers(1, 4)), data.draw(st.integers(MIN_POINTS.get(name, 1), 6))
    model = build_model(name, dim, points, **MODEL_SIZES.get(name, {}))
    batch, count, features = data.draw(st.integers(1, 3)), data.draw(st.integers(1, points)), dim
    label_shape = (batch, count)
    misfit = data.draw(st.sampled_from(["none", "dim", "ys", "no points"]))
    if misfit == "dim":
        features = dim + data.draw(st.integers(1, 2))
    elif misfit == "ys":
        label_shape = (batch, count, 2)
    elif misfit == "no points":
        count, label_shape = 0, (batch, 0)
    xs, ys = torch.randn(batch, count, features, dtype=dtype), torch.randn(*label_shape, dtype=dtype)
    if misfit == "none":
        preds = model.predict(xs, ys)
        assert preds.shape == (batch, count) and preds.dtype == dtype
        return
    with pytest.raises(ValueError, match={"dim": "dim", "ys": "target_dim", "no points": "xs"}[misfit]):
        model.predict(xs, ys)


EVALUATE_ARGUMENTS = {
    "num_prompts": st.integers(-1, 6), "batch_size": st.integers(-1, 4), "seed": st.integers(-2, 3),
    "device": st.sampled_from(["cpu", torch.device("cpu"), "gpu", None]), "points": st.one_of(st.none(),
                                                                                           st.integers(-1, 8)),
    "bootstrap": st.integers(-1, 20), "confidence": st.floats(-0.5, 1.5),
}


@FEW
@given(data=st.data())
def test_evaluate_arguments_work_or_are_refused_by_name(data):
    changed = data.draw(st.lists(st.sampled_from(sorted(EVALUATE_ARGUMENTS)), min_size=1, max_size=2, unique=True))
    arguments = {name: data.draw(EVALUATE_ARGUMENTS[name]) for name in changed}
    task = make_task("linear-regression", dim=3, points=6)
    try:
        records = evaluate({"OLS": OLS()}, task, **{"num_prompts": 4, "bootstrap": 10, **arguments})
    except ValueError as error:
        named = changed + ["resamples" for name in changed if name == "bootstrap"]  # bootstrap_interval's name
        assert any(name in str(error) for name in named) and "\n" not in str(error), (changed, error)
        return
    assert records and all(math.isfinite(record["mean"]) for record in records)
