"""von Oswald, Schlegel, Meulemans, Kobayashi, Niklasson, Zucchet, Scherrer, Miller, Sandler, Agüera y Arcas,
Vladymyrov, Pascanu & Sacramento, "Uncovering mesa-optimization algorithms in Transformers" (arXiv 2309.05858).

Setting, as the authors' code has it (github.com/mtavit/transformers_mesa_optimization_paper, commit 0512b9b7:
``configs/config.py``, ``src/data/seq/linear_seq.py``, ``src/optim.py``, ``src/train.py``; the paper's body was
not readable here, so figures are named by what they show): sequences s_1..s_51 of s_{t+1} = W s_t + σε_t in
d = 10 dimensions, W Haar-orthogonal per sequence, σ = 0.01, s_1 ~ U[−1, 1]^d (task ``autoregressive`` with
``initial="uniform"``), T = 50 positions; causal models over the constructed tokens (s_t, s_{t−1})
(``icl_sim.models.mesa``, the authors' [0, s_t, s_t, s_{t−1}] up to block order), trained on next-token
prediction at every position by AdamW (weight decay 0.05) with linear warm-up and cosine decay.

What differs from the authors: icl-sim's cosine decays to 0 (theirs to 1e-5); no gradient clipping (theirs
``optax.clip(1)``, element-wise, icl-sim has only norm clips); no clipping of the stream to ±1.5; λ of the
mesa-layer is softplus-parameterised (theirs unconstrained); the loss is the mean over coordinates (theirs
the sum, halved: Adam is insensitive to the factor).  Quick scale: batch 64 (theirs 256), 600 steps at peak
lr 1e-3 (theirs 20 000 at 3e-4; "for mesa 4e-4"), a 3-layer deep model (4 heads, key 20).  Long scale: their
learning rates (3e-4, the mesa model 4e-4), warm-up 5 % of the steps and cosine as theirs, their 2-layer deep
model (``configs/config.py``: 4 heads, key 20), batch 128 and 1500 steps (the hour's share: at batch 256 and 20 000
steps the four runs take 0.21 CPU s a step, 70 CPU min a seed).  ``full`` is their configuration (20 000 steps,
batch 256, warm-up 1000).  A third-party summary of the paper names a 6-layer linear model for the multi-layer
analysis; the body was not readable here, so the deep model stays at their config's 2 layers.

Claims, each a ``claim_check`` over seeds with its contrast fixed before the first quick run:

* ``mesa-beats-attention`` (the authors' mesa-layer vs linear and softmax attention figure): the mean
  next-token MSE over positions of the one-layer mesa model divided by that of the one-layer linear and of
  the one-layer softmax model is at most 0.9 (95 % interval over seeds below it: 10 % better, a margin fixed
  before running so that two untrained models, whose ratio is 1 ± 10⁻¹², cannot pass by chance, nor a mesa
  model that converged to what one attention layer computes, one GD step, whose ratio is about 1).
* ``compressed-one-layer`` (the one-layer reverse-engineering, ``OneLayerRevAlg_Linear``: the compressed
  model's loss matches the trained one's): the 12-scalar compressed form (``icl_sim.models.mesa_compressed``)
  recovers at least 90 % of the trained one-layer linear model's gain over the zero predictor, and, so that an
  untrained layer cannot pass with two null gains, that gain is at least 10 % of the zero predictor's MSE.
  Both bounds are our choice, fixed before running (the paper's numbers were not readable).  A trained layer whose
  algorithm is not block-scalar (one that used the coordinates' identities) would lose gain in the compression.
* ``probes-by-depth`` (the authors' probing figure, ``src/util/probings/probe_layers.py``): linear probes of
  the residual stream decode the next token s_{t+1} and the preconditioned input (Σ_{i<t} s_i s_iᵀ + 0.001 I)⁻¹ s_t
  better after the last layer of the deep linear model than from its input tokens: R² gain ≥ 0.1 for each (fixed
  before running).  The probes are the authors': at each position its own least-squares map without intercept.
  Ours differ in being fitted on held-out prompts and scored (R², the mean over positions 40-49) on others, where
  theirs are fitted and scored (MSE) on one batch at every position after dropping the prompts whose target norm
  is an outlier (a z-score threshold not in their code), and in a ridge of 10⁻⁸ times the mean diagonal of XᵀX.
  The check tells the mechanisms apart (tests/test_repro_von_oswald_2023b.py): the one-GD-step layer and the
  least-squares mesa-layer predict the next token (gains 0.65 and 1.0) but write no preconditioned input into the
  stream (gains −0.01).

Measured at quick scale (seeds 0-2, then 100-102): one-layer MSE per coordinate, mean over positions, mesa 0.061, 0.106,
0.116 against linear 0.177 and softmax 0.175 (zero predictor 0.335, LSQ 0.037); ratios mesa/linear 0.346, 0.599, 0.652
and 0.346, 0.474, 0.689, mesa/softmax 0.351, 0.603, 0.664 and 0.352, 0.479, 0.702: every seed below 0.9, the intervals
of the mean reach 0.94-0.95, so deferred.  Compressed form: trained gain 0.470 of the zero MSE, recovered fraction
1.001-1.002 on all six seeds (held).  Probe gains, the pooled ridge probe with an intercept used until 2026-12-05: next
token 0.745, 0.866, 0.856 and 0.792, 0.895, 0.600; preconditioned input 0.013, 0.051, 0.036 and 0.011, 0.051, 0.012
(deferred).  The per-position probes on seeds 0-2 (2026-12-05, the same models): next token 0.757, 0.880, 0.870;
preconditioned input 0.006, 0.047, 0.032.  Untrained control: every claim fails (ratios 1, gains ~1e-13).  Quick took
3.7 min wall (202 s user, 10 s system) for seeds 0-2 at a load of about 2 on the 2 cores, 6.1 min wall (202 s user, 33 s
system) for 100-102.

Long scale (added 2026-12-05, issue 39).  Piloted on dev seed 900 (not a verdict) at batch 128 over 2000 steps: the mesa
model (lr 4e-4, 75 CPU s) sits on the plateau (0.337) until step 300, reaches 0.053 at step 1300 and 0.050 at 2000; the
2-layer deep model (lr 3e-4, 108 CPU s) 0.106 from step 1000 on, its per-position probe gains 0.865 (next token) and
0.031 (preconditioned input).  1500 steps keep the mesa model's flat end within the hour's share.  The verdicts are the
gallery block's, seeds 0-4, the scale's first run (2026-12-05; 917 s user + 47 s system = 16 CPU min, 50 min wall at a
load of about 8 on the 2 cores).  One-layer MSE mesa 0.061, 0.061, 0.077, 0.077, 0.069, linear 0.176 on every seed,
softmax 0.187-0.193 (LSQ 0.036, zero 0.333): ratios mesa/linear 0.346, 0.347, 0.436, 0.439, 0.389 (interval [0.335,
0.448]), mesa/softmax 0.318, 0.321, 0.399, 0.410, 0.361 ([0.309, 0.415]): ``mesa-beats-attention`` held (the mesa loss
still falls by 4.5-7.5 % over the last fifth, which only widens the margin).  ``compressed-one-layer``: gain
0.469-0.471, recovered 1.000-1.003 (held).  ``probes-by-depth``: next-token gains 0.829, 0.825, 0.864, 0.843, 0.808 (R²
−0.003 on the input tokens), preconditioned-input gains 0.0195, 0.0146, 0.0306, 0.0241, 0.0105 (R² 0.065 on the input
tokens, 0.076-0.096 after layer 2; interval [0.010, 0.030]): FAILED.  The 2-layer model (MSE 0.104-0.128) is far from
least squares.  Untrained control (``--first-seed 0 --out /tmp/fresh/von-oswald-2023b-long-0``): every claim fails by a
finite value (ratios 1, gains −2.7e-13 to 2.6e-14, probe gains below 1e-14).

Sanity: the compressed form of the hand-built one-GD-step layer (W_Q = W_V read s_t, W_K reads s_{t−1}, P
writes η into the slot) equals both the layer's own forward pass and the written-out GD step
η Σ_{i≤t} s_i s_{i−1}ᵀ s_t on the test prompts.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check, exact
from icl_sim.config import TrainConfig
from icl_sim.latent_probes import r_squared
from icl_sim.models.mesa import MesaConfig, MesaTransformer, constructed_mesa
from icl_sim.models.mesa_compressed import compressed_predictions, compressed_weights
from icl_sim.plots import Curve, Panel, seed_curve
from icl_sim.tasks import Autoregressive

from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("J. von Oswald, M. Schlegel, A. Meulemans, S. Kobayashi, E. Niklasson, N. Zucchet, N. Scherrer, "
              "N. Miller, M. Sandler, B. Agüera y Arcas, M. Vladymyrov, R. Pascanu, J. Sacramento",
              "Uncovering mesa-optimization algorithms in Transformers", "arXiv preprint 2023", "2309.05858")
ATTENTIONS = ("mesa", "linear", "softmax")
#: the least-squares baseline of the authors' plots, LeastSquaresSequenceSolver(lamb=0.001): λ = 1/0.001
LSQ_LAMBDA = 1000.0
#: fixed before running: the fraction of the trained layer's gain the compressed form must recover, and the
#: gain over the zero predictor (a fraction of its MSE) the trained layer must show
RECOVERED_FRACTION, LEARNED_GAIN = 0.9, 0.1
#: fixed before running: the largest MSE ratio of the mesa model to each attention model (10 % better)
MESA_RATIO = 0.9
#: fixed before running: the R² gain of each probe from the input tokens to the last layer
PROBE_GAIN = 0.1
#: the ridge of the preconditioned-input target (the authors' probe_layers.py) and of our probes (relative)
PRECONDITIONER_RIDGE, PROBE_RIDGE = 1e-3, 1e-8
PROBE_TARGETS = ("next token", "preconditioned input")

CLAIMS = (
    Claim("mesa-beats-attention", "A one-layer mesa-layer model predicts the next state of a linear dynamical "
          "system better than one layer of linear or softmax attention", "the authors' mesa-layer comparison",
          decided_at="long", runs=("mesa", "linear", "softmax"),
          reason="quick (600 steps, batch 64): the mesa model is still learning when the schedule ends (seed 2's "
          "loss 0.138, 0.124, 0.118 at steps 420, 480, 540, against least squares' 0.037); MSE ratios mesa/linear "
          "0.346, 0.599, 0.652 and mesa/softmax 0.351, 0.603, 0.664 (seeds 0-2), each below 0.9 but the 95 % "
          "interval of the mean reaches 0.938 and 0.952 (seeds 100-102: 0.933, 0.952).  Long's pilot (dev seed 900, "
          "batch 128, lr 4e-4, 2000 steps) leaves the plateau (0.337) after step 300 and reaches 0.072 at step "
          "1000, 0.051 at 1500 and 0.050 at 2000"),
    Claim("compressed-one-layer", "A trained one-layer linear attention model is a few-scalar algorithm containing "
          "one GD step: its 12-scalar compressed form loses almost none of its gain", "the authors' one-layer "
          "reverse-engineering (OneLayerRevAlg_Linear)", runs=("linear",)),
    Claim("probes-by-depth", "In a deep linear model, linear probes decode the next token and the preconditioned "
          "input better with depth", "the authors' probing figure (probe_layers.py)", decided_at="long",
          runs=("deep-linear",),
          reason="quick (3 layers, 600 steps): the deep model is far from least squares (MSE 0.089-0.146 against "
          "0.037) and its loss spikes (0.64 at step 450 of seed 2 at lr 1e-3); the pooled probe's preconditioned-input "
          "gain was 0.013, 0.051, 0.036.  Long trains the authors' 2-layer model at their learning rate to its "
          "plateau (dev seed 900: loss 0.106 at step 1000, 0.106 at 2000)",
          analysis="FAILED at long on seeds 0-4 (the scale's first run): the next-token probe gains 0.81-0.86, but "
          "the preconditioned input gains only 0.0105-0.0306 R² (0.065 on the input tokens, at most 0.096 after layer "
          "2), against 0.1.  The 2-layer model stays far from least squares (MSE 0.104-0.128 against 0.036); a "
          "third-party summary places the authors' probing on a 6-layer linear model, which this scale does not "
          "train: the claim is failed for the authors' config's 2-layer model at 1500 steps, not for that one"),
)


@dataclass(frozen=True)
class Settings:
    """One scale: the deep model's size, the schedule, and the held-out prompts."""

    deep_layers: int
    deep_heads: int
    deep_key: int
    steps: int
    batch_size: int
    lr: float
    mesa_lr: float
    warmup: int
    test_prompts: int
    probe_positions: tuple[int, ...]

    def task(self) -> Autoregressive:
        return Autoregressive(dim=10, points=50, noise=0.01, transition="orthogonal", initial="uniform")

    def models(self) -> dict[str, MesaConfig]:
        """The runs' model configurations: one layer of each attention, and the deep linear model."""
        shallow = {"mesa": MesaConfig(attention="mesa", heads=1, key_size=10),
                   "linear": MesaConfig(attention="linear", heads=2, key_size=20),
                   "softmax": MesaConfig(attention="softmax", heads=2, key_size=20)}
        return {**shallow, "deep-linear": MesaConfig(layers=self.deep_layers, heads=self.deep_heads,
                                                     attention="linear", key_size=self.deep_key)}


SCALES = {
    "smoke": Settings(deep_layers=2, deep_heads=2, deep_key=10, steps=4, batch_size=16, lr=1e-3, mesa_lr=1e-3,
                      warmup=1, test_prompts=64, probe_positions=(45, 49)),
    "quick": Settings(deep_layers=3, deep_heads=4, deep_key=20, steps=600, batch_size=64, lr=1e-3, mesa_lr=1e-3,
                      warmup=60, test_prompts=1024, probe_positions=tuple(range(40, 50))),
    "long": Settings(deep_layers=2, deep_heads=4, deep_key=20, steps=1500, batch_size=128, lr=3e-4, mesa_lr=4e-4,
                     warmup=75, test_prompts=2048, probe_positions=tuple(range(40, 50))),
    "full": Settings(deep_layers=2, deep_heads=4, deep_key=20, steps=20_000, batch_size=256, lr=3e-4, mesa_lr=4e-4,
                     warmup=1000, test_prompts=2048, probe_positions=tuple(range(40, 50))),
}


def runs(settings: Settings) -> dict[str, TrainConfig]:
    task = dataclasses.asdict(settings.task())
    return {name: TrainConfig(task="autoregressive", task_params=task, model="mesa",
                              model_params=dataclasses.asdict(config), steps=settings.steps,
                              batch_size=settings.batch_size, optimizer="adamw", weight_decay=0.05,
                              lr=settings.mesa_lr if config.attention == "mesa" else settings.lr,
                              warmup_steps=settings.warmup, lr_schedule="cosine", loss_on="all",
                              log_every=max(1, settings.steps // 20), checkpoint_every=settings.steps)
            for name, config in settings.models().items()}


def position_errors(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Squared error per position, the mean over prompts and coordinates, (N,) float64."""
    return (predictions.to(torch.float64) - targets.to(torch.float64)).square().mean(dim=(0, 2))


def model_errors(model, prompt) -> torch.Tensor:
    with torch.no_grad():
        return position_errors(model.predict(prompt.xs, prompt.ys), prompt.ys)


def preconditioned_inputs(xs: torch.Tensor, ridge: float = PRECONDITIONER_RIDGE) -> torch.Tensor:
    """(Σ_{i<t} s_i s_iᵀ + ridge·I)⁻¹ s_t at every position, (B, N, d): the authors' inverse_curr_probe target."""
    grams = torch.einsum("bni,bnj->bnij", xs, xs).cumsum(dim=1) - torch.einsum("bni,bnj->bnij", xs, xs)
    eye = torch.eye(xs.shape[-1], dtype=xs.dtype, device=xs.device)
    return torch.linalg.solve(grams + ridge * eye, xs)


def bias_free_probes(features: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Least-squares maps without intercept, one per leading index: (P, B, w) features onto (P, B, k) targets →
    (P, w, k), with a ridge of ``PROBE_RIDGE`` times the mean diagonal of each XᵀX so that directions the stream
    barely carries (an untrained layer's slot) are not fitted to the last digit."""
    features, targets = features.to(torch.float64), targets.to(torch.float64)
    gram = features.mT @ features
    penalty = PROBE_RIDGE * gram.diagonal(dim1=-2, dim2=-1).mean(dim=-1)
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    return torch.linalg.solve(gram + penalty[:, None, None] * eye, features.mT @ targets)


def probe_scores(model: MesaTransformer, fit, score, positions) -> dict[str, list[float]]:
    """Per target, the probe R² from the input tokens and from the stream after each layer: at each position its own
    linear probe without intercept (the authors' ``probe_layers.py``), fitted on ``fit``'s prompts and scored on
    ``score``'s, the R² averaged over ``positions``."""
    def streams(prompt):
        with torch.no_grad():
            return [model.tokens(prompt.xs)] + model.layer_features(prompt.xs, prompt.ys)

    def targets(prompt):
        return {"next token": prompt.ys, "preconditioned input": preconditioned_inputs(prompt.xs)}

    def by_position(values):  # (B, N, k) → (P, B, k) at the probed positions
        return values[:, list(positions)].to(torch.float64).transpose(0, 1)

    fit_streams, score_streams = streams(fit.to(dtype=torch.float32)), streams(score.to(dtype=torch.float32))
    fit_targets, score_targets = targets(fit), targets(score)
    scores = {}
    for name in PROBE_TARGETS:
        fit_y, score_y = by_position(fit_targets[name]), by_position(score_targets[name])
        scores[name] = []
        for fit_x, score_x in zip(fit_streams, score_streams):
            predictions = by_position(score_x) @ bias_free_probes(by_position(fit_x), fit_y)
            scores[name].append(sum(r_squared(p, y) for p, y in zip(predictions, score_y)) / len(score_y))
    return scores


def gd_step_layer(dim: int, points: int, step: float) -> MesaTransformer:
    """A float64 one-layer linear model that is one GD step of size ``step`` from 0: η Σ_{i≤t} s_i s_{i−1}ᵀ s_t."""
    model = constructed_mesa(dim, points, 1.0)
    config = dataclasses.replace(model.config, attention="linear")
    linear = MesaTransformer(dim, points, config, dim).double()
    state = {key: value for key, value in model.state_dict().items() if key != "lambda_parameter"}
    linear.load_state_dict(state)
    with torch.no_grad():
        linear.projection.mul_(step)
    return linear


def measure(measurement) -> dict:
    settings = measurement.settings
    task = settings.task()
    test = measurement.prompts(task, "test", settings.test_prompts)
    fit = measurement.prompts(task, "tuning", settings.test_prompts)
    zero = position_errors(torch.zeros_like(test.ys), test.ys)
    lsq = model_errors(constructed_mesa(task.dim, task.points, LSQ_LAMBDA), test)
    rows, curves = [], {"zero": zero.tolist(), "LSQ": lsq.tolist()}

    def add(name, seed, quantity, value):
        rows.append({"run": name, "seed": seed, "quantity": quantity, "value": float(value)})

    for name in settings.models():
        curves[name] = []
        for seed, model in enumerate(measurement.models[name]):
            errors = model_errors(model, test)
            curves[name].append(errors.tolist())
            add(name, seed, "mse", errors.mean())
    curves["compressed"] = []
    for seed, model in enumerate(measurement.models["linear"]):
        key_query, value = compressed_weights(model)
        errors = position_errors(compressed_predictions(key_query.double(), value.double(), test.xs), test.ys)
        curves["compressed"].append(errors.tolist())
        add("linear", seed, "compressed_mse", errors.mean())
    curves["probes"] = {target: [] for target in PROBE_TARGETS}
    for seed, model in enumerate(measurement.models["deep-linear"]):
        for target, values in probe_scores(model, fit, test, settings.probe_positions).items():
            curves["probes"][target].append(values)
            add("deep-linear", seed, f"{target} probe gain", values[-1] - values[0])
            add("deep-linear", seed, f"{target} probe R² of the input tokens", values[0])
            add("deep-linear", seed, f"{target} probe R² after the last layer", values[-1])
    rows += [{"run": "baselines", "seed": 0, "quantity": quantity, "value": float(value.mean())}
             for quantity, value in (("zero_mse", zero), ("lsq_mse", lsq))]
    gd_sanity = _gd_sanity(gd_step_layer(task.dim, task.points, 0.1), test)
    return {"rows": rows, "curves": curves, "gd_sanity": gd_sanity}


def _gd_sanity(gd: MesaTransformer, test) -> dict:
    """The largest gaps between the compressed form of the GD-step layer, its forward pass and the GD step."""
    states = test.xs
    previous = torch.nn.functional.pad(states, (0, 0, 1, 0))[:, :-1]
    step = gd.projection[0, 0, 2 * gd.dim, 0].item()
    scores = (states @ previous.mT).tril()  # [t, i] = s_{i−1}ᵀ s_t, i ≤ t
    explicit = step * scores @ states  # η Σ_{i≤t} s_i s_{i−1}ᵀ s_t
    with torch.no_grad():
        forward = gd.predict(test.xs, test.ys)
    key_query, value = compressed_weights(gd)
    compressed = compressed_predictions(key_query, value, states)
    return {"compressed_vs_forward": float((compressed - forward).abs().max()),
            "compressed_vs_gd": float((compressed - explicit).abs().max()),
            "scale": float(explicit.abs().max())}


def _values(results, run, quantity):
    return seed_values(results["rows"], quantity, run=run)


def checks(results: dict, settings: Settings) -> list[Check]:
    mesa = _values(results, "mesa", "mse")
    found = [claim_check("mesa-beats-attention", f"one-layer MSE ratio mesa / {other}", MESA_RATIO,
                         [m / o for m, o in zip(mesa, _values(results, other, "mse"))], relation="at_most",
                         source="the authors' mesa-layer comparison; contrast fixed before running")
             for other in ("linear", "softmax")]
    zero = _values(results, "baselines", "zero_mse")[0]
    trained, compressed = _values(results, "linear", "mse"), _values(results, "linear", "compressed_mse")
    found.append(claim_check("compressed-one-layer", "trained one-layer linear model's gain over the zero predictor, "
                             "fraction of its MSE", LEARNED_GAIN, [(zero - t) / zero for t in trained],
                             relation="at_least", source="our bound, fixed before running"))
    found.append(claim_check("compressed-one-layer", "fraction of that gain the 12-scalar compressed form recovers",
                             RECOVERED_FRACTION, [(zero - c) / (zero - t) for c, t in zip(compressed, trained)],
                             relation="at_least", source="OneLayerRevAlg_Linear: the compressed loss matches the "
                             "trained one; bound fixed before running"))
    found += [claim_check("probes-by-depth", f"{target} probe: R² after the last layer − R² of the input tokens",
                          PROBE_GAIN, _values(results, "deep-linear", f"{target} probe gain"), relation="at_least",
                          source="the authors' probing figure; bound fixed before running")
              for target in PROBE_TARGETS]
    gaps = results["gd_sanity"]
    tolerance = 1e-10 * gaps["scale"]
    found += [exact("compressed form of the one-GD-step layer against its forward pass", 0.0,
                    gaps["compressed_vs_forward"], tolerance=tolerance, source="icl_sim.models.mesa_compressed"),
              exact("compressed form of the one-GD-step layer against η Σ s_i s_{i−1}ᵀ s_t", 0.0,
                    gaps["compressed_vs_gd"], tolerance=tolerance, source="one GD step from 0 on Σ‖s_i − Φs_{i−1}‖²")]
    return found


def figure(results: dict, settings: Settings) -> list[Panel]:
    curves = results["curves"]
    positions = list(range(1, len(curves["zero"]) + 1))
    baselines = [Curve("LSQ (λ = 0.001)", positions, curves["LSQ"], baseline=True),
                 Curve("zero", positions, curves["zero"], baseline=True)]
    comparison = [seed_curve(f"{name} (1 layer)", positions, curves[name]) for name in ATTENTIONS]
    compression = [seed_curve("linear (1 layer), trained", positions, curves["linear"]),
                   seed_curve("its 12-scalar compressed form", positions, curves["compressed"], baseline=True)]
    layers = list(range(settings.deep_layers + 1))
    probes = [seed_curve(target, layers, curves["probes"][target], continuous=False) for target in PROBE_TARGETS]
    return [Panel("sequence length t", "next-token MSE", comparison + baselines, yscale="log",
                  title="mesa-layer vs attention"),
            Panel("sequence length t", "next-token MSE", compression + baselines, yscale="log",
                  title="one layer: trained vs compressed"),
            Panel("layer (0 = input tokens)", "probe R² (held out)", probes,
                  title=f"probes, {settings.deep_layers}-layer linear model")]


REPRODUCTION = Reproduction(
    name="von-oswald-2023b",
    paper=PAPER,
    summary="Causal models trained on next-token prediction of linear dynamical systems (d = 10, orthogonal W, "
            "σ = 0.01): the mesa-layer beats linear and softmax attention; a trained one-layer linear model is a "
            "12-scalar algorithm containing one GD step; probes decode the next token and the preconditioned input "
            "better with depth.",
    caption="von Oswald et al. 2023b: next-token MSE by position of one-layer mesa, linear and softmax models against "
            "least squares; the one-layer linear model against its compressed form; probe R² by layer",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    quick_minutes=3.7,
    long_minutes=16.1,
    seeds={"long": 5},
    claims=CLAIMS,
)
