"""The Spark Python processes' search path: the installed pyspark before the zips Spark puts
first (``worker_site/sitecustomize.py``, put on the path by
:mod:`sparkcdc.spark.runtime.pythonpath`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pyspark

from sparkcdc.spark.runtime.pythonpath import SITE, worker_pythonpath

_spec = importlib.util.spec_from_file_location("sitepath_under_test", SITE / "sitecustomize.py")
assert _spec is not None and _spec.loader is not None
_site_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_site_module)
installed_first = _site_module.installed_first


def _site(root: Path) -> tuple[str, str, str]:
    """A site folder with a pyspark package holding its own pyspark.zip and py4j zip."""
    lib = root / "site" / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (root / "site" / "pyspark" / "__init__.py").write_text("")
    zips = []
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip"):
        with zipfile.ZipFile(lib / name, "w") as z:
            z.writestr("README", "")
        zips.append(str(lib / name))
    return str(root / "site"), zips[0], zips[1]


def test_the_installed_packages_zips_move_behind_it(tmp_path: Path) -> None:
    site, spark_zip, py4j_zip = _site(tmp_path)
    stdlib_zip = str(tmp_path / "python311.zip")  # on every path, and not pyspark's
    path = ["", spark_zip, py4j_zip, stdlib_zip, site]
    assert installed_first(path) == ["", stdlib_zip, site, spark_zip, py4j_zip]


def test_a_path_without_an_installed_pyspark_is_left_as_it_is(tmp_path: Path) -> None:
    _, spark_zip, py4j_zip = _site(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    path = [spark_zip, py4j_zip, str(other)]
    assert installed_first(path) == path  # pyspark comes from the zip alone


def test_zips_of_another_spark_installation_stay_first(tmp_path: Path) -> None:
    site, _, _ = _site(tmp_path / "venv")
    _, spark_zip, py4j_zip = _site(tmp_path / "spark-home")
    path = [spark_zip, py4j_zip, site]
    assert installed_first(path) == path  # the zip may be another version than the package


def test_the_folder_goes_first_on_the_path_once() -> None:
    assert worker_pythonpath(None) == str(SITE)
    twice = worker_pythonpath(worker_pythonpath(os.pathsep.join(["/a", "/b"])))
    assert twice.split(os.pathsep) == [str(SITE), "/a", "/b"]


def _python(pythonpath: list[str], code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_process_started_with_spark_s_path_imports_the_installed_pyspark() -> None:
    """As a Spark worker starts: pyspark.zip first, this folder after it."""
    lib = Path(pyspark.__file__).parent / "python" / "lib"
    zips = sorted(str(p) for p in lib.glob("*.zip"))
    assert any(z.endswith("pyspark.zip") for z in zips)
    code = "import pyspark.sql.types as t; print(t.__file__)"
    assert ".zip" in _python(zips, code)  # what Spark alone makes of it
    assert _python([*zips, str(SITE)], code) == str(
        Path(pyspark.__file__).parent / "sql" / "types.py"
    )


def test_the_sitecustomize_it_shadows_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE = 1\n")
    code = "import builtins; print(getattr(builtins, 'OTHER_SITE', 0))"
    assert _python([str(SITE), str(tmp_path)], code) == "1"


class _FrozenEnviron(dict[str, str]):
    """``os.environ`` once set: any change fails the test."""

    def __setitem__(self, key: str, value: str) -> None:
        raise AssertionError(f"{key} set again while threads may read the environment")

    def __delitem__(self, key: str) -> None:
        raise AssertionError(f"{key} removed while threads may read the environment")


def test_the_session_environment_once_set_is_not_set_again(monkeypatch: Any) -> None:
    """The run sets Spark's environment before opening tables in a thread; starting the session
    then must not call ``setenv`` (beside a thread's C or Rust code reading the environment, it
    crashed the process)."""
    from sparkcdc.config.secret import KEY_ENV
    from sparkcdc.spark.pipeline.session import session_environment

    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", KEY_ENV):
        monkeypatch.delenv(name, raising=False)
    session_environment()
    assert os.environ[KEY_ENV] and str(SITE) in os.environ["PYTHONPATH"]
    real = os.environ
    setattr(os, "environ", _FrozenEnviron(real))  # noqa: B010 - read by the code under test
    try:
        session_environment()
    finally:
        setattr(os, "environ", real)  # noqa: B010


def test_the_session_names_no_python_command_for_spark_to_scan_data_sources(
    monkeypatch: Any,
) -> None:
    """Spark's JVM runs a Python process of its own to scan for ``pyspark_*`` data sources only
    when ``PYSPARK_DRIVER_PYTHON`` names a command (``command -v``); a value of the user's
    stays."""
    from sparkcdc.spark.pipeline.session import NO_DATA_SOURCE_SCAN, session_environment

    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    session_environment()
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == NO_DATA_SOURCE_SCAN
    found = subprocess.run(["sh", "-c", f"command -v {NO_DATA_SOURCE_SCAN}"], check=False)
    assert found.returncode != 0
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    session_environment()
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
