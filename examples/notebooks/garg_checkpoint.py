# %% [markdown]
# # Garg et al.'s models in icl-sim
#
# Garg et al. (2022) released their trained GPT-2 models as run directories (`config.yaml`, `state.pt`); Fu et
# al. (2023) probe them.  `icl_sim.load_garg_checkpoint(RUN_DIR)` reads one as a Predictor that `evaluate`,
# `probe` and `probe_latent` accept (`--checkpoint-format garg` on the command line).
#
# Point `GARG_RUN` at one of their run directories (e.g. `models/linear_regression/<run id>` from their
# repository's download).  Without it this notebook writes a small untrained model in their layout with
# `save_garg_checkpoint`, so that it runs offline; its numbers then show an untrained model.

# %%
import os
import tempfile
from pathlib import Path

import torch

import icl_sim
from icl_sim.evaluation import evaluate
from icl_sim.models.gpt import GPT, GPTConfig
from icl_sim.models.hf_gpt2 import garg_task, save_garg_checkpoint
from icl_sim.probing import probe

run_dir = os.environ.get("GARG_RUN")
if run_dir is None:
    run_dir = Path(tempfile.mkdtemp()) / "garg-layout"
    torch.manual_seed(0)
    save_garg_checkpoint(GPT(5, 11, GPTConfig(n_embd=32, n_layer=3, n_head=4, activation="gelu-tanh")), run_dir)

# %% [markdown]
# ## Load
# Their `TransformerModel` is a read-in layer, a Hugging Face `GPT2Model` and a read-out at the x tokens: icl-sim's
# `gpt` with GPT-2's tanh GELU, weight for weight.  `garg_task` gives the icl-sim task their run trained on.

# %%
model = icl_sim.load_garg_checkpoint(run_dir)
task = garg_task(run_dir)
print(type(model).__name__, "with", sum(p.numel() for p in model.parameters()), "parameters;", task.name,
      f"d = {task.dim}, N = {task.points}")

# %% [markdown]
# ## Evaluate and probe
# The released linear-regression models match least squares past n = d; the probe asks which GD step each layer's
# read-out is closest to (Fu et al. read them with fitted read-outs: `readout="fitted"`).

# %%
records = evaluate({"Garg et al.": model, **task.baselines()}, task, num_prompts=256, bootstrap=100)
last = task.points - 1
print({record["predictor"]: round(record["mean"], 3) for record in records if record["position"] == last})
result = probe(model, task, "gd", steps=5, num_prompts=128, readout="fitted")
print("closest GD step per layer:", result["best"])
