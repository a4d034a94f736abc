"""``--log-format json``: one JSON object per record, with the domain fields a call passes; the
same in a process the command line started (the Spark worker that runs the log reader)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from datetime import datetime

from sparkcdc.cli.json_stderr import as_json_line
from sparkcdc.core.logs import LOG_FORMAT_ENV, LOG_LEVEL_ENV, JsonFormatter, iso_utc

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("sparkcdc.sink", logging.INFO, __file__, 1, message, args, None)
    made.__dict__.update(extra)
    return made


def test_a_record_is_one_json_object_with_its_domain_fields() -> None:
    line = JsonFormatter().format(
        record("batch %d: %d changes", 7, 12, batch=7, table="shop.orders", position=None)
    )
    assert "\n" not in line
    value = json.loads(line)
    assert set(value) == {"ts", "level", "logger", "message", "batch", "table"}
    assert value["message"] == "batch 7: 12 changes"
    assert (value["level"], value["logger"]) == ("INFO", "sparkcdc.sink")
    assert value["batch"] == 7 and value["table"] == "shop.orders"  # a number stays a number
    assert ISO.match(value["ts"]), value["ts"]


def test_a_record_without_fields_has_the_four_keys_and_an_exception_its_traceback() -> None:
    plain = json.loads(JsonFormatter().format(record("connected to %s", "db:3306")))
    assert set(plain) == {"ts", "level", "logger", "message"}
    try:
        raise ValueError("bad value")
    except ValueError:
        failed = record("it failed")
        failed.exc_info = sys.exc_info()
    value = json.loads(JsonFormatter().format(failed))
    assert "ValueError: bad value" in value["error"] and value["message"] == "it failed"


def test_iso_utc_is_utc_with_milliseconds() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(1714557600.1234) == "2024-05-01T10:00:00.123Z"
    assert iso_utc(59.9996) == "1970-01-01T00:01:00.000Z"  # rounding carries into the second
    assert datetime.fromisoformat(iso_utc(1714557600.5)).timestamp() == 1714557600.5


def test_a_started_process_logs_json_when_the_environment_says_so() -> None:
    code = (
        "import logging\n"
        "from sparkcdc.core.logs import setup_child_logging\n"
        "setup_child_logging()\n"
        "log = logging.getLogger('sparkcdc.mysql')\n"
        "log.debug('not shown')\n"
        "log.info('connected, streaming from %s', 'f.000001:4', extra={'position': 'f.000001:4'})\n"
    )
    env = {**os.environ, LOG_LEVEL_ENV: "INFO", LOG_FORMAT_ENV: "json"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    value = json.loads(line)
    assert value["message"] == "connected, streaming from f.000001:4"
    assert value["position"] == "f.000001:4" and value["logger"] == "sparkcdc.mysql"
    env[LOG_FORMAT_ENV] = "text"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert re.fullmatch(r"\d\d:\d\d:\d\d connected, streaming from f\.000001:4\n", done.stderr)


def test_a_line_that_is_no_json_object_is_made_one() -> None:
    assert as_json_line(b'{"level": "INFO", "message": "kept"}\n') == (
        b'{"level": "INFO", "message": "kept"}\n'
    )
    assert as_json_line(b"  \n") == b""
    for raw in (b"WARNING: Using incubator modules: jdk.incubator.vector\n", b"{not json", b"[1]"):
        value = json.loads(as_json_line(raw))
        assert value["message"] == raw.decode().rstrip("\n") and value["logger"] == "stderr"
        assert value["level"] == "WARNING" and ISO.match(value["ts"])


def test_a_json_run_makes_the_stderr_of_the_processes_it_starts_json() -> None:
    code = (
        "import subprocess, sys\n"
        "from sparkcdc.cli.json_stderr import JsonStderr\n"
        "guard = JsonStderr()\n"
        "subprocess.run(['sh', '-c', 'echo a JVM says this >&2; echo \\'{\"a\": 1}\\' >&2'])\n"
        "print('and this process', file=sys.stderr)\n"
        "guard.close()\n"
        "print('after close', file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    *copied, last = done.stderr.splitlines()
    assert [json.loads(line).get("message") for line in copied] == [
        "a JVM says this",
        None,
        "and this process",
    ]
    assert json.loads(copied[1]) == {"a": 1} and last == "after close"  # stderr is back


def test_counted_says_one_table_and_many_tables() -> None:
    from sparkcdc.core.logs import counted

    assert [counted(n, "table") for n in (0, 1, 2, 12345)] == [
        "0 tables", "1 table", "2 tables", "12,345 tables",
    ]  # fmt: skip
