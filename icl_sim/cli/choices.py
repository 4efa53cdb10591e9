"""The names the command line offers as choices, here so that no ``--help`` imports the numerical libraries.

Each tuple mirrors the registry or constant named beside it, which stays the source of truth; the
names are repeated only because that registry lives beside the numerical code, and
tests/test_cli.py holds each tuple equal to its source.
"""
from icl_sim.plugins import plugin_names

#: the keys of icl_sim.models.MODELS, sorted: the built-in models and installed plugins' (their names only)
MODELS = tuple(sorted(("attention-unit", "complex-lsa", "deep-linear", "disentangled", "gpt", "kernel-attention",
                       "looped", "looped-lsa-ln", "looped-softmax-ngd", "lsa", "mesa", "projected-attention",
                       "selection-attention", "softmax-attention", "ttt", "yz-transformer",
                       *plugin_names("models"))))
#: icl_sim.probing.STEP_PARAMS
STEP_PARAMS = ("shared", "per-step")
#: icl_sim.probing.READOUTS
READOUTS = ("direct", "fitted")
#: icl_sim.reports.PRECONDITIONERS
PRECONDITIONERS = ("identity", "optimal")
#: icl_sim.reports.CHECKPOINT_FORMATS
CHECKPOINT_FORMATS = ("icl-sim", "garg")
#: icl_sim.paper_repro.SCALES
SCALES = ("smoke", "quick", "long", "full")
#: icl_sim.paper_repro.gallery.GALLERY_SCALES
GALLERY_SCALES = ("quick", "long")
#: icl_sim.paper_repro.runner.CONTROLS
CONTROLS = ("untrained",)
#: icl_sim.executors.EXECUTORS
EXECUTORS = ("local", "slurm", "debug")
#: icl_sim.latent_probes.PROBES
LATENT_PROBES = ("linear", "mlp")
#: icl_sim.latent_probes.CONTROLS
LATENT_CONTROLS = ("permuted", "query-projection")
