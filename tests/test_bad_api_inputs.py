"""Bad calls to the public Python API: each raises a one-line ``ValueError`` that names the parameter.

One row per call (issue 13): baselines' hyper-parameters, ``predict`` with prompts that do not fit,
``make_task`` and ``sample``, ``build_model`` and a model's ``predict``, ``evaluate`` and ``probe``.
Constructor arguments of every registered task, model and baseline (NaN, strings, negative counts) are
swept in tests/test_contracts.py; the rows here are the calls that used to fail deep inside torch
(einsum, AttributeError) or were silently accepted.
"""
import math

import pytest
import torch

from icl_sim.evaluation import evaluate
from icl_sim.models import build_model, constructed_lsa
from icl_sim.probing import probe
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.theory import (GD, KNN, OLS, DiscreteMMSE, GDPlusPlus, Newton, PowerMethod, PreconditionedGD, Ridge,
                            StepwiseGD, StepwiseGDPlusPlus)
from icl_sim.theory.boolean_learners import LogisticGD
from icl_sim.theory.graph_algorithms import ReachabilityRounds
from icl_sim.theory.sequence_baselines import OneStepGD
from icl_sim.theory.step_tuning import tune_steps

XS, YS = torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(0)), torch.zeros(2, 6)
REGRESSION = make_task("linear-regression", dim=3, points=6)
OTHER_DIM = make_task("linear-regression", dim=4, points=6)


def lsa():
    return build_model("lsa", 3, 6)


def with_nan(tensor):
    changed = tensor.clone()
    changed[0, 1] = math.nan
    return changed


BAD_CALLS = {
    # baselines: every step size > 0, like Ridge's lam (GD(lr=-1) used to be accepted)
    "GD lr < 0": (lambda: GD(3, -1.0), "lr"),
    "GD lr = 0": (lambda: GD(3, 0.0), "lr"),
    "GD steps float": (lambda: GD(2.0, 0.1), "steps"),
    "PreconditionedGD lr < 0": (lambda: PreconditionedGD(2, -0.5, torch.eye(3)), "lr"),
    "GDPlusPlus lr < 0": (lambda: GDPlusPlus(2, -0.1, 0.1), "lr"),
    "StepwiseGD an infinite step": (lambda: StepwiseGD([0.1, math.inf]), r"step_sizes\[1\]"),
    "StepwiseGD not a sequence": (lambda: StepwiseGD(5), "step_sizes"),
    "StepwiseGDPlusPlus a string": (lambda: StepwiseGDPlusPlus("ab", [0.0, 0.0]), "step_sizes"),
    "OneStepGD lr < 0": (lambda: OneStepGD(-1.0), "lr"),
    "LogisticGD lr = 0": (lambda: LogisticGD(3, 0.0), "lr"),
    "Ridge lam < 0": (lambda: Ridge(-1.0), "lam"),
    "Ridge.bayes_optimal λ past the floats": (lambda: Ridge.bayes_optimal(1e200, 1e-200), "noise / prior_scale"),
    "Ridge.bayes_optimal λ under the floats": (lambda: Ridge.bayes_optimal(1e-200, 1e200), "noise / prior_scale"),
    "Newton scale > 2": (lambda: Newton(3, scale=2.5), "scale"),
    "KNN k = 0": (lambda: KNN(0), "k"),
    "PowerMethod steps < 0": (lambda: PowerMethod(-1), "steps"),
    "DiscreteMMSE noise = 0": (lambda: DiscreteMMSE(torch.zeros(2, 3), 0.0), "noise"),
    "tune_steps NaN in xs": (lambda: tune_steps("gd", with_nan(XS), YS, 2), "xs"),
    "ReachabilityRounds power 2.0": (lambda: ReachabilityRounds(2, 2.0), "power"),
    # a baseline's predict with a prompt that does not fit
    "OLS predict xs a list": (lambda: OLS().predict(XS.tolist(), YS), "xs"),
    "OLS predict ys a list": (lambda: OLS().predict(XS, YS.tolist()), "ys"),
    "OLS predict no points": (lambda: OLS().predict(XS[:, :0], YS[:, :0]), "xs"),
    "OLS predict d = 0": (lambda: OLS().predict(XS[..., :0], YS), "xs"),
    "OLS predict NaN in xs": (lambda: OLS().predict(with_nan(XS), YS), "xs"),
    "OLS predict -inf in xs": (lambda: OLS().predict(XS.index_fill(2, torch.tensor([1]), -math.inf), YS), "xs"),
    "Ridge predict inf in ys": (lambda: Ridge(1.0).predict(XS, YS.index_fill(1, torch.tensor([2]), math.inf)), "ys"),
    "OLS predict complex xs": (lambda: OLS().predict(XS.to(torch.complex64), YS), "xs"),
    "PreconditionedGD predict other d": (lambda: PreconditionedGD(2, 0.1, torch.eye(4)).predict(XS, YS),
                                         "preconditioner"),
    "PowerMethod predict xs (N, d)": (lambda: PowerMethod(2).predict(XS[0]), "xs"),
    # tasks
    "make_task unknown name": (lambda: make_task("linear-regresion"), "task"),
    "make_task unknown parameter": (lambda: make_task("linear-regression", dimension=3), "dimension"),
    "sample with an int for the generator": (lambda: REGRESSION.sample(2, 0), "generator"),
    "sample with None for the generator": (lambda: make_task("boolean").sample(2, None), "generator"),
    "graph sample with a seed for the generator": (lambda: make_task("graph-connectivity").sample(2, 7),
                                                   "generator"),
    "sample an integer dtype": (lambda: REGRESSION.sample(2, torch.Generator(), dtype=torch.int64), "dtype"),
    "sample a dtype by name": (lambda: make_task("pca").sample(2, torch.Generator(), dtype="float64"), "dtype"),
    "sample batch_size 0": (lambda: REGRESSION.sample(0, torch.Generator()), "batch_size"),
    "autoregressive gd_step < 0": (lambda: make_task("autoregressive", gd_step=-1.0), "gd_step"),
    # models
    "build_model unknown name": (lambda: build_model("transformer", 3, 6), "model"),
    "build_model unknown parameter": (lambda: build_model("lsa", 3, 6, depth=2), "depth"),
    "build_model a size twice": (lambda: build_model("lsa", 3, 6, dim=4), "dim"),
    "make_task a parameter called name": (lambda: make_task("pca", name="pca"), "name"),
    "lsa predict other d": (lambda: lsa().predict(torch.randn(2, 6, 4), YS), "dim"),
    "softmax-attention predict other d": (lambda: build_model("softmax-attention", 3, 6).predict(
        torch.randn(2, 6, 4), YS), "dim"),
    "disentangled predict other d": (lambda: build_model("disentangled", 3, 6).predict(torch.randn(2, 6, 4), YS),
                                     "dim"),
    "lsa predict ys shorter than xs": (lambda: lsa().predict(XS, YS[:, :5]), "ys"),
    "deep-linear predict xs (N, d)": (lambda: build_model("deep-linear", 3, 6).predict(XS[0], YS[0]), "xs"),
    "lsa predict vector labels for k = 1": (lambda: lsa().predict(XS, torch.zeros(2, 6, 2)), "target_dim"),
    "looped predict NaN in xs": (lambda: build_model("looped", 3, 6, n_embd=8, n_head=1, loops=2, loop_window=1)
                                 .predict(with_nan(XS), YS), "xs"),
    # evaluation and probing
    "evaluate on a model of another d": (lambda: evaluate({"lsa": lsa()}, OTHER_DIM, num_prompts=4), "dim"),
    "evaluate a non-predictor": (lambda: evaluate({"three": 3}, REGRESSION, num_prompts=4), "predictors"),
    "evaluate a task name": (lambda: evaluate({"OLS": OLS()}, "linear-regression", num_prompts=4), "task"),
    "evaluate on an unknown device": (lambda: evaluate({"OLS": OLS()}, REGRESSION, num_prompts=4, device="gpu"),
                                      "device"),
    "evaluate a negative seed": (lambda: evaluate({"OLS": OLS()}, REGRESSION, num_prompts=4, seed=-1), "seed"),
    "probe a model of another d": (lambda: probe(constructed_lsa(3, 6, 2, 0.5), OTHER_DIM, "gd", num_prompts=8),
                                   "dim"),
    "probe a baseline": (lambda: probe(OLS(), REGRESSION, "gd", num_prompts=8), "model"),
    "probe a task name": (lambda: probe(lsa(), "linear-regression", "gd", num_prompts=8), "task"),
}


@pytest.mark.parametrize("call, named", BAD_CALLS.values(), ids=list(BAD_CALLS))
def test_bad_call_raises_one_line_naming_the_parameter(call, named):
    with pytest.raises(ValueError, match=named) as error:
        call()
    assert "\n" not in str(error.value)


def test_the_calls_differ_from_good_ones_only_in_the_bad_argument():
    """The positive controls: the same calls with the argument put right work."""
    GD(3, 0.1).predict(XS, YS)
    StepwiseGD([0.1, 0.2]).predict(XS, YS)
    REGRESSION.sample(2, make_generator(0, "eval"), dtype=torch.float64)
    make_task("graph-connectivity").sample(2, make_generator(0, "eval"))
    assert lsa().predict(XS, YS).shape == (2, 6)
    assert ReachabilityRounds(2, 2).hops == 4
    records = evaluate({"OLS": OLS()}, REGRESSION, num_prompts=4, bootstrap=10)
    assert {record["predictor"] for record in records} == {"OLS"}
