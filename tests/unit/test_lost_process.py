"""A Python process of Spark's ended under the query: a local master tries the task again, and a
failure it leaves names the process and the way out (:mod:`sparkcdc.spark.pipeline.lost_process`,
:func:`sparkcdc.spark.pipeline.session.with_task_retries`)."""

from __future__ import annotations

import pytest

from sparkcdc.spark.pipeline.lost_process import lost_process
from sparkcdc.spark.pipeline.session import with_task_retries


class Captured(Exception):
    """pyspark's captured JVM exception, as far as the sentence reads it."""

    def __init__(self, desc: str, stack: str, cause: BaseException | None = None) -> None:
        super().__init__(desc)
        self._stackTrace = stack
        self._cause = cause


@pytest.mark.parametrize(
    ("master", "settings", "wanted"),
    [
        ("local[*]", {}, "local[*,4]"),
        ("local[2]", {}, "local[2,4]"),
        ("local", {}, "local[1,4]"),
        ("local[2]", {"spark.task.maxFailures": "2"}, "local[2,2]"),
        ("local[2,1]", {}, "local[2,1]"),  # its own count stands
        ("local[2]", {"spark.task.maxFailures": "many"}, "local[2]"),
        ("spark://host:7077", {}, "spark://host:7077"),
        ("local-cluster[2,1,1024]", {}, "local-cluster[2,1,1024]"),
    ],
)
def test_a_local_master_tries_a_failed_task_again(
    master: str, settings: dict[str, str], wanted: str
) -> None:
    assert with_task_retries(master, settings) == wanted


def test_a_killed_source_process_is_named_with_the_way_out() -> None:
    failed = Captured(
        "[STREAM_FAILED] Query [id = 1] terminated with exception:  SQLSTATE: XXKST",
        "java.io.EOFException\n\tat java.base/java.io.DataInputStream.readInt(…)\n\tat org.apache."
        "spark.sql.execution.python.streaming.PythonStreamingSourceRunner.latestOffset(…)",
    )
    sentence = str(lost_process(failed))
    assert sentence.startswith("the stream's source process")
    assert "ended unexpectedly, killed or crashed" in sentence
    assert "start the pipeline again: it resumes from its checkpoint" in sentence


def test_a_task_whose_worker_died_on_every_try_is_named() -> None:
    job = Captured(
        "An error occurred while calling o93.collectAsArrowToPython.",
        "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 2.0 "
        "failed 4 times, most recent failure: Lost task 0.3 in stage 2.0 (TID 7): org.apache."
        "spark.SparkException: Python worker exited unexpectedly (crashed).\nCaused by: java.io."
        "EOFException",
    )
    query = Captured("[STREAM_FAILED] … [FOREACH_BATCH_USER_FUNCTION_ERROR] …", "", job)
    sentence = str(lost_process(query, None))
    assert sentence.startswith("a Spark task failed 4 times (spark.task.maxFailures)")
    assert "the Python worker running it ended unexpectedly" in sentence
    assert str(lost_process(None, job)) == sentence  # the sink's own error tells the same


def test_other_failures_are_left_to_their_own_sentence() -> None:
    assert lost_process(Captured("[STREAM_FAILED] division by zero", "ArithmeticException")) is None
    assert lost_process(ValueError("EOFException in a message")) is None
