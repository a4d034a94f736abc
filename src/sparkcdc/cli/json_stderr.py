"""``sparkcdc run --log-format json``: every line on stderr a JSON object, Spark's too.

Spark's JVM writes a few lines of its own to stderr as it starts (the JVM's notice of the
incubator modules Spark adds, for one), and Spark's Python workers write through it. While a
run logs JSON, stderr (file descriptor 2, which every process it starts inherits) is a pipe: a
thread copies each line to the real stderr, a JSON object as it is, any other line made one::

    {"ts": "…", "level": "WARNING", "logger": "stderr", "message": "WARNING: Using incubator…"}
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from sparkcdc.core.logs import iso_utc

OTHER_LOGGER = "stderr"


def as_json_line(raw: bytes) -> bytes:
    """``raw`` (one line, with or without its newline) as one JSON line; empty for a blank."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if not text.strip():
        return b""
    if text.startswith("{"):
        try:
            if isinstance(json.loads(text), dict):
                return text.encode() + b"\n"
        except ValueError:
            pass
    line = {"ts": iso_utc(time.time()), "level": "WARNING", "logger": OTHER_LOGGER,
            "message": text}  # fmt: skip
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


class JsonStderr:
    """Stderr through the copying thread from :meth:`start` until :meth:`close`."""

    def __init__(self) -> None:
        sys.stderr.flush()
        self._stderr = os.dup(2)  # the real stderr
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self._thread = threading.Thread(
            target=self._copy, args=(read,), name="sparkcdc-stderr", daemon=True
        )
        self._thread.start()

    def _copy(self, read: int) -> None:
        with os.fdopen(read, "rb") as pipe:
            for raw in pipe:
                line = as_json_line(raw)
                if line:
                    os.write(self._stderr, line)

    def close(self, wait: float = 0.5) -> None:
        """The real stderr back; lines written so far are copied (processes this one started
        keep the pipe open until they end, so this waits ``wait`` s at most)."""
        sys.stderr.flush()
        os.dup2(self._stderr, 2)
        self._thread.join(wait)
