"""Packaging: every third-party import of the package is a declared requirement, and ``python -m icl_sim`` is the
``icl-sim`` command."""
import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the import names whose distribution is named otherwise
DISTRIBUTIONS = {"yaml": "PyYAML"}


def _imported_modules() -> set[str]:
    """The top-level modules that the package's source (every package directory of setup.cfg) imports."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    folders = {line.split("=")[1].strip() for line in config["options"]["package_dir"].strip().splitlines()}
    found = set()
    for folder in folders:
        for path in (ROOT / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "icl_sim"}


def test_every_third_party_import_is_a_declared_requirement():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = {re.split(r"[<>=;\s]", line.strip())[0].lower()
                for line in config["options"]["install_requires"].splitlines() if line.strip()
                and not line.strip().startswith("#")}
    imported = {DISTRIBUTIONS.get(name, name).lower() for name in _imported_modules()}
    assert imported - declared == set()
    assert {"torch", "numpy", "matplotlib", "pyyaml"} <= imported


def test_python_m_icl_sim_is_the_command():
    by_module = subprocess.run([sys.executable, "-m", "icl_sim", "tasks"], capture_output=True, text=True, cwd=ROOT)
    by_script = subprocess.run(["icl-sim", "tasks"], capture_output=True, text=True, cwd=ROOT)
    assert by_module.returncode == 0 and by_module.stdout == by_script.stdout and "linear-regression" in by_module.stdout


def test_the_license_the_metadata_names_is_shipped():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["metadata"]["license"] == "MIT" and config["metadata"]["license_files"] == "LICENSE"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "icl_sim" / "py.typed").exists() and "py.typed" in config["options.package_data"]["icl_sim"]
