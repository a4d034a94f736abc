"""sparkcdc: change data capture from MariaDB, MySQL and PostgreSQL into Delta tables, on Apache
Spark.

``sparkcdc.__version__`` is the installed distribution's version, looked up on first use (not on
import: Spark's Python workers import the package too); from a source tree that was never
installed, the version its ``pyproject.toml`` names, else ``0+unknown``."""

from functools import cache


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sparkcdc")
    except PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text())["project"]
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        return "0+unknown"
    return str(project["version"]) if project.get("name") == "sparkcdc" else "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'sparkcdc' has no attribute {name!r}")
