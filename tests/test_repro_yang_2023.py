"""The parameter-count closed form behind yang-2023's checks, against an independent count."""
from __future__ import annotations

import pytest
from torch import nn

from icl_sim.models import build_model
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
