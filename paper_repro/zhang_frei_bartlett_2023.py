"""Zhang, Frei & Bartlett (JMLR 2024), "Trained transformers learn linear models in-context", Thm 4.1, §4.2, §4.3.

Setting: one linear self-attention layer trained by gradient flow on noiseless linear regression,
y = wᵀx with w ~ N(0, I_d), x ~ N(0, Λ), prompts of N context points and a query, the loss on the
query.  The paper's LSA puts the query in the attention's key matrix, but along its gradient flow
the blocks through which the query's x would enter stay zero, so the prediction is icl-sim's
``lsa`` form ŷ = x_qᵀ Γ (1/M) Σ_{i≤M} y_i x_i (query excluded, 1/M normalisation; see
``icl_sim.theory.formulas.one_layer_optimum``).

Training is the paper's: gradient flow, approximated by small-step gradient descent (``optimizer="sgd"``)
on large sampled batches, from the paper's initialisation (``init="zfb"``: W^PV = σ on the label entry,
W^KQ = σ [[ΘΘᵀ, 0], [0, 0]] with ‖ΘΘᵀ‖_F = 1, every other entry 0; σ = 0.01), not Adam from a dense random
initialisation.  The step is small against the loss's curvature: along the label-label block it grows like
u²·E[(Σ y_j²/n)²] ≈ 2(tr Λ)², and a step of 0.05 diverged at d = 5 (measured); the peak step 0.01 is a fifth
of it (the full scale divides it by 4 for its d = 10).  The step decays by a cosine to 0: GD with a
slowly varying small step η_t follows the same flow path at flow time Σ η_t, and the decay removes the
noise of sampled batches that a constant step leaves (measured with a constant step 0.01 over 2000 steps:
‖B − Γ*‖/‖Γ*‖ stayed at 0.012-0.016 for Λ = I and the risks at M ≠ N scattered by up to 5 % between seeds,
wider than the risk bands).  The flow time needed is set by the slowest mode: near Γ* the eigenvalue g_i of
Γ relaxes at rate ≈ ‖Γ*‖_F · 2[(1 + 1/N)λ_i³ + tr Λ/N · λ_i²], for λ = 1/4 of the quick anisotropic Λ
0.17 per unit of flow time (a time constant of 6), after an escape from σ of about 4 units; the measured
constant-step run confirms it (anisotropic error 0.055 at flow time 20, where this predicts 0.05).  Quick
scale trains 5000 steps (flow time 25: about 3.5 time constants after the escape); full scale 24 000 steps at
peak 0.0025 (flow time 30; its slowest time constant is 4.7).

Claims (``CLAIMS``; each a claim check per training seed; closed forms in icl-sim's convention):

* ``global-optimum`` (Thm 4.1) — gradient flow from that initialisation reaches the global optimum
  Γ* = ((1 + 1/N) Λ + tr Λ/N · I)⁻¹ (``optimal_preconditioner``): the trained layer's effective
  preconditioner B (``effective_layer_maps``, invariant to P → cP, Q → Q/c) against Γ*, entry by entry
  (relative Frobenius error ≤ 0.05), for Λ = I and for a fixed anisotropic Λ.
* ``random-covariance`` (§4.3, covariances varying across prompts) — trained on prompts whose covariance
  is drawn per prompt, Λ = U diag(λ) Uᵀ with U Haar-random (``rotation="per-prompt"``), the layer cannot
  adapt Γ to each prompt's Λ: the risk averaged over Λ is a strictly convex quadratic in Γ, minimised by
  Γ = γ_r I with γ_r = Σλ² / ((1 + 1/N) Σλ³ + Σλ Σλ²/N) (rotation invariance; ``random_covariance_step``):
  ‖B − γ_r I‖/‖γ_r I‖ ≤ 0.05.

The contrast a converged layer of another mechanism fails: any other Γ (a least-squares-like Λ⁻¹, the
unpreconditioned step, a Γ adapted to one Λ in the random-covariance run) is off Γ* or γ_r I by far more
than 5 %.

Sanity checks: the risks.  The layer predicts ŷ = x_qᵀ B h, so its risk on any test law is a closed form in B
alone; once B ≈ Γ* (or γ_r I) the risks follow and cannot fail on their own.  They are the paper's consequences
of Thm 4.1, shown as sanity checks on the seeds' mean risk (counted apart from the two claims):

* risk over prompt length (Thm 4.1) — its risk on prompts of any length M, (1 + 1/M) tr(ΓΛ²ΓΛ) +
  tr Λ/M · tr(ΓΛΓΛ) − 2 tr(ΓΛ²) + tr Λ (``lsa_optimum_risk``), for M from N/4 to 8N.
* tolerated shifts (§4.2, task and query shifts) — trained on Λ = I, w ~ N(0, I), tested with another
  task law (w sparse: one non-zero N(0, s²) entry, s = 2, E wwᵀ = Ξ = s²/d · I) or another query law
  (x_q ~ N(μ, I), μ = 2e₁, E x_q x_qᵀ = Q = I + μμᵀ), the context x ~ N(0, I) as in training: the risk is
  ``shifted_risk``, R = tr(Q [γ²((1+1/M)Ξ + tr Ξ/M · I) − 2γΞ + Ξ]) for Γ* = γI, which depends on the
  shifted laws only through Ξ and Q and tends to (1 − γ)² tr(QΞ), the same fraction (1 − γ)² of the
  trivial risk tr(QΞ) as without a shift: these shifts are tolerated.  Checked at M = 8N.
* covariate shift (§4.2) — trained on Λ = I and tested on x ~ N(0, c I), the risk is
  R_M(c) = d c [(cγ − 1)² + (d + 1) c² γ² / M] with γ = N/(N + d + 1), and R∞(c) = d c (cγ − 1)²
  (``covariate_shift_risk``): the layer does not adapt to the new covariance, so the error grows like
  c³ and its fraction of the trivial risk, (cγ − 1)², is not that of the training law.  Checked at M = 8N
  for c from 1/4 to 4; R∞ is drawn.
* random covariance (§4.3) — the risk of γ_r I on M points, ``preconditioner_risk(γ_r I, diag λ, M)``, at
  M = N and M = 8N; it stays at Σλ(γ_r λ − 1)² > 0 as M → ∞, where least squares reaches 0.

Thresholds.  The expected values are the closed forms above; the accepted deviations are this
reproduction's, set when it was written (the paper states no number for them): ‖B − Γ*‖/‖Γ*‖ ≤ 0.05, a
risk within 3 standard errors of its Monte Carlo estimate plus 2 % of the formula, and plus 5 % under
covariate shift (a shifted risk amplifies the trained Γ's residual error, dR/dγ ∝ c³).  Each check takes
one value per training seed, each from that seed's layer alone, and holds when the 95 % interval of
their mean does; a risk's sanity check takes the seeds' mean.  An untrained layer (B ≈ 0) fails both
claims: its error against Γ* is ≈ 1 (and its risk the trivial one, tr Λ, tr(QΞ), c·d, at every M).

Scales.  ZFB release no code for the LSA (their experiments, §5, train GPT-2 on random covariances), so
``full`` is this reproduction's choice: d = 10, N = 40, 24 000 steps of batch 4096 at peak step 0.0025.  Quick
scale takes d = 5, N = 20, 5000 steps of batch 1024 at peak step 0.01; the anisotropic Λ has eigenvalues
(1, 1, 1/2, 1/4, 1) (κ = 4), the random-covariance run the same spectrum rotated per prompt.

Measured at quick scale, seeds 0-2 (one ensemble of 9 runs; 200 CPU seconds, 188 s user + 11 s sys, 14 min
wall at a load average of 8-10 from other jobs on the 2 cores): every claim holds in every seed.
‖B − Γ*‖/‖Γ*‖ = 0.0048, 0.0032, 0.0040 (Λ = I) and 0.0183, 0.0188, 0.0182 (anisotropic; the slow-mode
estimate above predicts 0.022); the risk curves within 1-4 % of the formula from M = 5 to 160 (e.g. Λ = I:
0.371 against 0.377 at M = 160; anisotropic 0.295 against 0.283); task shift 0.294 against 0.302, query shift
0.677 against 0.679 (both (1 − γ)² = 0.053 of the trivial risk in the limit, as without a shift); covariate
shift at M = 160 from c = 1/4 (0.832 against 0.817) to c = 4 (94.95 against 93.37; R∞(4) = 86.3); random
covariance ‖B − γ_r I‖/‖γ_r I‖ = 0.0034 and risk 0.959 / 0.467 at M = 20 / 160 against 0.950 / 0.463 (the
limit Σλ(γ_r λ − 1)² = 0.394).  The untrained control fails all five claims.

History.  Until 2026-12-04 the risks were claim evidence of three claims of their own (``risk-over-length``,
``tolerated-shifts``, ``covariate-shift``, held at quick on seeds 0-2 and 100-102 with the numbers above); a
referee's reading found them closed forms evaluated once B ≈ Γ*, so they are sanity checks now and the claims
are two.  No setting changed.  Decided at quick on two seed blocks never run before (2026-12-04): seeds 200-202
(300-302) hold both claims, every training run converged (its smoothed loss fell by at most 5 % over its last
fifth): ‖B − Γ*‖/‖Γ*‖ = 0.0029-0.0032 (0.0031-0.0041) for Λ = I and 0.0180-0.0188 (0.0170-0.0183) anisotropic,
‖B − γ_r I‖/‖γ_r I‖ = 0.0034-0.0047 (0.0037-0.0043); all 24 risk sanity checks pass on both blocks.  The untrained
control fails both claims by finite values (errors ≈ 1).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact, mean_and_standard_error
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, seed_curve
from icl_sim.prompt import Prompt
from icl_sim.tasks import LinearRegression
from icl_sim.theory.formulas import (covariate_shift_risk, lsa_optimum_risk, optimal_preconditioner,
                                     preconditioner_risk)

from .measures import layer_preconditioners, relative_error, risk_sanity_check, seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("R. Zhang, S. Frei, P. L. Bartlett", "Trained transformers learn linear models in-context",
              "JMLR 25(49), 2024", "2306.09927")
THM_4_1 = "Zhang, Frei & Bartlett 2024, Thm 4.1: Γ* = ((1+1/N)Λ + trΛ/N·I)⁻¹"
RISK_SOURCE = "Zhang, Frei & Bartlett 2024, Thm 4.1: risk at prompt length M (lsa_optimum_risk)"
SHIFT_SOURCE = "Zhang, Frei & Bartlett 2024, §4.2: R_M(c) = dc[(cγ−1)² + (d+1)c²γ²/M] (covariate_shift_risk)"
TOLERATED_SOURCE = "Zhang, Frei & Bartlett 2024, §4.2 (task and query shifts): R = tr(Q E[(γŜ−I)Ξ(γŜ−I)]) (shifted_risk)"
RANDOM_SOURCE = "Zhang, Frei & Bartlett 2024, §4.3 (random covariances): Γ = γ_r I (random_covariance_step)"
ENTRY_TOLERANCE = 0.05  # ‖B − Γ*‖_F / ‖Γ*‖_F
RISK_SLACK = 0.02  # relative, on top of 3 standard errors
SHIFT_SLACK = 0.05  # relative: a shifted risk amplifies the trained Γ's residual error (dR/dγ ∝ c³)
TASK_SPARSITY, TASK_SCALE = 1, 2.0  # the shifted task law: one non-zero N(0, 4) entry of w
QUERY_MEAN = 2.0  # the shifted query law: x_q ~ N(QUERY_MEAN e₁, I)

CLAIMS = (
    Claim("global-optimum", "Gradient flow on one LSA layer from the paper's initialisation reaches the global "
          "optimum Γ* = ((1+1/N)Λ + trΛ/N·I)⁻¹, for isotropic and anisotropic Λ (so its risk at every prompt length, "
          "and under task, query and covariate shifts, is Γ*'s closed form)", "Zhang, Frei & Bartlett 2024, Thm 4.1",
          runs=("isotropic", "anisotropic")),
    Claim("random-covariance", "Trained on prompts whose covariance varies (Λ rotated at random per prompt), the "
          "layer reaches the one Γ = γ_r I that serves every Λ (so its risk stays at that Γ's, above 0 as M grows)",
          "Zhang, Frei & Bartlett 2024, §4.3", runs=("random-covariance",)),
)


@dataclass(frozen=True)
class Settings:
    """Training and measurement sizes of one scale."""

    dim: int
    context: int  # N
    anisotropic_spectrum: tuple[float, ...]  # also the random-covariance run's, rotated per prompt
    steps: int
    batch_size: int
    lr: float  # the gradient-descent step that approximates the flow
    log_every: int
    test_prompts: int
    lengths: tuple[int, ...]  # test prompt lengths M
    shifts: tuple[float, ...]  # covariate scales c
    shift_length: int  # M of the shift checks
    init_scale: float = 0.01  # σ of the paper's initialisation


SCALES = {
    "smoke": Settings(dim=3, context=8, anisotropic_spectrum=(1.0, 0.5, 0.25), steps=5, batch_size=64, lr=1e-2,
                      log_every=5, test_prompts=256, lengths=(4, 8, 16), shifts=(0.5, 1.0, 2.0), shift_length=16),
    "quick": Settings(dim=5, context=20, anisotropic_spectrum=(1.0, 1.0, 0.5, 0.25, 1.0), steps=5000,
                      batch_size=1024, lr=1e-2, log_every=100, test_prompts=20_000,
                      lengths=(5, 10, 20, 40, 80, 160), shifts=(0.25, 0.5, 1.0, 2.0, 4.0), shift_length=160),
    "full": Settings(dim=10, context=40, anisotropic_spectrum=(1.0, 1.0, 0.5, 0.25, 1.0, 2.0, 1.0, 0.5, 1.0, 4.0),
                     steps=24_000, batch_size=4096, lr=2.5e-3, log_every=200, test_prompts=100_000,
                     lengths=(10, 20, 40, 80, 160, 320, 640), shifts=(0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
                     shift_length=640),
}


def tasks(settings: Settings) -> dict[str, LinearRegression]:
    """Λ = I, one fixed anisotropic Λ (``rotation="fixed"``) and Λ rotated per prompt; noiseless, w ~ N(0, I)."""
    points, spectrum = settings.context + 1, settings.anisotropic_spectrum
    return {"isotropic": LinearRegression(dim=settings.dim, points=points),
            "anisotropic": LinearRegression(dim=settings.dim, points=points, spectrum=spectrum, rotation="fixed"),
            "random-covariance": LinearRegression(dim=settings.dim, points=points, spectrum=spectrum,
                                                  rotation="per-prompt")}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    """Gradient flow (small-step GD, the step decaying by a cosine: the same path on a slower clock) from the
    paper's initialisation, one run per task."""
    return {name: TrainConfig(task=task.name, task_params=dataclasses.asdict(task), model="lsa",
                              model_params={"layers": 1, "init_scale": settings.init_scale, "init": "zfb"},
                              steps=settings.steps, batch_size=settings.batch_size, lr=settings.lr, optimizer="sgd",
                              lr_schedule="cosine", loss_on="last", log_every=settings.log_every,
                              checkpoint_every=max(settings.steps // 2, 1))
            for name, task in tasks(settings).items()}


def shifted_risk(gamma: torch.Tensor, covariance: torch.Tensor, query_moment: torch.Tensor,
                 task_moment: torch.Tensor, points: int) -> torch.Tensor:
    """E(x_qᵀ Γ h − wᵀx_q)² for h = (1/M) Σ_{i≤M} y_i x_i, noiseless: context x ~ N(0, Λ') (``covariance``),
    the query independent with E x_q x_qᵀ = Q (``query_moment``), w independent with E wwᵀ = Ξ (``task_moment``).

    With Ŝ = (1/M) Σ x_i x_iᵀ, x_qᵀΓh − y_q = x_qᵀ(ΓŜ − I)w and Isserlis' E[ŜAŜ] = (1 + 1/M)Λ'AΛ' + tr(AΛ')Λ'/M
    (A symmetric) give R = tr(Q [Γ((1+1/M)Λ'ΞΛ' + tr(ΞΛ')Λ'/M)Γᵀ − ΓΛ'Ξ − ΞΛ'Γᵀ + Ξ]).  With Q = Λ' and Ξ = I it
    is ``preconditioner_risk`` (tests/test_repro_zhang_frei_bartlett_2023.py).
    """
    fourth = (1 + 1 / points) * covariance @ task_moment @ covariance \
        + torch.trace(task_moment @ covariance) * covariance / points
    cross = gamma @ covariance @ task_moment
    inner = gamma @ fourth @ gamma.T - cross - cross.T + task_moment
    return torch.trace(query_moment @ inner)


def random_covariance_step(spectrum, points: int) -> float:
    """γ_r = Σλ² / ((1 + 1/N) Σλ³ + Σλ Σλ²/N): the Γ = γ_r I minimising the risk averaged over Λ = U diag(λ) Uᵀ,
    U Haar (the stationarity condition E[ΛΓ((1+1/N)Λ² + trΛ/N Λ)] = E[Λ²] with E[U D Uᵀ] = tr D/d · I)."""
    values = torch.as_tensor(spectrum, dtype=torch.float64)
    second, third = float((values**2).sum()), float((values**3).sum())
    return second / ((1 + 1 / points) * third + float(values.sum()) * second / points)


def _query_shifted(prompt: Prompt) -> Prompt:
    """``prompt`` with its last point's x moved by QUERY_MEAN e₁ (and its label recomputed): the query shift."""
    xs = prompt.xs.clone()
    xs[:, -1, 0] += QUERY_MEAN
    ys = prompt.ys.clone()
    ys[:, -1] = torch.einsum("bi,bi->b", xs[:, -1], prompt.latent["w"].to(xs.dtype))
    return Prompt(xs, ys, prompt.latent)


def final_query_errors(model, prompt: Prompt) -> torch.Tensor:
    """(ŷ − y_q)² at the final query of every prompt, float64, by the model's final-position path (a prompt of
    M + 1 points measures the risk at length M without computing every shorter prefix)."""
    reference = next(model.parameters())
    with torch.no_grad():
        preds = model.eval().last_prediction(prompt.xs.to(reference), prompt.ys.to(reference))
    return (preds.to(torch.float64) - prompt.ys[:, -1].to(torch.float64)).square()


def measure(measurement) -> dict:
    settings = measurement.settings
    rows, entries = [], {}

    def add(run, seed, quantity, value, **extra):
        rows.append({"run": run, "seed": seed, "quantity": quantity, "value": value, **extra})

    spectrum = torch.tensor(settings.anisotropic_spectrum, dtype=torch.float64)
    for name, task in tasks(settings).items():
        prompts = {length: measurement.prompts(dataclasses.replace(task, points=length + 1), "test",
                                               settings.test_prompts) for length in settings.lengths}
        if name == "random-covariance":
            step = random_covariance_step(spectrum, settings.context)
            optimum = step * torch.eye(task.dim, dtype=torch.float64)
            risk_of = {length: float(preconditioner_risk(optimum, torch.diag(spectrum), length))
                       for length in settings.lengths}
        else:
            covariance = prompts[settings.lengths[0]].latent["covariance"][0].to(torch.float64)
            optimum = optimal_preconditioner(covariance, settings.context)
            risk_of = {length: float(lsa_optimum_risk(covariance, settings.context, length))
                       for length in settings.lengths}
        for seed, model in enumerate(measurement.models[name]):
            (matrix,) = layer_preconditioners(model)
            add(name, seed, "relative_error", relative_error(matrix, optimum))
            entries.setdefault(name, {"formula": optimum.flatten().tolist(), "learned": []})
            entries[name]["learned"].append(matrix.flatten().tolist())
            for length, prompt in prompts.items():
                risk, error = mean_and_standard_error(final_query_errors(model, prompt))
                add(name, seed, "risk", risk, M=length, standard_error=error, formula=risk_of[length])
        if name == "isotropic":
            rows.extend(_shift_rows(measurement, task, settings))
    return {"rows": rows, "entries": entries}


def _shift_rows(measurement, task: LinearRegression, settings: Settings) -> list[dict]:
    """The isotropic layer's risks at M = ``shift_length`` under the covariate, task and query shifts, with
    their closed forms and the trivial risk E y_q² of each test law."""
    d, n, m = task.dim, settings.context, settings.shift_length
    identity = torch.eye(d, dtype=torch.float64)
    gamma = optimal_preconditioner(identity, n)
    tests = {}
    for scale in settings.shifts:
        shifted = LinearRegression(dim=d, points=m + 1, spectrum=(scale,) * d, rotation="fixed")
        tests[("covariate", scale)] = (measurement.prompts(shifted, "test", settings.test_prompts),
                                       float(covariate_shift_risk(d, n, scale, m)), scale * d,
                                       float(covariate_shift_risk(d, n, scale)))
    unshifted = dataclasses.replace(task, points=m + 1)
    sparse = dataclasses.replace(unshifted, sparsity=TASK_SPARSITY, prior_scale=TASK_SCALE)
    task_moment = TASK_SCALE**2 * TASK_SPARSITY / d * identity
    query_moment = identity.clone()
    query_moment[0, 0] += QUERY_MEAN**2
    for label, prompt, q, xi in (
            ("none", measurement.prompts(unshifted, "test", settings.test_prompts), identity, identity),
            ("task", measurement.prompts(sparse, "test", settings.test_prompts), identity, task_moment),
            ("query", _query_shifted(measurement.prompts(unshifted, "test", settings.test_prompts)),
             query_moment, identity)):
        trivial = float(torch.trace(q @ xi))
        tests[(label, 1.0)] = (prompt, float(shifted_risk(gamma, identity, q, xi, m)), trivial,
                               float(shifted_risk(gamma, identity, q, xi, 10**12)))
    rows = []
    for (label, scale), (prompt, formula, trivial, limit) in tests.items():
        for seed, model in enumerate(measurement.models["isotropic"]):
            risk, error = mean_and_standard_error(final_query_errors(model, prompt))
            rows.append({"run": "isotropic", "seed": seed, "quantity": "shift_risk", "value": risk, "shift": label,
                         "c": scale, "standard_error": error, "formula": formula, "trivial": trivial,
                         "limit": limit})
    return rows


def _select(results: dict, run: str, quantity: str, **where) -> list[dict]:
    return [row for row in results["rows"] if row["run"] == run and row["quantity"] == quantity
            and all(row.get(key) == value for key, value in where.items())]


def _per_seed(results: dict, run: str, quantity: str, key: str = "value", **where) -> list[float]:
    """``key`` of ``quantity``'s rows for ``run`` (matching ``where``), one per seed, in seed order."""
    rows = sorted(_select(results, run, quantity, **where), key=lambda row: row["seed"])
    return [row[key] for row in rows]


def _risk_check(results: dict, quantity: str, run: str, measured: str, slack: float, source: str, **where) -> Check:
    """The seeds' mean risk against its closed form: a sanity check (the risk follows from B)."""
    rows = _select(results, run, measured, **where)
    return risk_sanity_check(quantity, rows[0]["formula"], _per_seed(results, run, measured, **where),
                             _per_seed(results, run, measured, "standard_error", **where), slack=slack, source=source)


def checks(results: dict, settings: Settings) -> list[Check]:
    out = []
    for run in ("isotropic", "anisotropic"):
        out.append(claim_check("global-optimum", f"{run} Λ: ‖B − Γ*‖_F/‖Γ*‖_F", ENTRY_TOLERANCE,
                               seed_values(results["rows"], "relative_error", run=run), relation="at_most",
                               source=THM_4_1))
        for length in settings.lengths:
            out.append(_risk_check(results, f"{run} Λ: risk at M = {length} (trained on N = {settings.context})",
                                   run, "risk", RISK_SLACK, RISK_SOURCE, M=length))
    m = settings.shift_length
    for label, law in (("task", f"w with {TASK_SPARSITY} non-zero N(0, {TASK_SCALE:g}²) entry"),
                       ("query", f"x_q ~ N({QUERY_MEAN:g}e₁, I)")):
        out.append(_risk_check(results, f"{label} shift ({law}): risk at M = {m}", "isotropic",
                               "shift_risk", RISK_SLACK, TOLERATED_SOURCE, shift=label))
        (row, *_) = _select(results, "isotropic", "shift_risk", shift=label)
        gamma = settings.context / (settings.context + settings.dim + 1)
        out.append(exact(f"{label} shift: closed-form limit / trivial risk = (1 − γ)²", (1 - gamma) ** 2,
                         row["limit"] / row["trivial"], tolerance=1e-9, source=TOLERATED_SOURCE))
    for scale in settings.shifts:
        out.append(_risk_check(results, f"covariate shift x ~ N(0, {scale:g}·I), M = {m}",
                               "isotropic", "shift_risk", SHIFT_SLACK, SHIFT_SOURCE, shift="covariate", c=scale))
    out.append(claim_check("random-covariance", "Λ rotated per prompt: ‖B − γ_r I‖_F/‖γ_r I‖_F", ENTRY_TOLERANCE,
                           seed_values(results["rows"], "relative_error", run="random-covariance"),
                           relation="at_most", source=RANDOM_SOURCE))
    for length in sorted({settings.context, max(settings.lengths)} & set(settings.lengths)):
        out.append(_risk_check(results, f"Λ rotated per prompt: risk at M = {length}",
                               "random-covariance", "risk", RISK_SLACK, RANDOM_SOURCE, M=length))
    spectrum = torch.tensor(settings.anisotropic_spectrum, dtype=torch.float64)
    step = random_covariance_step(spectrum, settings.context)
    limit = float((spectrum * (step * spectrum - 1) ** 2).sum())
    out.append(Check("Λ rotated per prompt: risk of γ_r I as M → ∞, Σλ(γ_r λ − 1)² (least squares: 0)", 0.0, limit,
                     relation="at_least", source=RANDOM_SOURCE))
    return out


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Γ* entries (Thm 4.1), risk against prompt length M (with the random-covariance run, §4.3), the
    covariate-shift curve and the shifted risks' fractions of the trivial risk (§4.2); trained layers: the mean
    over seeds with its 95 % interval."""
    entry_curves, low, high = [], 0.0, 0.0
    for run, data in results["entries"].items():
        order = sorted(range(len(data["formula"])), key=lambda index: data["formula"][index])
        formula = [data["formula"][index] for index in order]
        entry_curves.append(seed_curve(f"trained B, {run} Λ", formula,
                                       [[learned[index] for index in order] for learned in data["learned"]],
                                       continuous=False))
        low, high = min(low, *formula), max(high, *formula)
    entries = Panel("optimum entry (Γ*_ij; γ_r I for random Λ)", "B_ij (trained)",
                    [*entry_curves, Curve("B = optimum", [low, high], [low, high], baseline=True)],
                    title="Thm 4.1, §4.3: global optimum")

    def by_seed(run: str, quantity: str, key: str, values, **where) -> list[list[float]]:
        return [list(seed) for seed in zip(*(_per_seed(results, run, quantity, **{key: value}, **where)
                                            for value in values))]

    risk_curves = []
    lengths = list(settings.lengths)
    for run in ("isotropic", "anisotropic", "random-covariance"):
        risk_curves.append(seed_curve(f"trained, {run} Λ", lengths, by_seed(run, "risk", "M", lengths)))
        risk_curves.append(Curve(f"formula, {run} Λ", lengths,
                                 [_select(results, run, "risk", M=length)[0]["formula"] for length in lengths],
                                 baseline=True))
    risk = Panel("test prompt length M", "risk E(ŷ − y_q)²", risk_curves,
                 title=f"Thm 4.1: trained on N = {settings.context}", xscale="log", yscale="log")
    scales = list(settings.shifts)
    rows = [_select(results, "isotropic", "shift_risk", shift="covariate", c=scale)[0] for scale in scales]
    m = settings.shift_length
    shift = Panel("covariate scale c (test x ~ N(0, cI))", "risk E(ŷ − y_q)²", [
        seed_curve(f"trained, M = {m}", scales, by_seed("isotropic", "shift_risk", "c", scales, shift="covariate")),
        Curve(f"R_M(c), M = {m}", scales, [row["formula"] for row in rows], baseline=True),
        Curve("R∞(c) = dc(cγ − 1)²", scales, [row["limit"] for row in rows], baseline=True)],
        title="§4.2: covariate shift", xscale="log", yscale="log")
    return [entries, risk, shift, _fractions_panel(results, settings)]


def _fractions_panel(results: dict, settings: Settings) -> Panel:
    """Risk / trivial risk at M = ``shift_length`` per test law, each law a point of its own (no line joins
    laws): the tolerated shifts keep the unshifted fraction, a covariate shift (c = 1/2, 2) does not."""
    laws = [("none", 1.0, "no shift", "none"), ("task", 1.0, "task shift", "task"),
            ("query", 1.0, "query shift", "query")]
    laws += [("covariate", scale, f"covariate c = {scale:g}", f"c = {scale:g}") for scale in (0.5, 2.0)
             if scale in settings.shifts]
    curves = []
    for position, (label, scale, name, _) in enumerate(laws):
        group = sorted(_select(results, "isotropic", "shift_risk", shift=label, c=scale), key=lambda row: row["seed"])
        curves.append(seed_curve(f"trained, {name}", [position], [[row["value"] / row["trivial"]] for row in group],
                                 continuous=False))
        curves.append(Curve(f"closed form, {name}", [position], [group[0]["formula"] / group[0]["trivial"]],
                            baseline=True, continuous=False))
    return Panel("test law", f"risk / trivial risk (M = {settings.shift_length})", curves,
                 title="§4.2: task and query shifts tolerated", yscale="log",
                 xticks=[(position, tick) for position, (*_, tick) in enumerate(laws)])


REPRODUCTION = Reproduction(
    name="zhang-frei-bartlett-2023",
    paper=PAPER,
    summary="Gradient flow on one linear self-attention layer reaches the closed-form global optimum "
          "Γ* = ((1+1/N)Λ + trΛ/N·I)⁻¹, and with covariances varying across prompts the one γ_r I that serves "
          "them all; the risks at every prompt length and under task, query and covariate shift follow in closed "
          "form (sanity checks).",
    caption="Thm 4.1, §4.2 and §4.3 of the paper: one LSA layer trained by gradient flow from the paper's "
            "initialisation against the global optimum, the risk over prompt lengths, under task, query and "
            "covariate shift, and with a covariance varying across prompts",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=3.3,
)
