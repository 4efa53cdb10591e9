"""Hugging Face GPT-2 weights in and out of icl-sim's ``gpt``, and Garg et al.'s released run directories.

Garg et al.'s ``TransformerModel`` (dtsip/in-context-learning, ``src/models.py``) is a read-in ``nn.Linear``, a
Hugging Face ``GPT2Model`` fed ``inputs_embeds`` and a read-out ``nn.Linear`` at the x tokens: icl-sim's ``gpt``
with GPT-2's activation (``gelu-tanh``, their ``gelu_new``), the same interleaving of x and y tokens and learned
positions.  Layer for layer the weights are the same numbers; GPT-2's ``Conv1D`` layers store them (in, out),
``nn.Linear`` (out, in).  GPT-2's token embedding ``wte`` is never read (the inputs arrive embedded) and is left out.
Fu et al. (2023) probe Garg et al.'s released checkpoints; :func:`load_garg_checkpoint` reads one as a Predictor,
and :func:`save_garg_checkpoint` writes a ``gpt`` trained here as one, for their evaluation and plotting code.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch
import yaml

from icl_sim.atomic import atomic_path, write_text
from icl_sim.models.gpt import GPT, GPTConfig

#: what GPT-2's attention layers keep as buffers in older transformers versions (a causal mask), not weights
_BUFFERS = (".attn.bias", ".attn.masked_bias")


def to_hf_gpt2(model: GPT) -> dict[str, torch.Tensor]:
    """The backbone's weights as a Hugging Face ``GPT2Model`` state dict (``wpe``, ``h.*``, ``ln_f``; no ``wte``):
    ``GPT2Model.load_state_dict(to_hf_gpt2(model), strict=False)`` makes it compute ``model``'s blocks."""
    ours = model.state_dict()
    state = {"wpe.weight": ours["embedding.positions.weight"]}
    for mine, theirs, transposed in _layers(len(model.blocks)):
        state[f"{theirs}.weight"] = ours[f"{mine}.weight"].T.contiguous() if transposed else ours[f"{mine}.weight"]
        state[f"{theirs}.bias"] = ours[f"{mine}.bias"]
    return state


def from_hf_gpt2(backbone: Mapping[str, torch.Tensor], read_in: Mapping[str, torch.Tensor],
                 read_out: Mapping[str, torch.Tensor], *, n_head: int, dim: int | None = None,
                 points: int | None = None) -> GPT:
    """A ``gpt`` holding a ``GPT2Model``'s weights (``backbone``, its state dict) with the read-in and read-out
    ``nn.Linear`` state dicts around it, in evaluation mode.  ``n_head`` is GPT-2's config's (weights do not tell
    it); ``dim`` defaults to the read-in's width, ``points`` to half the positions ``wpe`` holds."""
    backbone = {name: value for name, value in backbone.items() if not name.endswith(_BUFFERS)}
    n_layer = len({name.split(".")[1] for name in backbone if name.startswith("h.")})
    n_embd, width = read_in["weight"].shape
    target_dim = read_out["weight"].shape[0]
    dim = width if dim is None else dim
    points = backbone["wpe.weight"].shape[0] // 2 if points is None else points
    model = GPT(dim, points, GPTConfig(n_embd=n_embd, n_layer=n_layer, n_head=n_head, activation="gelu-tanh"),
                target_dim=target_dim)
    state = {"embedding.positions.weight": backbone["wpe.weight"][: 2 * points],
             "embedding.read_in.weight": read_in["weight"], "embedding.read_in.bias": read_in["bias"],
             "head.read_out.weight": read_out["weight"], "head.read_out.bias": read_out["bias"]}
    for mine, theirs, transposed in _layers(n_layer):
        state[f"{mine}.weight"] = backbone[f"{theirs}.weight"].T if transposed else backbone[f"{theirs}.weight"]
        state[f"{mine}.bias"] = backbone[f"{theirs}.bias"]
    expected = model.state_dict()
    for name, value in state.items():
        if tuple(value.shape) != tuple(expected[name].shape):
            raise ValueError(f"GPT-2 weights: {name} is {tuple(value.shape)}, the model built from them needs "
                             f"{tuple(expected[name].shape)} (n_head, dim or points wrong?)")
    model.load_state_dict({name: value.to(expected[name].dtype) for name, value in state.items()})
    return model.eval()


def load_garg_checkpoint(run_dir, device="cpu") -> GPT:
    """The model of a run directory as Garg et al.'s code writes it: ``config.yaml`` (its ``model:`` section:
    ``family: gpt2``, ``n_dims``, ``n_positions`` = points, ``n_embd``, ``n_layer``, ``n_head``) and ``state.pt``
    (``model_state_dict`` in their ``_read_in``, ``_backbone``, ``_read_out`` layout), as a Predictor that
    ``eval`` and ``probe`` accept.  Anything else there is a one-line error naming the file."""
    run_dir = Path(run_dir)
    settings = _garg_model_settings(run_dir / "config.yaml")
    path = run_dir / "state.pt"
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
        state = saved["model_state_dict"]
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: a Garg et al. run directory holds config.yaml and state.pt") from None
    except Exception as error:  # a foreign pickle, a damaged file, another layout
        raise ValueError(f"cannot read {path} as Garg et al.'s state.pt ({type(error).__name__}: {error})") from None
    parts = {prefix: {name[len(prefix):]: value for name, value in state.items() if name.startswith(prefix)}
             for prefix in ("_read_in.", "_backbone.", "_read_out.")}
    if not all(parts.values()):
        raise ValueError(f"{path}: model_state_dict lacks the _read_in, _backbone or _read_out weights of Garg "
                         f"et al.'s TransformerModel")
    return from_hf_gpt2(parts["_backbone."], parts["_read_in."], parts["_read_out."], n_head=settings["n_head"],
                        dim=settings["n_dims"], points=settings["n_positions"]).to(device)


def save_garg_checkpoint(model: GPT, run_dir, *, task: str = "linear_regression") -> None:
    """Write ``model`` as Garg et al.'s code writes a run: ``config.yaml`` (``model:`` family gpt2, n_dims,
    n_positions, n_embd, n_layer, n_head; ``training: task``) and ``state.pt`` (``model_state_dict`` in their
    ``_read_in``, ``_backbone``, ``_read_out`` layout), so their TransformerModel and :func:`load_garg_checkpoint`
    read it.  Their model reads GPT-2's activation: a ``gpt`` of another ``activation`` is refused."""
    if model.config.activation != "gelu-tanh":
        raise ValueError(f"model: activation {model.config.activation!r}; Garg et al.'s GPT-2 computes gelu-tanh")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    ours = model.state_dict()
    state = {f"_backbone.{name}": value for name, value in to_hf_gpt2(model).items()}
    for prefix, layer in (("_read_in", "embedding.read_in"), ("_read_out", "head.read_out")):
        state.update({f"{prefix}.{kind}": ours[f"{layer}.{kind}"] for kind in ("weight", "bias")})
    n_embd, n_layer, n_head = model.config.dims
    settings = {"family": "gpt2", "n_dims": model.dim, "n_positions": model.points, "n_embd": n_embd,
                "n_layer": n_layer, "n_head": n_head}
    write_text(run_dir / "config.yaml", yaml.safe_dump({"model": settings, "training": {"task": task}}))
    with atomic_path(run_dir / "state.pt") as path:
        torch.save({"model_state_dict": {name: value.detach().cpu() for name, value in state.items()}}, path)


def garg_task(run_dir):
    """The task a Garg et al. run trained on, as icl-sim's: their ``linear_regression`` (``training: task``) on
    ``n_dims`` dimensions and ``n_positions`` points is ``linear-regression`` (x and w standard normal, y = wᵀx)."""
    from icl_sim.tasks import make_task

    path = Path(run_dir) / "config.yaml"
    model = _garg_model_settings(path)
    task = (yaml.safe_load(path.read_text()).get("training") or {}).get("task", "linear_regression")
    if task != "linear_regression":
        raise ValueError(f"{path}: training task {task!r}; of Garg et al.'s tasks only linear_regression maps onto "
                         f"an icl-sim task so far")
    return make_task("linear-regression", dim=model["n_dims"], points=model["n_positions"])


def _garg_model_settings(path: Path) -> dict:
    try:
        model = yaml.safe_load(path.read_text())["model"]
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: a Garg et al. run directory holds config.yaml and state.pt") from None
    except (OSError, yaml.YAMLError, KeyError, TypeError) as error:
        raise ValueError(f"cannot read the model: section of {path} ({type(error).__name__})") from None
    if model.get("family") != "gpt2":
        raise ValueError(f"{path}: model family {model.get('family')!r}; only Garg et al.'s gpt2 models load here")
    missing = [key for key in ("n_dims", "n_positions", "n_embd", "n_layer", "n_head") if key not in model]
    if missing:
        raise ValueError(f"{path}: the model: section lacks {', '.join(missing)}")
    return model


def _layers(n_layer: int) -> list[tuple[str, str, bool]]:
    """(our layer, GPT2Model's, whose weight is stored transposed) for every layer with a weight and a bias."""
    pairs = [("head.ln_f", "ln_f", False)]
    for index in range(n_layer):
        ours, theirs = f"blocks.{index}", f"h.{index}"
        pairs += [(f"{ours}.ln_1", f"{theirs}.ln_1", False), (f"{ours}.attn.qkv", f"{theirs}.attn.c_attn", True),
                  (f"{ours}.attn.proj", f"{theirs}.attn.c_proj", True), (f"{ours}.ln_2", f"{theirs}.ln_2", False),
                  (f"{ours}.mlp.fc", f"{theirs}.mlp.c_fc", True), (f"{ours}.mlp.proj", f"{theirs}.mlp.c_proj", True)]
    return pairs
