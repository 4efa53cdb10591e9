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
from icl_sim.theory import DiscreteMMSE
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


def test_claim_checks_take_one_value_per_seed_from_that_seeds_pt():
    """Seed k's Δ(PT, dMMSE)/Δ(PT, Ridge) and MSE ratio come from seed k's rows; the baselines are sanity checks."""
    settings = raventos_2023.SCALES["smoke"]
    generator = torch.Generator().manual_seed(0)
    errors = {name: torch.rand(64, settings.points, generator=generator, dtype=torch.float64)
              for name in ("PT", "dMMSE", "Ridge")}
    samples = {(m, prompts): errors for m in settings.pool_sizes for prompts in ("T_True", "T_Pretrain")}
    rows = []
    for m in settings.pool_sizes:
        for prompts in ("T_True", "T_Pretrain"):
            for seed in (0, 1):
                for quantity, value in (("distance_PT_dMMSE", 1.0 + seed), ("distance_PT_Ridge", 2.0),
                                        ("mse_PT", 3.0 + seed), ("mse_Ridge", 2.5)):
                    rows.append({"pool_size": raventos_2023._label(m), "prompts": prompts, "seed": seed,
                                 "quantity": quantity, "mean": value})
    checks = raventos_2023.checks({"rows": rows, "samples": samples, "bayes": {2: errors["Ridge"][:, 2]}}, settings)
    claims = [check for check in checks if check.kind == "claim"]
    assert {check.claim for check in claims} == {claim.id for claim in raventos_2023.CLAIMS}
    distance = [check for check in claims if check.quantity.startswith("Δ")]
    assert all(check.per_seed == (0.5, 1.0) for check in distance)
    assert [check.claim for check in distance].count("ridge-above-threshold") == 2
    mse = [check for check in claims if check.quantity.startswith("MSE")]
    assert [check.per_seed for check in mse] == [pytest.approx((1.2, 1.6))] * 2
