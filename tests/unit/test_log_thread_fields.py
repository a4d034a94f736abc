"""Log readers change :class:`~sparkcdc.sources.log_thread.LogThread`'s state through its
methods: no module of a source that uses it assigns one of the private fields its constructor
sets (read from the source text, so a new field is covered as soon as it is added)."""

from __future__ import annotations

import ast
from pathlib import Path

import sparkcdc.sources
from sparkcdc.sources import log_thread

SOURCES = Path(sparkcdc.sources.__file__).parent


def private_fields() -> set[str]:
    """The ``self._x`` names LogThread's constructor assigns."""
    tree = ast.parse(Path(log_thread.__file__).read_text())
    init = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    return {name for name, _ in self_assignments(init)}


def self_assignments(tree: ast.AST) -> list[tuple[str, int]]:
    """(attribute, line) of every ``self._x = …`` / ``self._x += …`` in ``tree``."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                targets.extend(target.elts if isinstance(target, ast.Tuple) else [target])
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets.append(node.target)
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr.startswith("_")
            ):
                found.append((target.attr, node.lineno))
    return found


def test_the_constructor_names_the_fields_readers_must_not_write() -> None:
    assert {"_position", "_events", "_connected", "_last_ts_ms", "_error", "_stop"} <= (
        private_fields()
    )


def test_no_log_reader_writes_the_private_fields_of_its_log_thread() -> None:
    fields = private_fields()
    readers = [
        path
        for path in SOURCES.rglob("*.py")
        if path.name != "log_thread.py" and "LogThread" in path.read_text()
    ]
    assert len(readers) >= 2  # the MySQL and the PostgreSQL log reader
    written = [
        f"{path.relative_to(SOURCES)}:{line} writes {name}"
        for path in readers
        for name, line in self_assignments(ast.parse(path.read_text()))
        if name in fields
    ]
    assert written == []
