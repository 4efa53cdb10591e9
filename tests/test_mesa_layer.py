"""The mesa-layer (von Oswald et al. 2023b) against independent references.

* the Sherman–Morrison recursion against a batched ``torch.linalg.solve`` of the regularised normal equations
  (Σ_{i≤t} k_i k_iᵀ + I/λ) X = q_t at every position, and against numpy's least squares on the augmented
  system [K; I/√λ] Φᵀ = [V; 0] (which fixes the regulariser convention ‖Φ‖²/(2λ) independently), in float64;
* a whole model's layer against the same solve on its own projections (and, for the linear and softmax
  attention it is compared with, against attention written out position by position in numpy);
* the constructed layer against numpy ridge regression over the in-context transitions;
* gradients to λ and every projection (``torch.autograd.gradcheck``), causality, bad configurations.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from contract import assert_no_peek
from torch.func import functional_call

from icl_sim.models.mesa import MesaConfig, MesaTransformer, constructed_mesa, mesa_solutions
from icl_sim.seeding import make_generator
from icl_sim.tasks.autoregressive import Autoregressive

LAMBDAS = [0.05, 1.0, 20.0]


def normal_equation_solutions(queries, keys, values, lam):
    """Φ̂_t q_t = (Σ_{i≤t} v_i k_iᵀ)(Σ_{i≤t} k_i k_iᵀ + I/λ)⁻¹ q_t by one batched solve over every position."""
    eye = torch.eye(keys.shape[-1], dtype=keys.dtype)
    grams = torch.cumsum(keys[..., :, None] * keys[..., None, :], dim=-3) + eye / lam[..., None, None, None]
    moments = torch.cumsum(values[..., :, None] * keys[..., None, :], dim=-3)  # Σ v_i k_iᵀ
    return (moments @ torch.linalg.solve(grams, queries[..., None])).squeeze(-1)


def random_heads(seed: int, batch: int = 3, heads: int = 2, points: int = 12, size: int = 4):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, points, size, generator=generator, dtype=torch.float64) for _ in range(3)]


@pytest.mark.parametrize("lam", LAMBDAS)
def test_recursion_equals_the_normal_equations_at_every_position(lam):
    queries, keys, values = random_heads(0)
    lambdas = torch.tensor([lam, 3 * lam], dtype=torch.float64)  # one λ per head
    expected = normal_equation_solutions(queries, keys, values, lambdas)
    torch.testing.assert_close(mesa_solutions(queries, keys, values, lambdas), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_recursion_is_the_ridge_minimiser_of_the_stated_objective(lam):
    """argmin_Φ ½ Σ_{i≤t} ‖v_i − Φ k_i‖² + ‖Φ‖²/(2λ) is ordinary least squares on the rows (k_i, v_i) plus the
    rows (e_j/√λ, 0): numpy's lstsq on that augmented system, one position at a time."""
    queries, keys, values = (tensor[:1, :1] for tensor in random_heads(1, points=9, size=3))
    solved = mesa_solutions(queries, keys, values, torch.tensor(lam, dtype=torch.float64))[0, 0].numpy()
    k, v, q = keys[0, 0].numpy(), values[0, 0].numpy(), queries[0, 0].numpy()
    size = k.shape[1]
    for t in range(k.shape[0]):
        design = np.vstack([k[:t + 1], np.eye(size) / np.sqrt(lam)])
        targets = np.vstack([v[:t + 1], np.zeros((size, size))])
        weights_t = np.linalg.lstsq(design, targets, rcond=None)[0]  # Φᵀ
        np.testing.assert_allclose(solved[t], q[t] @ weights_t, rtol=1e-9, atol=1e-10)


def random_model(seed: int = 0, dim: int = 3, points: int = 10, **config) -> MesaTransformer:
    torch.manual_seed(seed)
    return MesaTransformer(dim, points, MesaConfig(init_scale=0.5, **config), dim).double()


def trajectory(dim: int = 3, points: int = 10, batch: int = 4, seed: int = 0, noise: float = 0.0):
    task = Autoregressive(dim=dim, points=points, transition="orthogonal", noise=noise)
    return task.sample(batch, make_generator(seed, "eval"), dtype=torch.float64)


def loop_attention(q, k, v, softmax: bool):
    """Causal attention written out position by position in numpy: Σ_{i≤t} w_ti v_i with w_ti = q_tᵀk_i, or its
    softmax over i ≤ t with scores q_tᵀk_i/√k."""
    q, k, v = (tensor.numpy() for tensor in (q, k, v))
    out = np.zeros_like(v)
    for b in range(q.shape[0]):
        for t in range(q.shape[1]):
            scores = k[b, :t + 1] @ q[b, t]
            if softmax:
                scores = np.exp(scores / np.sqrt(k.shape[-1]) - (scores / np.sqrt(k.shape[-1])).max())
                scores /= scores.sum()
            out[b, t] = scores @ v[b, :t + 1]
    return torch.from_numpy(out)


HEAD_REFERENCES = {
    "mesa": lambda model, head, q, k, v: normal_equation_solutions(q, k, v, model.lambdas()[0, head]),
    "linear": lambda model, head, q, k, v: loop_attention(q, k, v, softmax=False),
    "softmax": lambda model, head, q, k, v: loop_attention(q, k, v, softmax=True),
}


@pytest.mark.parametrize("attention", list(HEAD_REFERENCES))
def test_model_layer_is_the_reference_on_its_own_projections(attention):
    """One layer, two heads: the stream after it is the tokens plus Σ_h P_h (head h's reference output)."""
    model = random_model(heads=2, key_size=4, init_lambda=0.7, attention=attention)
    prompt = trajectory()
    stream = model.tokens(prompt.xs)
    with torch.no_grad():
        update = torch.zeros_like(stream)
        for head in range(2):
            q, k, v = (stream @ weights[0, head].T for weights in (model.query, model.key, model.value))
            update += HEAD_REFERENCES[attention](model, head, q, k, v) @ model.projection[0, head].T
        torch.testing.assert_close(model.layer_features(prompt.xs, prompt.ys)[0], stream + update,
                                   rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(model.predict(prompt.xs, prompt.ys), (stream + update)[..., 6:],
                                   rtol=1e-10, atol=1e-10)
    if attention == "mesa":
        torch.testing.assert_close(model.lambdas(), torch.full((1, 2), 0.7, dtype=torch.float64))
    else:
        assert "lambda_parameter" not in dict(model.named_parameters())


@pytest.mark.parametrize("lam", LAMBDAS)
def test_constructed_layer_is_ridge_regression_over_the_transitions(lam):
    prompt = trajectory(noise=0.3)
    preds = constructed_mesa(3, 10, lam).predict(prompt.xs, prompt.ys).numpy()
    xs, ys = prompt.xs.numpy(), prompt.ys.numpy()
    for b in range(xs.shape[0]):
        for t in range(xs.shape[1]):  # context: transitions (x_j, y_j) for j < t
            design = np.vstack([xs[b, :t], np.eye(3) / np.sqrt(lam)])
            targets = np.vstack([ys[b, :t], np.zeros((3, 3))])
            weights_t = np.linalg.lstsq(design, targets, rcond=None)[0]
            np.testing.assert_allclose(preds[b, t], xs[b, t] @ weights_t, rtol=1e-9, atol=1e-10)


def test_gradients_reach_lambda_and_every_projection():
    model = random_model(dim=2, points=4, layers=2, heads=2, key_size=2)
    prompt = trajectory(dim=2, points=4, batch=2)
    names = [name for name, _ in model.named_parameters()]
    assert set(names) == {"query", "key", "value", "projection", "lambda_parameter"}

    def predictions(*parameters):
        return functional_call(model, dict(zip(names, parameters)), (prompt.xs, prompt.ys))

    parameters = tuple(parameter.detach().clone().requires_grad_() for parameter in model.parameters())
    assert torch.autograd.gradcheck(predictions, parameters, eps=1e-6, atol=1e-5, rtol=1e-4)
    predictions(*parameters).square().sum().backward()
    for name, parameter in zip(names, parameters):
        assert parameter.grad.abs().sum() > 0, f"no gradient reaches {name}"


@pytest.mark.parametrize("attention", list(HEAD_REFERENCES))
def test_a_later_state_leaves_earlier_predictions_unchanged(attention):
    model = random_model(layers=2, heads=2, attention=attention)
    prompt = trajectory(points=8)
    reference = model.predict(prompt.xs, prompt.ys)
    for t in range(1, 8):
        xs, ys = prompt.xs.clone(), prompt.ys.clone()
        xs[:, t:] += 5.0  # states from s_t on, and the labels that repeat them
        ys[:, t - 1:] += 5.0
        changed = model.predict(xs, ys)
        assert torch.equal(changed[:, :t], reference[:, :t]), f"a position before {t} read state {t}"
        assert not torch.allclose(changed[:, t], reference[:, t])
    generator = torch.Generator().manual_seed(3)  # and on prompts whose labels do not repeat the states
    assert_no_peek(model, *(torch.randn(2, 8, 3, generator=generator, dtype=torch.float64) for _ in range(2)),
                   atol=0.0)


@pytest.mark.parametrize("params, name", [
    (dict(layers=0), "layers"), (dict(heads=0), "heads"), (dict(key_size=-1), "key_size"),
    (dict(init_lambda=0.0), "init_lambda"), (dict(init_lambda=float("nan")), "init_lambda"),
    (dict(init_scale=-0.1), "init_scale"), (dict(layers=1.5), "layers"), (dict(attention="delta"), "attention"),
])
def test_bad_config_names_the_parameter(params, name):
    with pytest.raises(ValueError, match=f"^{name} ") as error:
        MesaConfig(**params)
    assert "\n" not in str(error.value)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="^target_dim must equal dim"):
        MesaTransformer(3, 5, MesaConfig(), target_dim=1)
    with pytest.raises(ValueError, match="^lam "):
        constructed_mesa(3, 5, -1.0)


def test_recursion_runs_in_float32_under_bf16_autocast():
    """The rank-one downdates are kept out of bf16: under CPU autocast the result is float32's, bit for bit."""
    queries, keys, values = (tensor.float() for tensor in random_heads(2))
    lam = torch.tensor(0.5)
    expected = mesa_solutions(queries, keys, values, lam)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        autocast = mesa_solutions(queries, keys, values, lam)
    assert autocast.dtype == torch.float32
    assert torch.equal(autocast, expected)
