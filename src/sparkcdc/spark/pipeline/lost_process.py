"""A Python process of Spark's that ended under a running query, told from the query's failure.

Spark's JVM talks to each of its Python processes over a socket. One killed (``kill -9``, the
kernel's out-of-memory killer) or crashed leaves the socket at its end, and the query fails with
Spark's report of that, which names no cause a user could act on:

- a task worker: ``Python worker exited unexpectedly (crashed)``, once the task's tries ran out
  (a local master tries a task several times: :func:`.session.with_task_retries`);
- the driver-side process that runs the stream's source, the log reader: an end of file
  (``EOFException``) met in ``PythonStreamingSourceRunner``; Spark does not start it again.

:func:`lost_process` reads the report (the message and the JVM's stack traces pyspark keeps
beside it) and gives the sentence naming the process and the way out: the pipeline started
again resumes from its checkpoint, each change written once, as after a crash.
"""

from __future__ import annotations

import re

from sparkcdc.core.errors import SparkCDCError
from sparkcdc.core.logs import counted

WORKER_CRASHED = "Python worker exited unexpectedly"
SOURCE_RUNNER = "PythonStreamingSourceRunner"
SOCKET_ENDED = ("java.io.EOFException", "java.net.SocketException")
_TRIES = re.compile(r"failed (\d+) times")
_CAUSES = 8  # how deep the chain of causes is followed

WAY_OUT = (
    "the kernel's log (dmesg) says whether its out-of-memory killer ended it; start the pipeline "
    "again: it resumes from its checkpoint, each change written once."
)


def spark_report(exc: BaseException) -> str:
    """``exc``'s text with the JVM stack traces pyspark keeps beside it, and its causes'."""
    parts: list[str] = []
    current: BaseException | None = exc
    for _ in range(_CAUSES):
        if current is None:
            break
        parts += [str(current), str(getattr(current, "_stackTrace", "") or "")]
        cause = getattr(current, "_cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return "\n".join(parts)


def lost_process(*failures: BaseException | None) -> SparkCDCError | None:
    """The sentence for a query that failed because a Python process of Spark's ended
    (``failures``: the query's exception, the sink's), else None."""
    text = "\n".join(spark_report(f) for f in failures if f is not None)
    if SOURCE_RUNNER in text and any(ended in text for ended in SOCKET_ENDED):
        return SparkCDCError(
            "the stream's source process (the Python process Spark runs on the driver for the "
            f"log reader) ended unexpectedly, killed or crashed; {WAY_OUT}"
        )
    if WORKER_CRASHED in text:
        tries = _TRIES.search(text)
        times = f" {counted(int(tries.group(1)), 'time')}" if tries else ""
        return SparkCDCError(
            f"a Spark task failed{times} (spark.task.maxFailures), the last time because the "
            f"Python worker running it ended unexpectedly, killed or crashed; {WAY_OUT}"
        )
    return None
