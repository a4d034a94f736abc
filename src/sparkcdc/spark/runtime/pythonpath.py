"""The search path of the Python processes Spark starts: compiled pyspark, not its zip.

Spark starts several kinds of Python process for a stream of a Python data source: the
source's own process (``python_streaming_source_runner``), planners (``lookup_data_sources``,
``create_data_source``, ``plan_data_source_read``) and the task workers. Each gets
``pyspark.zip`` first on its ``PYTHONPATH``, and Python compiles modules imported from a zip
again in every process: measured here as about 0.6 s of CPU per process, several in a row
between a snapshot's first offset and its first chunk read, on a machine whose cores the
snapshot keeps busy.

:func:`use_compiled_pyspark` puts the folder ``worker_site`` on the ``PYTHONPATH`` the JVM passes
on to all of them (after Spark's zips, the only place Spark leaves). Python runs its
``sitecustomize`` at start-up, before any import: when the zips belong to the pyspark package
installed beside them (``pip install pyspark``), they move behind that package, so the same code
is imported from its compiled files. Any other layout (a separate Spark installation) is left
as Spark made it.
"""

from __future__ import annotations

import os
from pathlib import Path

SITE = Path(__file__).resolve().with_name("worker_site")


def worker_pythonpath(current: str | None) -> str:
    """``current`` (a ``PYTHONPATH``) with :data:`SITE` first, once."""
    parts = [p for p in (current or "").split(os.pathsep) if p and p != str(SITE)]
    return os.pathsep.join([str(SITE), *parts])


def use_compiled_pyspark() -> None:
    """Give the JVM started next (and so its Python processes) :data:`SITE` on their path."""
    current = os.environ.get("PYTHONPATH")
    wanted = worker_pythonpath(current)
    if wanted != current:  # no setenv when set: threads may be reading the environment
        os.environ["PYTHONPATH"] = wanted
