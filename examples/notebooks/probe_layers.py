# %% [markdown]
# # Which algorithm does each layer run?
#
# Train a 2-layer linear self-attention (LSA) model on in-context linear regression, then match each layer with
# the steps of GD++ (von Oswald et al. 2023): with `step_params="per-step"` the algorithm gets one step per layer,
# each step's parameters tuned on the task's risk without looking at the model, and the probe asks whether layer
# ℓ is step ℓ of the best 2-step algorithm.
#
# Set `ICL_SIM_EXAMPLE_SMALL=1` to run it in seconds (the test suite does); the numbers below are then rough.

# %%
import os
import tempfile
from pathlib import Path

from icl_sim.config import TrainConfig
from icl_sim.reports import probe_run, residual_cosines
from icl_sim.training import train

SMALL = os.environ.get("ICL_SIM_EXAMPLE_SMALL") == "1"
run_dir = Path(tempfile.mkdtemp()) / "lsa-2"

# %% [markdown]
# ## Train
# d = 3 features, N = 10 context points, covariates of condition number 4 (so GD++'s preconditioning matters),
# 4000 Adam steps with a cosine schedule: about 16 s on two CPU cores.

# %%
config = TrainConfig(task="linear-regression", task_params={"dim": 3, "points": 10, "condition_number": 4.0},
                     model="lsa", model_params={"layers": 2}, steps=200 if SMALL else 4000, batch_size=128, lr=1e-2,
                     lr_schedule="cosine", device="cpu")
train(config, run_dir, progress=False)

# %% [markdown]
# ## Probe
# The residual cosine compares the model's errors ŷ − y across prompts with an algorithm's: 1 means the same
# errors.  `best` maps each layer to the step it matches most closely; `figure` is the layer × step heatmap.

# %%
result, paths = probe_run(run_dir, "gd-plus-plus", step_params="per-step", num_prompts=256 if SMALL else 1024,
                          device="cpu")
cosines = residual_cosines(result["records"])
for layer, step in result["best"].items():
    print(f"layer {layer} ↔ GD++ step {step}: residual cosine {cosines[layer, step]:.4f}")
print("heatmap:", paths["figure"])

# %% [markdown]
# A trained model is matched layer ℓ ↔ step ℓ with residual cosines near 1; an untrained one is not (try
# `steps=1`).  The same from the shell: `icl-sim probe RUN_DIR --algorithm gd-plus-plus --step-params per-step`.
