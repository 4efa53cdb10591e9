"""Options shared by several commands, and one option per field of a config dataclass.

Torch-free: the commands' option lists are built without importing what the commands run.
"""
from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Iterable, Mapping

import click

from icl_sim.cli import choices
from icl_sim.cli.given_once import option
from icl_sim.config import DEVICES
from icl_sim.params import is_mapping, non_optional
from icl_sim.validation import LARGEST_INT

device_option = option("--device", type=click.Choice(DEVICES), default="auto", show_default=True)
checkpoint_format_option = option(
    "--checkpoint-format", type=click.Choice(choices.CHECKPOINT_FORMATS), default="icl-sim", show_default=True,
    help="RUN_DIR's format: icl-sim's, or Garg et al.'s (config.yaml and state.pt, as their code writes them: "
         "their released models)")
step_option = option("--step", type=click.IntRange(min=1, max=LARGEST_INT), default=None,
                     help="the run's snapshot of this step (train --keep-every) instead of its final model; outputs "
                          "go to RUN_DIR/eval-step-K or probe-step-K")
seed_option = option("--seed", type=click.IntRange(min=0, max=LARGEST_INT), default=0, show_default=True,
                     help="evaluation seed")
progress_option = option("--progress/--no-progress", default=None,
                         callback=lambda ctx, param, value: sys.stderr.isatty() if value is None else value,
                         help="progress bars on stderr  [default: when stderr is a terminal]")
#: ``train``'s, ``sweep run``'s and ``repro``'s: they run long, so without a terminal (a log, a SLURM job) they
#: report in lines
loop_progress_option = option("--progress/--no-progress", default=True,
                              help="progress on stderr: on a terminal a bar with the loss, else status lines "
                                   "(steps, runs or reproductions done, loss, time left): training's every 10 % of "
                                   "the steps, 30 s apart at least, and at the end; sweep run's and repro gallery's "
                                   "as each run or reproduction ends  [default: on]")
json_option = option("--json", "as_json", is_flag=True, help="print the records as JSON")
run_dir_argument = click.argument("run_dir", type=click.Path(exists=True, file_okay=False))


class Parsed(click.ParamType):
    """A value written as text and read by ``cls.parse`` (e.g. a Curriculum's START:INC:EVERY)."""

    def __init__(self, cls):
        self.cls, self.name = cls, cls.__name__.lower()

    def convert(self, value, param, ctx):
        if isinstance(value, self.cls):
            return value
        try:
            return self.cls.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


def field_options(cls, choices: Mapping[str, Iterable[str]] | None = None):
    """Decorate a command with one option per field of dataclass ``cls``, named and typed after the field.

    The option's value reaches the command under the field's name.  The field's ``metadata`` gives
    ``help``, ``minimum`` (``strict``) and ``choices`` (-> IntRange, FloatRange, Choice), ``metavar``,
    ``option`` (another flag name) and ``default_text``; a field with ``cli`` False has no option; a bool field is a ``--x/--no-x`` flag, a
    two-float tuple two numbers, a class with ``parse`` its text form, a mapping a repeatable
    ``KEY=VALUE``.  ``choices`` adds the choices known only above ``cls``'s layer (e.g. the models).
    """
    hints, choices = typing.get_type_hints(cls), choices or {}

    def field_option(spec):
        metadata, flag = spec.metadata, spec.name.replace("_", "-")
        kind = non_optional(hints[spec.name])
        settings = {"help": metadata.get("help"), "metavar": metadata.get("metavar"),
                    "show_default": metadata.get("default_text", True), "default": spec.default}
        minimum, named = metadata.get("minimum"), metadata.get("choices", choices.get(spec.name))
        if is_mapping(kind):
            settings.update(multiple=True, default=(), show_default=False)
        elif kind is bool:
            flag = f"{flag}/--no-{flag}"
        elif named is not None:
            settings["type"] = click.Choice(list(named))
        elif kind is int:
            settings["type"] = click.IntRange(min=minimum, max=LARGEST_INT)
        elif kind is float:
            settings["type"] = click.FloatRange(min=minimum, min_open=metadata.get("strict", False))
        elif typing.get_origin(kind) is tuple:
            settings["type"] = typing.get_args(kind)
        elif callable(getattr(kind, "parse", None)):
            settings["type"] = Parsed(kind)
        return option(metadata.get("option", f"--{flag}"), spec.name, **settings)

    def decorate(command):
        for spec in reversed(dataclasses.fields(cls)):
            if spec.metadata.get("cli", True):
                command = field_option(spec)(command)
        return command

    return decorate


def mapping_fields(cls) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` that map names to values (set as repeatable KEY=VALUE options)."""
    hints = typing.get_type_hints(cls)
    return tuple(spec.name for spec in dataclasses.fields(cls) if is_mapping(hints[spec.name]))
