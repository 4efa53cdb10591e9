"""Task families: ``make_task(name, **params)`` builds one; ``TASKS`` lists them all, installed plugins' too."""
from __future__ import annotations

from icl_sim.plugins import WithPlugins
from icl_sim.tasks.autoregressive import Autoregressive
from icl_sim.tasks.base import Task
from icl_sim.tasks.boolean import Boolean
from icl_sim.tasks.deep_relu_teacher import DeepReluTeacher
from icl_sim.tasks.graph_connectivity import GraphConnectivity
from icl_sim.tasks.graphqa import GraphQAConnectivity
from icl_sim.tasks.graph_search import GraphSearch
from icl_sim.tasks.kcm_regression import KCMRegression
from icl_sim.tasks.key_average import KeyAverage
from icl_sim.tasks.linear_classification import LinearClassification
from icl_sim.tasks.linear_classification_ngd import GuidedLinearClassification
from icl_sim.tasks.linear_map import LinearMap
from icl_sim.tasks.linear_regression import LinearRegression
from icl_sim.tasks.matching import Match
from icl_sim.tasks.memorisation import Memorisation
from icl_sim.tasks.mixture import Mixture
from icl_sim.tasks.pca import PCA
from icl_sim.tasks.relu_network import ReLUNetwork
from icl_sim.tasks.sequence_class import SequenceClass
from icl_sim.tasks.sinusoid import Sinusoid
from icl_sim.tasks.sparse_averaging import SparseAveraging
from icl_sim.tasks.token_selection import TokenSelection

#: what a plugin's task class must have: the Task protocol's class members (its instances' fields are its own)
TASK_MEMBERS = ("name", "metric", "loss", "evaluated_positions", "probe_algorithms", "dim_parameter", "sample",
                "baselines", "slices")
TASKS = WithPlugins({cls.name: cls for cls in (LinearRegression, Autoregressive, Boolean, GraphConnectivity, PCA,
                                               LinearClassification, LinearMap, GraphSearch, GraphQAConnectivity,
                                               TokenSelection, GuidedLinearClassification, KCMRegression,
                                               DeepReluTeacher, Mixture, ReLUNetwork, Sinusoid, SequenceClass,
                                               Memorisation, KeyAverage, SparseAveraging, Match)},
                    "tasks", lambda task: isinstance(task, type) and all(hasattr(task, m) for m in TASK_MEMBERS),
                    "a task class (the Task protocol: " + ", ".join(TASK_MEMBERS) + ")")


def make_task(name: str, /, **params) -> Task:
    """The task family ``name`` with ``params`` (unknown names raise ``ValueError``, also a parameter called name)."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {name!r}")
    try:
        return TASKS[name](**params)
    except TypeError as error:
        raise ValueError(f"bad parameter for task {name!r}: {error}") from None


__all__ = ["TASKS", "LinearRegression", "Task", "make_task"]
