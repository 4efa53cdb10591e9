"""What makes a model hard to optimise, measured on a trained model or along its training trajectory.

Ahn, Cheng, Song, Yun, Jadbabaie & Sra 2024 ("Linear attention is (maybe) all you need (to understand
Transformer optimization)", ICLR) show that a linear transformer trained on in-context regression has the
features of real transformer training; these functions measure them, following the authors' notebooks
(chengxiang/LinearTransformer):

* stochastic-gradient noise, a minibatch gradient minus the full-batch gradient (``plot_stochastic_noise.ipynb``:
  10 000 minibatches of 1 000 prompts against one batch of 100 000, their histogram of the noise's norm), and
  tail indices of such noise: Mohammadi, Mohammadpour & Ogata 2015's estimator for symmetric α-stable samples,
  which Simsekli, Sagun & Gürbüzbalaban 2019 ("A tail-index analysis of stochastic gradient noise in deep neural
  networks", ICML) apply to gradient noise, and Hill's (1975) estimator of a power-law tail, for the norms;
* the robust condition number R_med^OPT = max_i |H_ii| / median_i |H_ii| of the loss's Hessian H (Jiang et al.
  2022, "How does adaptive optimization impact local neural network geometry?"; ``plot_condition_number.ipynb``);
* directional smoothness along the trajectory, the loss's second derivative at θ_t along the step θ_{t+1} − θ_t,
  set against the gradient norm ‖∇f(θ_t)‖ on one fixed batch (``plot_smoothness_vs_gradnorm.ipynb``): the
  generalised (L0, L1) smoothness of Zhang, He, Sra & Jadbabaie 2020 shows as a line in log-log axes.

The curvature functions take any twice-differentiable ``loss(θ)`` of a flat parameter vector;
:func:`loss_of_parameters` builds that function for a model, a task and a batch, in float64 (the training
loss itself is taken in float32, as :func:`icl_sim.training.task_loss` takes it).
"""
from __future__ import annotations

import copy
import math
from typing import Callable, Sequence

import numpy as np
import torch
from torch.func import functional_call, grad, vjp, vmap

from icl_sim.ensemble import RunLoss
from icl_sim.models import InContextModel
from icl_sim.prompt import Prompt
from icl_sim.seeding import make_generator
from icl_sim.validation import check_int

Loss = Callable[[torch.Tensor], torch.Tensor]
#: Hessian-vector products or minibatch gradients evaluated at once (memory: this many gradients' worth)
CHUNK = 64
#: the parts of the "eval" stream's items that :func:`gradient_noise` draws its minibatches and reference from
NOISE_SHARD, REFERENCE_SHARD = 1, 2


# -- a model's loss as a function of its flat parameters ---------------------------------------------------------
def parameter_vector(model: torch.nn.Module) -> torch.Tensor:
    """All of ``model``'s parameters, flattened in ``parameters()`` order, as one float64 vector."""
    return torch.cat([parameter.detach().reshape(-1) for parameter in model.parameters()]).double()


def loss_of_parameters(model: InContextModel, task, prompt: Prompt, *, loss_on: str = "last", step: int = 0) -> Loss:
    """θ ↦ the training loss of ``model`` with flat parameters θ (:func:`parameter_vector`'s layout) on ``prompt``.

    A float64 copy of the model and prompt; ``loss_on`` and ``step`` as in :func:`icl_sim.training.task_loss`
    (``step`` matters only to models whose training loss depends on it, such as a looped model's curriculum).
    """
    return _FlatLoss(model, task, loss_on, step).on(prompt)


class _FlatLoss:
    """A float64 copy of a model's training loss, evaluated at flat parameter vectors on any prompt."""

    def __init__(self, model: InContextModel, task, loss_on: str, step: int):
        self.module, self.step = RunLoss(copy.deepcopy(model).double(), task, loss_on), step
        self.names = [name for name, _ in self.module.named_parameters()]
        self.shapes = [parameter.shape for parameter in self.module.parameters()]

    def __call__(self, theta: torch.Tensor, xs: torch.Tensor, ys: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(theta, [math.prod(shape) for shape in self.shapes])
        weights = {name: piece.reshape(shape) for name, piece, shape in zip(self.names, pieces, self.shapes)}
        return functional_call(self.module, weights, (xs, ys, target, self.step))

    def on(self, prompt: Prompt) -> Loss:
        data = prompt.to(dtype=torch.float64)
        return lambda theta: self(theta, data.xs, data.ys, data.target)


# -- stochastic-gradient noise and its tail ----------------------------------------------------------------------
def gradient_noise(model: InContextModel, task, *, batch_size: int, samples: int, reference_batches: int = 100,
                   seed: int = 0, loss_on: str = "last", step: int = 0) -> torch.Tensor:
    """Stochastic-gradient noise at ``model``'s weights: ``samples`` rows g_i − ḡ, (samples, parameters), float64.

    g_i is the gradient of the loss on minibatch i of ``batch_size`` prompts, ḡ the gradient on
    ``reference_batches`` × ``batch_size`` other prompts, the mean of their equal-sized batches' gradients: the
    authors' 100 000-prompt estimate of the true gradient for B = 1 000.  Minibatch i is part ``NOISE_SHARD`` of
    item i of the ``"eval"`` stream of ``seed`` (apart from training's stream), reference batch r part
    ``REFERENCE_SHARD`` of item r, drawn on the model's device.
    """
    check_int("batch_size", batch_size, 1)
    check_int("samples", samples, 1)
    check_int("reference_batches", reference_batches, 1)
    device, theta = next(model.parameters()).device, parameter_vector(model)
    flat_loss = _FlatLoss(model, task, loss_on, step)

    def gradients(shard: int, count: int) -> torch.Tensor:
        """One minibatch gradient per row, ``CHUNK`` minibatches drawn and differentiated (vmapped) at a time."""
        chunks = []
        for start in range(0, count, CHUNK):
            prompts = [task.sample(batch_size, make_generator(seed, "eval", index, device, shard=shard),
                                   dtype=torch.float64) for index in range(start, min(start + CHUNK, count))]
            xs, ys, target = (torch.stack(tensors) for tensors in
                              zip(*((prompt.xs, prompt.ys, prompt.target) for prompt in prompts)))
            chunks.append(vmap(grad(flat_loss), in_dims=(None, 0, 0, 0))(theta, xs, ys, target))
        return torch.cat(chunks)

    return gradients(NOISE_SHARD, samples) - gradients(REFERENCE_SHARD, reference_batches).mean(0)


def stable_tail_index(samples, block: int | None = None) -> float:
    """α̂ of iid symmetric α-stable ``samples`` (flattened), Mohammadi et al. 2015 (Simsekli et al. 2019, eq. 6).

    With K = K1·K2 samples X_j and block sums Y_i = Σ_{j=1}^{K1} X_{(i−1)K1+j} (which are K1^{1/α} X in law),
    1/α̂ = (mean log|Y_i| − mean log|X_j|) / log K1.  ``block`` is K1, √K by default (Simsekli et al.); samples past
    K1·K2 are dropped.  α = 2 is the gaussian; smaller is heavier-tailed.  The samples must share one scale (one
    coordinate over draws, or standardised coordinates): blocks mixing scales bias the estimate.
    """
    values = np.asarray(samples, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(values) & (values != 0)):
        raise ValueError("samples must be finite and non-zero (log|X| is taken; drop parameters without noise)")
    k1 = math.isqrt(values.size) if block is None else block
    check_int("block", k1, 2, values.size // 2, maximum_name="half the number of samples")
    k2 = values.size // k1
    values = values[: k1 * k2]
    blocks = values.reshape(k2, k1).sum(axis=1)
    inverse = (np.mean(np.log(np.abs(blocks))) - np.mean(np.log(np.abs(values)))) / math.log(k1)
    return 1.0 / inverse


def hill_tail_index(samples, tail_size: int | None = None) -> float:
    """Hill's (1975) estimate of α in P(|X| > x) ~ x^{−α} from the ``tail_size`` largest |X| (√n by default):

        α̂ = k / Σ_{i=1}^{k} log(X_(i) / X_(k+1)),   X_(1) ≥ X_(2) ≥ … the order statistics,

    exact in law for a Pareto tail: k/α̂ is then a sum of k standard exponentials over α.  For the norms of the
    noise vectors, the quantity the authors' histograms show.
    """
    values = np.sort(np.abs(np.asarray(samples, dtype=np.float64).reshape(-1)))[::-1]
    k = math.isqrt(values.size) if tail_size is None else tail_size
    check_int("tail_size", k, 1, values.size - 1, maximum_name="the number of samples − 1")
    if values[k] <= 0:
        raise ValueError(f"samples must have more than tail_size={k} non-zero values")
    return k / float(np.sum(np.log(values[:k] / values[k])))


# -- curvature ---------------------------------------------------------------------------------------------------
def hessian_vector_products(loss: Loss, theta: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """H v for each row v of ``vectors`` (m, p), H the Hessian of ``loss`` at ``theta``: reverse over reverse
    (the vector-Jacobian product of the gradient; H is symmetric), ``CHUNK`` rows at a time."""
    _, pullback = vjp(grad(loss), theta)
    return vmap(lambda vector: pullback(vector)[0], chunk_size=CHUNK)(vectors)


def hessian_diagonal(loss: Loss, theta: torch.Tensor) -> torch.Tensor:
    """The exact diagonal H_ii of the Hessian of ``loss`` at ``theta`` (one Hessian-vector product per e_i)."""
    basis = torch.eye(theta.numel(), dtype=theta.dtype, device=theta.device)
    return torch.diagonal(hessian_vector_products(loss, theta, basis))


def robust_condition_number(loss: Loss, theta: torch.Tensor) -> float:
    """R_med^OPT = max_i |H_ii| / median_i |H_ii| (Jiang et al. 2022), the authors' ill-conditioning measure.

    The median is torch's, the lower middle value for an even count, as in the authors' notebook.
    """
    diagonal = hessian_diagonal(loss, theta).abs()
    return float(diagonal.max() / diagonal.median())


def directional_smoothness(loss: Loss, theta: torch.Tensor, direction: torch.Tensor) -> float:
    """d²/dt² loss(θ + t u) at t = 0 with u = direction/‖direction‖: uᵀ H u, the curvature along ``direction``."""
    return float(_curvature(loss, theta, direction))


def _curvature(loss: Loss, theta: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """uᵀ H(θ) u for u = direction/‖direction‖ (NaN for a zero direction), as a tensor that vmap can batch."""
    unit = direction / torch.linalg.vector_norm(direction)
    _, pullback = vjp(grad(loss), theta)
    return unit @ pullback(unit)[0]


def smoothness_along_trajectory(loss: Loss, thetas: Sequence[torch.Tensor] | torch.Tensor
                                ) -> tuple[torch.Tensor, torch.Tensor]:
    """(‖∇f(θ_t)‖, directional smoothness at θ_t along θ_{t+1} − θ_t) for t = 0 … T − 2 of the trajectory.

    The authors' smoothness-versus-gradient-norm plot, on one fixed batch (their seed 99, 1 000 prompts) through the
    first 2 000 steps.  A step of length zero has no direction: its smoothness is NaN.  Negative curvature gives a
    negative smoothness, which a log axis drops (:func:`smoothness_gradient_fit`).
    """
    points = torch.stack(list(thetas)) if not isinstance(thetas, torch.Tensor) else thetas
    if points.ndim != 2 or len(points) < 2:
        raise ValueError(f"thetas must hold at least two parameter vectors of one length, got shape "
                         f"{tuple(points.shape)}")
    gradients = vmap(grad(loss), chunk_size=CHUNK)(points[:-1])
    smoothness = vmap(lambda theta, step: _curvature(loss, theta, step), chunk_size=CHUNK)(points[:-1],
                                                                                          points[1:] - points[:-1])
    return torch.linalg.vector_norm(gradients, dim=1).detach(), smoothness.detach()


def smoothness_gradient_fit(gradient_norms, smoothness) -> dict[str, float]:
    """The least-squares line log L = slope · log ‖∇f‖ + intercept and its correlation, over the points with
    positive, finite smoothness (``kept`` of them): generalised smoothness L ≤ L0 + L1‖∇f‖ shows as a positive
    slope (Zhang et al. 2020; Ahn et al. 2024)."""
    norms, curvature = (np.asarray(values, dtype=np.float64).reshape(-1) for values in (gradient_norms, smoothness))
    if norms.shape != curvature.shape:
        raise ValueError(f"gradient_norms and smoothness must have one length, got {norms.size} and {curvature.size}")
    keep = np.isfinite(curvature) & (curvature > 0) & (norms > 0)
    if keep.sum() < 3:
        raise ValueError(f"smoothness_gradient_fit needs at least 3 points of positive smoothness, got {keep.sum()}")
    x, y = np.log(norms[keep]), np.log(curvature[keep])
    slope, intercept = np.polyfit(x, y, 1)
    return {"slope": float(slope), "intercept": float(intercept), "correlation": float(np.corrcoef(x, y)[0, 1]),
            "kept": int(keep.sum())}
