"""The literal LSA, one prompt and one prefix at a time: the independent reference for the fast paths."""
import torch


def token_layers(model, layer, Z):
    """LayerNorm and residual MLP applied to every column (token) of Z (D x T)."""
    tokens = Z.T
    if model.config.layer_norm:
        tokens = model.norms[layer](tokens)
    if model.config.mlp:
        tokens = tokens + model.mlps[layer](tokens)
    return tokens.T


@torch.no_grad()
def per_prefix_reference(model, xs, ys):
    """Literal per-prefix LSA on token matrices, one prompt and prefix at a time, LN / MLP after each layer."""
    value, key_query = (w.detach() for w in model.attention_weights())
    layers, heads = value.shape[:2]
    labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
    out = torch.zeros(layers, *labels.shape, dtype=xs.dtype)
    for b in range(xs.shape[0]):
        for i in range(xs.shape[1]):
            context = torch.cat([labels[b, :i], torch.zeros(1, labels.shape[-1], dtype=ys.dtype)])
            Z = torch.cat([xs[b, : i + 1], context], dim=1).T  # (d+k) x (i+1), query last
            mask = torch.eye(i + 1, dtype=xs.dtype)
            mask[i, i] = 0  # the query is not a key
            for layer in range(layers):
                attention = sum(value[layer, h] @ Z @ mask @ Z.T @ key_query[layer, h] @ Z for h in range(heads))
                Z = token_layers(model, layer, Z + attention / max(i, 1))
                out[layer, b, i] = -Z[xs.shape[-1]:, -1]
    return out if ys.ndim == 3 else out.squeeze(-1)


def assert_matches_reference(model, xs, ys, tolerance=1e-11):
    """Every layer's predictions, and the cheap final-position path, equal the literal reference."""
    expected = per_prefix_reference(model, xs, ys)
    for layer, preds in enumerate(model.layer_predictions(xs, ys)):
        assert preds.shape == expected[layer].shape
        torch.testing.assert_close(preds, expected[layer], atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(model.last_prediction(xs, ys), expected[-1][:, -1], atol=tolerance, rtol=tolerance)


def causal_moment_reference(model, xs, ys):
    """The causal form by per-layer prefix moments Γ_t (B, N, D, D), icl-sim's path before the masked token pass:
    context token t and query t both move by Σ_h P_h Γ_t Q_h z.  Predictions per layer; differentiable."""
    value, key_query = model.attention_weights()
    d = xs.shape[-1]
    labels = ys.unsqueeze(-1) if ys.ndim == 2 else ys
    both = torch.stack([torch.cat([xs, labels], dim=-1), torch.cat([xs, torch.zeros_like(labels)], dim=-1)])
    out = []
    for layer in range(model.config.layers):
        gamma = model.prefix_moments(both[0, ..., :d], both[0, ..., d:])
        keyed = torch.einsum("hkl,sbnl->sbnhk", key_query[layer], both)
        attended = torch.einsum("bnkl,sbnhl->sbnhk", gamma, keyed)
        both = model._token_layers(layer, both + torch.einsum("hij,sbnhj->sbni", value[layer], attended))
        out.append(-both[1, ..., d:])
    return [o.squeeze(-1) for o in out] if ys.ndim == 2 else out
