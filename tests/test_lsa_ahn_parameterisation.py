"""LSA ``parameterisation="sparse"``: Ahn et al. 2023's multi-layer model, P = [[B, 0], [0, 1]], Q = −[[A, 0], [0, 0]].

The reference is a literal transcription of the authors' ``attention`` / ``Transformer_F.forward``
(chengxiang/LinearTransformer, ``linear_transformer.py``) in float64, one prompt and one prefix at a time,
built from the raw parameters (not from ``attention_weights``): their score matrix Z Q_full Zᵀ, the
query's own value masked out, the values P_full z_M, the sum over heads divided by the context size n,
and the residual Z + attention on every token; the prediction is minus the query's label slot (their
``in_context_loss`` uses output[:, N, d] + y).  Their ``allparam[ℓ, h]`` is (B, −A).
"""
import pytest
import torch
from contract import gaussian_prompt

from icl_sim.models import build_model
from icl_sim.weight_comparison import effective_layer_maps

DIM, POINTS = 4, 7


def _model(seed=0, layers=3, heads=2, target_dim=1):
    torch.manual_seed(seed)
    return build_model("lsa", DIM, POINTS, target_dim=target_dim, layers=layers, heads=heads, init_scale=0.3,
                       parameterisation="sparse").double()


@torch.no_grad()
def authors_reference(model, xs, ys):
    """Per layer, (B, N[, k]): the authors' forward pass on the prompt cut to its first i points plus query x_i."""
    B_all, Q_all = model.feature_update.detach(), -model.preconditioner.detach()  # the authors' allparam[:, :, 0 / 1]
    layers, heads, d = B_all.shape[0], B_all.shape[1], xs.shape[-1]
    labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
    k = labels.shape[-1]
    out = torch.zeros(layers, *labels.shape, dtype=xs.dtype)
    for b in range(xs.shape[0]):
        for i in range(xs.shape[1]):
            n = max(i, 1)
            Z = torch.cat([xs[b, : i + 1], torch.cat([labels[b, :i], torch.zeros(1, k, dtype=xs.dtype)])], dim=1)
            mask = torch.eye(i + 1, dtype=xs.dtype)
            mask[i, i] = 0  # their A[N, N] = 0: the query is not a key
            for layer in range(layers):
                residues = torch.zeros_like(Z)
                for h in range(heads):
                    P_full = torch.zeros(d + k, d + k, dtype=xs.dtype)
                    P_full[:d, :d], P_full[d:, d:] = B_all[layer, h], torch.eye(k, dtype=xs.dtype)
                    Q_full = torch.zeros(d + k, d + k, dtype=xs.dtype)
                    Q_full[:d, :d] = Q_all[layer, h]
                    scores = torch.einsum("Ni,ij,Mj->NM", Z, Q_full, Z)
                    values = torch.einsum("ij,Mj->Mi", P_full, Z)
                    residues = residues + torch.einsum("NM,ML,Li->Ni", scores, mask, values) / n
                Z = Z + residues
                out[layer, b, i] = -Z[i, d:]
    return out if ys.ndim == 3 else out.squeeze(-1)


@pytest.mark.parametrize("heads", [1, 2])
def test_predictions_equal_the_authors_token_loop(heads):
    xs, ys = gaussian_prompt(3, POINTS, DIM)
    model = _model(heads=heads)
    expected = authors_reference(model, xs, ys)
    fast = model.layer_predictions(xs, ys)
    exact = model.per_prefix_predictions(xs, ys)
    assert len(fast) == 3
    for layer in range(3):
        torch.testing.assert_close(fast[layer], expected[layer], atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(exact[layer], expected[layer], atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(model.last_prediction(xs, ys), expected[-1][:, -1], atol=1e-10, rtol=1e-10)


def test_vector_labels_equal_the_authors_token_loop():
    xs, _ = gaussian_prompt(2, POINTS, DIM, seed=3)
    ys = torch.randn(2, POINTS, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    model = _model(seed=2, target_dim=2)
    expected = authors_reference(model, xs, ys)
    for layer, preds in enumerate(model.layer_predictions(xs, ys)):
        torch.testing.assert_close(preds, expected[layer], atol=1e-10, rtol=1e-10)


def test_parameters_are_the_two_blocks_and_the_feature_update_matters_from_layer_two():
    model = _model()
    assert dict((name, tuple(p.shape)) for name, p in model.named_parameters()) == {
        "preconditioner": (3, 2, DIM, DIM), "feature_update": (3, 2, DIM, DIM)}
    xs, ys = gaussian_prompt(3, POINTS, DIM, seed=1)
    before = model.layer_predictions(xs, ys)
    with torch.no_grad():
        model.feature_update.zero_()
    after = model.layer_predictions(xs, ys)
    torch.testing.assert_close(after[0], before[0], atol=0, rtol=0)  # B never touches the label slot it feeds
    assert not torch.allclose(after[1], before[1])


def test_without_feature_update_it_is_the_preconditioner_model():
    """B = 0: Ahn et al.'s Thm 3 model, the same predictions as ``parameterisation="preconditioner"`` with Γ = A."""
    sparse = _model(seed=5)
    with torch.no_grad():
        sparse.feature_update.zero_()
    plain = build_model("lsa", DIM, POINTS, layers=3, heads=2, parameterisation="preconditioner").double()
    with torch.no_grad():
        plain.preconditioner.copy_(sparse.preconditioner)
    xs, ys = gaussian_prompt(3, POINTS, DIM, seed=6)
    for mine, theirs in zip(sparse.layer_predictions(xs, ys), plain.layer_predictions(xs, ys)):
        torch.testing.assert_close(mine, theirs, atol=1e-12, rtol=1e-12)


def test_one_layer_is_a_step_preconditioned_by_a_and_the_effective_map_reads_a():
    model = _model(seed=7, layers=1, heads=1)
    xs, ys = gaussian_prompt(4, POINTS, DIM, seed=8)
    A = model.preconditioner.detach()[0, 0]
    h = torch.einsum("bn,bni->bi", ys[:, :-1], xs[:, :-1]) / (POINTS - 1)
    torch.testing.assert_close(model.last_prediction(xs, ys), torch.einsum("bi,ij,bj->b", xs[:, -1], A, h),
                               atol=1e-12, rtol=1e-12)
    (layer,) = effective_layer_maps(model)
    torch.testing.assert_close(layer["preconditioner"], A, atol=1e-15, rtol=0)
