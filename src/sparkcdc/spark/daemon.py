"""The Python worker daemon of the pipeline's Spark session: pyspark's own, preloaded.

Spark starts Python task workers by forking them from one daemon process per session
(``python -m pyspark.daemon``), which imports little. Each new worker then imports what its task
needs: for a snapshot's split tasks pyarrow, pandas (pyarrow imports it on its first conversion
of a Python value), connectorx and the chunk reader, measured here as 1–1.5 s of CPU before the
first chunk is read. The warm-up read (:mod:`.warm`) leaves workers that have imported all that,
but Spark starts a new worker whenever none is idle in its pool at that moment: in a snapshot at
parallelism 1 traced here, the later batches' split tasks ran in a worker the warm-up had not
started, which imported all that before its first chunk.

This daemon imports those modules once, then runs pyspark's daemon unchanged, so every worker it
forks starts with them imported (the pages are shared until written). pyarrow's thread pools
are safe across a fork (they restart in the child), and no connection or runtime is opened here.
A module that fails to import here is only not preloaded: the task that needs it reports why.
"""

from __future__ import annotations

PRELOAD = (
    "pyarrow.parquet",
    "pyarrow.compute",
    "connectorx",
    "sparkcdc.spark.source",
    "sparkcdc.spark.split_reads",
    "sparkcdc.sources.mysql.chunks",
)


def preload(modules: tuple[str, ...] = PRELOAD) -> None:
    """Import ``modules``, and pandas through pyarrow's first conversion of a value. Only a head
    start: a module that fails to import is left for the task that needs it, which reports it."""
    import contextlib
    import importlib

    for name in modules:  # the task importing a module that fails here raises the real error
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):
        import pyarrow as pa

        pa.array(["x"])


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
