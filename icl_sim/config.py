"""The training configuration: a frozen dataclass saved as ``config.json`` in each run directory.

Each field carries its default, its help and (``minimum``, ``strict``, ``choices``) its valid values in its
``metadata``: ``__post_init__`` checks them and ``icl-sim train`` builds one option per field from them, so a
new training setting is one line here.  :func:`read_config_file` reads the same fields from YAML, JSON or TOML.

A field added after runs were first saved is marked ``added`` (the date it came): a saved config may lack
it, and then it takes its default, which must be the behaviour those runs were trained with; and a config
at that default leaves it out of its JSON, so that every config saved before it keeps its JSON, its sweep
hash (:func:`icl_sim.sweep.run_id`) and its reuse by reproductions.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from icl_sim.log_sinks import LOG_SINKS
from icl_sim.mapping_files import read_settings_file
from icl_sim.params import parameter_name, typed_parameters
from icl_sim.validation import LARGEST_INT, check_choice, check_float, check_int

OPTIMIZERS = ("adam", "adamw", "sgd", "sophiag", "normalized-gd")
LR_SCHEDULES = ("constant", "cosine", "geometric", "halving", "triangle")
LOSS_POSITIONS = ("last", "all")
DEVICES = ("auto", "cpu", "cuda")
#: torch.compile's modes: reduce-overhead replays CUDA graphs, max-autotune also searches kernel configurations
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
#: ``icl-sim train``'s shortcuts for a task or model parameter (:func:`icl_sim.reports.train_config`), which a
#: config file or a sweep spec may hold beside the fields
SHORTCUTS = ("dim", "points", "layers", "loops", "loop_window")


@dataclass(frozen=True)
class Curriculum:
    """A quantity growing from ``start`` by ``increment`` every ``interval`` steps, capped at the task's value."""

    start: int
    increment: int
    interval: int

    def __post_init__(self):
        check_int("curriculum start", self.start, 1)
        check_int("curriculum increment", self.increment, 0)
        check_int("curriculum interval", self.interval, 1)

    @classmethod
    def parse(cls, text: str) -> "Curriculum":
        """``START:INCREMENT:INTERVAL`` -> Curriculum (Garg et al.: dims 5:1:2000, points 11:2:2000)."""
        try:
            start, increment, interval = (int(part) for part in text.split(":"))
        except ValueError:
            raise ValueError(f"expected START:INCREMENT:INTERVAL integers, got {text!r}") from None
        return cls(start, increment, interval)

    def value_at(self, step: int, end: int) -> int:
        return min(end, self.start + self.increment * (step // self.interval))


def _field(default, help: str, **metadata):
    """A TrainConfig field: default, help, and optionally ``minimum`` (``strict``), ``choices``, ``metavar``,
    ``default_text`` (what --help says the default is, where it is not the field's), ``added`` (see above), ``cli``
    (False: recorded by icl-sim itself, not an option of ``icl-sim train``)."""
    return field(default=default, metadata={"help": help, **metadata})


def _params_field(kind: str, example: str):
    return field(default_factory=dict, metadata={
        "help": f"any {kind} parameter, e.g. {example} (repeatable)", "option": f"--{kind}-param",
        "metavar": "KEY=VALUE"})


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (together with the code version)."""

    task: str = _field("linear-regression", "task family (see `icl-sim tasks`)")
    task_params: Mapping[str, Any] = _params_field("task", "noise=0.5")
    model: str = _field("lsa", "model family")
    model_params: Mapping[str, Any] = _params_field("model", "size=small")
    steps: int = _field(5000, "training steps", minimum=1)
    batch_size: int = _field(256, "prompts per step", minimum=1)
    batch_shards: int = _field(1, "shards of each batch, shard s of batch t drawn from (seed, t, s): torchrun's "
                               "processes split them, so a run does not depend on their number (a multiple of it)",
                               minimum=1)
    lr: float = _field(1e-3, "peak learning rate", minimum=0.0, strict=True)
    optimizer: str = _field("adam", "optimiser (sgd: plain SGD, betas and adam_eps unused; sophiag: Liu et al. "
                            "2023's SophiaG, betas its β₁ β₂, adam_eps unused; normalized-gd: each parameter's "
                            "gradient scaled to unit norm, weight_decay the λ of a penalty λ‖θ‖² in the loss, "
                            "Tarzanagh et al. 2023: icl_sim.optimizers)", choices=OPTIMIZERS)
    betas: tuple[float, float] = _field((0.9, 0.999), "Adam's moment decay rates (von Oswald et al.: 0.9 0.98)",
                                        metavar="B1 B2")
    adam_eps: float = _field(1e-8, "Adam's ε", minimum=0.0, strict=True)
    weight_decay: float = _field(0.0, "weight decay (decoupled for adamw)", minimum=0.0)
    momentum: float = _field(0.0, "SGD's heavy-ball momentum μ in [0, 1): b ← μ b + g, θ ← θ − lr b "
                             "(torch's SGD; Ahn et al. 2024's SGDM: 0.9)", minimum=0.0, added="2026-12-02")
    lr_group: str = _field("", "a second parameter group: the parameters whose name (the model's named_parameters) "
                           "starts with this train at lr × lr_group_scale (Tian et al. 2023's decoder and attention "
                           "learning rates); empty: one learning rate for all", metavar="PREFIX",
                           added="2026-12-05")
    lr_group_scale: float = _field(1.0, "the learning-rate factor of the lr_group parameters", minimum=0.0,
                                   strict=True, added="2026-12-05")
    lr_schedule: str = _field("constant", "after warm-up: constant, cosine decay to 0, geometric (constant for "
                              "s/log2 s steps, then halved every (s − s/log2 s)/log2 s steps, Wu et al. 2024), "
                              "halving (halved every lr_halving_every steps, Ahn et al. 2023), or triangle (Raventós "
                              "et al. 2023: from 0 up to lr over warmup_steps, then linearly down to 0 at steps)",
                              choices=LR_SCHEDULES)
    lr_halving_every: int = _field(0, "steps between halvings of the halving schedule (Ahn et al. 2023: 4000; "
                                   "0 = no halving schedule)", minimum=0, added="2026-12-02")
    warmup_steps: int = _field(0, "steps of linear learning-rate warm-up", minimum=0)
    grad_clip: float = _field(0.0, "max gradient norm (0 = off)", minimum=0.0)
    grad_clip_matrix: float = _field(0.0, "max gradient norm of each weight matrix (a parameter's last two axes; "
                                     "Ahn et al. 2023: 0.01), applied before grad_clip (0 = off)", minimum=0.0,
                                     added="2026-12-02")
    batch_redraw_every: int = _field(1, "steps each training batch is reused before the next is drawn (Ahn et al. "
                                     "2023: 100); batch t is the one drawn at step t − t mod this", minimum=1,
                                     added="2026-12-02")
    loss_on: str = _field("last", "positions in the loss", choices=LOSS_POSITIONS,
                          default_text="the model's: lsa last, gpt all")
    seed: int = _field(0, "training seed (data, initialisation)", minimum=0)
    device: str = _field("auto", "auto: cuda if available", choices=DEVICES)
    amp: bool = _field(True, "bf16 autocast on CUDA (ignored on CPU)")
    compile: bool = _field(False, "torch.compile the model as the training loss calls it")
    compile_mode: str = _field("default", "torch.compile's mode, with --compile: reduce-overhead replays CUDA "
                               "graphs (for small models, whose GPU steps are launch-bound)", choices=COMPILE_MODES,
                               added="2026-12-01")
    curriculum_dims: Curriculum | None = _field(None, "grow the active dimensions (Garg et al.: 5:1:2000)",
                                                metavar="START:INC:EVERY")
    curriculum_points: Curriculum | None = _field(None, "grow the prompt length (Garg et al.: 11:2:2000)",
                                                  metavar="START:INC:EVERY")
    log_every: int = _field(50, "steps between metrics records", minimum=1)
    checkpoint_every: int = _field(1000, "steps between checkpoints", minimum=1)
    checkpoint_minutes: float = _field(5.0, "minutes between checkpoints (besides every checkpoint_every steps)",
                                       minimum=0.0, strict=True)
    log: str = _field("none", "also log every metrics record to TensorBoard (RUN_DIR/tensorboard; pip install "
                      "'icl-sim[tensorboard]') or W&B (RUN_DIR/wandb, offline unless WANDB_MODE is set; pip install "
                      "'icl-sim[wandb]')", choices=LOG_SINKS, added="2026-12-05")
    keep_every: int = _field(0, "keep the model's weights every K steps in snapshots/step-K.safetensors, read back by "
                             "load_run(RUN_DIR, step=K) (0: only the latest checkpoint; Garg et al. keep "
                             "model_{step}.pt)", minimum=0, added="2026-12-05")
    init_from: str = _field("", "a new run from the trained weights of this run directory (its model and task "
                            "shapes), with a fresh optimiser and schedule; recorded in config.json", metavar="RUN_DIR",
                            default_text="none: initialised from the seed", added="2026-12-02")
    unverified_edit: str = _field("", "when `train --resume --force-unverified` accepted this config.json though it "
                                  "was edited after the run wrote it (empty: never)", added="2026-12-05", cli=False)

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for spec in dataclasses.fields(self):
            value, metadata = getattr(self, spec.name), spec.metadata
            if hints[spec.name] is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)  # lr 1 and lr 1.0 are one run: one JSON, one hash
                object.__setattr__(self, spec.name, value)
            if "choices" in metadata:
                check_choice(spec.name, value, metadata["choices"])
            elif "minimum" in metadata and hints[spec.name] is int:
                check_int(spec.name, value, metadata["minimum"], LARGEST_INT)
            elif "minimum" in metadata:
                check_float(spec.name, value, metadata["minimum"], strict=metadata.get("strict", False))
            elif hints[spec.name] is bool and not isinstance(value, bool):
                raise ValueError(f"{spec.name} must be true or false, got {value!r}")
        if self.batch_size % self.batch_shards:
            raise ValueError(f"batch_size ({self.batch_size}) must be a multiple of batch_shards ({self.batch_shards})")
        if not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2:
            raise ValueError(f"betas must be two numbers (β1, β2), got {self.betas!r}")
        for index, beta in enumerate(self.betas):
            check_float(f"betas[{index}]", beta, 0.0, maximum=1.0)
            if beta == 1.0:
                raise ValueError(f"betas[{index}] must be < 1, got {beta}")
        if (self.lr_schedule == "halving") != (self.lr_halving_every > 0):
            raise ValueError(f"lr_halving_every must be >= 1 with lr_schedule 'halving' and 0 otherwise; got "
                             f"{self.lr_halving_every} with lr_schedule {self.lr_schedule!r}")
        if self.momentum >= 1.0:
            raise ValueError(f"momentum must be < 1, got {self.momentum}")
        if self.momentum and self.optimizer != "sgd":
            raise ValueError(f"momentum is SGD's: it must be 0 with optimizer {self.optimizer!r}, got {self.momentum}")
        if self.lr_group_scale != 1.0 and not self.lr_group:
            raise ValueError(f"lr_group_scale ({self.lr_group_scale}) needs lr_group, the parameters it scales")
        if self.compile_mode != "default" and not self.compile:
            raise ValueError(f"compile_mode {self.compile_mode!r} needs compile to be true")
        object.__setattr__(self, "betas", tuple(self.betas))  # JSON gives a list

    def settings(self) -> dict[str, Any]:
        """Every field as JSON has it (lists for tuples, dicts for curricula), for comparing two configs."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def to_json(self) -> str:
        """The saved form: every field, except an ``added`` field at its default (see the module's docstring)."""
        saved = {name: value for name, value in self.settings().items()
                 if not (name in ADDED_FIELDS and getattr(self, name) == ADDED_FIELDS[name])}
        return json.dumps(saved, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        return cls(**typed_parameters(cls, json.loads(text)))


#: the fields added after runs were first saved -> their default, the behaviour of the runs saved before them
ADDED_FIELDS = {spec.name: spec.default for spec in dataclasses.fields(TrainConfig) if "added" in spec.metadata}

def read_config_file(path) -> dict[str, Any]:
    """The TrainConfig fields in a YAML, JSON or TOML file (a run's ``config.json`` too), typed, not yet merged,
    and the :data:`SHORTCUTS` it sets, as given (:func:`icl_sim.reports.train_config` reads both, as in a sweep spec).

    Unknown keys, a key given twice and unparsable files raise a one-line ``ValueError`` naming the file and
    the key; the values' ranges are checked when the TrainConfig is built.
    """
    data = read_settings_file(path, "config file")
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"config file {str(path)!r} must hold a mapping of training settings, "
                         f"got {type(data).__name__}")
    try:
        return typed_fields(data)
    except ValueError as error:
        raise ValueError(f"config file {str(path)!r}: {error}") from None


def typed_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` typed as TrainConfig fields (:func:`icl_sim.params.typed_parameters`), its :data:`SHORTCUTS`
    kept as given: the settings of one file, a config file or a sweep spec's run."""
    shortcuts = {parameter_name(name): value for name, value in values.items() if parameter_name(name) in SHORTCUTS}
    unset = next((name for name, value in shortcuts.items() if value is None), None)
    if unset is not None:  # as for any field without None among its values (lr: null)
        raise ValueError(f"{unset} must be an integer, got null; leave {unset} out for the task's or model's default")
    fields = {name: value for name, value in values.items() if parameter_name(name) not in SHORTCUTS}
    return {**typed_parameters(TrainConfig, fields), **shortcuts}
