"""The built wheel: every module of the package at its import path (setup.cfg maps tasks/, theory/ and paper_repro/
into icl_sim), its data files, and a working command from the wheel alone, not from this checkout."""
import configparser
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_the_package_and_runs_without_the_checkout(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(ROOT),
                    "-w", str(tmp_path)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("icl_sim-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    for line in config["options"]["package_dir"].strip().splitlines():
        package, folder = (part.strip() for part in line.split("="))
        expected = {f"{package.replace('.', '/')}/{path.name}" for path in (ROOT / folder).glob("*.py")}
        assert expected <= names, sorted(expected - names)
    assert {"icl_sim/catalogue.json", "icl_sim/py.typed"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names)
    zipfile.ZipFile(wheel).extractall(tmp_path / "installed")
    # python -S: no .pth files, so this checkout's editable install is not on the path; the dependencies are
    script = (f"import sys; sys.path[:0] = [{str(tmp_path / 'installed')!r}, {sysconfig.get_paths()['purelib']!r}]\n"
              "import icl_sim.tasks; assert icl_sim.tasks.__file__.startswith(sys.path[0]), icl_sim.tasks.__file__\n"
              "from icl_sim.cli import main; sys.argv = ['icl-sim', 'repro', 'list']; main()\n")
    result = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "garg-2022" in result.stdout and "von-oswald-2023" in result.stdout
