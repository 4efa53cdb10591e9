"""Iterative in-context algorithms that transformers have been shown (or argued) to implement.

Same contract as ``icl_sim.theory.baselines``: ``predict(xs, ys)`` takes xs (B, N, d) and
ys (B, N), computes in float64 on the device of ``xs`` and predicts position i from the
context points j < i and the query x_i.  Every prefix is handled at once from prefix
statistics; the only Python loops run over algorithm steps (and, for recursive least
squares, over positions, because the recursion over positions *is* that algorithm).

Notation: G_i = Σ_{j<i} x_j x_jᵀ, b_i = Σ_{j<i} y_j x_j, Ĝ_i = G_i/i, b̂_i = b_i/i (0 at i = 0).
"""
from __future__ import annotations

from typing import Iterator

import torch

from icl_sim.validation import check_float, check_int, checked_floats

from .baselines import (LinearBaseline, PointsOnlyBaseline, StatisticsBaseline, batch_chunks, final, in_eigenbasis,
                        in_eigenbasis_steps, matvec)
from .prefix import outer_products, prefix_mean, prefix_sum


def float64_tensor(name: str, value, ndim: int) -> torch.Tensor:
    """A finite float64 tensor with ``ndim`` dimensions, else ValueError naming ``name``."""
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.ndim != ndim or value.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-d tensor, got shape {tuple(value.shape)}")
    if value.is_complex() or not torch.isfinite(value).all():
        raise ValueError(f"{name} must be real and finite")
    return value.detach().to(torch.float64)


def _check_dim(name: str, value: torch.Tensor, d: int) -> None:
    if value.shape[-1] != d:
        raise ValueError(f"{name} has last dimension {value.shape[-1]}, but xs has d = {d}")


class PreconditionedGD(StatisticsBaseline):
    """``steps`` steps of w ← w − lr·P·(G_i w − b_i)/i from w = 0, per prefix.

    One step gives (lr/i)·P·Σ_{j<i} y_j x_j: the same convention as ``GD``, which is the case
    P = I.  One linear self-attention layer trained on non-isotropic x implements one such
    step with a learned P (Ahn et al. 2023, arXiv 2306.00297; Mahankali et al. 2023,
    arXiv 2307.03576).  ``preconditioner`` is a (d, d) tensor, not necessarily symmetric.
    """

    def __init__(self, steps: int, lr: float, preconditioner: torch.Tensor):
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        preconditioner = float64_tensor("preconditioner", preconditioner, 2)
        if preconditioner.shape[0] != preconditioner.shape[1]:
            raise ValueError(f"preconditioner must be square (d, d), got {tuple(preconditioner.shape)}")
        self.steps, self.lr, self.preconditioner = steps, lr, preconditioner

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return final(self.weight_steps(gram, moment, self.steps), torch.zeros_like(moment))

    def steps_family(self) -> tuple:
        return PreconditionedGD, self.lr, tuple(self.preconditioner.flatten().tolist())

    def weight_steps(self, gram: torch.Tensor, moment: torch.Tensor, steps: int) -> Iterator[torch.Tensor]:
        _check_dim("preconditioner", self.preconditioner, gram.shape[-1])
        return preconditioned_descent_steps(gram, moment, [self.lr * self.preconditioner.to(gram.device)] * steps)


class StepwisePreconditionedGD(StatisticsBaseline):
    """Preconditioned GD with a matrix of its own per step: w ← w − A_t (Ĝ_i w − b̂_i) from w = 0.

    Ahn et al. (2023, Thm. 3) find that layer t of a trained multi-layer LSA is such a step,
    with A_t learned per layer.  ``preconditioners`` (K, d, d) holds A_1, …, A_K (the step size
    folded in); ``PreconditionedGD`` is the constant case A_t = lr·P.
    """

    def __init__(self, preconditioners: torch.Tensor):
        preconditioners = float64_tensor("preconditioners", preconditioners, 3)
        if preconditioners.shape[1] != preconditioners.shape[2]:
            raise ValueError(f"preconditioners must be (K, d, d), got {tuple(preconditioners.shape)}")
        self.preconditioners = preconditioners

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        _check_dim("preconditioners", self.preconditioners, gram.shape[-1])
        return preconditioned_descent(gram, moment, self.preconditioners.to(gram.device))


def preconditioned_descent(gram: torch.Tensor, moment: torch.Tensor, preconditioners) -> torch.Tensor:
    """w ← w − A_t (Ĝ w − b̂) from w = 0 for each matrix A_t in turn: Ĝ (..., d, d), b̂ (..., d) → w (..., d)."""
    return final(preconditioned_descent_steps(gram, moment, preconditioners), torch.zeros_like(moment))


def preconditioned_descent_steps(gram: torch.Tensor, moment: torch.Tensor, preconditioners) -> Iterator[torch.Tensor]:
    """:func:`preconditioned_descent`'s weights after each step in turn."""
    w = torch.zeros_like(moment)
    for step in preconditioners:
        w = w - matvec(step, matvec(gram, w) - moment)
        yield w


class GDPlusPlus(StatisticsBaseline):
    """GD++ (von Oswald et al. 2023, arXiv 2212.07677, Sec. 4): GD steps on inputs that are
    themselves transformed, step by step, by x ← (I − γ Ĝ) x.

    Token-level definition (what ``tests/test_algorithms.py`` loops over literally): for
    position i the tokens are the context (x_j, y_j), j < i, and the query (x_i, 0).  Each of
    the ``steps`` layers reads its input tokens and updates *all* of them at once, the query
    included (the attention reads keys/values from the context tokens only and adds its
    output to every token, as in the authors' code, google-research/self-organising-systems,
    transformers_learn_icl_by_gd/src/transformer.py: ``h = h + attn(h, key=h[:, :-1])``):

        Ĝ = (1/i) Σ_{j<i} x_j x_jᵀ,   m = (1/i) Σ_{j<i} r_j x_j        (r_j: y-entry of token j)
        x ← x − γ Ĝ x                                         (every token, query included)
        r ← r − lr · mᵀx                                      (every token; query's starts at 0)

    and the prediction is minus the query's y-entry.  Both updates use the layer's input x
    (simultaneous, as in one attention layer).  Normalisation: the paper writes
    x ← (I − γ X Xᵀ) x with the un-normalised sum for a fixed context size; with prefixes of
    every size we divide by i, so γ, like lr, is per point and γ = 0 is exactly ``GD``.

    Vectorised form: all x's are mapped by one symmetric T_k (a polynomial in Ĝ_i), so the
    query prediction is x_iᵀ w_k with
        w_{k+1} = w_k + lr T_k² (b̂_i − Ĝ_i w_k),   T_{k+1} = T_k − γ T_k Ĝ_i T_k²,   T_0 = I,
    i.e. preconditioned GD whose preconditioner T_k² ≈ (cĜ_i)⁻¹ is itself built by iteration.
    """

    def __init__(self, steps: int, lr: float, gamma: float):
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        check_float("gamma", gamma)
        self.steps, self.lr, self.gamma = steps, lr, gamma

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return gd_plus_plus(gram, moment, [self.lr] * self.steps, [self.gamma] * self.steps)

    def steps_family(self) -> tuple:
        return GDPlusPlus, self.lr, self.gamma

    def weight_steps(self, gram: torch.Tensor, moment: torch.Tensor, steps: int) -> Iterator[torch.Tensor]:
        return in_eigenbasis_steps(gd_plus_plus_spectral_steps, gram, moment, [self.lr] * steps, [self.gamma] * steps)


class StepwiseGDPlusPlus(StatisticsBaseline):
    """GD++ with its own step size η_t and curvature correction γ_t per step (see ``GDPlusPlus``).

    von Oswald et al. (2023, Sec. 4) compare a K-layer trained transformer with K steps of GD++
    whose per-step parameters are themselves trained on the task.  ``step_sizes`` and
    ``corrections`` are equally long; the last correction acts after the last step and so
    never reaches the prediction.
    """

    def __init__(self, step_sizes, corrections):
        step_sizes = checked_floats("step_sizes", step_sizes)
        corrections = checked_floats("corrections", corrections)
        if len(step_sizes) != len(corrections):
            raise ValueError(f"corrections must have one entry per entry of step_sizes ({len(step_sizes)}), "
                             f"got {len(corrections)}")
        self.step_sizes, self.corrections = step_sizes, corrections

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return gd_plus_plus(gram, moment, self.step_sizes, self.corrections)


def gd_plus_plus(gram: torch.Tensor, moment: torch.Tensor, step_sizes, corrections) -> torch.Tensor:
    """GD++'s weights after one step per (η_t, γ_t): Ĝ (..., d, d), b̂ (..., d) → w (..., d).

    w ← w + η_t T² (b̂ − Ĝ w), then T ← T − γ_t T Ĝ T², from w = 0, T = I (see ``GDPlusPlus``).
    """
    return in_eigenbasis(gd_plus_plus_spectral, gram, moment, step_sizes, corrections)


def gd_plus_plus_spectral(eigenvalues: torch.Tensor, moment: torch.Tensor, step_sizes, corrections) -> torch.Tensor:
    """``gd_plus_plus`` in Ĝ's eigenbasis: T stays a polynomial in Ĝ, so both updates act entry by entry,
    w̃ ← w̃ + η_t t² (b̃ − λ w̃) and t ← t − γ_t λ t³."""
    return final(gd_plus_plus_spectral_steps(eigenvalues, moment, step_sizes, corrections), torch.zeros_like(moment))


def gd_plus_plus_spectral_steps(eigenvalues: torch.Tensor, moment: torch.Tensor, step_sizes,
                                corrections) -> Iterator[torch.Tensor]:
    """:func:`gd_plus_plus_spectral`'s weights after each step in turn."""
    w, transform = torch.zeros_like(moment), torch.ones_like(eigenvalues)
    for size, correction in zip(step_sizes, corrections):
        square = transform * transform
        w = w + size * square * (moment - eigenvalues * w)
        transform = transform - correction * transform * eigenvalues * square
        yield w


class Newton(StatisticsBaseline):
    """Iterative Newton (Newton–Schulz) for the pseudo-inverse of S_i = G_i, then w_k = M_k b_i.

    Fu et al. 2023 ("Transformers learn higher-order optimization methods for in-context
    learning", arXiv 2310.17086, Sec. 3): M_0 = α S, M_{k+1} = 2 M_k − M_k S M_k,
    w_k = M_k Xᵀy, with α = 2/‖S Sᵀ‖_F as in the authors' code (``newton_inv`` in
    DeqingFu/transformers-icl-higher-order; the Frobenius norm, not the spectral norm the
    paper's text suggests).  Here α = ``scale``/‖S Sᵀ‖_F with their scale = 2 by default.
    Every M_k is a polynomial in S and each eigenvalue μ of M_k S follows
    μ ← 1 − (1 − μ)² from μ_0 = αλ² ≤ scale·λ²/λ_max²; for scale < 2, or for S of rank > 1
    (where ‖S Sᵀ‖_F > λ_max²), μ_0 < 2 and M_k → S⁺ quadratically on the range of S.  With
    scale = 2 and a rank-one S (a single context point) μ_0 = 2 maps to 0 and the top
    direction is lost: the authors' algorithm predicts 0 at position 1.  On the null space
    M_0 = 0 and stays 0, so w_k → pinv(X) y, the min-norm OLS solution, also for i < d.

    w_k is invariant to rescaling S, so Ĝ_i = G_i/i and b̂_i are used.  At i = 0, S = 0, w = 0.
    """

    def __init__(self, steps: int, scale: float = 2.0):
        check_int("steps", steps, 0)
        check_float("scale", scale, 0.0, strict=True, maximum=2.0)
        self.steps, self.scale = steps, scale

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return in_eigenbasis(newton_spectral, gram, moment, self.steps, self.scale)

    def steps_family(self) -> tuple:
        return Newton, self.scale

    def weight_steps(self, gram: torch.Tensor, moment: torch.Tensor, steps: int) -> Iterator[torch.Tensor]:
        return in_eigenbasis_steps(newton_spectral_steps, gram, moment, steps, self.scale)


def newton_spectral(eigenvalues: torch.Tensor, moment: torch.Tensor, steps: int, scale: float) -> torch.Tensor:
    """``Newton`` in S's eigenbasis: every M_k is a polynomial in S, so each eigenvalue m of M_k follows
    m ← 2m − λm² from m_0 = αλ, with α = scale/‖S Sᵀ‖_F = scale/√(Σλ⁴); O(d) per step after one eigh,
    where the matrix iteration costs two d × d products per step (benchmarks/bench_prefix_solvers.py)."""
    return final(newton_spectral_steps(eigenvalues, moment, steps, scale), _newton_start(eigenvalues, scale) * moment)


def newton_spectral_steps(eigenvalues: torch.Tensor, moment: torch.Tensor, steps: int,
                          scale: float) -> Iterator[torch.Tensor]:
    """:func:`newton_spectral`'s weights M_k b̃ after steps 1..``steps`` in turn."""
    m = _newton_start(eigenvalues, scale)
    for _ in range(steps):
        m = 2 * m - eigenvalues * m * m
        yield m * moment


def _newton_start(eigenvalues: torch.Tensor, scale: float) -> torch.Tensor:
    """M_0's eigenvalues αλ, α = scale/‖S Sᵀ‖_F = scale/√(Σλ⁴) (0 for S = 0)."""
    norm = eigenvalues.square().square().sum(dim=-1).sqrt()
    return torch.where(norm > 0, scale / torch.where(norm > 0, norm, 1.0), 0.0)[..., None] * eigenvalues


class RecursiveLeastSquares(LinearBaseline):
    """Ridge (G_i + λI)⁻¹ b_i for every prefix, computed online by Sherman–Morrison (RLS).

    P_0 = I/λ, w_0 = 0; for each point j: k = P_j x_j/(1 + x_jᵀP_j x_j),
    w_{j+1} = w_j + k (y_j − x_jᵀw_j), P_{j+1} = P_j − k x_jᵀP_j, so P_i = (G_i + λI)⁻¹
    (Haykin, Adaptive Filter Theory, ch. 10; Akyürek et al. 2023, arXiv 2211.15661, compare
    transformers with it).  All prefixes cost O(N d²) per prompt instead of O(N d³).  This
    loops over the N positions in Python, by design: the recursion over positions is the
    algorithm; each iteration is batched (B, d, d) work.  Use ``Ridge`` for the same numbers
    without the loop.
    """

    def __init__(self, lam: float):
        check_float("lam", lam, 0.0, strict=True)
        self.lam = lam

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        batch, n, d = xs.shape
        p = torch.eye(d, dtype=xs.dtype, device=xs.device).repeat(batch, 1, 1) / self.lam
        w = xs.new_zeros(batch, d)
        out = xs.new_zeros(batch, n, d)
        for j in range(n):
            out[:, j] = w
            x = xs[:, j]
            px = matvec(p, x)
            gain = px / (1 + (x * px).sum(-1, keepdim=True))
            w = w + gain * (ys[:, j] - (x * w).sum(-1))[:, None]
            p = p - gain[:, :, None] * px[:, None, :]
            p = (p + p.mT) / 2
        return out


class DiscreteMMSE(LinearBaseline):
    """Posterior mean of w over a finite task pool (Raventós et al. 2023, arXiv 2306.15063).

    Prior: uniform over the rows w_m of ``pool`` (M, d); likelihood y_j = w_mᵀx_j + N(0, noise²).
    w_i = Σ_m w_m softmax_m(−‖y_{<i} − X_{<i} w_m‖²/(2 noise²)), from cumulative squared
    residuals (B, N, M) normalised with logsumexp; at i = 0 it is the pool mean.
    """

    def __init__(self, pool: torch.Tensor, noise: float):
        self.pool = float64_tensor("pool", pool, 2)
        check_float("noise", noise, 0.0, strict=True)
        self.noise = noise

    #: the batch is split so that each (B, N, M) residual tensor stays under this many elements
    chunk_elements = 2 ** 22

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        _check_dim("pool", self.pool, xs.shape[-1])
        pool = self.pool.to(xs.device)
        chunk = max(1, self.chunk_elements // (xs.shape[1] * pool.shape[0]))
        return torch.cat([self._posterior_mean(x, y, pool) for x, y in zip(xs.split(chunk), ys.split(chunk))])

    def _posterior_mean(self, xs: torch.Tensor, ys: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
        residuals = ys[..., None] - xs @ pool.T  # (B, N, M)
        logits = -prefix_sum((residuals / self.noise) ** 2) / 2  # noise² itself may overflow a Python float
        return torch.softmax(logits, dim=-1) @ pool


class PowerMethod(PointsOnlyBaseline):
    """Top principal direction of the context points x_{<i} by ``steps`` power iterations on G_i.

    Start: the normalised all-ones vector u = 1/√d; step: v ← Ĝ_i v/‖Ĝ_i v‖.  So
    v_k = G_i^k u/‖G_i^k u‖, and since G_i is positive semi-definite, uᵀv_k = uᵀG_i^k u/‖G_i^k u‖ ≥ 0:
    the sign is fixed by a non-negative inner product with the start vector (no flip is
    applied).  Where Ĝ_i v = 0 (i = 0, or every context point orthogonal to v) the direction
    stays the previous v (u at i = 0).  Convergence needs the start vector not orthogonal to
    the top eigenvector, and is at rate (λ₂/λ₁)^k.  Uncentred (the PCA of the second-moment
    matrix, as in the PCA task).

    ``directions(xs)`` and ``predict(xs, ys)`` (ys ignored, any shape) return (B, N, d) unit
    vectors; ``directions[:, i]`` depends on xs[:, :i] only.
    """

    def __init__(self, steps: int):
        check_int("steps", steps, 0)
        self.steps = steps

    def directions(self, xs: torch.Tensor) -> torch.Tensor:
        """Unit vectors (B, N, d): the k-th power iterate of each prefix."""
        return self.predict(xs)

    def _predict_points(self, xs: torch.Tensor) -> torch.Tensor:
        return torch.cat([self._chunk_directions(chunk) for (chunk,) in batch_chunks(xs)])

    def _chunk_directions(self, xs: torch.Tensor) -> torch.Tensor:
        """``directions`` of a chunk whose prefix second-moment matrices (B, N, d, d) are cache-sized."""
        gram = prefix_mean(outer_products(xs))
        d = xs.shape[-1]
        v = torch.full(xs.shape, d ** -0.5, dtype=xs.dtype, device=xs.device)
        for _ in range(self.steps):
            image = matvec(gram, v)
            norm = torch.linalg.vector_norm(image, dim=-1, keepdim=True)
            v = torch.where(norm > 0, image / torch.where(norm > 0, norm, 1.0), v)
        return v


