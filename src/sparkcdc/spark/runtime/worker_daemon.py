"""The Python worker daemon of the pipeline's Spark session: pyspark's own, preloaded.

Spark starts Python task workers by forking them from one daemon process per session
(``python -m pyspark.daemon``), which imports little. Each new worker then imports what its task
needs: for a snapshot's split tasks pyarrow, pandas (pyarrow imports it on its first conversion
of a Python value) and the source's chunk reader (for MySQL connectorx), about a second of CPU
before the first chunk is read. The warm-up read (:mod:`.worker_warmup`) leaves workers that
have imported all that, but Spark starts a new worker whenever none is idle in its pool at that
moment.

This daemon imports those modules once, then runs pyspark's daemon unchanged, so every worker it
forks starts with them imported (the pages are shared until written). pyarrow's thread pools
are safe across a fork (they restart in the child), and no connection or runtime is opened here.
A module that fails to import here is only not preloaded: the task that needs it reports why.
"""

from __future__ import annotations

PRELOAD = (
    "pyarrow.parquet",
    "pyarrow.compute",
    "sparkcdc.spark.stream.datasource",
    "sparkcdc.spark.snapshot.split_task",
)


def source_modules() -> tuple[str, ...]:
    """What the built-in source types' split tasks import (their
    :attr:`~sparkcdc.sources.port.SourceType.preload`)."""
    try:
        from sparkcdc.sources.registry import BUILT_IN, source_type

        return tuple(m for kind in BUILT_IN for m in source_type(kind).preload)
    except Exception:  # only a head start (see preload)
        return ()


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
    preload(PRELOAD + source_modules())
    from pyspark.daemon import manager

    manager()
