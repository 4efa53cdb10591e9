"""icl-sim: an in-context learning theory simulator.

``load_run(path)`` returns the trained model of a run directory as a Predictor, ``load_garg_checkpoint(path)`` that
of a run directory of Garg et al.'s code (their released models).  The public names
are imported on first use, so that ``import icl_sim.config`` or ``icl-sim --help`` does not load torch.
"""
import importlib

#: public name -> the module that defines it
_EXPORTS = {"Predictor": "icl_sim.predictor", "Prompt": "icl_sim.prompt", "load_run": "icl_sim.run_io",
            "load_garg_checkpoint": "icl_sim.models.hf_gpt2"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'icl_sim' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
