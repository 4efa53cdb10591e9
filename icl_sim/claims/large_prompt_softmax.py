"""The claim ``large-prompt-softmax``: softmax attention concentrates on a linear operator as prompts grow.

Boursier & Boyer (2025), arXiv:2512.11784: for a prompt of N i.i.d. tokens x_i ~ N(m, Γ) and a query z,
one softmax head T̂_N(z) = Σ_i softmax_i(x_iᵀUz) V x_i (U = KᵀQ) tends to the linear attention
T(z) = V m + V Γ U z (Lemma 2.1), and so do its gradients in V and U (Prop. 3.4), at the rate
E‖T̂_N − T‖² ~ κ/N (Prop. 3.1 bounds it by c₁σ⁶ ln N/N^{c₂/σ²}; the sharp Gaussian constant κ(z) and its
derivation are ``icl_sim.theory.formulas.large_prompt_softmax``).  Queries are drawn from ν = N(0, I),
the measure of the paper's L²(ν) norm, with 4UᵀΓU < I so that the squared deviations have finite
variance and Monte Carlo standard errors mean what they say.

``verify(seed)`` measures, for the output T̂, the V-gradient and the U-gradient (exact Jacobians of the
softmax head, :func:`attention_gradients`), over prompt lengths N = 64 … 2048 (the nested prefixes
of 2048-token prompts) and 16 independent repetitions of 256 prompts each:

* the rate: the slope of log √(mean ‖q̂ − q‖²) against log N, fitted in each repetition; the mean slope
  must equal −1/2 within 4 standard errors of the mean over repetitions (t with 15 degrees of freedom:
  a false alarm below 0.2 % per check);
* the constant, hence the limit itself: at N = 2048, N‖q̂ − q‖² − κ_q(z) paired per prompt over all 4096
  prompts has mean 0 within 3 standard errors (a limit off by ε adds N ε² to that mean: 0.8 at ε = 0.02,
  2 to 6 s.e. for the output; the O(1/N) correction of κ, a few per cent of κ at N = 64 in pilot runs, is
  about 0.1 % at N = 2048, well inside one s.e.), and the output's mean N‖T̂ − T‖² equals the closed-form
  query average κ_ν within 3 standard errors;
* the limit value: at N = 2048, each entry of E[T̂ − T], E[(T̂ − T) zᵀ] and of the U-gradient contracted
  with the query, E[Σ_j ∂_{U_ij}T̂ z_j/‖z‖² − (VΓ)_{·i}], is 0 within 4 standard errors (14 entries: a
  family-wise false alarm below 0.1 %), from one repetition's 256 prompts, so that the O(1/N) bias of the
  self-normalised average stays below 0.2 s.e.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, monte_carlo
from icl_sim.claims.base import Claim
from icl_sim.seeding import make_generator
from icl_sim.theory.formulas.large_prompt_softmax import (attention_limit, derive, output_constant,
                                                          query_averaged_output_constant, score_gradient_constant,
                                                          score_gradient_limit)

QUANTITIES = ("output", "value gradient", "score gradient")
_EIGENVALUES = (1.5, 0.7, 0.3)  # of the token covariance Γ, in a basis drawn from the seed
_MEAN = (0.5, -0.3, 0.2)
_OUTPUTS = 2
_ENERGY = 1 / 16  # the largest eigenvalue of A = UᵀΓU (finite fourth moments need A < I/4)
_LENGTHS = (64, 128, 256, 512, 1024, 2048)
_REPETITIONS = 16
_PROMPTS = 256


@dataclass(frozen=True)
class GaussianHead:
    """Token law N(mean, covariance) and one head's merged key-query ``score`` U (d, q) and ``value`` V (out, d)."""

    mean: torch.Tensor
    covariance: torch.Tensor
    score: torch.Tensor
    value: torch.Tensor

    def limits(self, queries: torch.Tensor) -> dict[str, torch.Tensor]:
        """The infinite-prompt output and Jacobians at each query (Lemma 2.1 and its derivatives)."""
        centre = attention_limit(self.mean, self.covariance, self.score, torch.eye(len(self.mean),
                                 dtype=self.mean.dtype), queries)  # m + ΓUz, the tilted mean
        return {"output": centre @ self.value.T, "value gradient": _value_jacobian(centre, self.value.shape[0]),
                "score gradient": score_gradient_limit(self.covariance, self.value, queries)}

    def constants(self, queries: torch.Tensor) -> dict[str, torch.Tensor]:
        """κ_q(z) = lim N E‖q̂ − q‖² per query; the V-gradient's is out · κ with V = I (∂T_k/∂V_kl = x̄_l)."""
        eye = torch.eye(len(self.mean), dtype=self.mean.dtype)
        return {"output": output_constant(self.covariance, self.score, self.value, queries),
                "value gradient": self.value.shape[0] * output_constant(self.covariance, self.score, eye, queries),
                "score gradient": score_gradient_constant(self.covariance, self.score, self.value, queries)}


def _value_jacobian(centre: torch.Tensor, outputs: int) -> torch.Tensor:
    """∂(x̄ Vᵀ)_k/∂V_k'l = δ_kk' x̄_l: (B, out, out, d)."""
    return torch.einsum("kj,bl->bkjl", torch.eye(outputs, dtype=centre.dtype), centre)


def attention_gradients(tokens: torch.Tensor, queries: torch.Tensor, score: torch.Tensor,
                        value: torch.Tensor) -> dict[str, torch.Tensor]:
    """One softmax head on each prompt, T̂(z) = Σ_i softmax_i(x_iᵀUz) V x_i, and its exact Jacobians.

    tokens (B, N, d), queries (B, q), score U (d, q), value V (out, d).  With weights w_i, weighted mean
    x̄ and weighted covariance Ĉ = Σ_i w_i (x_i − x̄)(x_i − x̄)ᵀ: ∂T̂_k/∂V_kl = x̄_l and
    ∂T̂_k/∂U_ij = Σ_n w_n (x_n − x̄)_i z_j (V x_n)_k = (V Ĉ)_ki z_j (∂w_n/∂U_ij = w_n (x_n − x̄)_i z_j).
    """
    weights = torch.softmax((tokens @ (queries @ score.T)[..., None]).squeeze(-1), dim=-1)  # (B, N)
    centre = (weights[:, None] @ tokens).squeeze(1)  # x̄, (B, d)
    covariance = (tokens * weights[..., None]).mT @ tokens - centre[:, :, None] * centre[:, None]  # Ĉ
    return {"output": centre @ value.T, "value gradient": _value_jacobian(centre, value.shape[0]),
            "score gradient": torch.einsum("kl,bli,bj->bkij", value, covariance, queries)}


def squared_deviations(head: GaussianHead, tokens: torch.Tensor, queries: torch.Tensor) -> dict[str, torch.Tensor]:
    """‖q̂ − q‖² (squared Frobenius norm) per prompt for each quantity: (B,)."""
    finite = attention_gradients(tokens, queries, head.score, head.value)
    limits = head.limits(queries)
    return {name: ((finite[name] - limits[name]) ** 2).flatten(1).sum(-1) for name in QUANTITIES}


def gaussian_head(seed: int) -> GaussianHead:
    """The claim's head: Γ with eigenvalues (1.5, 0.7, 0.3) in a random basis, K, Q, V Gaussian, U = KᵀQ
    rescaled so that UᵀΓU has largest eigenvalue 1/16."""
    generator = make_generator(seed, "eval", 0)
    options = dict(generator=generator, dtype=torch.float64)
    dim = len(_EIGENVALUES)
    q, r = torch.linalg.qr(torch.randn(dim, dim, **options))
    basis = q * torch.sign(torch.diagonal(r))
    covariance = (basis * torch.tensor(_EIGENVALUES, dtype=torch.float64)) @ basis.T
    key, query = torch.randn(dim, dim, **options), torch.randn(dim, dim, **options)
    score = key.T @ query
    score = score * math.sqrt(_ENERGY / float(torch.linalg.eigvalsh(score.T @ covariance @ score).max()))
    value = torch.randn(_OUTPUTS, dim, **options)
    return GaussianHead(torch.tensor(_MEAN, dtype=torch.float64), covariance, score, value)


def gaussian_prompts(head: GaussianHead, points: int, batch: int, generator: torch.Generator):
    """``batch`` prompts of ``points`` tokens x ~ N(m, Γ) and one query z ~ N(0, I) each."""
    root = torch.linalg.cholesky(head.covariance)
    tokens = head.mean + torch.randn(batch, points, len(head.mean), generator=generator,
                                     dtype=torch.float64) @ root.T
    return tokens, torch.randn(batch, head.score.shape[1], generator=generator, dtype=torch.float64)


def _slope_check(name: str, mean_squares: torch.Tensor) -> Check:
    """Mean over repetitions of the least-squares slope of log √(mean square) on log N, against −1/2."""
    logs = torch.log(torch.tensor(_LENGTHS, dtype=torch.float64))
    centred = logs - logs.mean()
    responses = 0.5 * torch.log(mean_squares)
    slopes = ((responses - responses.mean(1, keepdim=True)) * centred).sum(1) / (centred**2).sum()
    standard_error = float(slopes.std() / math.sqrt(len(slopes)))
    return Check(f"rate: slope of log RMS ‖{name} − limit‖ vs log N, N={_LENGTHS[0]}..{_LENGTHS[-1]}, "
                 f"{len(slopes)} repetitions", -0.5, float(slopes.mean()), 4 * standard_error,
                 standard_error=standard_error)


def _limit_checks(head: GaussianHead, tokens: torch.Tensor, queries: torch.Tensor) -> list[Check]:
    """Each entry of the mean deviation from the limit, at 4 standard errors."""
    finite = attention_gradients(tokens, queries, head.score, head.value)
    limits = head.limits(queries)
    error = finite["output"] - limits["output"]
    contracted = torch.einsum("bkij,bj->bki", finite["score gradient"], queries) / (queries**2).sum(-1)[:, None, None]
    contracted = contracted - head.value @ head.covariance
    entries = [(f"E[T̂_{k} − T_{k}]", error[:, k]) for k in range(error.shape[1])]
    entries += [(f"E[(T̂_{k} − T_{k}) z_{j}]", error[:, k] * queries[:, j])
                for k in range(error.shape[1]) for j in range(queries.shape[1])]
    entries += [(f"E[Σ_j ∂T̂_{k}/∂U_{i}j z_j/‖z‖² − (VΓ)_{k}{i}]", contracted[:, k, i])
                for k in range(contracted.shape[1]) for i in range(contracted.shape[2])]
    points = tokens.shape[1]
    return [monte_carlo(f"limit at N={points}: {label} (= 0)", 0.0, samples, sigmas=4.0)
            for label, samples in entries]


def _verify(seed: int) -> list[Check]:
    head = gaussian_head(seed)
    largest = _LENGTHS[-1]
    mean_squares = {name: torch.empty(_REPETITIONS, len(_LENGTHS), dtype=torch.float64) for name in QUANTITIES}
    scaled = {name: [] for name in QUANTITIES}  # N‖q̂ − q‖² at the largest N, per prompt
    constants = {name: [] for name in QUANTITIES}  # κ_q(z) of the same prompts' queries
    for repetition in range(_REPETITIONS):
        # prompts of the largest length read at their nested prefixes: independent across repetitions
        tokens, queries = gaussian_prompts(head, largest, _PROMPTS, make_generator(seed, "eval", 1 + repetition))
        for k, points in enumerate(_LENGTHS):
            deviations = squared_deviations(head, tokens[:, :points], queries)
            for name in QUANTITIES:
                mean_squares[name][repetition, k] = deviations[name].mean()
        for name, constant in head.constants(queries).items():
            scaled[name].append(largest * deviations[name])
            constants[name].append(constant)
        if repetition == 0:  # the limit entries from the first repetition only (see the module docstring)
            limit_checks = _limit_checks(head, tokens, queries)
    scaled = {name: torch.cat(values) for name, values in scaled.items()}
    constants = {name: torch.cat(values) for name, values in constants.items()}
    checks = [_slope_check(name, mean_squares[name]) for name in QUANTITIES]
    checks += [monte_carlo(f"constant at N={largest}: N‖{name} − limit‖² − κ(z) (= 0, paired per prompt)", 0.0,
                           scaled[name] - constants[name]) for name in QUANTITIES]
    checks.append(monte_carlo(f"constant at N={largest}: N E_ν‖T̂ − T‖² = κ_ν (closed-form query average)",
                              query_averaged_output_constant(head.covariance, head.score, head.value),
                              scaled["output"]))
    return checks + limit_checks


LARGE_PROMPT_SOFTMAX = Claim(
    name="large-prompt-softmax",
    source="Boursier & Boyer (2025), Softmax as linear attention in the large-prompt regime: a measure-based "
           "perspective, arXiv:2512.11784 (ICML 2026), Lemma 2.1 (Gaussian limit), Prop. 3.1 and 3.4 "
           "(concentration of the output and of its gradients); sharp constants by the delta method",
    summary="tokens x ~ N(m, Γ), query z: softmax attention Σ_i softmax_i(x_iᵀUz) V x_i → V m + V Γ U z as "
            "N → ∞ (the normaliser exp(aᵀm + ½aᵀΓa), a = Uz, cancels), its U- and V-gradients → (VΓ)_{·i} z_j and "
            "m + ΓUz, with N E‖T̂ − T‖² → e^{aᵀΓa}(tr VΓVᵀ + ‖VΓa‖²): deviations fall as N^{-1/2}",
    derive=derive,
    verify=_verify,
)

CLAIMS = [LARGE_PROMPT_SOFTMAX]
