# %% [markdown]
# # A trained model beside the baselines
#
# Train a one-layer LSA on noisy in-context linear regression and compare its error, position by position, with
# the task's baselines (least squares, averaging, nearest neighbours, Bayes ridge) on the same held-out prompts.
# A one-layer LSA can at best run one preconditioned GD step, so it should sit near averaging and above ridge.
#
# Set `ICL_SIM_EXAMPLE_SMALL=1` to run it in seconds (the test suite does).

# %%
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from icl_sim import load_run  # noqa: E402
from icl_sim.config import TrainConfig  # noqa: E402
from icl_sim.evaluation import evaluate  # noqa: E402
from icl_sim.tasks import make_task  # noqa: E402
from icl_sim.training import train  # noqa: E402

SMALL = os.environ.get("ICL_SIM_EXAMPLE_SMALL") == "1"
run_dir = Path(tempfile.mkdtemp()) / "lsa-1"

# %%
config = TrainConfig(task="linear-regression", task_params={"dim": 4, "points": 20, "noise": 0.5}, model="lsa",
                     model_params={"layers": 1}, steps=200 if SMALL else 3000, batch_size=128, lr=1e-2,
                     lr_schedule="cosine", device="cpu")
train(config, run_dir, progress=False)

# %% [markdown]
# ## Evaluate
# `evaluate` returns one record per predictor and position (the number of in-context examples) with the task's
# metric (squared error here) and a bootstrap interval over prompts.

# %%
task = make_task("linear-regression", dim=4, points=20, noise=0.5)
records = evaluate({"1-layer LSA": load_run(run_dir), **task.baselines()}, task, num_prompts=256 if SMALL else 2048,
                   bootstrap=100)
final = {record["predictor"]: record["mean"] for record in records if record["position"] == 19}
for name, error in sorted(final.items(), key=lambda item: item[1]):
    print(f"{name:>14}: {error:.3f} after 19 examples")

# %% [markdown]
# ## Plot
# A log axis: least squares' error is huge where the examples barely outnumber the features (n ≈ d).

# %%
figure, axis = plt.subplots(figsize=(5, 3.5))
for name in final:
    rows = [record for record in records if record["predictor"] == name]
    axis.plot([row["position"] for row in rows], [row["mean"] for row in rows], label=name)
axis.set(yscale="log", xlabel="in-context examples", ylabel="squared error")
axis.legend(fontsize=7)
figure.savefig(run_dir / "comparison.png", dpi=120, bbox_inches="tight")
print("figure:", run_dir / "comparison.png")
