"""Model families: ``build_model(name, dim, points, **params)``; ``MODELS`` lists them, installed plugins' too."""
from __future__ import annotations

from icl_sim.models.attention_unit import AttentionUnit
from icl_sim.models.base import InContextModel
from icl_sim.plugins import WithPlugins
from icl_sim.models.complex_lsa import ComplexCausalLSA
from icl_sim.models.deep_linear import DeepLinear
from icl_sim.models.disentangled import DisentangledTransformer
from icl_sim.models.gpt import GPT
from icl_sim.models.kernel_attention import KernelAttention
from icl_sim.models.looped import LoopedLSA, LoopedTransformer
from icl_sim.models.looped_softmax_ngd import LoopedSoftmaxNGD
from icl_sim.models.lsa import LinearSelfAttention, constructed_lsa
from icl_sim.models.mesa import MesaTransformer
from icl_sim.models.projected_attention import ProjectedAttention
from icl_sim.models.selection_attention import SelectionAttention
from icl_sim.models.softmax_attention import SoftmaxAttention
from icl_sim.models.ttt import TestTimeTraining
from icl_sim.models.yz_transformer import YZTransformer

MODELS = WithPlugins({"lsa": LinearSelfAttention, "gpt": GPT, "looped": LoopedTransformer,
                      "looped-lsa-ln": LoopedLSA, "softmax-attention": SoftmaxAttention, "deep-linear": DeepLinear,
                      "disentangled": DisentangledTransformer, "complex-lsa": ComplexCausalLSA,
                      "selection-attention": SelectionAttention, "mesa": MesaTransformer,
                      "looped-softmax-ngd": LoopedSoftmaxNGD, "kernel-attention": KernelAttention,
                      "projected-attention": ProjectedAttention, "ttt": TestTimeTraining,
                      "yz-transformer": YZTransformer, "attention-unit": AttentionUnit},
                     "models", lambda model: isinstance(model, type) and issubclass(model, InContextModel),
                     "an InContextModel class")


def build_model(name: str, dim: int, points: int, /, target_dim: int = 1, **params) -> InContextModel:
    """The model family ``name`` for prompts of ``points`` points in ``dim`` dimensions, k = ``target_dim`` labels."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {name!r}")
    model_class = MODELS[name]
    try:
        config = model_class.Config(**params)
    except TypeError as error:
        raise ValueError(f"bad parameter for model {name!r}: {error}") from None
    return model_class(dim, points, config, target_dim)


__all__ = ["ComplexCausalLSA", "DeepLinear", "DisentangledTransformer", "GPT", "MODELS", "InContextModel",
           "KernelAttention", "LinearSelfAttention", "LoopedLSA", "LoopedSoftmaxNGD", "LoopedTransformer",
           "MesaTransformer", "ProjectedAttention", "SelectionAttention", "SoftmaxAttention", "TestTimeTraining",
           "build_model", "constructed_lsa"]
