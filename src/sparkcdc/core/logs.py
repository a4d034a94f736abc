"""How sparkcdc's processes log: short text lines, or one JSON object per line.

``sparkcdc --log-format json`` (or ``SPARKCDC_LOG_FORMAT=json`` in a process the command line
started, such as the Spark Python worker that runs the log reader) writes each record as::

    {"ts": "2025-05-01T10:00:00.123Z", "level": "INFO", "logger": "sparkcdc.sink",
     "message": "batch 7: 12 changes to shop.orders; ...", "batch": 7, "table": "shop.orders"}

A log call passes the domain fields with ``extra=``: ``table`` (``db.table``, or several joined
by ", "), ``position`` (the source's position as text) and ``batch`` (Spark's micro-batch id).
The text format leaves them out: they are in the message already.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import TextIO

LOG_LEVEL_ENV = "SPARKCDC_LOG_LEVEL"
LOG_FORMAT_ENV = "SPARKCDC_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
DOMAIN_FIELDS = ("table", "position", "batch")


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` as a sentence says them: ``1 table``, ``3 tables``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def iso_utc(seconds: float) -> str:
    """``seconds`` since the epoch as ISO-8601 UTC with milliseconds: ``…T10:00:00.123Z``."""
    whole = int(seconds)
    millis = int(round((seconds - whole) * 1000))
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``message``, the domain
    fields the call passed, and ``error`` (the traceback) when it logged an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": iso_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in DOMAIN_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def text_formatter() -> logging.Formatter:
    return logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S")


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``log_format`` (``text`` or ``json``; anything else is text)."""
    return JsonFormatter() if log_format == "json" else text_formatter()


def setup_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """The command line's logging: the root logger at ``level`` in ``log_format`` on stderr
    (nothing changes where a handler is set already, as with :func:`logging.basicConfig`);
    processes it starts afterwards log the same way (:func:`setup_child_logging`)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=level, handlers=[handler])
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its callback server chatters at INFO
    os.environ[LOG_LEVEL_ENV] = level
    os.environ[LOG_FORMAT_ENV] = log_format


def setup_child_logging(logger: str = "sparkcdc") -> None:
    """In a process the command line started (a Spark Python worker, where nothing set up
    logging): ``logger`` at the level and in the format the command line asked for, once."""
    level = os.environ.get(LOG_LEVEL_ENV)
    root = logging.getLogger(logger)
    if not level or root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(os.environ.get(LOG_FORMAT_ENV, "text")))
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
