"""The claim ``akyurek-metrics``: the SPD and ILWD identities, exact and by Monte Carlo.

The metrics and their derivation are ``icl_sim.theory.formulas.comparison_metrics``.
"""
from __future__ import annotations

import torch

from icl_sim.checks import Check, exact, monte_carlo
from icl_sim.claims.base import Claim
from icl_sim.seeding import make_generator
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.theory.baselines import OLS, Averaging, Ridge
from icl_sim.theory.formulas.comparison_metrics import derive, ilwd, spd, spd_linear


def _probe_predictions(predictor, context_xs, context_ys, probes):
    """Black-box probe outputs: one prompt (context, probe_k) per probe, the last position's prediction."""
    batch, k, dim = probes.shape
    n = context_xs.shape[1]
    xs = torch.cat([context_xs[:, None].expand(batch, k, n, dim), probes[:, :, None]], dim=2)
    ys = torch.cat([context_ys[:, None].expand(batch, k, n), torch.zeros(batch, k, 1, dtype=probes.dtype)], dim=2)
    preds = predictor.predict(xs.reshape(batch * k, n + 1, dim), ys.reshape(batch * k, n + 1))
    return preds[:, -1].reshape(batch, k)


def _verify(seed: int) -> list[Check]:
    generator = make_generator(seed, "eval", 0)
    dim, batch = 8, 400
    options = dict(generator=generator, dtype=torch.float64)
    w_a, w_b = torch.randn(batch, dim, **options), torch.randn(batch, dim, **options)
    target = ((w_a - w_b) ** 2).sum(-1)
    comparisons = []

    def relative(value, reference):
        return float(((value - reference).abs() / reference.abs().clamp(min=1e-300)).max())

    for k in (dim, 3 * dim):  # exact recovery with K >= d probes
        probes = torch.randn(batch, k, dim, **options)
        a, b = (probes @ w_a[..., None]).squeeze(-1), (probes @ w_b[..., None]).squeeze(-1)
        comparisons.append(exact(f"ILWD = ‖w_a − w_b‖² for linear predictors, K={k} probes (max rel. error)",
                                 0.0, relative(ilwd(probes, a, b), target)))
        gram = probes.mT @ probes / k
        comparisons.append(exact(f"SPD on K={k} probes = δᵀ(XᵀX/K)δ (max rel. error)", 0.0,
                                 relative(spd(a, b), spd_linear(w_a, w_b, gram))))
    # K < d: ILWD sees only the projection of δ on the probes' row space
    probes = torch.randn(batch, dim // 2, dim, **options)
    a, b = (probes @ w_a[..., None]).squeeze(-1), (probes @ w_b[..., None]).squeeze(-1)
    basis = torch.linalg.qr(probes.mT).Q  # (B, d, K): orthonormal basis of the row space
    projected = ((basis.mT @ (w_a - w_b)[..., None]) ** 2).sum((-2, -1))
    comparisons.append(exact(f"ILWD = ‖Pδ‖² with K={dim // 2} < d probes (max rel. error)", 0.0,
                             relative(ilwd(probes, a, b), projected)))
    # Monte Carlo: SPD under anisotropic Gaussian probes -> δᵀΣδ; under Σ = I, SPD -> ILWD
    task = LinearRegression(dim=dim, points=64, condition_number=10.0)
    prompt = task.sample(batch, make_generator(seed, "eval", 1), dtype=torch.float64)
    a, b = (prompt.xs @ w_a[..., None]).squeeze(-1), (prompt.xs @ w_b[..., None]).squeeze(-1)
    comparisons.append(monte_carlo("E[SPD / δᵀΣδ] = 1, x ~ N(0, Σ), κ(Σ) = 10, 64 probes", 1.0,
                                   spd(a, b) / spd_linear(w_a, w_b, prompt.latent["covariance"])))
    probes = torch.randn(batch, 64, dim, **options)
    a, b = (probes @ w_a[..., None]).squeeze(-1), (probes @ w_b[..., None]).squeeze(-1)
    comparisons.append(monte_carlo("E[SPD / ILWD] = 1 for Σ = I, 64 probes", 1.0, spd(a, b) / ilwd(probes, a, b)))
    # baselines as black boxes: after n context points OLS, Ridge, Averaging are linear in the query,
    # so the ILWD of their probe outputs is exactly the squared distance of their fitted weights
    context = LinearRegression(dim=dim, points=13, noise=0.3).sample(
        40, make_generator(seed, "eval", 2), dtype=torch.float64)
    probes = torch.randn(40, 2 * dim, dim, **options)
    outputs = {name: _probe_predictions(p, context.xs[:, :12], context.ys[:, :12], probes)
               for name, p in (("OLS", OLS()), ("Ridge", Ridge(0.5)), ("Averaging", Averaging()))}
    weights = {name: p.weights(context.xs, context.ys)[:, 12]
               for name, p in (("OLS", OLS()), ("Ridge", Ridge(0.5)), ("Averaging", Averaging()))}
    for first, second in (("OLS", "Ridge"), ("Ridge", "Averaging")):
        comparisons.append(exact(
            f"ILWD({first}, {second}) on probes = ‖ŵ_{first} − ŵ_{second}‖² after n=12 (max rel. error)", 0.0,
            relative(ilwd(probes, outputs[first], outputs[second]), spd_linear(weights[first], weights[second]))))
    return comparisons


AKYUREK_METRICS = Claim(
    name="akyurek-metrics",
    source="Akyürek, Schuurmans, Andreas, Ma & Zhou (2023), What learning algorithm is in-context learning? "
           "Investigations with linear models, ICLR, Sec. 4.1 (SPD and ILWD)",
    summary="SPD(f, g) = E_x (f − g)² and ILWD(f, g) = ‖ŵ_f − ŵ_g‖²: for linear predictors SPD = δᵀΣδ "
            "(= ILWD when Σ = I) and ILWD recovers ‖w_a − w_b‖² exactly from K ≥ d probes",
    derive=derive, verify=_verify)

CLAIMS = [AKYUREK_METRICS]
