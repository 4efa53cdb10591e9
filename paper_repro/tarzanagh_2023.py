"""Tarzanagh, Li, Thrampoulidis & Oymak (2023), "Transformers as support vector machines": gradient descent on
one softmax attention layer's key-query weights converges in direction to a hard-margin SVM that separates the
tokens it selects from the others, the Frobenius-norm Att-SVM when W is trained and the nuclear-norm one when
(K, Q) are, and the softmax comes to select one token per prompt.

Setting (their umich-sota/TF-as-SVM, ``local_converge.ipynb`` with ``base.py``; the README's normalised GD):
n = 6 prompts of T = 8 tokens and a query z in d = 10 dimensions, all uniform on the unit sphere, labels ±1
(``token-selection``); the model f = vᵀ Xᵀ softmax(X W z) with the value map the identity and a fixed unit head v
(``selection-attention``: W, or W = KᵀQ with d × d factors, both from nn.Linear's uniform start, in float64);
the logistic loss on the fixed training set (full batch); normalised GD, each parameter's step η ∇/‖∇‖_F with
η = 0.1, for 2000 iterations; for (K, Q) the loss carries λ(‖K‖² + ‖Q‖²) with λ = float64's ε, as theirs
(``normalized-gd`` with ``weight_decay`` λ).  Like their notebook, the SVMs are solved for the tokens the trained
model selects, α_i = argmax_t softmax_t at the end (the theorem's locally optimal tokens; the fraction that are
also globally optimal, argmax y_i vᵀx_t, is reported), W^mm_α with the Frobenius norm and W^mm_⋆,α with the
nuclear norm (``icl_sim.theory.max_margin.attention_svm``, cvxpy/Clarabel), and directions are compared by
their correlation coefficient ⟨W₁, W₂⟩/(‖W₁‖‖W₂‖), theirs.  The notebook repeats this for 100 datasets (seeds
0-99); here each training seed s trains ``datasets`` of them (run r trains on seed 1000 r + s) and a seed's
value is the mean over its datasets.

Claims, each checked per training seed with every seed required to clear its bound:

* ``frobenius-direction`` (their Thm 2 and Sec. 4 local convergence; the W curves of the notebook): the trained
  W is nearer in direction to W^mm_α than the nuclear-norm solution W^mm_⋆,α is, corr(W, W^mm) −
  corr(W^mm_⋆, W^mm) > 0: a contrast fixed before running (the alternative, "W converges to some other
  separating direction", gives no reason to beat the other SVM).  Whether W is nearer W^mm_α than W^mm_⋆,α is
  reported (``own_correlation``, ``other_correlation``) but not checked: an untrained W already is (by +0.057 at
  quick scale), a random full-rank matrix leaning towards the higher-rank Frobenius solution.
* ``nuclear-direction`` (their Thm 1 with the (K, Q) parameterisation, vanishing regularisation): the same
  contrast for W = KᵀQ with the roles of the norms exchanged.
* ``selection`` (Thm 2's softmax saturation; the notebook's probability curves): the softmax probability of the
  selected token → 1: the mean over prompts and datasets of 1 − max_t softmax_t at the last iteration is at most
  0.01, for each parameterisation.  0.01 is our reading of "→ 1" (the paper states the limit, no finite-step
  number), fixed before running; an untrained layer leaves about 1 − 1/T.

Sanity (the convex programs, not training): the rank of the SVM solutions against d for n ∈ {5, 10, 15} at
T = 5 (their ``svm_rank.ipynb``, tokens selected by the head, the globally optimal ones): the Frobenius
solution has rank at most n in every instance, as the KKT conditions force (W^mm = Σ_i (Σ_t λ_it (x_iα −
x_it)) z_iᵀ, n rank-one terms), and the nuclear-norm solution's mean rank is nowhere above the Frobenius one's.  An instance with no
separating W (small d) is redrawn, as in their notebook, up to 20 times per instance kept; their d = 1 is left
out (its tokens are ±1, so in almost every prompt another token equals the selected one and no W separates
them).  Ranks count singular values above 1e-7, their tolerance.

The rank of the trained (K, Q) product, the paper's multi-token experiment (ReLU head, ``multi_token_converge``)
and its global-convergence visualisation are not reproduced.

Measured at quick scale (1.5 min wall, 64 s CPU, beside another job): corr(W, W^mm) − corr(W^mm_⋆, W^mm) per seed
0-2 is 0.131, 0.136, 0.149 (seeds 100-102: 0.152, 0.129, 0.145), the trained W's correlation with W^mm 0.997 against
the two SVMs' 0.85-0.87; for (K, Q) 0.122, 0.139, 0.134 (0.166, 0.165, 0.150); the unselected softmax mass at
iteration 2000 is below 2e-15 (W) and 1e-13 (K, Q); 93-100 % of the selected tokens are the globally optimal ones.
The untrained control fails every claim (its differences −0.55 and below, its unselected mass 0.84).  The
rehearsal of the full scale (204 runs) passes in 6 min here.

Scales: ``quick`` is the notebook's setting with 10 datasets per seed (30 per parameterisation, the notebook
100) and 10 rank instances per point (theirs 100); ``full`` 34 datasets per seed (102) and 100 rank instances;
``smoke`` a few dimensions and steps for the pipeline.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from icl_sim.checks import Check, claim_check
from icl_sim.config import TrainConfig
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.seeding import make_generator
from icl_sim.tasks import TokenSelection
from icl_sim.theory.max_margin import attention_svm, matrix_correlation
from icl_sim.training import training_batch

from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak", "Transformers as support vector machines",
              "arXiv 2023 (NeurIPS 2023 M3L workshop)", "2308.16898")
NOTEBOOK = "umich-sota/TF-as-SVM local_converge.ipynb"
#: the key-query parameterisations and the norm of the SVM each converges to (their Thm 1 and Thm 2)
NORMS = {"W": "fro", "KQ": "nuc"}
#: λ of the (K, Q) runs' penalty λ(‖K‖² + ‖Q‖²): float64's ε, the authors' choice
KQ_PENALTY = float(torch.finfo(torch.float64).eps)
#: the largest mean non-selected softmax mass at the end that counts as "the probability → 1" (fixed in advance)
SELECTION_BOUND = 0.01
#: run r of a parameterisation trains on the dataset of seed DATASET_STRIDE·r + the training seed
DATASET_STRIDE = 1000
#: the singular values that count towards a rank (svm_rank.ipynb's tol)
RANK_TOLERANCE = 1e-7
#: draws allowed per rank instance kept, for an instance with no separating W
REDRAWS = 20

CLAIMS = (
    Claim("frobenius-direction", "Normalised GD on W converges in direction to the Frobenius-norm Att-SVM of the "
          "tokens it selects, W^mm_α, not to the nuclear-norm one",
          "Tarzanagh et al. 2023, Thm 2 and Sec. 4 (local convergence); " + NOTEBOOK),
    Claim("nuclear-direction", "Normalised GD on (K, Q) converges in direction, for W = KᵀQ, to the nuclear-norm "
          "Att-SVM W^mm_⋆,α of the tokens it selects, not to the Frobenius-norm one",
          "Tarzanagh et al. 2023, Thm 1 ((K, Q) with vanishing regularisation); " + NOTEBOOK),
    Claim("selection", "The softmax probability of the selected token goes to 1 in every prompt",
          "Tarzanagh et al. 2023, Thm 2; " + NOTEBOOK + "'s softmax-probability curves"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale: the training problem, the optimiser, and the rank sweep."""

    dim: int
    tokens: int
    prompts: int
    steps: int
    datasets: int
    log_every: int
    rank_dims: tuple[int, ...]
    rank_prompt_counts: tuple[int, ...]
    rank_tokens: int
    rank_instances: int
    lr: float = 0.1

    @property
    def task(self) -> TokenSelection:
        return TokenSelection(dim=self.dim, tokens=self.tokens)


SCALES = {
    "smoke": Settings(dim=4, tokens=4, prompts=3, steps=60, datasets=1, log_every=10, rank_dims=(2, 4),
                      rank_prompt_counts=(2,), rank_tokens=3, rank_instances=2),
    "quick": Settings(dim=10, tokens=8, prompts=6, steps=2000, datasets=10, log_every=20,
                      rank_dims=(2, 3, 4, 5, 10, 15, 20), rank_prompt_counts=(5, 10, 15), rank_tokens=5,
                      rank_instances=10),
    "full": Settings(dim=10, tokens=8, prompts=6, steps=2000, datasets=34, log_every=10,
                     rank_dims=(2, 3, 4, 5, 10, 15, 20), rank_prompt_counts=(5, 10, 15), rank_tokens=5,
                     rank_instances=100),
}


def run_name(parameterization: str, dataset: int) -> str:
    return f"{parameterization}-{dataset:02d}"


def runs(settings: Settings) -> dict[str, TrainConfig]:
    task = settings.task
    return {run_name(parameterization, r): TrainConfig(
        task=task.name, task_params=dataclasses.asdict(task), model="selection-attention",
        model_params={"parameterization": parameterization}, steps=settings.steps, batch_size=settings.prompts,
        batch_redraw_every=settings.steps, optimizer="normalized-gd", lr=settings.lr,
        weight_decay=KQ_PENALTY if parameterization == "KQ" else 0.0, seed=DATASET_STRIDE * r,
        log_every=settings.log_every, checkpoint_every=settings.steps)
        for parameterization in NORMS for r in range(settings.datasets)}


def monitor(settings: Settings, device):
    """The combined key-query matrix W at every record, for the curves over iterations."""
    def log(model) -> dict[str, list[float]]:
        return {"key_query": model.key_query().detach().cpu().flatten().tolist()}

    return log


def selection_probabilities(weights: torch.Tensor, tokens: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """The softmax weights (K, n, T) of each prompt's tokens (n, T, d) for its query (n, d) under each of K
    key-query matrices (K, d, d)."""
    return torch.softmax(torch.einsum("ntk,ckl,nl->cnt", tokens, weights, queries), dim=-1)


def _dataset_measures(model, config: TrainConfig, history: list[dict], settings: Settings) -> dict:
    """One trained run on its training set: the SVMs of the tokens it selects and its direction's correlations
    with them, at the end and (``curves``) at every logged iteration."""
    prompt = training_batch(settings.task, config, 0, torch.device("cpu"))
    tokens, queries, labels = prompt.xs[:, :-1].double(), prompt.xs[:, -1].double(), prompt.ys[:, -1].double()
    final = model.key_query().detach().cpu().double()
    probabilities, selected = selection_probabilities(final[None], tokens, queries)[0].max(dim=-1)
    svms = {norm: attention_svm(tokens, queries, selected, norm) for norm in ("fro", "nuc")}
    own, other = NORMS[config.model_params["parameterization"]], {"fro": "nuc", "nuc": "fro"}
    optimal = ((tokens @ model.head.cpu().double()) * labels[:, None]).argmax(dim=-1)
    trajectory = torch.tensor([record["key_query"] for record in history], dtype=torch.float64)
    trajectory = trajectory.reshape(-1, settings.dim, settings.dim) if history else final[None]
    return {
        "own_correlation": matrix_correlation(final, svms[own]),
        "other_correlation": matrix_correlation(final, svms[other[own]]),
        "svm_correlation": matrix_correlation(svms[other[own]], svms[own]),
        "unselected_mass": float(1 - probabilities.mean()),
        "optimal_fraction": float((selected == optimal).double().mean()),
        "norm": float(torch.linalg.norm(final)),
        "curves": {
            "probability": selection_probabilities(trajectory, tokens, queries).max(dim=-1).values.mean(-1).tolist(),
            **{norm: [matrix_correlation(weights, svm) for weights in trajectory] for norm, svm in svms.items()}},
    }


def _svm_ranks(dim: int, prompts: int, tokens: int, instances: int) -> dict[str, list[float]]:
    """The ranks of both SVMs on ``instances`` random token-selection datasets whose tokens are selected by a
    random head, the globally optimal ones (svm_rank.ipynb); datasets with no separating W are redrawn.  Draw k of
    (n, d) is item k of the "eval" stream of seed 100 n + d (apart from the held-out streams 1-3)."""
    task, ranks = TokenSelection(dim=dim, tokens=tokens), {"fro": [], "nuc": []}
    for draw in range(REDRAWS * instances):
        if len(ranks["fro"]) == instances:
            break
        generator = make_generator(100 * prompts + dim, "eval", draw)
        prompt = task.sample(prompts, generator, dtype=torch.float64)
        head = torch.randn(dim, generator=generator, dtype=torch.float64)
        selected = ((prompt.xs[:, :-1] @ head) * prompt.ys[:, -1:]).argmax(dim=-1)
        try:
            solutions = {norm: attention_svm(prompt.xs[:, :-1], prompt.xs[:, -1], selected, norm) for norm in ranks}
        except ValueError:  # not separable: redrawn, as the notebook does
            continue
        for norm, solution in solutions.items():
            ranks[norm].append(int(torch.linalg.matrix_rank(solution, atol=RANK_TOLERANCE)))
    return ranks


def measure(measurement) -> dict:
    """Per seed and parameterisation, the mean over its datasets of each end-of-training measure, the curves over
    iterations, and the SVM rank sweep."""
    settings = measurement.settings
    rows, curves = [], {}
    for parameterization in NORMS:
        names = [run_name(parameterization, r) for r in range(settings.datasets)]
        seeds = len(measurement.models[names[0]])
        for seed in range(seeds):
            measured = [_dataset_measures(measurement.models[name][seed], measurement.configs[name][seed],
                                          measurement.histories[name][seed], settings) for name in names]
            for quantity in ("own_correlation", "other_correlation", "svm_correlation", "unselected_mass",
                             "optimal_fraction", "norm"):
                rows.append({"run": parameterization, "seed": seed, "quantity": quantity,
                             "value": float(np.mean([values[quantity] for values in measured]))})
            rows.append({"run": parameterization, "seed": seed, "quantity": "nearer_than_other_svm",
                         "value": float(np.mean([values["own_correlation"] - values["svm_correlation"]
                                                 for values in measured]))})
            curves.setdefault(parameterization, []).append(
                {key: np.mean([values["curves"][key] for values in measured], axis=0).tolist()
                 for key in ("probability", "fro", "nuc")})
    ranks = {(n, dim): _svm_ranks(dim, n, settings.rank_tokens, settings.rank_instances)
             for n in settings.rank_prompt_counts for dim in settings.rank_dims}
    for (n, dim), found in ranks.items():
        rows += [{"run": f"svm-{norm}", "seed": -1, "prompts": n, "dim": dim, "quantity": "mean_rank",
                  "value": float(np.mean(values)) if values else math.nan} for norm, values in found.items()]
    steps = [record["step"] for record in measurement.histories[run_name("W", 0)][0]]
    return {"rows": rows, "curves": curves, "steps": steps, "ranks": ranks}


def checks(results: dict, settings: Settings) -> list[Check]:
    def per_seed(parameterization: str, quantity: str) -> list[float]:
        return seed_values(results["rows"], quantity, run=parameterization)

    found = []
    for claim, parameterization in (("frobenius-direction", "W"), ("nuclear-direction", "KQ")):
        own, other = ("W^mm", "W^mm_⋆") if parameterization == "W" else ("W^mm_⋆", "W^mm")
        trained = "W" if parameterization == "W" else "KᵀQ"
        found.append(claim_check(
            claim, f"{parameterization} runs: corr({trained}, {own}) − corr({other}, {own}), mean over "
            f"{settings.datasets} datasets", 0.0, per_seed(parameterization, "nearer_than_other_svm"),
            relation="at_least", every_seed=True,
            source=f"{CLAIMS[0].source if parameterization == 'W' else CLAIMS[1].source}: a contrast fixed before "
                   f"running (nearer to {own} than {other} is)"))
    found += [claim_check("selection", f"{parameterization} runs: mean 1 − max_t softmax_t at iteration "
                          f"{settings.steps}", SELECTION_BOUND, per_seed(parameterization, "unselected_mass"),
                          relation="at_most", every_seed=True,
                          source=f"{CLAIMS[2].source}; the bound {SELECTION_BOUND} fixed before running")
              for parameterization in NORMS]
    return found + _rank_checks(results, settings)


def _rank_checks(results: dict, settings: Settings) -> list[Check]:
    """The rank sweep: the Frobenius solution's rank ≤ n (KKT), and the nuclear norm's lower mean rank."""
    ranks = results["ranks"]
    excess = max((rank - n for (n, _), found in ranks.items() for rank in found["fro"]), default=math.nan)
    gaps = [np.mean(found["fro"]) - np.mean(found["nuc"]) for found in ranks.values() if found["fro"]]
    return [Check("rank sweep: largest rank(W^mm) − n over every instance", 0.0, float(excess), 0.0, "at_most", 0.0,
                  "KKT of Att-SVM: W^mm = Σ_i (Σ_t λ_it (x_iα − x_it)) z_iᵀ has rank ≤ n"),
            Check("rank sweep: smallest mean rank(W^mm) − mean rank(W^mm_⋆) over (n, d)", 0.0,
                  float(min(gaps, default=math.nan)), 0.0, "at_least", 0.0,
                  "Tarzanagh et al. 2023, svm_rank.ipynb: the nuclear-norm solution has the lower rank")]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """The notebook's panels: the selected token's softmax probability over iterations for W and (K, Q); the
    correlation of each with both SVMs; and the SVMs' rank against d (svm_rank.ipynb)."""
    steps, curves = results["steps"], results["curves"]
    labels = {"W": "W", "KQ": "(K, Q)"}
    probability = Panel("iteration", "softmax probability of the selected token", [
        seed_curve(labels[p], steps, [seed["probability"] for seed in curves[p]]) for p in NORMS],
        targets=[Target(f"required ≥ {1 - SELECTION_BOUND:g} at iteration {settings.steps}", 1.0,
                        1 - SELECTION_BOUND, 1.0, where=(0.9 * settings.steps, settings.steps))], ylim=(0.0, 1.05))
    correlations = [Panel("iteration", "correlation coefficient", [
        seed_curve(f"{labels[p]} with W^mm (Frobenius)", steps, [seed["fro"] for seed in curves[p]]),
        seed_curve(f"{labels[p]} with W^mm_⋆ (nuclear)", steps, [seed["nuc"] for seed in curves[p]])],
        title=f"trained {labels[p]}", ylim=(0.0, 1.05)) for p in NORMS]
    rank_curves = []
    for n in settings.rank_prompt_counts:
        found = [results["ranks"][n, dim] for dim in settings.rank_dims]
        rank_curves += [Curve(f"n = {n}", list(settings.rank_dims),
                              [float(np.mean(r[norm])) if r[norm] else math.nan for r in found],
                              baseline=norm == "nuc", continuous=False) for norm in ("fro", "nuc")]
    ranks = Panel(f"dimension d (T = {settings.rank_tokens}; mean over instances)", "rank of the SVM solution",
                  rank_curves, title="W^mm (Frobenius, solid) and W^mm_⋆ (nuclear, dashed)")
    return [probability, *correlations, ranks]


REPRODUCTION = Reproduction(
    name="tarzanagh-2023",
    paper=PAPER,
    summary="Normalised GD on a softmax attention layer converges in direction to the Att-SVM of the tokens it "
            "selects: the Frobenius-norm one when W is trained, the nuclear-norm one when (K, Q) are; the selected "
            "token's softmax probability goes to 1.",
    caption="The notebooks' figures (local_converge, svm_rank): the selected token's softmax probability and the "
            "correlation of the trained W or KᵀQ with the Frobenius- and nuclear-norm Att-SVMs over normalised GD "
            "iterations (n = 6, T = 8, d = 10), and the rank of both SVMs against d",
    claims=CLAIMS,
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=2.0,
    monitor=monitor,
)
