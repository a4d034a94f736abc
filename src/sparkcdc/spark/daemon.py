"""The Python worker daemon of the pipeline's Spark session: pyspark's own, from compiled code.

Spark starts its Python workers through a daemon (``python -m pyspark.daemon``) that forks one
process per worker, with ``pyspark.zip`` first on ``PYTHONPATH``. Python cannot cache compiled
bytecode for modules imported from a zip, so every daemon and every worker compiles the pyspark
modules it imports from source again: about 0.5 s of CPU each, several times in a micro-batch
that needs a new kind of worker (the data source's planner, its readers) — measured here as
most of the 2 s between a snapshot's first offset and its first chunk read.

When the zip belongs to the pyspark package that is installed beside it (``pip install
pyspark``: the zip sits inside that package), this daemon moves the zip behind the installed
package on ``sys.path`` and then runs pyspark's daemon unchanged: the same code, imported from
its compiled files. Any other layout (a separate Spark installation) is left as Spark made it.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder


def installed_first(path: list[str]) -> list[str]:
    """``path`` with the zips of the installed pyspark package (``pyspark.zip``, py4j's) moved
    to its end; unchanged without an installed pyspark that holds them."""
    zips = [p for p in path if p.endswith(".zip")]
    spec = PathFinder.find_spec("pyspark", [p for p in path if p not in zips])
    if spec is None or not spec.submodule_search_locations:
        return path
    home = os.path.realpath(list(spec.submodule_search_locations)[0]) + os.sep
    inside = [p for p in zips if os.path.realpath(p).startswith(home)]
    if not inside:
        return path
    return [p for p in path if p not in inside] + inside


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from pyspark.daemon import manager

    manager()
