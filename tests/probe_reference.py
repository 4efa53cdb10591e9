"""The straightforward probe behaviours: every prompt copied once per probe query, one backward pass per layer."""
from __future__ import annotations

import torch

from icl_sim.probe_metrics import Behaviour
from icl_sim.prompt import Prompt
from icl_sim.theory.formulas import implicit_weights


def reference_behaviours(layered, prompt: Prompt) -> list[Behaviour]:
    """Per layer: ŷ at the final query, ∂ŷ/∂x_query and the implicit weights on the same 2d probe queries."""
    batch, points, dim = prompt.xs.shape
    query = prompt.xs[:, -1].clone().requires_grad_()
    xs = torch.cat([prompt.xs[:, :-1], query.unsqueeze(1)], dim=1)
    with torch.enable_grad():
        layers = [preds[:, -1] for preds in layered(xs, prompt.ys)]
        sensitivities = [torch.autograd.grad(p.sum(), query, retain_graph=True)[0] for p in layers]
    generator = torch.Generator(device=prompt.xs.device).manual_seed(0)
    queries = torch.randn(batch, 2 * dim, dim, generator=generator, device=prompt.xs.device, dtype=torch.float64)
    queries = queries * prompt.xs[:, :-1].std(dim=(1, 2), keepdim=True)
    count = queries.shape[1]
    probe_xs = torch.cat([prompt.xs[:, None, :-1].expand(batch, count, points - 1, dim), queries[:, :, None]], dim=2)
    probe_ys = torch.cat([prompt.ys[:, None, :-1].expand(batch, count, points - 1),
                          prompt.ys.new_zeros(batch, count, 1)], dim=2)
    with torch.no_grad():
        probed = layered(probe_xs.reshape(batch * count, points, dim), probe_ys.reshape(batch * count, points))
    weights = [implicit_weights(queries, preds[:, -1].reshape(batch, count)) for preds in probed]
    return [Behaviour(p.detach(), s, w) for p, s, w in zip(layers, sensitivities, weights)]
