"""The worker daemon's search path: the installed pyspark before the zips Spark puts first."""

from __future__ import annotations

import zipfile
from pathlib import Path

from sparkcdc.spark.daemon import installed_first


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
