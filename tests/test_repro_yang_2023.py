"""yang-2023: the parameter-count closed form against an independent count, the authors' loop with the state
normalised every loop against its written-out form, and the learned-task condition of the paired claims."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from icl_sim.models import build_model
from icl_sim.paper_repro import yang_2023
from icl_sim.paper_repro.yang_2023 import gpt2_parameter_count, parameter_count


def reference_count(dim: int, points: int, width: int, blocks: int) -> int:
    """torch's own count of a GPT-2 stack written out with stock modules (read-in, positions, blocks, LN, read-out)."""
    def block() -> list[nn.Module]:
        return [nn.LayerNorm(width), nn.Linear(width, 3 * width), nn.Linear(width, width), nn.LayerNorm(width),
                nn.Linear(width, 4 * width), nn.Linear(4 * width, width)]

    modules = [nn.Linear(dim, width), nn.Embedding(2 * points, width), *(m for _ in range(blocks) for m in block()),
               nn.LayerNorm(width), nn.Linear(width, 1)]
    return sum(p.numel() for module in modules for p in module.parameters())


@pytest.mark.parametrize("dim, points, width, blocks", [(3, 5, 8, 1), (3, 5, 8, 4), (20, 41, 256, 12), (1, 8, 32, 3)])
def test_closed_form_against_stock_modules(dim, points, width, blocks):
    assert gpt2_parameter_count(dim, points, width, blocks) == reference_count(dim, points, width, blocks)


def test_hand_computed_example():
    # D = 4, d = 2, N = 3, one block: read-in 2·4 + 4 = 12, positions 6·4 = 24, block 12·16 + 13·4 = 244,
    # final LN 8, read-out 5
    assert gpt2_parameter_count(2, 3, 4, 1) == 12 + 24 + 244 + 8 + 5


def test_looped_models_count_one_block_whatever_the_loops():
    counts = {loops: parameter_count(build_model("looped", 2, 6, n_embd=16, n_head=2, loops=loops, loop_window=1))
              for loops in (1, 5, 30)}
    assert set(counts.values()) == {gpt2_parameter_count(2, 6, 16, 1)}


def test_the_papers_ratio_tends_to_one_over_the_blocks():
    # the embedding and read-out overhead vanishes against 12D² per block as the width grows
    ratios = [gpt2_parameter_count(20, 41, width, 1) / gpt2_parameter_count(20, 41, width, 12)
              for width in (64, 256, 4096)]
    assert ratios[0] > ratios[1] > ratios[2] > 1 / 12
    assert ratios[2] == pytest.approx(1 / 12, rel=1e-2)


def test_state_norm_normalises_the_state_after_every_loop_as_the_authors_backbone():
    """Their loop, written out with the model's own modules: h ← LN_f(Block(h + e)) from h = 0, read-out of h at
    the x tokens with no second LayerNorm; the state's tokens have zero mean and unit variance after every loop."""
    torch.manual_seed(0)
    model = build_model("looped", 2, 5, n_embd=16, n_head=2, loops=3, loop_window=1, state_norm=True).double()
    with torch.no_grad():  # LayerNorm at its initial affine (1, 0) would hide a missing normalisation
        model.head.ln_f.weight.uniform_(0.5, 1.5)
        model.head.ln_f.bias.uniform_(-0.5, 0.5)
    xs, ys = torch.randn(4, 5, 2, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    embedded = model.embed(xs, ys)
    state, expected = torch.zeros_like(embedded), []
    for _ in range(6):
        state = model.head.ln_f(model.block(state + embedded))
        expected.append(model.head.read_out(state[:, ::2]).squeeze(-1))
    with torch.no_grad():
        outputs = model.run_loops(xs, ys, 6)
        states = model.run_loops(xs, ys, 6, features=True)
    for ours, theirs in zip(outputs, expected):
        torch.testing.assert_close(ours, theirs.detach())
    plain = (states[-1] - model.head.ln_f.bias) / model.head.ln_f.weight  # undo the affine part
    torch.testing.assert_close(plain.mean(-1), torch.zeros(4, 5, dtype=torch.float64), atol=1e-9, rtol=0)
    torch.testing.assert_close(plain.var(-1, unbiased=False), torch.ones(4, 5, dtype=torch.float64), atol=1e-4,
                               rtol=0)
    with pytest.raises(ValueError, match="state_norm"):
        build_model("looped", 2, 5, n_embd=16, n_head=2, loops=3, loop_window=1, state_norm=1)


def test_matching_and_flatness_add_the_excess_over_the_midpoint():
    assert yang_2023._unlearned(0.2, 0.5) == 0.0
    assert yang_2023._unlearned(0.9, 0.5) == pytest.approx(0.4)
    rows = [{"panel": "examples", "predictor": yang_2023.LEAST_SQUARES, "seed": None, "position": p, "mean": m}
            for p, m in [(3, 0.4), (10, 0.02)]]
    assert yang_2023._midpoint({"rows": rows}) == pytest.approx((0.02 + 1.0) / 2)


def test_the_one_step_contrast_against_a_hand_computed_step():
    """One GD step from 0 at η* = k/(k + d + 1) predicts (η*/k) Σ y_i x_iᵀ x_q, with error / d (d + 1)/(k + d + 1)
    (Wishart's second moment E(XᵀX/k)² = (k + d + 1)/k · I)."""
    settings = yang_2023.SCALES["quick"]  # d = 5, k = 10 at the final query
    assert settings.one_step.lr == pytest.approx(10 / 16)
    assert settings.one_step_error == pytest.approx(6 / 16)
    torch.manual_seed(0)
    xs, ys = torch.randn(3, 11, 5, dtype=torch.float64), torch.randn(3, 11, dtype=torch.float64)
    by_hand = (10 / 16) / 10 * torch.einsum("bk,bkd,bd->b", ys[:, :10], xs[:, :10], xs[:, 10])
    torch.testing.assert_close(settings.one_step.predict(xs, ys)[:, -1], by_hand)
    rows = [{"panel": "examples", "predictor": yang_2023.LEAST_SQUARES, "seed": None, "position": 10, "mean": 0.01}]
    assert yang_2023._nearer_least_squares({"rows": rows}, settings) == pytest.approx((0.01 + 6 / 16) / 2)
