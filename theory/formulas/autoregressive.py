"""One GD step on x_{t+1} = W x_t with rotation-block W: its risk, best step and t → ∞ limit.

The setting of Zheng et al. 2024 ("On mesa-optimization in autoregressively trained transformers",
NeurIPS, arXiv 2405.16845) in the real form of ``icl_sim.tasks.Autoregressive`` with
``transition="diagonal-unitary"`` and even d: D = d/2 blocks, block k a 2×2 rotation by θ_k
(θ_k iid uniform on [0, 2π)), i.e. the complex diagonal unitary W = diag(e^{iθ_k}) acting on
z_k = x_{2k} + i x_{2k+1}.  The initial token enters only through the block norms m_k = |z_{1,k}|².

The predictor is one GD step from 0 on the n in-context transitions (``OneStepGD(c)``, the
trained causal linear attention of their Thm 4.1), ĝ_n = (c/n) Σ_{j<n} x_{j+1} x_jᵀ x_n.  With
Re(a) = (a + ā)/2 it splits into the complex GD step G1 = (1/n) Σ x_{j+1} x_j^H x_n and its
conjugate companion G2 = (1/n) Σ x_{j+1} conj(x_j^H x_n); averaging the phases (E e^{imθ} = 0 for
m ≠ 0) gives, exactly for every n ≥ 1,

    E⟨x_{n+1}, ĝ_n⟩ = (c/2) A,        E‖ĝ_n‖² = (c²/4) [B + (2C + B)/n],

with A = Σ_k E m_k², B = Σ_k E m_k³, C = Σ_{k≠l} E m_k m_l².  Hence the risk (summed over the d
coordinates)

    R_n(c) = (c²/4) [B + (2C + B)/n] − c A + Y,      Y = E‖x‖² = Σ_k E m_k,

the step minimising Σ_{n∈P} R_n(c) over the trained positions P,

    c* = 2 A |P| / (|P| B + (2C + B) Σ_{n∈P} 1/n),

and, as n → ∞, ĝ_n → (c/2) W diag(m_k I₂) x_n (the cross terms between blocks and G2 average
out), with the error floor R_∞(c) = Σ_k E m_k (c m_k/2 − 1)² = c²B/4 − cA + Y.  W is recovered
(R_∞ = 0 for some c) iff m_k c/2 = 1 on every active block, i.e. iff the block norms are a.s. one
constant: min_c R_∞/Y = 1 − A²/(B Y) is 0 for the all-ones and the sparse initial tokens and 1/3
for a Gaussian one (m_k exponential).  Zheng et al. state this for complex tokens (their Thm
4.2 / Prop. 4.1; there G2 is absent and B/4, A/2 read B, A); the derivation above is ours, in the
real form icl-sim trains, and tests/test_repro_zheng_2024.py checks it by Monte Carlo.

The complex model (``icl_sim.models.ComplexCausalLSA``, the authors' layer) on its diagonal set is the
complex GD step c·G1 alone.  Its component k is c x_{n+1,k} (m_k + (1/n) Σ_{l≠k} m_l S_kl), where
S_kl is a sum of n unit phases with E S_kl = 0 and E|S_kl|² = n, so, exactly for every n ≥ 1,

    R^C_n(c) = c² [B + C/n] − 2c A + Y,     c*_C = A |P| / (|P| B + C Σ_{n∈P} 1/n),

and the ratio of each predicted coordinate to the true one has mean E[ŷ_k / x_{n+1,k}] = c E m_k.
With a sparse token (C = 0) c*_C = 1/s² makes every prediction exact; with the authors' real Gaussian
token (``gaussian-real``: m = s² g²) c*_C → A/B = 1/(5 s²) as n grows and the ratio → 1/5.  Also our
derivation (the paper's own statements were not available to us).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icl_sim.validation import check_choice, check_float, check_int

INITIAL_LAWS = ("ones", "sparse", "gaussian", "gaussian-real")


@dataclass(frozen=True)
class BlockMoments:
    """A = Σ E m_k², B = Σ E m_k³, C = Σ_{k≠l} E m_k m_l², Y = Σ E m_k of the block norms m_k = |z_{1,k}|²."""

    a: float
    b: float
    c: float
    y: float


def block_moments(initial: str, dim: int, scale: float) -> BlockMoments:
    """The moments of ``icl_sim.tasks.Autoregressive``'s initial laws in even dimension ``dim``.

    * ``ones``: x = s·1/√d, every block m = 2s²/d;
    * ``sparse``: x = ±s e_i, one block with m = s², the others 0 (so C = 0);
    * ``gaussian``: x ~ N(0, s² I), m_k = s²(g² + g'²) iid exponential with mean 2s², E m^p = p!(2s²)^p;
    * ``gaussian-real``: real parts N(0, s²), imaginary parts 0: m_k = s² g², E m^p = (2p − 1)!! s^{2p}.
    """
    check_choice("initial", initial, INITIAL_LAWS)
    check_int("dim", dim, 2)
    if dim % 2:
        raise ValueError(f"dim must be even (whole rotation blocks), got {dim}")
    check_float("scale", scale, 0.0, strict=True)
    blocks, s2 = dim // 2, scale * scale
    if initial == "ones":
        m = 2 * s2 / dim
        return BlockMoments(blocks * m ** 2, blocks * m ** 3, blocks * (blocks - 1) * m ** 3, blocks * m)
    if initial == "sparse":
        return BlockMoments(s2 ** 2, s2 ** 3, 0.0, s2)
    if initial == "gaussian-real":
        return BlockMoments(blocks * 3 * s2 ** 2, blocks * 15 * s2 ** 3, blocks * (blocks - 1) * 3 * s2 ** 3,
                            blocks * s2)
    mean = 2 * s2
    return BlockMoments(blocks * 2 * mean ** 2, blocks * 6 * mean ** 3, blocks * (blocks - 1) * mean * 2 * mean ** 2,
                        blocks * mean)


def one_step_gd_risk(step, n, moments: BlockMoments):
    """R_n(c) = E‖ĝ_n − x_{n+1}‖² after n ≥ 1 transitions (n = inf: the floor R_∞(c))."""
    step, n = np.asarray(step, dtype=np.float64), np.asarray(n, dtype=np.float64)
    second = moments.b + (2 * moments.c + moments.b) / n
    return step ** 2 / 4 * second - step * moments.a + moments.y


def transition_counts(positions) -> np.ndarray:
    """``positions`` as float64 transition counts n ≥ 1, refusing an empty or non-positive list."""
    n = np.asarray(positions, dtype=np.float64)
    if n.ndim != 1 or not len(n) or (n < 1).any():
        raise ValueError(f"positions must be a non-empty list of transition counts >= 1, got {positions!r}")
    return n


def best_step(positions, moments: BlockMoments) -> float:
    """c* minimising Σ_{n ∈ positions} R_n(c): the step a one-layer causal LSA trained there converges to."""
    n = transition_counts(positions)
    return float(2 * moments.a * len(n) / (len(n) * moments.b + (2 * moments.c + moments.b) * (1 / n).sum()))


def complex_gd_risk(step, n, moments: BlockMoments):
    """R^C_n(c) = E‖c·G1 − x_{n+1}‖² of the complex GD step after n ≥ 1 transitions (n = inf: its limit)."""
    step, n = np.asarray(step, dtype=np.float64), np.asarray(n, dtype=np.float64)
    return step ** 2 * (moments.b + moments.c / n) - 2 * step * moments.a + moments.y


def complex_best_step(positions, moments: BlockMoments) -> float:
    """c*_C minimising Σ_{n ∈ positions} R^C_n(c): where the complex layer's product ab converges."""
    n = transition_counts(positions)
    return float(moments.a * len(n) / (len(n) * moments.b + moments.c * (1 / n).sum()))


def complex_curvature(positions, moments: BlockMoments) -> float:
    """d²/dc² of ½ Σ_{n ∈ positions} R^C_n(c), the authors' training loss in c = ab: Σ_n (B + C/n)."""
    n = transition_counts(positions)
    return float(len(n) * moments.b + moments.c * (1 / n).sum())
