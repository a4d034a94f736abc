"""The source's password never shows: a MariaDB user logs in with a distinctive password (from
the environment, as the README writes it), and every output a user or an operator sees is
searched for it: ``check``, ``run`` with a wrong password, a run that streams and then fails
mid-stream, ``status`` (text and ``--json``), ``/metrics``, the pages of Spark's web UI (on by
default: ``status`` names its address, its Structured Streaming tab shows the stream by the
pipeline's name, on the next port when another process holds 4040), the JSON log format, the
command lines of every process on the machine (``ps`` shows them to any user: Spark's JVM and
its Python workers among them), and every file the pipeline writes (the checkpoint with its
status file, the lake) and Spark's event log. The run's sealing key
(:mod:`sparkcdc.config.secret`) is searched for as well."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.config.secret import KEY_ENV
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB, free_port

pytestmark = [pytest.mark.mariadb, pytest.mark.spark]

PASSWORD = "Sup3r-s3cret-PW-7731"
KEY = base64.b64encode(b"sparkcdc test key, 32 bytes long").decode()
ENV = "SPARKCDC_TEST_PASSWORD"


def pipeline_file(tmp: Path, server: ThrowawayMariaDB, db: str, metrics: int) -> Path:
    """The pipeline, its password a reference to the environment, Spark's event log on (as
    plain text, to be searched)."""
    beat = f"SELECT COUNT(*) FROM {db}.beat"
    (tmp / "events").mkdir()
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {server.port}, user: cdc_secret,\n"
        f"         password: '${{{ENV}}}', tables: ['{db}\\.t'], startup: initial,\n"
        f"         heartbeat: {{interval: 500ms, action_query: '{beat}'}}}}\n"
        f"sink: {{type: delta, path: {tmp / 'lake'}}}\n"
        f"pipeline:\n"
        f"  checkpoint: {tmp / 'checkpoint'}\n"
        f"  trigger: 500ms\n"
        f"  metrics: {{port: {metrics}}}\n"
        f"  spark: {{conf: {{spark.eventLog.enabled: 'true', spark.eventLog.compress: 'false',\n"
        f"                  spark.eventLog.dir: '{tmp / 'events'}'}}}}\n"
    )
    return cfg


def sparkcdc(*args: str, password: str = PASSWORD) -> subprocess.Popen[str]:
    env = {**os.environ, ENV: password, KEY_ENV: KEY}
    return subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def finished(*args: str, password: str = PASSWORD) -> tuple[int, str]:
    """Run a command to its end: its exit status and everything it printed."""
    proc = sparkcdc(*args, password=password)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out + err


def files_holding(root: Path, *texts: str) -> list[str]:
    """The files under ``root`` that hold any of ``texts``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and any(t.encode() in path.read_bytes() for t in texts):
            found.append(str(path))
    return found


UI_PAGES = ("jobs/", "StreamingQuery/", "SQL/", "environment/", "executors/")


def command_lines() -> str:
    """The command line of every process on the machine, one per line (what ``ps`` shows)."""
    lines = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # gone meanwhile
            lines.append(path.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return "\n".join(lines)


def ui_pages(address: str) -> dict[str, str]:
    """The Spark UI's pages a user looks at while the stream runs (each answered 200)."""
    pages = {}
    for page in UI_PAGES:
        with urllib.request.urlopen(f"{address}/{page}", timeout=10) as answer:
            assert answer.status == 200, (page, answer.status)
            pages[f"spark ui {page}"] = answer.read().decode()
    return pages


@contextlib.contextmanager
def port_4040_taken() -> Iterator[None]:
    """Port 4040, Spark UI's first choice, held by another process (if none holds it yet)."""
    with socket.socket() as held:
        with contextlib.suppress(OSError):
            held.bind(("", 4040))
            held.listen()
        yield


def test_the_password_appears_in_no_output_file_or_event_log(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    db = "secrets"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    mariadb.execute(
        f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20))",
        f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')",
        f"CREATE TABLE {db}.beat (id INT PRIMARY KEY)",
    )
    mariadb.create_cdc_user("cdc_secret", PASSWORD)
    port = free_port()
    cfg = pipeline_file(tmp_path, mariadb, db, port)
    outputs: dict[str, str] = {}

    code, outputs["check"] = finished("check", str(cfg))
    assert code == 0 and f"{db}.t" in outputs["check"], outputs["check"]
    code, outputs["check json"] = finished("--log-format", "json", "check", str(cfg))
    assert code == 0, outputs["check json"]
    wrong = PASSWORD + "-wrong"  # a leak of it shows the password too
    for form in ("text", "json"):
        code, said = finished("--log-format", form, "run", str(cfg), password=wrong)
        assert code == 2 and "refused user 'cdc_secret'" in said, said
        outputs[f"wrong password {form}"] = said

    with port_4040_taken():
        run = sparkcdc("--log-format", "json", "run", str(cfg))
        out, err = watch_the_run(run, mariadb, db, cfg, outputs, port)
    outputs["failed run"] = out + err
    assert run.returncode == 2, outputs["failed run"]
    assert "source.heartbeat.action_query failed" in err, err
    said = [json.loads(line)["message"] for line in err.splitlines() if "Spark UI" in line]
    assert said == [f"Spark UI at {outputs['spark ui']}"], said

    leaked = [name for name, text in outputs.items() if PASSWORD in text or KEY in text]
    assert not leaked, {name: outputs[name] for name in leaked}
    events = b"".join(p.read_bytes() for p in (tmp_path / "events").rglob("events_*"))
    assert b"SparkListenerApplicationStart" in events and b"SparkListenerJobEnd" in events
    assert f'"spark.executorEnv.{KEY_ENV}":"*********(redacted)"'.encode() in events
    assert files_holding(tmp_path, PASSWORD, KEY) == []  # checkpoint, lake, event log, file


def watch_the_run(
    run: subprocess.Popen[str],
    mariadb: ThrowawayMariaDB,
    db: str,
    cfg: Path,
    outputs: dict[str, str],
    port: int,
) -> tuple[str, str]:
    """While the run streams: ``status``, ``/metrics`` and Spark's UI into ``outputs``; then
    the heartbeat's table dropped, which fails the run: its stdout and stderr."""
    tmp_path = cfg.parent
    try:
        replica, deadline = tmp_path / "lake" / db / "t", time.monotonic() + 300
        while not (DeltaTable.is_deltatable(str(replica)) and DeltaTable(str(replica)).count()):
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.2)
        mariadb.execute(f"INSERT INTO {db}.t VALUES (3, 'c')")
        code, outputs["status"] = finished("status", str(cfg))
        assert code == 0 and "running" in outputs["status"], outputs["status"]
        code, outputs["status json"] = finished("status", str(cfg), "--json")
        assert code == 0, outputs["status json"]
        address = json.loads(outputs["status json"])["spark_ui"]
        assert address.startswith("http://") and not address.endswith(":4040"), address
        assert f"\nspark ui     {address}\n" in outputs["status"], outputs["status"]
        outputs["spark ui"] = address
        outputs["command lines"] = command_lines()
        assert "org.apache.spark.deploy.SparkSubmit" in outputs["command lines"]  # the JVM's
        outputs.update(ui_pages(address))
        assert "sparkcdc-checkpoint" in outputs["spark ui StreamingQuery/"]  # the query's name
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            outputs["metrics"] = page.read().decode()
        assert "sparkcdc_batches" in outputs["metrics"]
        mariadb.execute(f"DROP TABLE {db}.beat")  # the next heartbeat fails: the run stops
        return run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
