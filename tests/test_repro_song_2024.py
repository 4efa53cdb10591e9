"""Song et al. 2024 (paper_repro/song_2024.py): the kernel-attention layer against its formula in numpy, the frozen
matrices and one GD step against the closed-form least-squares gradient, and the reproduction's floors (least
squares in v, the softmax convex hull) and landscape slice against independent references."""
import dataclasses

import numpy as np
import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.models import build_model
from icl_sim.paper_repro import song_2024
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task
from icl_sim.training import initial_model, train, training_batch


def prompts(dim: int, count: int = 4, points: int = 6):
    task = song_2024.SCALES["quick"].task(dim)
    task = dataclasses.replace(task, points=points)
    prompt = task.sample(count, make_generator(1, "eval"), dtype=torch.float64)
    return prompt.xs, prompt.ys[:, -1]


def numpy_outputs(model, xs: np.ndarray) -> np.ndarray:
    """f_i = Σ_{j<i} κ(W^Q x_i, W^K x_j) vᵀx_j at every position i, written out."""
    wq, wk, v = (getattr(model, name).detach().numpy() for name in ("query", "key", "value"))
    v = v[:, 0]
    batch, points, dim = xs.shape
    outputs = np.zeros((batch, points))
    for b in range(batch):
        for i in range(1, points):
            q, keys = wq @ xs[b, i], xs[b, :i] @ wk.T
            if model.config.kernel == "softmax":
                scores = keys @ q / np.sqrt(dim)
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
            else:
                weights = np.exp(-((keys - q) ** 2).sum(1) / (2 * np.sqrt(dim)))
            outputs[b, i] = weights @ (xs[b, :i] @ v)
    return outputs


@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_kernel_attention_is_the_formula_at_every_position(kernel):
    torch.manual_seed(2)
    model = build_model("kernel-attention", 5, 6, kernel=kernel, query_scale=2.0)
    xs, ys = prompts(5)
    expected = numpy_outputs(model, xs.numpy())
    np.testing.assert_allclose(model(xs, torch.zeros_like(xs[..., 0])).detach().numpy(), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.last_prediction(xs, ys).detach().numpy(), expected[:, -1], rtol=0, atol=1e-12)


def test_gaussian_kernel_is_one_at_equal_query_and_key_and_not_normalised():
    model = build_model("kernel-attention", 3, 4, kernel="gaussian")
    with torch.no_grad():
        model.query.copy_(torch.eye(3, dtype=torch.float64))
        model.key.copy_(torch.eye(3, dtype=torch.float64))
    xs = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 0, 0]]], dtype=torch.float64)
    weights = model.kernel_weights(xs, torch.tensor([3]))[0, 0].detach().numpy()
    far = np.exp(-2 / (2 * np.sqrt(3)))  # ‖e_1 − e_2‖² = 2
    np.testing.assert_allclose(weights, [1.0, far, far, 0.0], rtol=0, atol=1e-15)


@pytest.mark.parametrize("trained, moved", [("value", {"value"}), ("query", {"query"}),
                                            ("all", {"query", "key", "value"})])
def test_only_the_trained_matrices_are_parameters_and_move(tmp_path, trained, moved):
    config = TrainConfig(task="linear-regression", task_params={"dim": 4, "points": 5, "x_distribution": "sphere"},
                         model="kernel-attention", model_params={"kernel": "gaussian", "trained": trained}, steps=3,
                         batch_size=4, batch_redraw_every=3, optimizer="sgd", lr=0.5, device="cpu", log_every=1,
                         checkpoint_every=3)
    start, end = initial_model(config, torch.device("cpu")), train(config, tmp_path, progress=False)
    assert {name for name, _ in end.named_parameters()} == moved
    for name in ("query", "key", "value"):
        changed = not torch.equal(getattr(start, name), getattr(end, name).detach())
        assert changed == (name in moved), name


def test_one_gd_step_on_v_is_the_least_squares_gradient_step(tmp_path):
    """v ← v − lr (2/N) Aᵀ(Av − y), A the fixed attention outputs: the squared loss's gradient written out."""
    config = TrainConfig(task="linear-regression", task_params={"dim": 4, "points": 5, "x_distribution": "sphere"},
                         model="kernel-attention", model_params={"kernel": "softmax", "trained": "value"}, steps=1,
                         batch_size=6, optimizer="sgd", lr=0.3, device="cpu", log_every=1, checkpoint_every=1)
    start = initial_model(config, torch.device("cpu"))
    prompt = training_batch(make_task(config.task, **config.task_params), config, 0, torch.device("cpu"))
    xs, y = prompt.xs.double().numpy(), prompt.ys[:, -1].double().numpy()
    wq, wk, v = (getattr(start, name).detach().numpy() for name in ("query", "key", "value"))
    v = v[:, 0]
    scores = np.einsum("kl,nl,nto,ko->nt", wq, xs[:, -1], xs[:, :-1], wk) / 2.0  # √d = 2
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    design = np.einsum("nt,ntk->nk", weights, xs[:, :-1])
    expected = v - 0.3 * 2 / len(y) * design.T @ (design @ v - y)
    trained = train(config, tmp_path, progress=False)
    np.testing.assert_allclose(trained.value.detach().numpy()[:, 0], expected, rtol=0, atol=1e-6)  # float32 loss


@pytest.mark.parametrize("dim, exact", [(3, False), (8, True)])
def test_least_squares_floor_is_numpys_minimum_over_v(dim, exact):
    torch.manual_seed(4)
    model = build_model("kernel-attention", dim, 6, kernel="softmax", trained="value")
    xs, y = prompts(dim, count=5)
    weights = model.kernel_weights(xs, torch.tensor([5]))[:, 0].detach().numpy()
    design = np.einsum("nt,ntk->nk", weights, xs.numpy())
    solution = np.linalg.pinv(design) @ y.numpy()
    expected = float(((design @ solution - y.numpy()) ** 2).mean())
    floor = song_2024.least_squares_floor(model, xs, y)
    assert floor == pytest.approx(expected, rel=1e-9, abs=1e-25)
    assert (floor < 1e-25) == exact  # 5 equations: exact in d = 8 unknowns, a residual in d = 3


def test_hull_floor_bounds_every_softmax_mixture_and_is_the_distance_to_the_value_range():
    torch.manual_seed(5)
    model = build_model("kernel-attention", 4, 6, kernel="softmax", trained="query")
    xs, _ = prompts(4, count=3)
    values = (xs[:, :-1] @ model.value).detach().numpy()[..., 0]
    targets = torch.tensor([values[0].max() + 0.7, values[1].min() - 0.2, values[2].mean()], dtype=torch.float64)
    floor = song_2024.hull_floor(model, xs, targets)
    assert floor == pytest.approx((0.7 ** 2 + 0.2 ** 2) / 3, rel=1e-12)
    mixtures = np.random.default_rng(0).dirichlet(np.ones(values.shape[1]) * 0.3, size=(20_000, 3))
    best = ((np.einsum("snt,nt->sn", mixtures, values) - targets.numpy()) ** 2).min(0).mean()  # per prompt
    assert floor - 1e-15 <= best <= floor + 1e-2  # no mixture beats the floor, and the best come near it


def test_landscape_slice_passes_through_the_start_and_the_end(tmp_path):
    settings = song_2024.SCALES["smoke"]
    config = dataclasses.replace(song_2024.runs(settings)["all-gaussian-d2-00"], device="cpu")
    model = train(config, tmp_path, progress=False)
    start = initial_model(config, torch.device("cpu"))
    prompt = training_batch(settings.task(2), config, 0, torch.device("cpu"))
    xs, y = prompt.xs.double(), prompt.ys[:, -1].double()
    end = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
    losses = song_2024.landscape_slice(model, start, xs, y)
    at = {t: losses[song_2024.SLICE.index(t)] for t in (0.0, 1.0)}
    assert at[0.0] == pytest.approx(song_2024.training_loss(start, xs, y), rel=1e-12)
    assert at[1.0] == pytest.approx(song_2024.training_loss(model, xs, y), rel=1e-12)
    assert all(torch.equal(parameter, end[name]) for name, parameter in model.named_parameters())  # θ_T restored


def test_kernel_attention_refuses_bad_settings_by_name():
    for options, name in ((dict(kernel="cosine"), "kernel"), (dict(trained="key"), "trained"),
                          (dict(query_scale=-1.0), "query_scale"), (dict(value_scale=-1.0), "value_scale")):
        with pytest.raises(ValueError, match=name):
            build_model("kernel-attention", 3, 4, **options)
