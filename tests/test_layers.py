"""Imports run one way, down the layers of ARCHITECTURE.md, and close no cycle.

The graph is built from the source (module-level and function-level imports alike), so an
import hidden inside a function to dodge a cycle is caught too.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the package's folders and the import names they are installed under (setup.cfg, package_dir)
FOLDERS = {"icl_sim": "icl_sim", "tasks": "icl_sim.tasks", "theory": "icl_sim.theory",
           "paper_repro": "icl_sim.paper_repro"}
#: bottom to top; a module belongs to the layer of its longest listed prefix
LAYERS = [
    ("core", ["icl_sim.prompt", "icl_sim.predictor", "icl_sim.seeding", "icl_sim.validation", "icl_sim.atomic",
              "icl_sim.params", "icl_sim.config", "icl_sim.checks", "icl_sim.convergence", "icl_sim.memory",
              "icl_sim.tensor_validation", "icl_sim.threads", "icl_sim.failures", "icl_sim.executors",
              "icl_sim.mapping_files", "icl_sim.progress", "icl_sim.optimizers", "icl_sim.locks",
              "icl_sim.output_dirs", "icl_sim.provenance", "icl_sim.plugins", "icl_sim.log_sinks"]),
    ("theory", ["icl_sim.theory"]),
    ("tasks", ["icl_sim.tasks"]),
    ("models, training", ["icl_sim.models", "icl_sim.training", "icl_sim.run_io", "icl_sim.ensemble",
                          "icl_sim.distributed"]),
    ("probing, evaluation, plots", ["icl_sim.evaluation", "icl_sim.probing", "icl_sim.probe_metrics",
                                    "icl_sim.latent_probes", "icl_sim.weight_comparison", "icl_sim.plots",
                                    "icl_sim.reports", "icl_sim.optimisation_diagnostics",
                                    "icl_sim.implicit_updates"]),
    ("claims and reproductions", ["icl_sim.claims", "icl_sim.paper_repro", "icl_sim.sweep", "icl_sim.catalogue"]),
    ("cli", ["icl_sim.cli", "icl_sim.__main__"]),
]
#: the package's own ``__init__`` re-exports from any layer: it sits on top
FACADE = "icl_sim"


def package_modules() -> dict[str, Path]:
    """Every module of the package by its import name."""
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [part for part in path.relative_to(ROOT / folder).with_suffix("").parts if part != "__init__"]
            modules[".".join([package, *parts])] = path
    return modules


def imported_names(source: str, module: str, is_package: bool) -> set[str]:
    """The ``icl_sim`` names that ``source`` imports anywhere (``from X import Y`` gives X and X.Y)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join(anchor + ([base] if base else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name.split(".")[0] == "icl_sim"}


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    modules = package_modules()
    return {module: {name for name in imported_names(path.read_text(), module, path.name == "__init__.py")
                     if name in modules and name != module}
            for module, path in modules.items()}


def layer_of(module: str) -> int:
    if module == FACADE:
        return len(LAYERS)
    matches = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    if not matches:
        raise ValueError(f"module {module} is in no layer: add it to LAYERS")
    return max(matches)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer into a higher one."""
    return sorted(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                  for module, targets in graph.items() for target in targets
                  if target != FACADE and layer_of(target) > layer_of(module))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    for module in package_modules():
        layer_of(module)


def test_imports_run_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_checks_catch_a_violating_import():
    graph = import_graph()
    assert "icl_sim.tasks.linear_regression" not in graph["icl_sim.theory.baselines"]
    graph["icl_sim.theory.baselines"] = graph["icl_sim.theory.baselines"] | {"icl_sim.tasks.linear_regression"}
    assert upward_imports(graph) == ["icl_sim.theory.baselines (theory) imports icl_sim.tasks.linear_regression "
                                     "(tasks)"]
    graph = import_graph()
    graph["icl_sim.theory.prefix"] = graph["icl_sim.theory.prefix"] | {"icl_sim.theory.baselines"}
    assert cycles(graph) == [["icl_sim.theory.baselines", "icl_sim.theory.prefix"]]


def test_function_level_and_relative_imports_are_seen():
    source = "def f():\n    from icl_sim.tasks import make_task\n    from .prefix import as_float64\n"
    assert imported_names(source, "icl_sim.theory.baselines", False) == {
        "icl_sim.tasks", "icl_sim.tasks.make_task", "icl_sim.theory.prefix", "icl_sim.theory.prefix.as_float64"}
    assert imported_names("from . import base\n", "icl_sim.claims", True) == {"icl_sim.claims",
                                                                            "icl_sim.claims.base"}


@pytest.mark.parametrize("folder", ["tasks", "theory"])
def test_no_function_level_package_imports_in_the_lower_layers(folder):
    """Tasks import their baselines at module top; theory imports nothing lazily."""
    lazy = []
    for path in (ROOT / folder).rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lazy += [f"{path.name}:{node.lineno}" for node in ast.walk(function) if isinstance(node, ast.ImportFrom)
                         and (node.level or (node.module or "").startswith("icl_sim"))]
    assert lazy == []
