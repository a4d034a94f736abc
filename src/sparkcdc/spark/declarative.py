"""Spark Declarative Pipelines (``spark-pipelines``): the ``<type>-cdc`` sources in a pipeline.

A pipeline's transformation files run inside the CLI's Python process, against the Spark
Connect session the CLI made; :func:`prepare`, called there once, registers the sources in
that session and works around a pyspark defect that fails every run reading a Python data
source::

    from pyspark.sql import SparkSession
    import sparkcdc.spark.declarative

    spark = SparkSession.active()
    sparkcdc.spark.declarative.prepare(spark, "mysql")

The defect (measured on pyspark 4.3; upstream SPARK-59135): every Python worker Spark starts, a data
source's planner or reader among them, sends back two empty profiler accumulators; the Connect
server returns them at the end of the pipeline run as an observed metric named
``__python_accumulator__``. The client's ``execute_command_as_iterator``, which the CLI reads
the run's events from, accepts nothing but dicts, so a run that completed raises
``[UNKNOWN_RESPONSE] Unknown response: Plan observed(__python_accumulator__=…)`` and the CLI
exits 1. Any Python data source does it (docs/pipelines.md has a reproduction without
sparkcdc); a CSV source does not. :func:`tolerate_command_metrics` makes the session's client
pass over metrics in command streams, as the upstream fix does, and rejects anything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.errors import PySparkValueError
from pyspark.sql import SparkSession
from pyspark.sql.metrics import ObservedMetrics, PlanMetrics

from sparkcdc.spark import register

# the client's members the workaround is built from (private to pyspark: checked before use)
_NEEDS = ("_execute_plan_request_with_metadata", "_set_command_in_plan")
_FETCH = "_execute_and_fetch_as_iterator"


def prepare(spark: SparkSession, *types: str) -> None:
    """Register the sources of ``types`` (default: every built-in type) with the pipeline's
    session and let its command streams carry metrics (:func:`tolerate_command_metrics`)."""
    register(spark, *types)
    tolerate_command_metrics(spark)


def tolerate_command_metrics(spark: SparkSession) -> bool:
    """Have the Spark Connect client of ``spark`` skip metrics in a command's response stream
    instead of raising ``UNKNOWN_RESPONSE``; False (and nothing changed) for a classic session
    or a client lacking the members the replacement is built from."""
    client = getattr(spark, "client", None)
    if client is None or not all(hasattr(client, name) for name in (*_NEEDS, _FETCH)):
        return False

    def execute_command_as_iterator(
        command: Any, observations: dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        request = client._execute_plan_request_with_metadata()
        client._set_command_in_plan(request.plan, command)
        fetch = getattr(client, _FETCH)
        for response in fetch(request, observations or {}):
            if isinstance(response, dict):
                yield response
            elif not isinstance(response, (PlanMetrics, ObservedMetrics)):
                raise PySparkValueError(
                    errorClass="UNKNOWN_RESPONSE",
                    messageParameters={"response": str(response)},
                )

    client.execute_command_as_iterator = execute_command_as_iterator
    return True


__all__ = ["prepare", "tolerate_command_metrics"]
