"""Saxe, McClelland & Ganguli (ICLR 2014), "Exact solutions to the nonlinear dynamics of learning in
deep linear neural networks", Sec. 2: the exact learning curves (eqs. (2)–(7); the figure of mode
strengths over training, analytic against simulated — their Fig. 2, left, as we recall the numbering).

Setting: a two-layer linear network ŷ = W2·W1·x (``deep-linear``, hidden width h = d) trained by
plain gradient descent with a small step on whitened inputs, Σ11 = E[x xᵀ] = I, and a fixed
input–output map Σ31 = E[y xᵀ] = M with singular values s_1 > s_2 > s_3 (``linear-map``,
M = Q diag(s) Qᵀ with Q a fixed random rotation).  From the decoupled, balanced start
W1 = σR, W2 = σRᵀ (so W2·W1 = u0·I, u0 = σ²) every mode evolves on its own: its strength
u_i = q_iᵀ W2 W1 q_i solves τ u̇ = 2u(s − u), i.e. (their eq. (7))

    u(t) = s e^{2st/τ} / (e^{2st/τ} − 1 + s/u0),

a sigmoid that rises at the half-learning time t½ = (τ/2s) ln(s/u0 − 1): stronger modes are
learned first, in time ∝ 1/s.

The time constant, exactly: Saxe et al.'s flow τ dW/dt = −∇ L_S descends L_S = ½ E‖y − W2W1x‖²
with t in updates and τ = 1/λ.  icl-sim's training loop descends the mean squared error over
prompts, positions *and the k output components*, with no ½: E L = (1/k) E‖y − W2W1x‖² =
(2/k) L_S.  One SGD step of size lr is therefore a step of (2 lr/k) on L_S, and the closed form
holds with t in steps and **τ = k/(2·lr)** (tests/test_repro_saxe_2013.py checks one step of the
training loop against this).  The trajectories here come from icl-sim's own loop
(``icl_sim.training``): fresh Gaussian batches every step (B·N pairs), plain SGD, constant lr.

Their simulations start from small random weights and follow the analytic curves approximately; we
start from the decoupled initial conditions under which eq. (7) is exact (W1 = σR, W2 = σRᵀ,
``deep-linear``), so the comparison has no slack for the alignment phase.

Claim checked: each mode's trajectory against eq. (7) and its half-learning time against
(τ/2s) ln(s/u0 − 1); the modes stay decoupled (off-diagonal q_iᵀW2W1q_j ≈ 0).  The tolerances
cover the two ways a simulation departs from the flow: the Euler step (the growth factor per
step is 1 + 2lr·s/k instead of e^{2lr·s/k}, which delays t½ by about lr·s/k relative: 0.5 % at
quick scale) and the batch noise of Σ̂11 = I + O(1/√(BN)); a factor 2 in τ would be a 100 % error.

Scales: the paper's figures are simulations with a small learning rate whose exact values were not
available to us; ``full`` takes a finer step (lr 1e-3, τ = 2.5k steps for k = 5), a larger batch and
five modes; ``quick`` three modes with lr 5e-3 (τ = 300 steps) over 2500 steps, enough for the
weakest mode (s = 0.75) to reach 99 % of s; ``smoke`` a coarse step (lr 0.05) over 80 steps to
test the pipeline.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from icl_sim.checks import Check
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, Target
from icl_sim.tasks import LinearMap
from icl_sim.theory.formulas import saxe_half_learning_time, saxe_mode_strength

from .spec import Paper, Reproduction

PAPER = Paper("A. M. Saxe, J. L. McClelland, S. Ganguli",
              "Exact solutions to the nonlinear dynamics of learning in deep linear neural networks", "ICLR 2014",
              "1312.6120")
EQ_7 = "Saxe et al. 2014, Sec. 2, eq. (7) (with τ = k/(2·lr) for icl-sim's loss)"
#: the largest |u_sim − u(t)| / s along a trajectory, and the relative error of t½ (see the docstring)
TRAJECTORY_TOLERANCE, HALF_TIME_TOLERANCE = 0.02, 0.01
#: the largest |q_iᵀ W2 W1 q_j| / s_1, i ≠ j: the modes stay decoupled
COUPLING_TOLERANCE = 0.02


@dataclass(frozen=True)
class Settings:
    """Training sizes of one scale."""

    singular_values: tuple[float, ...]
    steps: int
    lr: float
    batch_size: int
    points: int
    log_every: int
    init_scale: float = math.sqrt(1e-3)  # u0 = σ² = 1e-3

    @property
    def task(self) -> LinearMap:
        return LinearMap(dim=len(self.singular_values), points=self.points, singular_values=self.singular_values,
                         teacher_seed=1)

    @property
    def tau(self) -> float:
        """τ in steps: k/(2 lr) (the loop's loss is the mean over the k outputs, with no ½)."""
        return self.task.target_dim / (2 * self.lr)

    @property
    def u0(self) -> float:
        return self.init_scale ** 2


SCALES = {
    "smoke": Settings(singular_values=(3.0, 1.5), steps=80, lr=5e-2, batch_size=32, points=4, log_every=2),
    "quick": Settings(singular_values=(3.0, 1.5, 0.75), steps=2500, lr=5e-3, batch_size=512, points=16,
                      log_every=10),
    "full": Settings(singular_values=(4.0, 3.0, 2.0, 1.0, 0.5), steps=25_000, lr=1e-3, batch_size=2048, points=16,
                     log_every=25),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    task = settings.task
    return {"deep-linear": TrainConfig(
        task=task.name, task_params=dataclasses.asdict(task), model="deep-linear",
        model_params={"init_scale": settings.init_scale}, steps=settings.steps, batch_size=settings.batch_size,
        lr=settings.lr, optimizer="sgd", lr_schedule="constant", loss_on="all", log_every=settings.log_every,
        checkpoint_every=settings.steps)}


def mode_strengths(model, modes: torch.Tensor) -> torch.Tensor:
    """Qᵀ W2 W1 Q (k, k) float64: the diagonal holds the mode strengths u_i, the rest the couplings."""
    product = model.product().detach().to(torch.float64).cpu()
    return modes.T @ product @ modes


def monitor(settings: Settings, device):
    modes = settings.task.modes()

    def log(model) -> dict[str, float]:
        strengths = mode_strengths(model, modes)
        coupling = (strengths - torch.diag(strengths.diagonal())).abs().max()
        return {**{f"u_{i}": float(value) for i, value in enumerate(strengths.diagonal())},
                "coupling": float(coupling)}

    return log


def half_time(steps: np.ndarray, strengths: np.ndarray, s: float) -> float:
    """The first step at which u crosses s/2, linearly interpolated between logged steps (nan if never)."""
    above = np.nonzero(strengths >= s / 2)[0]
    if not len(above) or above[0] == 0:
        return math.nan
    i = above[0]
    fraction = (s / 2 - strengths[i - 1]) / (strengths[i] - strengths[i - 1])
    return float(steps[i - 1] + fraction * (steps[i] - steps[i - 1]))


def measure(measurement) -> dict:
    settings = measurement.settings
    rows = []
    for seed, history in enumerate(measurement.histories["deep-linear"]):
        steps = np.array([0] + [record["step"] for record in history], dtype=np.float64)
        for i, s in enumerate(settings.singular_values):
            simulated = np.array([settings.u0] + [record[f"u_{i}"] for record in history])
            formula = saxe_mode_strength(steps, s, settings.u0, settings.tau)
            values = {"s": s, "half_time": half_time(steps, simulated, s),
                      "half_time_formula": float(saxe_half_learning_time(s, settings.u0, settings.tau)),
                      "max_trajectory_error": float(np.abs(simulated - formula).max() / s),
                      "final_strength": float(simulated[-1]), "final_strength_formula": float(formula[-1])}
            rows += [{"seed": seed, "mode": i, "quantity": key, "value": value} for key, value in values.items()]
        rows.append({"seed": seed, "mode": -1, "quantity": "max_coupling",
                     "value": max(record["coupling"] for record in history) / max(settings.singular_values)})
    return {"rows": rows, "histories": measurement.histories["deep-linear"]}


def _mean(results: dict, quantity: str, mode: int) -> float:
    values = [row["value"] for row in results["rows"] if row["quantity"] == quantity and row["mode"] == mode]
    return sum(values) / len(values)


def checks(results: dict, settings: Settings) -> list[Check]:
    found = []
    for i, s in enumerate(settings.singular_values):
        expected = _mean(results, "half_time_formula", i)
        found += [
            Check(f"mode {i} (s = {s:g}): half-learning time t½ in steps", expected, _mean(results, "half_time", i),
                  HALF_TIME_TOLERANCE * expected, source=f"{EQ_7}: t½ = (τ/2s) ln(s/u0 − 1)"),
            Check(f"mode {i} (s = {s:g}): max |u_sim(t) − u(t)| / s along the trajectory", TRAJECTORY_TOLERANCE,
                  _mean(results, "max_trajectory_error", i), relation="at_most", source=EQ_7),
        ]
    found.append(Check("largest coupling |q_iᵀ W2 W1 q_j| / s_1 (i ≠ j) during training", COUPLING_TOLERANCE,
                       _mean(results, "max_coupling", -1), relation="at_most",
                       source="Saxe et al. 2014, Sec. 2: from decoupled initial conditions the modes never couple"))
    return found


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Fig. 2 (left) / Fig. 3 of the paper: mode strength against time, simulation solid, eq. (7) dashed."""
    history = results["histories"][0]
    steps = np.array([0] + [record["step"] for record in history], dtype=np.float64)
    dense = np.linspace(0, steps[-1], 400)
    curves = []
    for i, s in enumerate(settings.singular_values):
        curves.append(Curve(f"simulation, s = {s:g}", list(steps),
                            [settings.u0] + [record[f"u_{i}"] for record in history]))
        curves.append(Curve(f"eq. (7), s = {s:g}", list(dense),
                            list(saxe_mode_strength(dense, s, settings.u0, settings.tau)), baseline=True))
    strengths = np.array(settings.singular_values)
    grid = np.linspace(strengths.min() * 0.8, strengths.max() * 1.1, 100)
    half_panel = Panel("singular value s", "half-learning time t½ (steps)", [
        Curve("simulation", list(strengths), [_mean(results, "half_time", i) for i in range(len(strengths))]),
        Curve("(τ/2s) ln(s/u0 − 1)", list(grid), list(saxe_half_learning_time(grid, settings.u0, settings.tau)),
              baseline=True)])
    error_panel = Panel("singular value s", "max |u_sim − u(t)| / s", [
        Curve("simulation vs eq. (7)", list(strengths),
              [_mean(results, "max_trajectory_error", i) for i in range(len(strengths))])],
        targets=[Target(f"required ≤ {TRAJECTORY_TOLERANCE}", TRAJECTORY_TOLERANCE, 0.0, TRAJECTORY_TOLERANCE)])
    return [Panel(f"training step (τ = {settings.tau:g} steps, u0 = {settings.u0:g})",
                  "mode strength u = q_iᵀW2W1q_i", curves), half_panel, error_panel]


REPRODUCTION = Reproduction(
    name="saxe-2013",
    paper=PAPER,
    summary="From small decoupled initial weights, each mode of a two-layer linear network is learned along the "
          "sigmoid u(t) = s e^{2st/τ}/(e^{2st/τ} − 1 + s/u0), reaching half strength at "
          "t½ = (τ/2s) ln(s/u0 − 1).",
    caption="The paper's learning curves (Sec. 2, eq. (7); their Fig. 2, left): mode strengths of a two-layer "
            "linear network (icl-sim's training loop, plain SGD) against the exact solution eq. (7), "
            "with τ = k/(2·lr)",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=1.5,
    monitor=monitor,
)
