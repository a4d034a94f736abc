"""Driving ``sparkcdc`` as a user does: a pipeline file and the command line in a subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Protocol

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres


class Server(Protocol):
    """What a pipeline file needs of a server: its loopback port."""

    @property
    def port(self) -> int: ...


def write_config(
    tmp: Path,
    server: Server,
    tables: str | list[str],
    *,
    startup: str = "earliest",
    trigger: str = "500ms",
    max_bytes: str = "8MB",
    user: str = "root",
    password: str = "",
    extra_source: str = "",
    kind: str = "mysql",
    extra_sink: str = "",
    lake: str | None = None,
    extra_pipeline: str = "",
) -> Path:
    """A pipeline file for ``tables`` (regular expressions over ``db.table``, or one) of a
    ``kind`` source with its lake (unless ``lake`` names one) and checkpoint under ``tmp``
    (``extra_*``: more keys, ``, key: value``)."""
    patterns = ", ".join(json.dumps(t) for t in ([tables] if isinstance(tables, str) else tables))
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: {kind}, host: 127.0.0.1, port: {server.port}, user: {user}, "
        f"password: '{password}', tables: [{patterns}], "
        f"startup: '{startup}'{extra_source}}}\n"
        f"sink: {{type: delta, path: '{lake or tmp / 'lake'}'{extra_sink}}}\n"
        f"pipeline: {{checkpoint: {tmp / 'checkpoint'}, trigger: {trigger}, "
        f"store: {{max_bytes: {max_bytes}}}{extra_pipeline}}}\n"
    )
    return cfg


def write_pg_config(
    tmp: Path,
    server: ThrowawayPostgres,
    database: str,
    tables: str,
    *,
    startup: str,
    extra_source: str = "",
    extra_sink: str = "",
) -> Path:
    """:func:`write_config` for ``tables`` of the PostgreSQL database ``database`` on
    ``server``, logging in as its user."""
    return write_config(
        tmp,
        server,
        tables,
        user=server.user,
        password=server.password,
        startup=startup,
        kind="postgres",
        extra_source=f", database: {database}{extra_source}",
        extra_sink=extra_sink,
    )


def log_end(server: ThrowawayMariaDB) -> str:
    """``position:<file>:<pos>`` of the binlog's end now: a pipeline starting there reads only
    what the test writes afterwards, not the whole shared server's history."""
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return f"position:{file}:{pos}"


def purge_binlogs_to(server: ThrowawayMariaDB, file: str, timeout: float = 30.0) -> None:
    """``PURGE BINARY LOGS TO file``, asked again until the server has done it. It keeps a file
    until its binlog checkpoint has passed it, which waits for InnoDB to flush its log (once a
    second at ``innodb_flush_log_at_trx_commit=2``, or never on an idle server): so the log is
    flushed (``FLUSH ENGINE LOGS``) between tries. It also keeps a file a binlog dump thread
    reads, and a dump thread whose connection was cut lives on until the server notices: after
    a few tries such threads are ended."""
    began = time.monotonic()
    said: list[tuple[object, ...]] = []
    while server.query("SHOW BINARY LOGS")[0][0] != file:
        waited = time.monotonic() - began
        assert waited < timeout, f"the server kept its binlogs before {file}: {said}"
        if waited > 2.0:
            for row in server.query("SHOW PROCESSLIST"):
                if str(row[4]).startswith("Binlog Dump"):
                    with contextlib.suppress(Exception):  # it may have ended meanwhile
                        server.execute(f"KILL {int(row[0])}")
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            for sql in ("FLUSH ENGINE LOGS", f"PURGE BINARY LOGS TO '{file}'", "SHOW WARNINGS"):
                cur.execute(sql)
            said = list(cur.fetchall()) or said  # why a file was kept, if the server says
        time.sleep(0.2)


def in_process(*argv: str) -> tuple[int, str, str]:
    """The command line ``sparkcdc *argv`` run in this process (its entry point without an
    interpreter's start-up, for refusals that come before Spark starts); the exit status,
    stdout and stderr. The environment it sets for processes it would start is put back."""
    from sparkcdc.cli.main import run as command

    out, err, kept = io.StringIO(), io.StringIO(), dict(os.environ)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = command(list(argv))
    finally:
        os.environ.clear()
        os.environ.update(kept)
    return code, out.getvalue(), err.getvalue()


def start(cfg: Path, *extra: str, command: str = "run") -> subprocess.Popen[bytes]:
    """``sparkcdc run`` in its own process group (so a crash can take all of it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", command, str(cfg), "--quiet", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def run(cfg: Path, *extra: str, command: str = "run", timeout: float = 600) -> tuple[int, str]:
    """Run to completion; returns the exit code and everything printed."""
    proc = start(cfg, *extra, command=command)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode(errors="replace")


def available_now(cfg: Path, timeout: float = 600) -> str:
    code, out = run(cfg, "--available-now", timeout=timeout)
    assert code == 0, out
    return out


def crash(proc: subprocess.Popen[bytes]) -> None:
    """kill -9 of the whole pipeline: driver, JVM and Python workers, as a machine crash."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
