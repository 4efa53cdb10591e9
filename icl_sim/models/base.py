"""The base class that makes every trained model a Predictor."""
from __future__ import annotations

import abc
import dataclasses
from typing import Callable

import torch
from torch import nn

from icl_sim.predictor import check_prompt, replicated_query_predictor
from icl_sim.validation import LARGEST_INT, check_int


class InContextModel(nn.Module, abc.ABC):
    """A network mapping a prompt (xs (B, N, d), ys (B, N)) to predictions (B, N).

    Subclasses implement ``layer_predictions``: the prediction read out after each
    layer (or loop), the last entry being the model's output; ``forward`` may be a
    cheaper path to the last entry alone.
    """

    @abc.abstractmethod
    def layer_predictions(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """Predictions (B, N) after each layer, first to last."""

    def forward(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        return self.layer_predictions(xs, ys)[-1]

    def keep_sizes(self, dim: int, points: int, config, target_dim: int) -> None:
        """Check and keep what every model is built from: d, N, its config and k labels per point."""
        check_int("dim", dim, 1)
        check_int("points", points, 1)
        check_int("target_dim", target_dim, 1)
        self.dim, self.points, self.config, self.target_dim = dim, points, config, target_dim

    def query_predictor(self, xs: torch.Tensor, ys: torch.Tensor) -> Callable[[torch.Tensor], list[torch.Tensor]]:
        """The model with its context (xs, ys) fixed: queries (B, Q, d) -> predictions (B, Q[, k]) per layer.

        Query q sees the context and x_q only, as if it were the final point of its own prompt
        (the probes evaluate many queries per context).  By default every query gets its own
        copy of the context; models override this to process the context once.
        """
        return replicated_query_predictor(self.layer_predictions, xs, ys)

    #: the Config field that ``icl-sim train --layers`` sets, and the positions trained on by default
    depth_parameter: str = "layers"
    default_loss_on: str = "last"
    #: False for a model that predicts from the query alone (a plain network, not an in-context learner)
    reads_context: bool = True

    @classmethod
    def parameter_count(cls, dim: int, points: int, config, target_dim: int = 1) -> int:
        """The parameters of the model ``config`` describes, counted on torch's meta device (no memory).

        Past two layers (``depth_parameter``) the count is extrapolated from one and two, every layer adding as
        many, so that a config of any depth is counted as cheaply; models whose layers grow otherwise override it.
        """
        depth = getattr(config, cls.depth_parameter)
        if depth <= 2:
            return meta_parameter_count(cls, dim, points, config, target_dim)
        one, two = (meta_parameter_count(cls, dim, points, dataclasses.replace(config, **{cls.depth_parameter: n}),
                                         target_dim) for n in (1, 2))
        return one + (depth - 1) * (two - one)

    @classmethod
    def activation_floats(cls, dim: int, points: int, config, target_dim: int = 1) -> int:
        """Floats a training step holds for backward per prompt, an estimate: a (d + k)-wide token per point and
        layer; models whose activations are larger (attention maps, materialised prefixes) override it."""
        return points * (dim + target_dim) * getattr(config, cls.depth_parameter)

    def layer_features(self, xs: torch.Tensor, ys: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer features (B, N, width) at every query, for read-outs fitted per layer (Fu et al. 2023).

        Models whose intermediate layers do not predict directly expose their hidden states here.
        """
        raise ValueError(f"{type(self).__name__} exposes no per-layer features; use the direct read-out")

    def training_predictions(self, xs: torch.Tensor, ys: torch.Tensor, step: int,
                             last_only: bool) -> list[torch.Tensor]:
        """The predictions the training loss averages over at optimiser step ``step``.

        One output by default, (B, N) or, if ``last_only``, the final position (B,); a
        looped model returns its last T loops (Yang et al. 2023), with a loop count that
        may grow with ``step`` (a loop curriculum).
        """
        return [self.last_prediction(xs, ys) if last_only else self(xs, ys)]

    def last_prediction(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """The prediction at the final position (B,); models may compute it more cheaply than all of them."""
        return self(xs, ys)[:, -1]

    def check_prompt(self, xs: torch.Tensor, ys: torch.Tensor) -> None:
        """Raise ``ValueError`` unless (xs, ys) is a prompt this model reads: ``icl_sim.predictor.check_prompt``,
        d = ``dim`` features and ``target_dim`` labels per point."""
        check_prompt(xs, ys)
        if xs.shape[-1] != self.dim:
            raise ValueError(f"xs must have {self.dim} features (dim), got {xs.shape[-1]}")
        labels = ys.shape[-1] if ys.ndim == 3 else 1
        if labels != self.target_dim:
            raise ValueError(f"ys must carry target_dim={self.target_dim} labels per point, got {tuple(ys.shape)}")

    @torch.no_grad()
    def predict(self, xs: torch.Tensor, ys: torch.Tensor, **options) -> torch.Tensor:
        """Predictor contract: a checked prompt, evaluation mode, any input device/dtype, output like ``xs``.

        ``options`` go to ``forward`` (a looped model's ``loops``).
        """
        self.check_prompt(xs, ys)
        reference = next(self.parameters())
        was_training = self.training
        self.eval()
        try:
            preds = self(xs.to(reference), ys.to(reference), **options)
        finally:
            self.train(was_training)
        return preds.to(device=xs.device, dtype=xs.dtype)


def meta_parameter_count(model_class, dim: int, points: int, config, target_dim: int = 1) -> int:
    """The parameters of ``model_class(dim, points, config, target_dim)``, built on the meta device: shapes only.
    A tensor too large for torch to count (over int64's elements) counts as :data:`LARGEST_INT`, a lower bound."""
    try:
        with torch.device("meta"):
            model = model_class(dim, points, config, target_dim)
    except (RuntimeError, TypeError) as error:  # torch's words for a size past int64: "overflowed", "Overflow"
        if "overflow" not in str(error).lower():
            raise
        return LARGEST_INT
    return sum(parameter.numel() for parameter in model.parameters())
