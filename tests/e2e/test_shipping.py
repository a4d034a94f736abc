"""A Python of Spark's without sparkcdc: ``sparkcdc run`` stops with the sentence that says what
to ship, not a ``ModuleNotFoundError`` from Spark.

Spark's Python processes run ``PYSPARK_PYTHON``: here a virtual environment made in the test
that reaches pyspark and its dependencies but not sparkcdc, the driver (this interpreter, with
sparkcdc on its own path only) started without a ``PYTHONPATH`` its processes would inherit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import sparkcdc
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB

pytestmark = [pytest.mark.spark, pytest.mark.mariadb]

SRC = Path(sparkcdc.__file__).resolve().parents[1]
DRIVER = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from sparkcdc.cli.main import main; main()"
)
SENTENCE = "sparkcdc is not importable in the Python that Spark started for {where} ({python})"


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment that sees this one's packages (a ``.pth``) but not sparkcdc:
    a ``.pth`` inside a folder named by a ``.pth`` is not read, so an editable install stays
    out."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = "import pyspark, pyarrow, pandas\ntry:\n import sparkcdc\nexcept ImportError:\n pass\n"
    probe += "else:\n raise SystemExit('sparkcdc found')"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([python, "-c", probe], check=True, env=env)
    return python


def pipeline(tmp: Path, db: ThrowawayMariaDB, spark_conf: str = "") -> Path:
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {db.port}, user: root, password: '', "
        "tables: ['shipping\\.t'], startup: latest}\n"
        f"sink: {{type: delta, path: '{tmp / 'lake'}'}}\n"
        f"pipeline: {{checkpoint: {tmp / 'checkpoint'}, spark: {{master: 'local[2]', "
        f"conf: {{{spark_conf}}}}}}}\n"
    )
    return cfg


def run_with(cfg: Path, python: Path) -> tuple[int, str]:
    """``sparkcdc run --available-now`` whose Spark runs ``python``; exit status, output."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": sys.executable}
    argv = [sys.executable, "-c", DRIVER, str(SRC), "run", str(cfg), "--available-now", "--quiet"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def table(mariadb: ThrowawayMariaDB) -> ThrowawayMariaDB:
    mariadb.execute("CREATE DATABASE IF NOT EXISTS shipping")
    mariadb.execute("CREATE TABLE IF NOT EXISTS shipping.t (id INT PRIMARY KEY, v TEXT)")
    return mariadb


def said(out: str, where: str, python: Path) -> None:
    last = out.strip().splitlines()[-1]
    expected = SENTENCE.format(where=where, python=python)
    assert last.startswith(f"sparkcdc: {expected}: install sparkcdc in that Python"), out
    assert "spark.archives and PYSPARK_PYTHON (see docs/cluster.md)." in last, out
    assert "ModuleNotFoundError" not in out and "Traceback" not in out, out


def test_an_executor_without_sparkcdc(tmp_path: Path, table: ThrowawayMariaDB, bare_python: Path):
    code, out = run_with(pipeline(tmp_path, table), bare_python)
    assert code == 2, out
    said(out, "an executor", bare_python)


def test_py_files_miss_the_streams_source(
    tmp_path: Path, table: ThrowawayMariaDB, bare_python: Path
) -> None:
    """sparkcdc as a zip in ``spark.submit.pyFiles`` (``--py-files``): the planner and the
    executors import it from there, Spark's source process does not see it."""
    shipped = tmp_path / "sparkcdc.zip"
    with zipfile.ZipFile(shipped, "w") as zf:
        for path in (SRC / "sparkcdc").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(SRC))
    code, out = run_with(
        pipeline(tmp_path, table, f"spark.submit.pyFiles: '{shipped}'"), bare_python
    )
    assert code == 2, out
    said(out, "the stream's source", bare_python)
