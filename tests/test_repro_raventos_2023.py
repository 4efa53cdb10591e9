"""The baselines raventos-2023's checks rely on, against independent numpy references.

* dMMSE (Raventós et al. 2023, Sec. 2) is the posterior mean over the pool: softmax of −‖y − Xw_m‖²/(2σ²);
  for M = 1 it predicts w₁ᵀx, so its risk on pool prompts is σ² exactly (the closed form of
  ``derive_finite_pool``, used by the M = 1 check);
* the task's pool prompts draw every w from the pool fixed by ``pool_seed`` (the same pool the dMMSE
  baseline of the reproduction is given).
"""
import numpy as np
import pytest
import torch

from icl_sim.paper_repro import raventos_2023
from icl_sim.seeding import make_generator
from icl_sim.theory import DiscreteMMSE, Ridge
from icl_sim.theory.formulas.risk_curves import derive_finite_pool, sigma
from icl_sim.theory.symbolic import torch_function


def _prompt(pool_size, points=6, dim=3, noise=0.5, count=8):
    task = raventos_2023.Settings(**{**raventos_2023.SCALES["smoke"].__dict__, "dim": dim, "points": points,
                                     "noise": noise}).task(pool_size)
    return task, task.sample(count, make_generator(0, "eval", 901), dtype=torch.float64)


def test_dmmse_is_the_numpy_posterior_mean():
    noise = 0.5
    task, prompt = _prompt(pool_size=5, noise=noise)
    pool = task.weight_pool()
    preds = DiscreteMMSE(pool, noise).predict(prompt.xs, prompt.ys).numpy()
    xs, ys, w = prompt.xs.numpy(), prompt.ys.numpy(), pool.numpy()
    for b in range(xs.shape[0]):
        for i in range(xs.shape[1]):
            residuals = ((ys[b, :i, None] - xs[b, :i] @ w.T) ** 2).sum(0)
            logits = -residuals / (2 * noise**2)
            posterior = np.exp(logits - logits.max())
            posterior /= posterior.sum()
            assert preds[b, i] == pytest.approx(xs[b, i] @ (posterior @ w), abs=1e-9)


def test_single_task_pool_dmmse_predicts_the_task_and_its_risk_is_sigma_squared():
    noise = 0.5
    task, prompt = _prompt(pool_size=1, noise=noise)
    w = task.weight_pool()[0]
    assert torch.equal(prompt.latent["w"], w.expand_as(prompt.latent["w"]))
    preds = DiscreteMMSE(task.weight_pool(), noise).predict(prompt.xs, prompt.ys)
    torch.testing.assert_close(preds, prompt.xs @ w, rtol=0, atol=1e-12)
    assert float(torch_function(derive_finite_pool()[-1].expression.rhs, [sigma])(noise)) == pytest.approx(noise**2)


def test_pool_prompts_use_the_reproduction_pool():
    task, prompt = _prompt(pool_size=4)
    pool = task.weight_pool()
    for w in prompt.latent["w"]:
        assert min(float((w - v).abs().max()) for v in pool) < 1e-6


def test_on_gaussian_prompts_a_predictors_distance_to_ridge_is_its_excess_mse():
    """Ridge is the posterior mean under T_True, so E(f − y)² = E(r − y)² + E(f − r)² for any f of the context
    (Monte Carlo, 4 s.e.): why Δ(·, Ridge) ≥ VISIBLE × ridge's MSE/D matches the RIDGE_BAND on MSE/D."""
    noise = 0.5
    task, prompt = _prompt(pool_size=raventos_2023.INFINITE, points=6, dim=3, noise=noise, count=20_000)
    pool = raventos_2023.Settings(**{**raventos_2023.SCALES["smoke"].__dict__, "dim": 3, "points": 6}).task(8)
    ridge = Ridge(noise**2).predict(prompt.xs, prompt.ys)
    dmmse = DiscreteMMSE(pool.weight_pool(), noise).predict(prompt.xs, prompt.ys)
    excess = ((dmmse - prompt.ys) ** 2 - (ridge - prompt.ys) ** 2 - (dmmse - ridge) ** 2).mean(dim=1)
    assert abs(float(excess.mean())) <= 4 * float(excess.std()) / len(excess) ** 0.5
    assert raventos_2023.VISIBLE == raventos_2023.RIDGE_BAND


def _rows(settings, distances):
    """Results rows: per pool and prompt set the baselines' (seed None) and two seeds' PT values."""
    rows = []
    for m in settings.pool_sizes:
        for prompts in raventos_2023.PROMPT_SETS:
            label = raventos_2023._label(m)
            for quantity, value in (("mse_Ridge", 2.5), ("distance_dMMSE_Ridge", distances[m])):
                rows.append({"pool_size": label, "prompts": prompts, "seed": None, "quantity": quantity,
                             "mean": value})
            for seed in (0, 1):
                for quantity, value in (("distance_PT_dMMSE", 1.0 + seed), ("distance_PT_Ridge", 2.0),
                                        ("mse_PT", 3.0 + seed)):
                    rows.append({"pool_size": label, "prompts": prompts, "seed": seed, "quantity": quantity,
                                 "mean": value})
    return rows


def test_claim_checks_take_one_value_per_seed_from_that_seeds_pt():
    """Seed k's Δ(PT, dMMSE)/Δ(PT, Ridge) and MSE ratio come from seed k's rows; the baselines and M = 1 are
    sanity checks; the ridge side is checked at the largest pool where dMMSE and ridge differ visibly."""
    settings = raventos_2023.Settings(**{**raventos_2023.SCALES["smoke"].__dict__, "pool_sizes": (1, 4, 16, 64, 0)})
    generator = torch.Generator().manual_seed(0)
    errors = {name: torch.rand(64, settings.points, generator=generator, dtype=torch.float64)
              for name in ("dMMSE", "Ridge")}
    samples = {(m, prompts): errors for m in settings.pool_sizes for prompts in raventos_2023.PROMPT_SETS}
    distances = {1: 9.0, 4: 2.0, 16: 0.5, 64: 0.4, 0: 0.0}  # visible (≥ 0.2 × 2.5) up to M = 16
    rows = _rows(settings, distances)
    checks = raventos_2023.checks({"rows": rows, "samples": samples, "bayes": {2: errors["Ridge"][:, 2]}}, settings)
    assert raventos_2023.checked_pools({"rows": rows}, settings) == (4, 16)
    claims = [check for check in checks if check.kind == "claim"]
    assert {check.claim for check in claims} == {claim.id for claim in raventos_2023.CLAIMS}
    distance = [check for check in claims if check.quantity.startswith("Δ")]
    assert all(check.per_seed == (0.5, 1.0) for check in distance)
    assert [(check.claim, check.expected) for check in distance] == [
        ("dmmse-below-threshold", 1.0)] * 2 + [("ridge-above-threshold", raventos_2023.RIDGE_MARGIN)] * 2
    assert all("M = 16" in check.quantity for check in distance[2:])
    mse = [check for check in claims if check.quantity.startswith("MSE")]
    assert [check.per_seed for check in mse] == [pytest.approx((1.2, 1.6))] * 2
    single = [check for check in checks if check.kind == "sanity" and "M = 1 closer" in check.quantity]
    assert [check.measured for check in single] == [pytest.approx(0.75)] * 2


def test_infinity_is_named_on_the_pool_axis():
    assert [raventos_2023._power_label(m) for m in (1, 4, 1024, raventos_2023.INFINITE)] == [
        "$2^{0}$", "$2^{2}$", "$2^{10}$", "∞"]


def test_a_panels_xticks_replace_the_log_axis_ticks():
    """``Panel.xticks`` names the drawn pools, ∞ among them, on the log axis (no decade ticks beside them)."""
    from matplotlib.figure import Figure

    from icl_sim.plots import Curve, Panel, _draw_panel

    ticks = [(1, "$2^{0}$"), (16, "$2^{4}$"), (64, "∞")]
    panel = Panel("M", "MSE", [Curve("PT", [1, 16, 64], [1.0, 0.5, 0.4], continuous=False)], xscale="log",
                  yscale="log", xticks=ticks)
    axes = Figure().subplots()
    _draw_panel(axes, panel, {"PT": (0, 0, 1)})
    assert list(axes.get_xticks()) == [1, 16, 64]
    assert [label.get_text() for label in axes.get_xticklabels()] == [label for _, label in ticks]
