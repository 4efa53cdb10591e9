"""Tarzanagh et al. 2023 (paper_repro/tarzanagh_2023.py): normalised GD against its update rule written out, the
token-selection task's law against its closed-form moments, the selection-attention model against the paper's
formula in numpy, and the reproduction's measure on a model set to the SVM direction by hand."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from icl_sim.config import TrainConfig
from icl_sim.ensemble import train_ensemble
from icl_sim.models import build_model
from icl_sim.optimizers import NormalizedGD
from icl_sim.paper_repro import tarzanagh_2023
from icl_sim.seeding import make_generator
from icl_sim.tasks import TokenSelection
from icl_sim.theory.max_margin import attention_svm
from icl_sim.training import initial_model, train, training_batch

EPS = float(np.finfo(np.float64).eps)


@pytest.mark.parametrize("penalty", [0.0, 0.3])
def test_normalized_gd_takes_a_unit_step_along_the_penalised_gradient(penalty):
    theta = np.array([[1.0, -2.0], [0.5, 3.0], [0.0, 1.0]])
    grad = np.array([[0.2, 0.1], [-0.4, 0.0], [1.0, -0.3]])
    parameter = torch.nn.Parameter(torch.tensor(theta))
    parameter.grad = torch.tensor(grad)
    NormalizedGD([parameter], lr=0.1, penalty=penalty).step()
    direction = grad + 2 * penalty * theta
    expected = theta - 0.1 * direction / (np.sqrt((direction ** 2).sum()) + EPS)
    np.testing.assert_allclose(parameter.detach().numpy(), expected, rtol=0, atol=1e-15)


def test_normalized_gd_leaves_a_zero_gradient_at_rest_and_refuses_bad_settings():
    parameter = torch.nn.Parameter(torch.ones(2, 2, dtype=torch.float64))
    parameter.grad = torch.zeros(2, 2, dtype=torch.float64)
    NormalizedGD([parameter], lr=0.1).step()
    assert torch.equal(parameter.detach(), torch.ones(2, 2, dtype=torch.float64))
    for options, name in ((dict(lr=-1.0), "lr"), (dict(penalty=-1.0), "penalty"), (dict(stacked_runs=2), "stacked_runs")):
        with pytest.raises(ValueError, match=name):
            NormalizedGD([parameter], **options)


def test_normalized_gd_normalises_each_stacked_run_by_its_own_norm():
    generator = torch.Generator().manual_seed(0)
    weights, grads = (torch.randn(3, 4, 2, generator=generator, dtype=torch.float64) for _ in range(2))
    stacked = torch.nn.Parameter(weights.clone())
    stacked.grad = grads.clone()
    NormalizedGD([stacked], lr=0.5, penalty=0.1, stacked_runs=1).step()
    for run in range(3):
        alone = torch.nn.Parameter(weights[run].clone())
        alone.grad = grads[run].clone()
        NormalizedGD([alone], lr=0.5, penalty=0.1).step()
        torch.testing.assert_close(stacked.detach()[run], alone.detach(), rtol=0, atol=1e-15)


def tiny_config(parameterization: str, seed: int = 0, steps: int = 15) -> TrainConfig:
    return TrainConfig(task="token-selection", task_params={"dim": 3, "tokens": 4}, model="selection-attention",
                       model_params={"parameterization": parameterization}, steps=steps, batch_size=5,
                       batch_redraw_every=steps, optimizer="normalized-gd", lr=0.1,
                       weight_decay=tarzanagh_2023.KQ_PENALTY if parameterization == "KQ" else 0.0, seed=seed,
                       device="cpu", log_every=5, checkpoint_every=steps)


@pytest.mark.parametrize("parameterization", ["W", "KQ"])
def test_normalized_gd_runs_in_an_ensemble_equal_the_runs_alone(tmp_path, parameterization):
    configs = [tiny_config(parameterization, seed) for seed in (0, 7)]
    together = train_ensemble(configs, [tmp_path / f"ensemble-{i}" for i in range(2)], progress=False)
    for index, config in enumerate(configs):
        alone = train(config, tmp_path / f"alone-{index}", progress=False)
        torch.testing.assert_close(together[index].key_query(), alone.key_query(), rtol=1e-12, atol=1e-12)
        moved = alone.key_query() - initial_model(config, torch.device("cpu")).key_query()
        assert float(torch.linalg.norm(moved.detach())) > 0.5


def test_token_selection_draws_unit_tokens_uniform_on_the_sphere_and_fair_labels():
    task, count = TokenSelection(dim=4, tokens=3), 20_000
    prompt = task.sample(count, make_generator(0, "eval"), dtype=torch.float64)
    assert prompt.xs.shape == (count, 4, 4) and prompt.ys.shape == (count, 4)
    torch.testing.assert_close(torch.linalg.vector_norm(prompt.xs, dim=-1), torch.ones(count, 4, dtype=torch.float64))
    assert torch.equal(prompt.ys[:, :-1], torch.zeros(count, 3, dtype=torch.float64))
    assert set(prompt.ys[:, -1].tolist()) == {-1.0, 1.0}
    # uniform on the sphere of R^d: E x = 0 and E x xᵀ = I/d; a fair label: E y = 0 (5 standard errors each)
    points = prompt.xs.reshape(-1, 4)
    second = torch.einsum("ni,nj->nij", points, points).reshape(len(points), -1)
    expected = (torch.eye(4, dtype=torch.float64) / 4).flatten()
    assert ((second.mean(0) - expected).abs() <= 5 * second.std(0) / math.sqrt(len(points))).all()
    assert (points.mean(0).abs() <= 5 * points.std(0) / math.sqrt(len(points))).all()
    assert abs(float(prompt.ys[:, -1].mean())) <= 5 / math.sqrt(count)


def test_token_selection_refuses_a_curriculum_by_name():
    with pytest.raises(ValueError, match="curriculum"):
        TokenSelection(dim=4, tokens=3).sample(2, make_generator(0, "eval"), points=2)
    with pytest.raises(ValueError, match="tokens"):
        TokenSelection(tokens=1)


@pytest.mark.parametrize("parameterization", ["W", "KQ"])
def test_selection_attention_is_the_papers_head_over_the_softmax_of_x_w_z(parameterization):
    torch.manual_seed(3)
    model = build_model("selection-attention", 5, 7, parameterization=parameterization)
    prompt = TokenSelection(dim=5, tokens=6).sample(4, make_generator(1, "eval"), dtype=torch.float64)
    tokens, query = prompt.xs[:, :-1].numpy(), prompt.xs[:, -1].numpy()
    if parameterization == "W":
        weights = model.weight.detach().numpy()
    else:  # score (Q z)ᵀ (K x_t) = x_tᵀ Kᵀ Q z
        weights = model.key.detach().numpy().T @ model.query.detach().numpy()
    np.testing.assert_allclose(model.key_query().detach().numpy(), weights, rtol=0, atol=1e-14)
    scores = np.einsum("btk,kl,bl->bt", tokens, weights, query)
    softmax = np.exp(scores - scores.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    expected = np.einsum("bt,btk,k->b", softmax, tokens, model.head.numpy())
    np.testing.assert_allclose(model.last_prediction(prompt.xs, prompt.ys).detach().numpy(), expected, atol=1e-13)
    assert abs(float(torch.linalg.vector_norm(model.head)) - 1) < 1e-14
    assert not any(name == "head" for name, _ in model.named_parameters())  # v is fixed, not trained


def test_measure_finds_correlation_one_and_no_unselected_mass_for_a_model_set_to_the_svm():
    """A W-model set by hand to a large multiple of the Frobenius SVM of its own training set: its correlation
    with W^mm is 1, its distance from the other SVM is 1 − corr(W^mm_⋆, W^mm), and the unselected softmax mass
    is the closed form Σ_{t≠α} e^{−m_t} / (1 + Σ e^{−m_t}) at margins m ≥ the scale."""
    settings = dataclasses.replace(tarzanagh_2023.SCALES["smoke"], dim=4, tokens=4, prompts=3)
    config = dataclasses.replace(tarzanagh_2023.runs(settings)["W-00"], seed=5, device="cpu")
    model = build_model("selection-attention", 4, 5, parameterization="W")
    prompt = training_batch(settings.task, config, 0, torch.device("cpu"))
    tokens, queries = prompt.xs[:, :-1].double(), prompt.xs[:, -1].double()
    selected = torch.tensor([0, 1, 2])
    svm = attention_svm(tokens, queries, selected, "fro")
    with torch.no_grad():
        model.weight.copy_(20 * svm)
    measured = tarzanagh_2023._dataset_measures(model, config, [], settings)
    nuclear = attention_svm(tokens, queries, selected, "nuc")
    cosine = float((svm * nuclear).sum() / (svm.norm() * nuclear.norm()))
    assert measured["own_correlation"] == pytest.approx(1.0, abs=1e-12)
    assert measured["svm_correlation"] == pytest.approx(cosine, abs=1e-12)
    margins = torch.einsum("ita,ab,ib->it", tokens, 20 * svm, queries)
    margins = margins[torch.arange(3), selected][:, None] - margins
    others = torch.exp(-margins).sum(1) - 1
    assert measured["unselected_mass"] == pytest.approx(float((others / (1 + others)).mean()), rel=1e-9)


def test_the_relu_head_is_the_authors_nonlinear_head_over_the_selected_token():
    """f = 1ᵀ ReLU(Vᵀ Σ_t s_t x_t) with a fixed V of unit Frobenius norm (base_nonlinear.py, mode 'relu')."""
    torch.manual_seed(4)
    model = build_model("selection-attention", 5, 7, parameterization="W", head="relu")
    prompt = TokenSelection(dim=5, tokens=6).sample(4, make_generator(2, "eval"), dtype=torch.float64)
    tokens, query = prompt.xs[:, :-1].numpy(), prompt.xs[:, -1].numpy()
    scores = np.einsum("btk,kl,bl->bt", tokens, model.weight.detach().numpy(), query)
    softmax = np.exp(scores - scores.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    value = model.value.numpy()
    expected = np.maximum(np.einsum("bt,btk->bk", softmax, tokens) @ value, 0).sum(-1)
    np.testing.assert_allclose(model.last_prediction(prompt.xs, prompt.ys).detach().numpy(), expected, atol=1e-13)
    np.testing.assert_allclose(model.token_values(prompt.xs[:, :-1]).numpy(), np.maximum(tokens @ value, 0).sum(-1),
                               atol=1e-14)
    assert abs(float(torch.linalg.matrix_norm(model.value)) - 1) < 1e-14
    assert [name for name, _ in model.named_parameters()] == ["weight"]  # V is fixed, not trained


def test_multi_token_measure_finds_a_w_on_the_svm_equivalence_line_exactly():
    """W = W^fin + 30 W^mm for selected sets O_i of a run's training set (W^fin in the span of the ties): the
    measure recovers the sets and keeps the run, puts W on the SVM-equivalence line (1 − corr = 0), the single-token
    SVM off it, and scores corr(W, W^mm_O) − corr(W, W^1token) as numpy's cosines of the two SVMs give it."""
    from icl_sim.theory.max_margin import finite_component

    config, tokens, queries = multi_token_run(seed=3)
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1]], dtype=torch.bool)
    spread = torch.softmax(torch.randn(3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64), -1)
    direction = attention_svm(tokens, queries, mask, "fro")
    model = build_model("selection-attention", 4, 5, parameterization="W", head="relu")
    with torch.no_grad():
        model.weight.copy_(finite_component(tokens, queries, spread, mask) + 30 * direction)
    measured = tarzanagh_2023._multi_token_measures(model, config, [])
    assert measured is not None and measured["kept"] and measured["multi_token"]
    assert measured["equivalence"] == pytest.approx(0.0, abs=1e-12)
    assert measured["single"] > 1e-3
    weights = model.weight.detach().numpy()
    top = np.einsum("ita,ab,ib->it", tokens.numpy(), weights, queries.numpy()).argmax(-1)
    single = attention_svm(tokens, queries, torch.from_numpy(top), "fro").numpy()
    cosine = lambda first, second: (first * second).sum() / np.linalg.norm(first) / np.linalg.norm(second)
    expected = cosine(weights, direction.numpy()) - cosine(weights, single)
    assert measured["nearer_than_single"] == pytest.approx(expected, abs=1e-9)
    assert expected > 0.05  # the sets' SVM is the nearer, as W was built along it


def test_multi_token_measure_scores_a_layer_that_masks_no_token_against_the_zero_svm():
    """An untrained layer keeps every token (softmax near 1/T): the notebook would not keep it, the sets' Att-SVM
    has ties alone (solution 0, correlation 0), so the score is −corr(W, W^1token), finite."""
    config, tokens, queries = multi_token_run(seed=3)
    model = build_model("selection-attention", 4, 5, parameterization="W", head="relu")
    measured = tarzanagh_2023._multi_token_measures(model, config, [])
    assert measured is not None and not measured["kept"] and measured["multi_token"]
    weights = model.weight.detach().double()
    top = torch.einsum("ita,ab,ib->it", tokens, weights, queries).argmax(-1)
    single = attention_svm(tokens, queries, top, "fro")
    expected = -float((weights * single).sum() / (weights.norm() * single.norm()))
    assert math.isfinite(measured["nearer_than_single"])
    assert measured["nearer_than_single"] == pytest.approx(expected, abs=1e-12)


def multi_token_run(seed: int):
    """A smoke-scale ReLU-head run's config on training seed ``seed`` and its training set (tokens, queries)."""
    config = dataclasses.replace(tarzanagh_2023.runs(tarzanagh_2023.SCALES["smoke"])["relu-d4-00"], seed=seed,
                                 device="cpu")
    tokens, queries, labels = tarzanagh_2023.training_set(config)
    assert (labels < 0).any()  # the notebook leaves out a set of all-positive labels
    return config, tokens, queries
