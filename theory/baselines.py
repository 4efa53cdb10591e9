"""Closed-form in-context baselines: each predicts every position from its prefix alone.

Every baseline has ``predict(xs, ys) -> preds``: ``xs`` (B, N, d) and ``ys`` (B, N)
of any float dtype on any device give float64 predictions (B, N) on the device of
``xs``, where ``preds[:, i]`` uses only the context points j < i and the query
``xs[:, i]``.  All positions are computed at once from prefix statistics
(``icl_sim.theory.prefix``); nothing loops over batch elements or positions.
"""
from __future__ import annotations

import abc
import math
from typing import Callable, ClassVar, Iterator

import torch

from icl_sim.predictor import check_prompt, replicated_query_predictor
from icl_sim.validation import check_float, check_int, checked_floats

from .prefix import (as_float64, context_mask, context_statistics, label_moments, least_squares_statistics,
                     masked_designs, outer_products, prefix_counts, prefix_mean, prefix_sum)

#: the least λ of ``Ridge.oracle`` (prompts drawn with σ = 0)
ORACLE_MIN_LAMBDA = 1e-12
#: OLS splits the batch so that its (B, N, N, d) masked designs stay under this many bytes.
CHUNK_BYTES = 2 ** 28
#: Ridge and the GD family split the batch so that each all-prefix (B, N, d, d) tensor stays under this many bytes:
#: 1 MB, within a core's cache (16 MB made Ridge 0.45-0.54x the per-prefix loop at B = 256, 1 MB 1.25x; RESULTS.md)
PREFIX_CHUNK_BYTES = 2 ** 20


def batch_chunks(xs: torch.Tensor, *tensors: torch.Tensor):
    """Split xs (B, N, d) and tensors with the same leading B into chunks whose (B, N, d, d) stays under
    ``PREFIX_CHUNK_BYTES``: bounded memory (and no page faults on fresh GB-sized tensors)."""
    _, n, d = xs.shape
    chunk = max(1, PREFIX_CHUNK_BYTES // max(1, n * d * d * xs.element_size()))
    return zip(xs.split(chunk), *(t.split(chunk) for t in tensors))


class Baseline(abc.ABC):
    """Common contract: check the prompt (``check_prompt``), cast to float64, predict in float64; ``repr`` shows
    the parameters.

    Hyper-parameters are checked alike in every constructor: step counts are integers >= 0 (0 steps: the
    iteration's start), a constant step size ``lr``, a regulariser ``lam`` and a noise level are > 0, and
    anything else is finite, per-step parameters included (``step_tuning`` fits them freely: its K-step runs
    start from a null step).
    """

    #: whether ``preds[:, i]`` is a symmetric function of the context pairs (x_j, y_j), j < i: permuting them
    #: leaves it unchanged.  False for learners whose answer depends on the order by design.
    order_invariant: ClassVar[bool] = True

    def predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        check_prompt(xs, ys)
        return self._predict(*as_float64(xs, ys))

    @abc.abstractmethod
    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Predictions (B, N) from float64 inputs."""

    def query_predictor(self, xs: torch.Tensor, ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """The baseline with its context (xs, ys) fixed: queries (B, Q, d) -> [predictions (B, Q[, k])].

        The same contract as a model's ``query_predictor`` (one "layer"); by default every query
        gets its own copy of the context.
        """
        return replicated_query_predictor(lambda prompt_xs, prompt_ys: [self.predict(prompt_xs, prompt_ys)], xs, ys)

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({params})"


class PointsOnlyBaseline(Baseline):
    """A baseline that reads only the points x (a principal direction, say): ``ys`` may be omitted.

    ``predict(xs)`` returns ``_predict_points`` of the float64 points, (B, N, ...) per position.
    """

    def predict(self, xs: torch.Tensor, ys: torch.Tensor | None = None) -> torch.Tensor:
        check_prompt(xs, None)
        return self._predict_points(xs.to(torch.float64))

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return self._predict_points(xs)

    @abc.abstractmethod
    def _predict_points(self, xs: torch.Tensor) -> torch.Tensor:
        """Predictions from float64 points alone."""


class LinearBaseline(Baseline):
    """A baseline that fits weights w_i to each prefix and predicts x_iᵀ w_i."""

    def weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The fitted weights w_i for every position, (B, N, d) float64."""
        check_prompt(xs, ys)
        return self._weights(*as_float64(xs, ys))

    @abc.abstractmethod
    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Weights (B, N, d) from float64 inputs."""

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return (xs * self._weights(xs, ys)).sum(dim=-1)

    def query_predictor(self, xs: torch.Tensor, ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """The context's weights w, fitted once; a query x predicts xᵀw."""
        return linear_query_predictor(self._context_weights(*as_float64(xs, ys)))

    def _context_weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Weights (B, d) fitted to the whole context: those of a query placed after it."""
        query_slot = (xs.new_zeros(xs.shape[0], 1, xs.shape[-1]), ys.new_zeros(ys.shape[0], 1))
        return self._weights(torch.cat([xs, query_slot[0]], dim=1), torch.cat([ys, query_slot[1]], dim=1))[:, -1]


class StatisticsBaseline(LinearBaseline):
    """A linear baseline whose weights depend on the context through Ĝ and b̂ alone: the GD family.

    ``_from_statistics(gram, moment)`` maps Ĝ (..., d, d), b̂ (..., d) to w (..., d); applied to
    every prefix at once (``least_squares_statistics``) or to one whole context
    (``context_statistics``), which is all a query predictor needs.
    """

    @abc.abstractmethod
    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        """Weights from the least-squares statistics, for any leading batch shape."""

    def steps_family(self) -> tuple | None:
        """What this predictor shares with the same algorithm at other step counts (its class and settings but
        ``steps``), or None.  An iterative predictor that gives one also defines ``weight_steps(gram, moment,
        steps)``: the weights after steps 1..``steps``, each from the one before, so that the K-step predictors
        of one family cost K steps together, not K(K + 1)/2."""
        return None

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return torch.cat([self._from_statistics(*least_squares_statistics(x, y)) for x, y in batch_chunks(xs, ys)])

    def _context_weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return self._from_statistics(*context_statistics(xs, ys))

    def statistics_query_predictor(self, gram: torch.Tensor, moment: torch.Tensor
                                   ) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """``query_predictor`` of a context given by its statistics Ĝ (B, d, d), b̂ (B, d) (``context_statistics``):
        callers that try many predictors on one context compute them once."""
        return linear_query_predictor(self._from_statistics(gram, moment))


def linear_query_predictor(weights: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
    """Queries (B, Q, d) -> [xᵀw per query (B, Q)] for weights w (B, d)."""
    return lambda queries: [(queries.to(weights) * weights[:, None]).sum(dim=-1)]


class Zero(Baseline):
    """Predicts 0 everywhere: the trivial baseline, whose error is the variance of y."""

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(ys)


class Averaging(LinearBaseline):
    """w_i = (1/i) Σ_{j<i} y_j x_j: Garg et al.'s averaging baseline (one GD step with lr 1)."""

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return prefix_mean(label_moments(xs, ys))


class GD(StatisticsBaseline):
    """``steps`` GD steps from w = 0 on (1/2i) Σ_{j<i} (wᵀx_j − y_j)², as linear attention does.

    The step is w ← w − lr·(G_i w − b_i)/i (von Oswald et al. 2023, arXiv 2212.07677, Prop. 1:
    one linear self-attention layer is one such step), so one step gives (lr/i) Σ_{j<i} y_j x_j.
    ``weights`` runs the iteration; ``closed_form_weights`` evaluates
    w_k = (I − (I − (lr/i) G_i)^k) G_i⁺ b_i directly.
    """

    def __init__(self, steps: int, lr: float):
        check_int("steps", steps, 0)
        check_float("lr", lr, 0.0, strict=True)
        self.steps, self.lr = steps, lr

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return gradient_descent(gram, moment, [self.lr] * self.steps)

    def steps_family(self) -> tuple:
        return GD, self.lr

    def weight_steps(self, gram: torch.Tensor, moment: torch.Tensor, steps: int) -> Iterator[torch.Tensor]:
        return gradient_descent_steps(gram, moment, [self.lr] * steps)

    def closed_form_weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """w_k = (I − (I − lr Ĝ_i)^k) Ĝ_i⁺ b̂_i with Ĝ_i = G_i/i, b̂_i = b_i/i, (B, N, d) float64.

        Evaluated in the eigenbasis Ĝ_i = V diag(λ) Vᵀ as V diag(f(λ)) Vᵀ b̂_i with
        f(λ) = (1 − (1 − lr λ)^k)/λ = lr Σ_{m<k} (1 − lr λ)^m, whose value at λ = 0 is k·lr.
        b̂_i lies in the range of Ĝ_i, so what f does on the null space does not matter
        (rounding leaves |λ| ~ eps there and f stays bounded by k·lr).  For lr·λ < 1/2,
        f = −expm1(k·log1p(−lr λ))/λ avoids cancellation when lr λ is tiny.
        """
        gram, moment = least_squares_statistics(*as_float64(xs, ys))
        lam, vecs = torch.linalg.eigh(gram)
        step, k = self.lr * lam, float(self.steps)
        small = step < 0.5
        safe_small = torch.where(small, step, 0.0)
        ratio = torch.where(lam == 0, 1.0, lam)
        from_log = -torch.expm1(k * torch.log1p(-safe_small)) / ratio
        direct = (1 - (1 - step) ** self.steps) / ratio
        f = torch.where(small, from_log, direct)
        f = torch.where(step == 0, k * self.lr, f)
        coeffs = f * (vecs.mT @ moment[..., None]).squeeze(-1)
        return (vecs @ coeffs[..., None]).squeeze(-1)


class StepwiseGD(StatisticsBaseline):
    """GD from w = 0 with its own step size per step, η_1, …, η_k, on the same loss as ``GD``.

    Ahn et al. (2023) find that each layer of a trained multi-layer LSA takes a step of its
    own; ``GD`` is the constant case.
    """

    def __init__(self, step_sizes):
        self.step_sizes = checked_floats("step_sizes", step_sizes)

    def _from_statistics(self, gram: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
        return gradient_descent(gram, moment, self.step_sizes)


def matvec(matrix: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """A v for a matrix (d, d) shared by every vector (..., d), or one matrix per vector (..., d, d).

    A shared matrix is one GEMM over all vectors.  Per-vector matrices (a Gram matrix per prefix) are
    a product and a sum over the last axis, vectorised over the whole batch: a batched ``A @ v`` pays a
    kernel's overhead for each tiny d × d product (GD(100) over all prefixes, B = 1280, N = 41, d = 20,
    one thread: 1.9-2.1 s against 3.2-4.1 s).
    """
    if matrix.ndim == 2:
        return vector @ matrix.mT
    return (matrix * vector[..., None, :]).sum(dim=-1)


def gradient_descent(gram: torch.Tensor, moment: torch.Tensor, step_sizes) -> torch.Tensor:
    """w ← w − η_t (Ĝ w − b̂) from w = 0, each step size in turn: Ĝ (..., d, d), b̂ (..., d) → w (..., d).

    A matrix-vector product per step (:func:`matvec`), cheaper than an eigendecomposition for a few steps.
    """
    return final(gradient_descent_steps(gram, moment, step_sizes), torch.zeros_like(moment))


def gradient_descent_steps(gram: torch.Tensor, moment: torch.Tensor, step_sizes) -> Iterator[torch.Tensor]:
    """:func:`gradient_descent`'s weights after each step in turn."""
    w = torch.zeros_like(moment)
    for size in step_sizes:
        w = w - size * (matvec(gram, w) - moment)
        yield w


def final(weights: Iterator[torch.Tensor], start: torch.Tensor) -> torch.Tensor:
    """The last weights an iteration yields; ``start`` if it takes no step."""
    for start in weights:
        pass
    return start


def gradient_descent_spectral(eigenvalues: torch.Tensor, moment: torch.Tensor, step_sizes) -> torch.Tensor:
    """``gradient_descent`` in Ĝ's eigenbasis, where every step acts entry by entry: w̃ ← w̃ − η_t (λ w̃ − b̃).

    O(d) per step once Ĝ is decomposed: what step tuning, thousands of runs on one Ĝ, needs.
    Differentiable in the step sizes (floats or 0-d tensors).
    """
    w = torch.zeros_like(moment)
    for size in step_sizes:
        w = w - size * (eigenvalues * w - moment)
    return w


def in_eigenbasis(iteration, gram: torch.Tensor, moment: torch.Tensor, *parameters) -> torch.Tensor:
    """Run ``iteration(λ, Vᵀb̂, *parameters)`` in Ĝ = V diag(λ) Vᵀ's eigenbasis and rotate its weights back.

    For algorithms whose every operator is a polynomial in Ĝ (GD, GD++): there each step costs
    O(d) after one O(d³) decomposition.
    """
    eigenvalues, vectors = torch.linalg.eigh(gram)
    rotated = (vectors.mT @ moment[..., None]).squeeze(-1)
    return (vectors @ iteration(eigenvalues, rotated, *parameters)[..., None]).squeeze(-1)


def in_eigenbasis_steps(iteration_steps, gram: torch.Tensor, moment: torch.Tensor,
                        *parameters) -> Iterator[torch.Tensor]:
    """:func:`in_eigenbasis` for an iteration that yields its weights step by step, each rotated back."""
    eigenvalues, vectors = torch.linalg.eigh(gram)
    rotated = (vectors.mT @ moment[..., None]).squeeze(-1)
    for weights in iteration_steps(eigenvalues, rotated, *parameters):
        yield (vectors @ weights[..., None]).squeeze(-1)


class Ridge(LinearBaseline):
    """w_i = (G_i + lam I)⁻¹ b_i, the Bayes-optimal predictor under a Gaussian prior (lam = σ²/τ²).

    ``lam`` is one number for every prompt, or a 1-D tensor of one positive λ per prompt (B,):
    the oracle ridge of mixed-noise tasks, λ = σ²/s² with each prompt's own σ (Vladymyrov et al.
    2024, arXiv 2402.14180; :meth:`oracle`).  A per-prompt λ only fits batches of that size.
    """

    def __init__(self, lam):
        if isinstance(lam, torch.Tensor):
            if lam.ndim != 1 or lam.numel() == 0 or not bool(torch.isfinite(lam).all()) or not bool((lam > 0).all()):
                raise ValueError(f"lam must be a positive finite number or a 1-D tensor of them (one per prompt), "
                                 f"got a tensor of shape {tuple(lam.shape)}")
            lam = lam.detach().to(torch.float64)
        else:
            check_float("lam", lam, 0.0, strict=True)
        self.lam = lam

    @classmethod
    def oracle(cls, noise: torch.Tensor, prior_scale: float) -> Ridge:
        """Ridge(σ_b²/s²) with each prompt's own noise σ_b (``prompt.latent["noise"]``, (B,)): the posterior
        mean of every prompt when its σ is known, w ~ N(0, s² I) (the oracle of Vladymyrov et al. 2024).

        λ is floored at ``ORACLE_MIN_LAMBDA`` (a σ drawn as 0 would make the prefixes shorter than d
        singular); on a prefix of at least d points that changes the prediction by O(1e-12)."""
        check_float("prior_scale", prior_scale, 0.0, strict=True)
        if not isinstance(noise, torch.Tensor) or noise.ndim != 1:
            raise ValueError(f"noise must be a 1-D tensor of per-prompt σ, got {noise!r}")
        return cls((noise.to(torch.float64) ** 2 / prior_scale ** 2).clamp(min=ORACLE_MIN_LAMBDA))

    @classmethod
    def bayes_optimal(cls, noise: float, prior_scale: float) -> Ridge:
        """Ridge(noise²/prior_scale²): the posterior mean for w ~ N(0, prior_scale² I), y = wᵀx + N(0, noise²).

        ``noise`` is the label-noise standard deviation and ``prior_scale`` the standard deviation
        of each entry of w (Akyürek et al. 2023, arXiv 2211.15661; Raventós et al. 2023,
        arXiv 2306.15063).  noise = 0 is rejected: its limit is OLS (min-norm), not a Ridge.
        """
        check_float("noise", noise, 0.0, strict=True)
        check_float("prior_scale", prior_scale, 0.0, strict=True)
        ratio = noise / prior_scale
        lam = ratio * ratio  # inf or 0 where ** would raise OverflowError
        if not 0 < lam < math.inf:
            raise ValueError(f"noise / prior_scale = {noise:g} / {prior_scale:g} puts the Bayes λ = (noise / "
                             f"prior_scale)² outside the floats; rescale noise and prior_scale")
        return cls(lam)

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        lam = self.lam
        if isinstance(lam, torch.Tensor):
            if lam.shape[0] != xs.shape[0]:
                raise ValueError(f"a per-prompt lam holds {lam.shape[0]} values, the batch {xs.shape[0]} prompts")
            lam = lam.to(device=xs.device, dtype=xs.dtype)[:, None, None, None]
        else:
            lam = xs.new_full((xs.shape[0], 1, 1, 1), float(lam))
        return torch.cat([self._solve(x, y, l) for x, y, l in batch_chunks(xs, ys, lam)])

    @staticmethod
    def _solve(xs: torch.Tensor, ys: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(xs.shape[-1], dtype=xs.dtype, device=xs.device)
        gram, moment = prefix_sum(outer_products(xs)), prefix_sum(label_moments(xs, ys))[..., None]
        factor, info = torch.linalg.cholesky_ex(gram + lam * eye)
        # two triangular solves: the same substitutions as cholesky_solve, whose batched kernel is 4x slower here
        forward = torch.linalg.solve_triangular(factor, moment, upper=False)
        weights = torch.linalg.solve_triangular(factor.mT, forward, upper=True).squeeze(-1)
        singular = info != 0  # λ below the rounding of a rank-deficient G_i: G_i + λI is singular in floating point
        if bool(singular.any()):
            each = lam.expand_as(gram[..., :1, :1])
            weights[singular] = _range_ridge(gram[singular], moment[singular], each[singular])
        return weights


def _range_ridge(gram: torch.Tensor, moment: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """(G + λI)⁻¹ b on G's numerical range (eigenvalues above eps·d·μ_max), for G (F, d, d), b (F, d, 1), λ (F, 1, 1).

    b = Σ y_j x_j lies in the range of G, where this is ridge exactly; on the null space ridge gives 0.  It serves
    the λ too small for a Cholesky of G + λI (a prefix shorter than d at a λ near 0: there ridge is OLS).
    """
    eigenvalues, vectors = torch.linalg.eigh(gram)
    kept = eigenvalues > torch.finfo(gram.dtype).eps * gram.shape[-1] * eigenvalues[..., -1:]
    shrunk = torch.where(kept, eigenvalues + lam[..., 0], 1.0)
    coefficients = torch.where(kept, (vectors.mT @ moment).squeeze(-1) / shrunk, 0.0)
    return (vectors @ coefficients[..., None]).squeeze(-1)


class OLS(LinearBaseline):
    """w_i = pinv(X_{<i}) y_{<i}: minimum-norm least squares, optimal for noiseless linear data.

    Semantics: those of ``numpy.linalg.lstsq(rcond=None)`` on every prefix, i.e. an SVD of X_{<i}
    keeping singular values above eps·max(i, d)·s_max (``_min_norm``, the reference path).

    Method (all prefixes of a prompt from one small factorisation, no per-prefix SVD):

    * i ≤ d (min-norm): one Householder QR of X_{<d}ᵀ gives X_{<d} = L Qᵀ with L lower
      triangular, and the leading block L_i = L[:i, :i] factors every shorter prefix,
      X_{<i} = L_i Q[:, :i]ᵀ.  Forward substitution is prefix-consistent, so z = L⁻¹ y_{<d}
      once gives w_i = Σ_{c<i} z_c q_c for every i ≤ d: a cumulative sum.  Backward stable
      (error ~ cond(X_{<i})·eps, as an SVD), O(d³) per prompt instead of O(N d³).
    * i = d + m > d: with t = X_{<d} w and Z = X_{d:} X_{<d}⁻¹ the problem is
      min_t ‖t − y_{<d}‖² + ‖Z_m t − y_{d:d+m}‖², solved by t_m = y_{<d} + Z_mᵀ K_m⁻¹ r_m, where
      r = y_{d:} − X_{d:} w_d is the residual of the square solution on the later points and
      K_m = I + Z_m Z_mᵀ is the leading m × m block of K = I + Z Zᵀ = C Cᵀ.  Forward substitution
      is prefix-consistent here too: Z_mᵀ K_m⁻¹ r_m = Σ_{c<m} s_c y_c with s = C⁻¹ r and y_c the
      rows of Y = C⁻¹ Z, so all prefixes' t_m are one more cumulative sum; w = X_{<d}⁻¹ t_m.
      Then one step of iterative refinement with the residuals y_{<i} − X_{<i} w_i computed
      from the data (corrected semi-normal equations, Björck 1987) and the same factors,
      G_i⁻¹ = X_{<d}⁻¹ (I − Y_mᵀ Y_m) X_{<d}⁻ᵀ; prompts whose last correction is still above
      ``OLS.REFINE_TOL`` (relative) get up to ``OLS.MAX_REFINEMENTS`` steps in all.  All of it
      runs in Q's basis, where the first d points are the rows of L: residuals and corrections
      then use the same factors, and the steps converge (to the solution for the data L Qᵀ
      represents, within rounding of X) even for prompts as ill-conditioned as κ ~ 1e8.
    * Certificates, per prompt, else that prompt takes the SVD path: every factor finite;
      κ_i = ‖X_{<i}‖_F ‖L_i⁻¹‖_F ≥ cond(X_{<i}) below ``OLS.CUTOFF_MARGIN``/(eps·max(i, d)) for
      every prefix (s_min(X_{<i}) ≥ s_min(X_{<d}) for i > d), so lstsq's cut-off drops no
      singular value; and the refinement converged.  Rank-deficient prompts (points in a
      subspace, repeated or zero points among the first d) therefore get exactly the SVD answer.

    Why this route (``benchmarks/bench_prefix_solvers.py``, ``benchmarks/RESULTS.md``; B = 1280,
    N = 41, d = 20, float64): against a loop of batched ``torch.linalg.lstsq`` (gelsd) calls, one
    per prefix, an SVD of every masked N × d design was ~10× slower; per-prefix Cholesky of the
    cumulative Gram matrices (B·N factorisations plus a (B, N, d, d) cumulative sum, 170 MB)
    spent ~0.25 s in batched ``cholesky`` and ~0.6 s in page faults of the cumsum on this
    machine; recursive least squares is a Python loop over positions with (B, d, d) updates and
    no error control.  This route costs one QR, one Cholesky, two triangular solves and about a
    dozen batched d × d products per prompt, on (B, N, d)-sized tensors only; solving all i > d
    through zero-padded triangular solves with N − d right-hand sides instead of the cumulative
    sums took 1.5× the time.  Its max relative deviation from per-prefix lstsq is ~4e-12
    (weights, normwise) on Gaussian prompts, worst at i = d; ~2e-10 for i > d without the
    refinement step and ~3e-13 with it.
    """

    #: κ_i·eps·max(i, d) must stay below 1/CUTOFF_MARGIN for the fast path (else SVD)
    CUTOFF_MARGIN = 1e3
    #: a prompt's refinement has converged when its largest correction is below this, relative to w
    REFINE_TOL = 1e-11
    #: refinement steps at most (the first for every prompt, the rest for unconverged prompts)
    MAX_REFINEMENTS = 3
    #: the batch is factored in chunks whose (B, N, d) tensors stay under this many bytes: 2 MB, cache-sized
    #: (1.3-1.5x faster than one chunk of B = 1280, N = 41, d = 20 here; far smaller chunks pay Python overheads)
    FACTOR_CHUNK_BYTES = 2 ** 21

    def _weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        _, n, d = xs.shape
        chunk = max(1, self.FACTOR_CHUNK_BYTES // (n * d * xs.element_size()))
        return torch.cat([self._chunk_weights(x, y) for x, y in zip(xs.split(chunk), ys.split(chunk))])

    def _chunk_weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """Weights (B, N, d) of one chunk: factored, and by SVD for the prompts the factors do not certify."""
        weights, certified = self._factored(xs, ys)
        if not bool(certified.all()):
            rest = (~certified).nonzero().squeeze(-1)
            weights[rest] = self._svd_weights(xs[rest], ys[rest])
        return weights

    def _svd_weights(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        _, n, d = xs.shape
        chunk = max(1, CHUNK_BYTES // max(1, n * n * d * xs.element_size()))
        return torch.cat([self._min_norm(*masked_designs(x, y))
                          for x, y in zip(xs.split(chunk), ys.split(chunk))])

    def _factored(self, xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights (B, N, d) by the nested factorisations, and whether each prompt is certified (B,)."""
        batch, n, d = xs.shape
        k = min(n, d)
        first = xs[:, :k]
        q, r = torch.linalg.qr(first.mT)  # X_{<k} = L Qᵀ with L = Rᵀ
        eye = torch.eye(k, dtype=xs.dtype, device=xs.device)
        inverse = torch.linalg.solve_triangular(r.mT, eye.expand(batch, k, k), upper=False)
        z = (inverse @ ys[:, :k, None]).squeeze(-1)
        square = (z[:, None, :] * q).cumsum(dim=-1).mT  # row i − 1: w_i, i = 1, …, k
        certified = self._well_conditioned(xs, inverse) & torch.isfinite(z).all(dim=1)
        parts = [xs.new_zeros(batch, 1, d), square[:, :n - 1]]
        if n - 1 > d:
            later, converged = self._overdetermined(xs, ys, q, r.mT, inverse, z)
            parts.append(later)
            certified &= converged
        return torch.cat(parts, dim=1), certified

    def _well_conditioned(self, xs: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
        """Whether κ_i·eps·max(i, d) < 1/``CUTOFF_MARGIN`` for every prefix i ≥ 1 of each prompt (B,).

        κ_i = ‖X_{<i}‖_F ‖L_i⁻¹‖_F ≥ cond(X_{<i}): ‖L_i⁻¹‖_F is a leading block's norm (a cumulative
        sum over the rows of L⁻¹), kept at its i = d value beyond; ‖X_{<i}‖_F a prefix norm.
        """
        _, n, d = xs.shape
        inverse_norms = inverse.square().sum(-1).cumsum(-1).sqrt()
        beyond = max(0, n - 1 - inverse.shape[-1])
        inverse_norms = torch.cat([inverse_norms[:, :n - 1], inverse_norms[:, -1:].expand(-1, beyond)], dim=1)
        data_norms = xs[:, :n - 1].square().sum(-1).cumsum(-1).sqrt()
        sizes = torch.arange(1, n, dtype=xs.dtype, device=xs.device).clamp(min=d)
        eps = torch.finfo(xs.dtype).eps
        return (inverse_norms * data_norms * eps * sizes * self.CUTOFF_MARGIN < 1).all(dim=1)

    def _overdetermined(self, xs: torch.Tensor, ys: torch.Tensor, q: torch.Tensor, lower: torch.Tensor,
                        inverse: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights (B, N−1−d, d) of the prefixes i = d+1, …, N−1, and whether each prompt converged (B,).

        Computed in Q's basis, u = Qᵀw, where the first d points are the rows of L (``lower``, with
        ``inverse`` L⁻¹) and the later ones those of X_{d:} Q; there u_d = z = L⁻¹ y_{<d}.
        """
        _, n, d = xs.shape
        extra = n - 1 - d
        later = xs[:, d:n - 1] @ q
        z_later = later @ inverse  # Z = X_{d:} X_{<d}⁻¹
        eye = torch.eye(extra, dtype=xs.dtype, device=xs.device)
        factor, info = torch.linalg.cholesky_ex(torch.baddbmm(eye, z_later, z_later.mT))  # K = I + Z Zᵀ = C Cᵀ
        y_rows = torch.linalg.solve_triangular(factor, z_later, upper=False)  # Y = C⁻¹ Z
        s = torch.linalg.solve_triangular(factor, ys[:, d:n - 1, None] - later @ z[..., None], upper=False)
        t = (s * y_rows).cumsum(dim=1) + ys[:, None, :d]  # row m − 1: t_m of prefix i = d + m
        rotated = inverse @ t.mT  # column m − 1: u_{d+m} = L⁻¹ t_m
        # keep[j, m − 1]: whether point j is in prefix i = d + m (j < d + m)
        keep = torch.ones(n - 1, extra, dtype=xs.dtype, device=xs.device).triu(diagonal=-d)
        system = (torch.cat([lower, later], dim=1), ys[:, :n - 1, None], inverse, y_rows)
        rotated, converged = self._refine(system, keep, rotated, self.MAX_REFINEMENTS)
        return (q @ rotated).mT, converged & (info == 0) & torch.isfinite(rotated).all(dim=(1, 2))

    def _refine(self, system: tuple[torch.Tensor, ...], keep: torch.Tensor, rotated: torch.Tensor,
                steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Weights u = Qᵀw (B, d, N−1−d) refined ``steps`` times at most, and whether each prompt converged (B,).

        One step, in Q's basis where the points are the rows of A = [L; X_{d:} Q]: residuals
        r_i = y_{<i} − A_{<i} u_i from the data, gradients g_i = A_{<i}ᵀ r_i, and u_i += L⁻¹ (h − Y_mᵀ Y_m h)
        with h = L⁻ᵀ g_i (see ``OLS``).  Further steps run on the prompts not yet converged only.
        """
        design, targets, inverse, y_rows = system
        d = rotated.shape[1]
        residual = torch.baddbmm(targets, design, rotated, alpha=-1).mul_(keep)
        h = inverse.mT @ (design.mT @ residual)
        correction = inverse @ torch.baddbmm(h, y_rows.mT, (y_rows @ h) * keep[d:], alpha=-1)
        rotated = rotated + correction
        converged = (correction.square().sum(1) <= self.REFINE_TOL ** 2 * rotated.square().sum(1)).all(dim=1)
        if steps == 1 or bool(converged.all()):
            return rotated, converged
        rest = (~converged).nonzero().squeeze(-1)
        part, part_converged = self._refine(tuple(t[rest] for t in system), keep, rotated[rest], steps - 1)
        return rotated.index_put((rest,), part), converged.index_put((rest,), part_converged)

    @staticmethod
    def _min_norm(designs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """pinv(X_i) y_i for designs (B, N, N, d) and targets (B, N, N), as (B, N, d): the SVD reference path."""
        u, s, vh = torch.linalg.svd(designs, full_matrices=False)
        rows, d = designs.shape[-2:]
        size = torch.arange(rows, dtype=s.dtype, device=s.device).clamp(min=d)  # max(i, d)
        kept = s > torch.finfo(s.dtype).eps * size[:, None] * s[..., :1]
        projections = (u.mT @ targets[..., None]).squeeze(-1)
        coefficients = torch.where(kept, projections / torch.where(kept, s, 1), 0)
        return (vh.mT @ coefficients[..., None]).squeeze(-1)


class KNN(Baseline):
    """Mean y of the k nearest context points (all i of them if i < k): Garg et al.'s local baseline.

    Order-dependent by design: a tie in distance goes to the earlier point (ties have probability 0 for
    continuous inputs, but the ±1 inputs of Boolean tasks tie often).
    """

    order_invariant = False

    def __init__(self, k: int):
        check_int("k", k, 1)
        self.k = k

    def _predict(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        distances = torch.cdist(xs, xs, compute_mode="donot_use_mm_for_euclid_dist")
        return nearest_neighbour_mean(distances, ys, self.k)


def nearest_neighbour_mean(distances: torch.Tensor, ys: torch.Tensor, k: int) -> torch.Tensor:
    """Mean label of the k context points j < i nearest to each position i (earliest first on ties), (B, N).

    ``distances`` (B, N, N) between every pair of points; with fewer than k context points all of
    them are used, and position 0 predicts 0.
    """
    distances = distances.masked_fill(~context_mask(distances), torch.inf)
    k = min(k, distances.shape[-1])
    nearest = distances.sort(dim=-1, stable=True).indices[..., :k]
    neighbour_ys = ys[:, None, :].expand_as(distances).gather(-1, nearest)
    used = torch.arange(k, device=distances.device) < prefix_counts(distances)[:, None]
    return (neighbour_ys * used).sum(-1) / used.sum(-1).clamp(min=1)
