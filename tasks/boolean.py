"""Boolean functions in context (Bhattamishra et al., ICLR 2024, arXiv 2310.03016).

Encoding: x ∈ {±1}^n and y ∈ {±1}, as in the authors' code (github.com/satwik77/incontext-bool,
``src/bool_tasks.py``), whose class definitions, priors and input distributions are
followed here; bit(x) = (x + 1)/2, so x_k = +1 is "true".  Sampling is vectorised,
O(batch × points × n), and draws only from the given generator.

Function classes (``function``) and their latents:

* ``conjunction``: each coordinate is a positive literal w.p. 0.15, a negative literal
  w.p. 0.15, absent w.p. 0.7; y = +1 iff every literal is satisfied (the empty
  conjunction is always +1).  Latent ``literals`` (B, n) in {−1, 0, +1}.
* ``disjunction``: the same literal prior; y = +1 iff some literal is satisfied (the
  empty disjunction is always −1).  Latent ``literals``.
* ``sparse-disjunction``: a monotone disjunction of exactly ``sparsity`` (default 4)
  distinct positive literals.  Latent ``literals``.
* ``3-dnf``: an OR of 3 conjunctions, literal prior 0.1/0.1/0.8.  Latent ``literals`` (B, 3, n).
* ``3-cnf``: an AND of 3 disjunctions, literal prior 0.1/0.1/0.8.  Latent ``literals`` (B, 3, n).
* ``majority``: a subset S (each coordinate w.p. 0.3); y = +1 iff Σ_{k∈S} x_k > 0
  (ties and S = ∅ give −1).  Latent ``subset`` (B, n) bool.
* ``zero-one-threshold``: literals in {−1, 0, +1} (0.15/0.15/0.7) and a threshold
  t ∈ {−3, …, 2} + 1/2 uniform; y = sign(wᵀx − t).  Latents ``literals``, ``threshold`` (B,).
* ``integer-halfspace``: w ∈ {−3, …, 3}^n uniform; y = sign(wᵀx − 1/2).  Latent ``weights``.
* ``parity``: S uniform over all 2^n subsets — each coordinate independently w.p. 1/2,
  never an enumeration of subsets; y = +1 iff an odd number of the coordinates in S are
  +1 (S = ∅ gives −1).  Latent ``subset`` (B, n) bool.
* ``sparse-parity``: S uniform among subsets of size ``sparsity`` (default 2).  Latent ``subset``.

Inputs are uniform on {±1}^n, except that (as in the authors' code, to make the rare
label frequent) each point is independently *planted* with probability
``plant_probability``: for conjunctions its literal coordinates are set to satisfy
every literal (a positive point), for (sparse) disjunctions to falsify every literal (a
negative point); for 3-DNF one term per prompt is chosen uniformly and planted
satisfied, for 3-CNF one clause per prompt is planted falsified.  Defaults 0.3 (0.35 for
3-DNF), the authors' values.  Hence for a conjunction with k literals
P(y = +1) = p + (1 − p)·2^−k, and over the prior (k ~ Binomial(n, 0.3))
P(y = +1) = p + (1 − p)·0.85^n (0.307 at n = 28, p = 0.3); symmetrically
P(y = −1) for disjunctions.

* ``nearest-neighbour``: the first ``start_points`` points get uniform random labels
  (a repeat of an earlier point copies its label); every later point takes the label of
  the most similar earlier point — least Hamming distance, ties to the earliest — as in
  the authors' ``NearestNeighbours`` class.  1-nearest-neighbour is its optimal learner.
  Labels chain through earlier labels, so they are resolved by one batched pass over
  the positions.  Latent ``nearest`` (B, N) long: the index copied from (−1 for the
  random starts).

``teaching=True`` (conjunction, parity, sparse-parity) puts a teaching sequence — a
set of examples that identifies the function within its class — at the start of each
prompt, the remaining points drawn as above:

* conjunction with k literals, k + 2 points (the authors' ``TeachBiConjunction``):
  two positives with every literal satisfied and the other coordinates all −1, then
  all +1; then for each literal in coordinate order, the first positive with that one
  literal falsified (a negative).  The two positives alone leave the elimination
  algorithm with exactly the target's literals.
* parity / sparse-parity, n points: the standard basis of GF(2)^n, e_k = (−1, …, +1 at
  k, …, −1), whose label is +1 iff k ∈ S; it determines S (rank n).

If ``points`` is shorter than the teaching sequence, the sequence is truncated.  The
teaching length is in the latent ``teaching_length`` (B,) int64.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.theory.baselines import Averaging
from icl_sim.theory.boolean_learners import (ConjunctionElimination, DisjunctionElimination, HammingKNN, MajorityLabel,
                                             ParityElimination)
from icl_sim.validation import check_choice, check_float, check_int

FUNCTIONS = ("conjunction", "disjunction", "sparse-disjunction", "3-dnf", "3-cnf", "majority",
             "zero-one-threshold", "integer-halfspace", "parity", "sparse-parity", "nearest-neighbour")
TEACHABLE = ("conjunction", "parity", "sparse-parity")
DEFAULT_SPARSITY = {"sparse-parity": 2, "sparse-disjunction": 4}
DEFAULT_PLANT = {"conjunction": 0.3, "disjunction": 0.3, "sparse-disjunction": 0.3, "3-dnf": 0.35, "3-cnf": 0.3}
TERMS = 3  # terms of a 3-DNF, clauses of a 3-CNF



@dataclass(frozen=True)
class Boolean(TaskFamily):
    """Prompts (x_i, f(x_i)) with x_i ∈ {±1}^n and f a Boolean function drawn per prompt."""
    name: ClassVar[str] = "boolean"
    metric: ClassVar[str] = "accuracy"
    loss: ClassVar[str] = "logistic"
    dim_parameter: ClassVar[str] = "n"

    function: str = parameter(f"function class: {', '.join(FUNCTIONS)}", "conjunction")
    n: int = parameter("input dimension n (x ∈ {±1}^n)", 28)
    points: int = parameter("points per prompt N", 70)
    teaching: bool = parameter(f"start each prompt with a teaching sequence ({', '.join(TEACHABLE)})", False)
    sparsity: int | None = parameter("size of the subset of sparse-parity (default 2) / sparse-disjunction (default 4)",
                                 None)
    plant_probability: float | None = parameter(
        "probability that a point is planted (conjunction positive / disjunction negative); default per class",
        None)
    start_points: int = parameter("nearest-neighbour: points labelled at random before labels copy the nearest one", 1)

    def __post_init__(self):
        check_choice("function", self.function, FUNCTIONS)
        check_int("n", self.n, 1)
        check_int("points", self.points, 1)
        if not isinstance(self.teaching, bool):
            raise ValueError(f"teaching must be true or false, got {self.teaching!r}")
        if self.teaching and self.function not in TEACHABLE:
            raise ValueError(f"teaching is available for {', '.join(TEACHABLE)} only, not {self.function!r}")
        if self.sparsity is not None:
            if self.function not in DEFAULT_SPARSITY:
                raise ValueError(f"sparsity applies to {', '.join(DEFAULT_SPARSITY)} only, not {self.function!r}")
            check_int("sparsity", self.sparsity, 1, self.n, maximum_name="n")
        elif self.function in DEFAULT_SPARSITY and DEFAULT_SPARSITY[self.function] > self.n:
            raise ValueError(f"sparsity (default {DEFAULT_SPARSITY[self.function]}) must be <= n={self.n}; "
                             "give a smaller sparsity")
        if self.plant_probability is not None:
            if self.function not in DEFAULT_PLANT:
                raise ValueError(f"plant_probability applies to {', '.join(DEFAULT_PLANT)} only, "
                                 f"not {self.function!r}")
            check_float("plant_probability", self.plant_probability, 0.0, maximum=1.0)
        check_int("start_points", self.start_points, 1)

    @property
    def dim(self) -> int:
        """The input dimension n (the Task protocol's name for it)."""
        return self.n

    @property
    def subset_size(self) -> int:
        """k of a sparse class (``sparsity`` or its default)."""
        return self.sparsity if self.sparsity is not None else DEFAULT_SPARSITY[self.function]

    @property
    def plant(self) -> float:
        """The planting probability in force (0 for classes without planting)."""
        if self.plant_probability is not None:
            return self.plant_probability
        return DEFAULT_PLANT.get(self.function, 0.0)

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        """Draw ``batch_size`` prompts: xs (B, N, n) and ys (B, N) in {±1}; the latent names f."""
        check_draw(batch_size, generator, dtype)
        count = self.points if points is None else points
        check_int("points", count, 1)
        if active_dims is not None and active_dims != self.n:
            raise ValueError(f"active_dims must be n={self.n} (a Boolean task has no dimension curriculum), "
                             f"got {active_dims!r}")
        draw = _Draw(generator, batch_size, count, self.n)
        latent, bits, labels = getattr(self, "_" + self.function.replace("-", "_"))(draw)
        latent["teaching_length"] = latent.get(
            "teaching_length", torch.zeros(batch_size, dtype=torch.int64, device=draw.device))
        for key, value in latent.items():
            if value.is_floating_point():
                latent[key] = value.to(dtype)
        xs = bits.to(dtype) * 2 - 1
        ys = labels.to(dtype) * 2 - 1
        return Prompt(xs, ys, latent)

    # -- the function classes: each returns (latent, bits (B, N, n) bool, labels (B, N) bool) --
    def _conjunction(self, draw):
        literals = draw.literals(0.15)
        bits = draw.plant(draw.bits(), literals, self.plant, satisfy=True)
        latent = {"literals": literals}
        if self.teaching:
            bits, latent["teaching_length"] = _teach_conjunction(bits, literals)
        return latent, bits, _satisfied_all(bits, literals)

    def _disjunction(self, draw):
        literals = draw.literals(0.15)
        bits = draw.plant(draw.bits(), literals, self.plant, satisfy=False)
        return {"literals": literals}, bits, _satisfied_any(bits, literals)

    def _sparse_disjunction(self, draw):
        literals = draw.subset_of_size(self.subset_size).to(torch.float64)
        bits = draw.plant(draw.bits(), literals, self.plant, satisfy=False)
        return {"literals": literals}, bits, _satisfied_any(bits, literals)

    def _3_dnf(self, draw):
        literals = draw.literals(0.1, TERMS)
        chosen = draw.one_term(literals)
        bits = draw.plant(draw.bits(), chosen, self.plant, satisfy=True)
        labels = torch.stack([_satisfied_all(bits, literals[:, t]) for t in range(TERMS)], -1).any(-1)
        return {"literals": literals}, bits, labels

    def _3_cnf(self, draw):
        literals = draw.literals(0.1, TERMS)
        chosen = draw.one_term(literals)
        bits = draw.plant(draw.bits(), chosen, self.plant, satisfy=False)
        labels = torch.stack([_satisfied_any(bits, literals[:, t]) for t in range(TERMS)], -1).all(-1)
        return {"literals": literals}, bits, labels

    def _majority(self, draw):
        subset = draw.uniform((draw.batch, draw.n)) < 0.3
        bits = draw.bits()
        signed = (bits.to(torch.int64) * 2 - 1) * subset[:, None]
        return {"subset": subset}, bits, signed.sum(-1) > 0

    def _zero_one_threshold(self, draw):
        literals = draw.literals(0.15)
        threshold = torch.randint(-3, 3, (draw.batch,), generator=draw.generator,
                                  device=draw.device).to(torch.float64) + 0.5
        bits = draw.bits()
        score = ((bits.to(torch.float64) * 2 - 1) * literals[:, None]).sum(-1)
        return {"literals": literals, "threshold": threshold}, bits, score > threshold[:, None]

    def _integer_halfspace(self, draw):
        weights = torch.randint(-3, 4, (draw.batch, draw.n), generator=draw.generator,
                                device=draw.device).to(torch.float64)
        bits = draw.bits()
        score = ((bits.to(torch.float64) * 2 - 1) * weights[:, None]).sum(-1)
        return {"weights": weights}, bits, score > 0.5

    def _parity(self, draw):
        return self._parity_with(draw, draw.uniform((draw.batch, draw.n)) < 0.5)

    def _sparse_parity(self, draw):
        return self._parity_with(draw, draw.subset_of_size(self.subset_size))

    def _parity_with(self, draw, subset):
        bits = draw.bits()
        latent = {"subset": subset}
        if self.teaching:
            steps = torch.arange(draw.points, device=draw.device)
            basis = steps[:, None] == torch.arange(draw.n, device=draw.device)  # row t = e_t (zero for t >= n)
            bits = torch.where((steps < draw.n)[None, :, None], basis, bits)
            latent["teaching_length"] = torch.full((draw.batch,), min(draw.n, draw.points), dtype=torch.int64,
                                                   device=draw.device)
        labels = ((bits & subset[:, None]).sum(-1) % 2) == 1
        return latent, bits, labels

    def _nearest_neighbour(self, draw):
        bits = draw.bits()
        signs = bits.to(torch.float64) * 2 - 1
        similarity = signs @ signs.mT  # n − 2·Hamming distance
        earlier = torch.ones(draw.points, draw.points, dtype=torch.bool, device=draw.device).tril(-1)
        nearest = similarity.masked_fill(~earlier, -torch.inf).argmax(dim=-1)  # the first of the most similar
        repeat = similarity.masked_fill(~earlier, -torch.inf).amax(dim=-1) == draw.n
        copies = repeat | (torch.arange(draw.points, device=draw.device) >= self.start_points)
        nearest = torch.where(copies, nearest, -1)
        labels = draw.uniform((draw.batch, draw.points)) < 0.5
        for position in range(1, draw.points):
            copied = labels.gather(1, nearest[:, position:position + 1].clamp(min=0)).squeeze(1)
            labels[:, position] = torch.where(copies[:, position], copied, labels[:, position])
        return {"nearest": nearest}, bits, labels

    # -- baselines and reporting -------------------------------------------------------------
    def baselines(self):
        """Optimal learners where they are known (elimination, GF(2) elimination) plus generic ones."""
        predictors = {}
        if self.function == "conjunction":
            predictors["Elimination"] = ConjunctionElimination()
        elif self.function in ("disjunction", "sparse-disjunction"):
            predictors["Elimination"] = DisjunctionElimination()
        elif self.function in ("parity", "sparse-parity"):
            predictors["GF(2) elimination"] = ParityElimination()
        elif self.function == "nearest-neighbour":
            predictors["Optimal (1-NN)"] = HammingKNN(1)
        predictors.update({"Nearest neighbour": HammingKNN(1), "Averaging": Averaging(),
                           "Majority label": MajorityLabel()})
        return predictors

    def slices(self, prompt: Prompt) -> dict:
        """No named subsets."""
        return {}

    def trivial_error(self) -> float:
        """1/2: the accuracy of a fair coin."""
        return 0.5


class _Draw:
    """The random pieces of one batch, all from ``generator`` on its device."""
    def __init__(self, generator: torch.Generator, batch: int, points: int, n: int):
        self.generator, self.device = generator, generator.device
        self.batch, self.points, self.n = batch, points, n

    def uniform(self, shape) -> torch.Tensor:
        return torch.rand(shape, generator=self.generator, device=self.device)

    def bits(self) -> torch.Tensor:
        """Uniform inputs, (B, N, n) bool (True ↔ x = +1)."""
        return self.uniform((self.batch, self.points, self.n)) < 0.5

    def literals(self, each: float, terms: int | None = None) -> torch.Tensor:
        """Literal signs in {−1, 0, +1} (float64): +1 w.p. ``each``, −1 w.p. ``each``."""
        shape = (self.batch, self.n) if terms is None else (self.batch, terms, self.n)
        u = self.uniform(shape)
        return torch.where(u < each, 1.0, torch.where(u < 2 * each, -1.0, 0.0)).to(torch.float64)

    def one_term(self, literals: torch.Tensor) -> torch.Tensor:
        """One of the terms (B, terms, n) per prompt, uniformly: the term (or clause) that planting targets."""
        chosen = torch.randint(literals.shape[1], (self.batch,), generator=self.generator, device=self.device)
        return literals[torch.arange(self.batch, device=self.device), chosen]

    def subset_of_size(self, k: int) -> torch.Tensor:
        """A uniformly random k-subset of the n coordinates per prompt, (B, n) bool (ranks of uniforms)."""
        ranks = self.uniform((self.batch, self.n)).argsort(dim=1).argsort(dim=1)
        return ranks < k

    def plant(self, bits: torch.Tensor, literals: torch.Tensor, probability: float, *, satisfy: bool):
        """With ``probability`` per point, set every literal coordinate to satisfy (or falsify) it."""
        planted = self.uniform((self.batch, self.points)) < probability
        relevant = (literals != 0)[:, None]
        value = (literals > 0)[:, None] if satisfy else (literals < 0)[:, None]
        return torch.where(planted[..., None] & relevant, value, bits)


def _satisfied_all(bits: torch.Tensor, literals: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: every literal of each prompt's conjunction holds."""
    violated = (literals != 0)[:, None] & (bits != (literals > 0)[:, None])
    return ~violated.any(-1)


def _satisfied_any(bits: torch.Tensor, literals: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: some literal of each prompt's disjunction holds."""
    holds = (literals != 0)[:, None] & (bits == (literals > 0)[:, None])
    return holds.any(-1)


def _teach_conjunction(bits: torch.Tensor, literals: torch.Tensor):
    """Overwrite the first k + 2 points with the teaching sequence described in the module docstring."""
    points = bits.shape[1]
    relevant = literals != 0
    steps = torch.arange(points, device=bits.device)
    required = literals > 0
    base = (relevant & required)[:, None].expand(-1, points, -1)  # literals satisfied, others −1
    second = (steps == 1)[None, :, None] & ~relevant[:, None]  # point 1: others +1
    order = relevant.to(torch.int64).cumsum(-1) - 1  # index of each literal in coordinate order
    flip = relevant[:, None] & (order[:, None] == (steps[None, :, None] - 2))
    teach = (base | second) ^ flip
    length = relevant.sum(-1) + 2
    inside = steps[None, :] < length[:, None]
    return torch.where(inside[..., None], teach, bits), length.clamp(max=points)
