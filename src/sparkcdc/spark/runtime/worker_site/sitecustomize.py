"""Run at start-up by every Python process Spark starts for sparkcdc (``..pythonpath``).

Spark puts ``pyspark.zip`` and py4j's zip first on a Python worker's ``PYTHONPATH``. Python
caches no bytecode for modules imported from a zip, so each new worker compiles the pyspark
modules it imports from source again. When those zips lie inside the pyspark package installed
beside them, they hold the same code: they move behind the installed package, which is then
imported from its compiled files. Then the ``sitecustomize`` this one shadows, if any, runs.

Standalone on purpose: it runs before anything else is imported, pyspark included.
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


def _run_shadowed() -> None:
    """The next ``sitecustomize`` on the path after this folder, as Python would have run it."""
    here = os.path.dirname(os.path.realpath(__file__))
    rest = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = PathFinder.find_spec(__name__, rest)
    if spec is not None and spec.loader is not None and spec.origin != __file__:
        import importlib.util

        module = importlib.util.module_from_spec(spec)
        sys.modules[__name__] = module
        spec.loader.exec_module(module)


if __name__ == "sitecustomize":  # run by Python at start-up (not when imported by a test)
    sys.path[:] = installed_first(sys.path)
    _run_shadowed()
