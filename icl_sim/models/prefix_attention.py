"""Attention of chosen query positions over the points strictly before each: the mask several models share."""
from __future__ import annotations

import torch


def prefix_weights(scores: torch.Tensor, positions: torch.Tensor, normalise: bool = True) -> torch.Tensor:
    """Weights (B, P, N) from scores (B, P, N) of the queries at ``positions`` (P,) over a prompt's N points.

    Point j gets weight only if j < position: softmax over those points when ``normalise``, else exp of the
    scores (an unnormalised kernel such as a Gaussian's).  Position 0 sees no point and gets no weight.
    """
    before = torch.arange(scores.shape[-1], device=scores.device)[None, :] < positions[:, None]  # (P, N)
    masked = scores.masked_fill(~before, -torch.inf)
    if not normalise:
        return torch.exp(masked)
    return torch.nan_to_num(torch.softmax(masked, dim=-1), nan=0.0)
