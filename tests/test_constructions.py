"""Hand-built LSA weights are GD: layer ℓ of the constructed model = ℓ steps of preconditioned GD."""
import numpy as np
import pytest
import torch

from icl_sim.models import build_model, constructed_lsa
from icl_sim.theory import GD, GDPlusPlus, PreconditionedGD
from icl_sim.theory.constructions import gd_lsa_weights, gd_plus_plus_lsa_weights


def reference_gd_predictions(xs, ys, steps, lr, preconditioner):
    """Literal preconditioned GD in numpy, one prompt and one prefix at a time: (steps, B, N)."""
    xs, ys = np.asarray(xs), np.asarray(ys)
    batch, points, dim = xs.shape
    out = np.zeros((steps, batch, points))
    for b in range(batch):
        for i in range(points):
            X, y, w = xs[b, :i], ys[b, :i], np.zeros(dim)
            for step in range(steps):
                gradient = X.T @ (X @ w - y) / max(i, 1)
                w = w - lr * preconditioner @ gradient
                out[step, b, i] = xs[b, i] @ w
    return out


def random_spd(dim, generator):
    root = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
    return root @ root.T / dim + 0.3 * torch.eye(dim, dtype=torch.float64)


@pytest.mark.parametrize("steps", [1, 2, 4])
@pytest.mark.parametrize("precondition", [False, True])
def test_layers_are_gd_steps(steps, precondition):
    generator = torch.Generator().manual_seed(10 * steps + precondition)
    dim, points, lr = 5, 9, 0.4  # positions i < 5 are n < d prefixes
    xs = torch.randn(4, points, dim, generator=generator, dtype=torch.float64)
    ys = torch.randn(4, points, generator=generator, dtype=torch.float64)
    matrix = random_spd(dim, generator) if precondition else None
    model = constructed_lsa(dim, points, steps, lr, matrix)
    reference_matrix = np.eye(dim) if matrix is None else matrix.numpy()
    expected = reference_gd_predictions(xs, ys, steps, lr, reference_matrix)
    with torch.no_grad():
        layers = model.layer_predictions(xs, ys)
    assert len(layers) == steps
    for layer, preds in enumerate(layers):
        np.testing.assert_allclose(preds.numpy(), expected[layer], atol=1e-10, rtol=0)
    assert abs(expected[-1]).max() > 0.1  # not a vacuous comparison


def test_one_layer_identity_is_gd_baseline():
    generator = torch.Generator().manual_seed(3)
    xs = torch.randn(3, 8, 6, generator=generator, dtype=torch.float64)
    ys = torch.randn(3, 8, generator=generator, dtype=torch.float64)
    model = constructed_lsa(6, 8, 1, 0.7)
    torch.testing.assert_close(model.predict(xs, ys), GD(1, 0.7).predict(xs, ys), atol=1e-12, rtol=1e-12)


def test_multi_layer_identity_is_gd_baseline():
    generator = torch.Generator().manual_seed(4)
    xs = torch.randn(3, 8, 3, generator=generator, dtype=torch.float64)
    ys = torch.randn(3, 8, generator=generator, dtype=torch.float64)
    layers = constructed_lsa(3, 8, 3, 0.5).layer_predictions(xs, ys)
    for steps, preds in enumerate(layers, start=1):
        torch.testing.assert_close(preds.detach(), GD(steps, 0.5).predict(xs, ys), atol=1e-12, rtol=1e-12)


def test_weights_shapes_and_dtype():
    weights = gd_lsa_weights(4, 3, 0.1)
    assert set(weights) == {"value", "key_query"}
    for tensor in weights.values():
        assert tensor.shape == (3, 1, 5, 5) and tensor.dtype == torch.float64
    assert weights["value"][:, 0, 4, 4].eq(-0.1).all()
    assert weights["value"].count_nonzero() == 3


@pytest.mark.parametrize("kwargs", [dict(dim=0, steps=1, lr=0.1), dict(dim=2, steps=0, lr=0.1),
                                    dict(dim=2, steps=1, lr=float("nan")),
                                    dict(dim=2, steps=1, lr=0.1, preconditioner=torch.eye(3))])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        gd_lsa_weights(**kwargs)


@pytest.mark.parametrize("layers", [1, 3])
def test_constructed_lsa_equals_the_preconditioned_gd_baseline(layers):
    """Two independent implementations: the loaded LSA weights and PreconditionedGD, any (non-symmetric) P."""
    generator = torch.Generator().manual_seed(layers)
    dim, points = 4, 12
    preconditioner = torch.eye(dim, dtype=torch.float64) + 0.3 * torch.randn(dim, dim, generator=generator,
                                                                           dtype=torch.float64)
    xs = torch.randn(5, points, dim, generator=generator, dtype=torch.float64)
    ys = torch.randn(5, points, generator=generator, dtype=torch.float64)
    model = constructed_lsa(dim, points, layers, 0.4, preconditioner)
    expected = PreconditionedGD(layers, 0.4, preconditioner).predict(xs, ys)
    torch.testing.assert_close(model.predict(xs, ys), expected, atol=1e-10, rtol=0)


@pytest.mark.parametrize("gamma", [0.0, 0.25])
def test_gd_plus_plus_weights_are_the_gd_plus_plus_baseline(gamma):
    """An LSA loaded with ``gd_plus_plus_lsa_weights`` predicts as ``GDPlusPlus`` (tested against a literal token
    loop in test_algorithms.py) at every layer; γ = 0 is plain GD."""
    generator = torch.Generator().manual_seed(7)
    dim, points, steps = 4, 12, 3
    xs = torch.randn(5, points, dim, generator=generator, dtype=torch.float64)
    ys = torch.randn(5, points, generator=generator, dtype=torch.float64)
    weights = gd_plus_plus_lsa_weights(dim, steps, 0.4, gamma)
    model = build_model("lsa", dim, points, layers=steps).double()
    with torch.no_grad():
        model.value.copy_(weights["value"])
        model.key_query.copy_(weights["key_query"])
    for layer, prediction in enumerate(model.layer_predictions(xs, ys), start=1):
        torch.testing.assert_close(prediction, GDPlusPlus(layer, 0.4, gamma).predict(xs, ys), atol=1e-10, rtol=1e-10)
    if gamma == 0.0:
        torch.testing.assert_close(model.predict(xs, ys), GD(steps, 0.4).predict(xs, ys), atol=1e-10, rtol=1e-10)
