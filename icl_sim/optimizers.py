"""Optimisers beyond torch's own: SophiaG (Liu, Li, Hall, Liang & Ma 2023, "Sophia: a scalable stochastic
second-order optimizer for language model pre-training", arXiv 2305.14342, Algorithm 3) and normalised gradient
descent (Tarzanagh, Li, Thrampoulidis & Oymak 2023, "Transformers as support vector machines", arXiv 2308.16898).

SophiaG keeps two exponential moving averages per parameter, of the gradient and of a diagonal Hessian estimate,
and moves each coordinate by the momentum over the curvature, clipped to at most the learning rate:

    m ← β₁ m + (1 − β₁) g                                   (every step)
    h ← β₂ h + (1 − β₂) ĥ                                   (when a Hessian estimate ĥ is given)
    θ ← θ (1 − η λ)                                          (decoupled weight decay)
    θ ← θ − η · sign(m) · min(|m| / (ρ B h + ε), 1)

with the Gauss-Newton-Bartlett estimator ĥ = B · ĝ ⊙ ĝ, ĝ the mean gradient over a batch of B prompts of the loss
on labels sampled from the model's own output distribution; the official implementation stores the running mean
of ĝ ⊙ ĝ (:meth:`SophiaG.update_hessian`) and multiplies by B in the step, as here.  Where no estimate has been
given (h = 0) the update is −η · sign(m), clipped sign momentum: Saparov et al. 2024's train.py builds SophiaG with
weight decay 0.1 and never calls ``update_hessian``, so their runs train with exactly that.
"""
from __future__ import annotations

import torch

from icl_sim.validation import check_float

#: SophiaG's defaults in the official implementation (and Saparov et al.'s Sophia.py): β, ρ, ε
SOPHIA_BETAS = (0.965, 0.99)
SOPHIA_RHO = 0.04
SOPHIA_EPS = 1e-15


class SophiaG(torch.optim.Optimizer):
    """SophiaG over ``params`` (Liu et al. 2023, Algorithm 3); ``batch_size`` is B of the clipping denominator."""

    def __init__(self, params, lr: float = 1e-4, betas: tuple[float, float] = SOPHIA_BETAS, rho: float = SOPHIA_RHO,
                 weight_decay: float = 0.1, batch_size: int = 1, eps: float = SOPHIA_EPS):
        check_float("lr", lr, 0.0)
        for index, beta in enumerate(betas):
            check_float(f"betas[{index}]", beta, 0.0, maximum=1.0)
        check_float("rho", rho, 0.0)
        check_float("weight_decay", weight_decay, 0.0)
        check_float("eps", eps, 0.0, strict=True)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), rho=rho, weight_decay=weight_decay,
                                      batch_size=batch_size, eps=eps))

    def _state(self, parameter: torch.Tensor) -> dict:
        state = self.state[parameter]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(parameter)
            state["hessian"] = torch.zeros_like(parameter)
        return state

    @torch.no_grad()
    def update_hessian(self) -> None:
        """h ← β₂ h + (1 − β₂) ĝ ⊙ ĝ from the gradients now held (those of the loss on sampled labels)."""
        for group in self.param_groups:
            beta2 = group["betas"][1]
            for parameter in group["params"]:
                if parameter.grad is not None:
                    self._state(parameter)["hessian"].mul_(beta2).addcmul_(parameter.grad, parameter.grad,
                                                                           value=1 - beta2)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1 = group["betas"][0]
            lr, scale = group["lr"], group["rho"] * group["batch_size"]
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                state = self._state(parameter)
                state["step"] += 1
                momentum = state["exp_avg"]
                parameter.mul_(1 - lr * group["weight_decay"])
                momentum.mul_(beta1).add_(parameter.grad, alpha=1 - beta1)
                ratio = (momentum.abs() / (scale * state["hessian"] + group["eps"])).clamp(max=1.0)
                parameter.addcmul_(momentum.sign(), ratio, value=-lr)
        return loss


class NormalizedGD(torch.optim.Optimizer):
    """Normalised gradient descent: each parameter moves by the learning rate along its own negative gradient
    scaled to unit Frobenius norm,

        θ ← θ − η · (∇L + 2λθ) / (‖∇L + 2λθ‖_F + ε),

    so that the weights of a loss with no finite minimiser grow at a steady rate and their direction can be
    followed (Tarzanagh et al. 2023; their umich-sota/TF-as-SVM README and notebooks).  λ is an optional penalty
    λ‖θ‖² in the loss: the authors set it to float64's ε for the (K, Q) factors, whose product grows quadratically
    until the loss gradient underflows, so that the penalty's gradient then shrinks them.  ε, the parameter dtype's
    machine epsilon, leaves a zero gradient at rest, as in their code.  ``stacked_runs`` leading axes of each
    parameter index the runs of an ensemble (``icl_sim.ensemble``): each run's slice is normalised by its own norm.
    """

    def __init__(self, params, lr: float = 0.1, penalty: float = 0.0, stacked_runs: int = 0):
        check_float("lr", lr, 0.0)
        check_float("penalty", penalty, 0.0)
        if stacked_runs not in (0, 1):
            raise ValueError(f"stacked_runs must be 0 or 1 (the ensemble's one run axis), got {stacked_runs!r}")
        super().__init__(params, dict(lr=lr, penalty=penalty))
        self.stacked_runs = stacked_runs

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                direction = parameter.grad.add(parameter, alpha=2 * group["penalty"])
                axes = tuple(range(self.stacked_runs, direction.dim()))
                norm = torch.linalg.vector_norm(direction, dim=axes, keepdim=True) if axes else direction.abs()
                parameter.sub_(group["lr"] * direction / (norm + torch.finfo(direction.dtype).eps))
        return loss


def closure_loss(closure):
    """The loss a ``step(closure)`` call re-evaluates, with gradients on (None without a closure): torch's contract."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()
