"""Probe behaviours: the shared-context fast paths equal the straightforward computation in float64."""
import pytest
import torch
from probe_reference import reference_behaviours

from icl_sim.models import build_model
from icl_sim.predictor import replicated_query_predictor
from icl_sim.probe_metrics import CHUNK_PROMPTS, behaviours
from icl_sim.prompt import Prompt
from icl_sim.theory import GD, OLS, GDPlusPlus, StepwiseGD, Newton, StepwisePreconditionedGD, Ridge

DIM, POINTS = 4, 9
MODELS = {
    "gpt": {"size": "tiny"},
    "lsa": {"layers": 3, "heads": 2, "init_scale": 0.3},
    "lsa-diagonal": {"layers": 2, "parameterisation": "diagonal", "init_scale": 0.5},
    "lsa-mlp": {"layers": 2, "mlp": True, "init_scale": 0.3},  # no Γ recursion: the replicating default
    "softmax-attention": {"layers": 2, "heads": 2, "init_scale": 0.3},
}


def model(name: str, target_dim: int = 1):
    torch.manual_seed(0)
    return build_model(name.split("-")[0] if name.startswith("lsa") else name, DIM, POINTS, target_dim,
                       **MODELS[name]).double().eval()


def prompt(batch: int = 6, target_dim: int = 1) -> Prompt:
    generator = torch.Generator().manual_seed(1)
    xs = torch.randn(batch, POINTS, DIM, generator=generator, dtype=torch.float64)
    ys = torch.randn(batch, POINTS, *(target_dim,) * (target_dim > 1), generator=generator, dtype=torch.float64)
    return Prompt(xs, ys)


@pytest.mark.parametrize("name", MODELS)
def test_query_predictor_equals_one_prompt_per_query(name):
    """The override sees the shared context and each query alone: the no-peek contract, query by query."""
    network, data = model(name), prompt()
    queries = torch.randn(6, 5, DIM, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    context = (data.xs[:, :-1], data.ys[:, :-1])
    fast = network.query_predictor(*context)(queries)
    reference = replicated_query_predictor(network.layer_predictions, *context)(queries)
    assert len(fast) == len(reference)
    for ours, theirs in zip(fast, reference):
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["gpt", "lsa", "softmax-attention"])
def test_behaviours_equal_the_straightforward_computation(name):
    """Predictions, sensitivities (one backward pass per layer) and implicit weights on 2d copies of each prompt."""
    network, data = model(name), prompt()
    for ours, theirs in zip(behaviours(network.query_predictor, data, scalar=True),
                            reference_behaviours(network.layer_predictions, data), strict=True):
        for fast, reference in zip((ours.prediction, ours.sensitivity, ours.weights),
                                   (theirs.prediction, theirs.sensitivity, theirs.weights)):
            torch.testing.assert_close(fast, reference, rtol=1e-10, atol=1e-12)


def test_a_linear_attention_layer_is_linear_in_the_query():
    """The LSA's prediction is linear in x_query, so its sensitivity is its implicit weight vector, exactly."""
    for layer in behaviours(model("lsa").query_predictor, prompt(), scalar=True):
        torch.testing.assert_close(layer.sensitivity, layer.weights, rtol=1e-9, atol=1e-12)


def test_vector_labels_and_chunks():
    """Vector labels give predictions only; prompts beyond one chunk give the same rows as alone."""
    network, data = model("lsa", target_dim=2), prompt(batch=CHUNK_PROMPTS + 3, target_dim=2)
    layers = behaviours(network.query_predictor, data, scalar=False)
    for layer, reference in zip(layers, network.layer_predictions(data.xs, data.ys), strict=True):
        assert layer.sensitivity is None and layer.weights is None
        torch.testing.assert_close(layer.prediction, reference[:, -1], rtol=1e-10, atol=1e-12)


def test_gpt_queries_beyond_the_built_points_are_refused():
    network, data = model("gpt"), prompt()
    with pytest.raises(ValueError, match="points"):
        network.query_predictor(data.xs, data.ys)(data.xs[:, :2])


@pytest.mark.parametrize("baseline", [GD(3, 0.4), StepwiseGD([0.2, 0.9]), GDPlusPlus(2, 0.5, 0.2), Newton(4),
                                      StepwisePreconditionedGD(torch.eye(DIM).expand(2, DIM, DIM) * 0.3), OLS(),
                                      Ridge(0.5)], ids=repr)
def test_a_linear_baseline_fits_its_context_once(baseline):
    """A linear baseline's query predictor (the context's weights, times each query) equals one prompt per query,
    and its behaviour equals the straightforward computation: sensitivity and implicit weights are its w.
    The GD family fits the context from its statistics (Ĝ, b̂) alone; OLS and ridge through a query slot."""
    data = prompt()
    queries = torch.randn(6, 5, DIM, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    context = (data.xs[:, :-1], data.ys[:, :-1])
    (fast,) = baseline.query_predictor(*context)(queries)
    (reference,) = replicated_query_predictor(lambda xs, ys: [baseline.predict(xs, ys)], *context)(queries)
    torch.testing.assert_close(fast, reference, rtol=1e-10, atol=1e-12)
    (ours,) = behaviours(baseline.query_predictor, data, scalar=True)
    (theirs,) = reference_behaviours(lambda xs, ys: [baseline.predict(xs, ys)], data)
    weights = baseline.weights(data.xs, data.ys)[:, -1]
    for fast, reference in ((ours.prediction, theirs.prediction), (ours.sensitivity, weights),
                            (ours.weights, weights), (theirs.weights, weights)):
        torch.testing.assert_close(fast, reference, rtol=1e-9, atol=1e-11)
