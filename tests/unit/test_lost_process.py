"""A Python process of Spark's ended under the query: a local master tries the task again, and a
failure it leaves names the process and the way out (:mod:`sparkcdc.spark.pipeline.lost_process`,
:func:`sparkcdc.spark.pipeline.session.with_task_retries`)."""

from __future__ import annotations

import pytest

from sparkcdc.spark.pipeline.session import with_task_retries


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
