"""The wheel as a user installs it beside an existing Spark: built from this tree, installed
without its dependencies and without an index into a venv of its own, which sees this
interpreter's packages the way it would see a Spark environment's; then its ``sparkcdc`` command
run from the venv's ``bin``."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
import venv
import zipfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[2]
EXIT_CONFIG = 78
PIP = (sys.executable, "-m", "pip")
OFFLINE = ("--no-deps", "--no-index", "-q")  # this package alone, nothing downloaded


def shell_env() -> dict[str, str]:
    """The environment without our PYTHONPATH: the commands see what the venv holds."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@dataclass(frozen=True)
class Installed:
    """The wheel built from this tree, and the venv it is installed into."""

    wheel: Path
    venv: Path

    def sparkcdc(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The venv's ``sparkcdc`` command, run as a shell would (no PYTHONPATH of ours)."""
        cmd = [str(self.venv / "bin" / "sparkcdc"), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=shell_env())


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def run(*cmd: str | Path) -> str:
    """``cmd``'s output; it must succeed."""
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=120, env=shell_env()
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(tmp: Path) -> Path:
    """The wheel of a copy of this tree (the build writes its own files beside the sources),
    built by this interpreter's pip and setuptools, offline."""
    have = version("setuptools")
    assert int(have.split(".")[0]) >= 77, (
        f"setuptools {have} cannot build pyproject.toml's license expression (77 or later can); "
        "scripts/setup.sh installs the version pyproject.toml pins"
    )
    tree = tmp / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    shutil.copytree(ROOT / "src", tree / "src", ignore=ignore)
    out = tmp / "dist"
    run(*PIP, "wheel", tree, "--no-build-isolation", *OFFLINE, "-w", out)
    (wheel,) = out.glob("sparkcdc-*.whl")
    return wheel


def install(wheel: Path, target: Path) -> None:
    """A venv without this interpreter's packages on its path, the wheel installed into it by
    this interpreter's pip; a ``.pth`` file then adds this interpreter's site folders (and what
    their own ``.pth`` files add) after the venv's own, as a Spark environment's would be."""
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    run(*PIP, "--python", python, "install", *OFFLINE, wheel)
    own = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    lines = [f"import site; site.addsitedir({folder!r})\n" for folder in site.getsitepackages()]
    (Path(own) / "beside-spark.pth").write_text("".join(lines))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp)
    install(wheel, tmp / "venv")
    return Installed(wheel, tmp / "venv")


def test_the_wheel_holds_the_typing_marker_and_the_licence(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "sparkcdc/py.typed" in names
    dist_info = f"sparkcdc-{project_version()}.dist-info"
    licence = f"{dist_info}/licenses/LICENSE"
    assert licence in names, names
    with zipfile.ZipFile(installed.wheel) as whl:
        assert whl.read(licence) == (ROOT / "LICENSE").read_bytes()
        metadata = whl.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "Requires-Dist: pyspark<5,>=4.2.0" in metadata.splitlines()


def test_the_venv_runs_the_wheels_package(installed: Installed) -> None:
    """Not this tree's sources, nor another install of sparkcdc the interpreter sees."""
    python = installed.venv / "bin" / "python"
    where = run(python, "-c", "import sparkcdc, pyspark; print(sparkcdc.__file__)").strip()
    assert Path(where).is_relative_to(installed.venv), where


def test_version(installed: Installed) -> None:
    """The installed distribution's version: the venv holds no pyproject.toml to read it from."""
    done = installed.sparkcdc("--version")
    assert (done.returncode, done.stdout) == (0, f"sparkcdc {project_version()}\n"), done.stderr


def test_check_names_a_wrong_key(installed: Installed, tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        "source: {type: mysql, host: 127.0.0.1, user: cdc, tabels: ['shop\\\\..*']}\n"
        f"sink: {{type: delta, path: {tmp_path / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {tmp_path / 'cp'}}}\n"
    )
    done = installed.sparkcdc("check", str(cfg))
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert done.stderr.startswith("sparkcdc: source.tabels: is not a known key of source")
    assert done.stderr.count("\n") == 1 and done.stdout == ""
