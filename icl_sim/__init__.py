"""icl-sim: an in-context learning theory simulator.

``load_run(path)`` returns the trained model of a run directory as a Predictor.
"""
from icl_sim.prompt import Prompt
from icl_sim.predictor import Predictor
from icl_sim.run_io import load_run

__all__ = ["Predictor", "Prompt", "load_run"]
