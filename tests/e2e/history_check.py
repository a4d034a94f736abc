"""An independent check of the history tables (``sink.history``): every ``__history`` table
rebuilt from its change log and compared with what the sink wrote, row for row.

Like a Jepsen checker it shares no code with what it checks: the versions are computed here
from the change log's rows alone, by the specification of the history table, per key in log
order (``source.position``; rows at one position, a snapshot chunk's, keep their order)::

    r        the key's open version with equal tracked values: its values updated in place;
             else as c (opened with __op 'r')
    c        the key's open version closed at this change; a version opened
    u        key and tracked values as the open version's: updated in place; else the old
             key's version closed, one opened for the new key (__op 'u')
    d        the key's open version closed
    t        (a TRUNCATE) every open version closed

Closing sets ``__end_at`` / ``__end_position`` to the change's ``source.ts_ms`` (as a UTC
timestamp) and ``source.position`` and ``__current`` false. The comparison is of multisets of
whole rows (every column, positions exact, timestamps to the microsecond), so a missing,
duplicated or changed version fails it; so does a key with two open versions.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from tests.e2e.iceberg_lake import IcebergLake

Row = dict[str, Any]
VERSION_COLUMNS = (
    "__start_at", "__start_position", "__end_at", "__end_position", "__current", "__op",
)  # fmt: skip
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def keep_history(cfg: Path) -> Path:
    """The pipeline file ``cfg`` with ``sink.history: true`` (written over)."""
    text = cfg.read_text()
    changed = re.sub(r"^(sink: \{.*)\}$", r"\1, history: true}", text, count=1, flags=re.M)
    assert changed != text, "the pipeline file has no one-line sink"
    cfg.write_text(changed)
    return cfg


def rebuild_history(
    changelog_rows: Iterable[Row], key_columns: Sequence[str], tracked: Sequence[str] | None = None
) -> list[Row]:
    """Every version the change log's rows (``op``, ``before``, ``after``, ``source``) give, by
    the module docstring's rules; ``tracked``: the columns whose change opens a version (None:
    every column)."""
    ordered = sorted(changelog_rows, key=lambda r: r["source"]["position"])
    open_versions: dict[tuple[Any, ...], Row] = {}
    done: list[Row] = []

    def key_of(image: Row) -> tuple[Any, ...]:
        return tuple(image[k] for k in key_columns)

    def close(key: tuple[Any, ...], at: dt.datetime, position: str) -> None:
        held = open_versions.pop(key, None)
        if held is not None:
            done.append({**held, "__end_at": at, "__end_position": position, "__current": False})

    def same(held: Row, image: Row) -> bool:
        names = image if tracked is None else tracked
        return all(held.get(c) == image.get(c) for c in names)

    for row in ordered:
        op, before, after = row["op"], row["before"], row["after"]
        at = EPOCH + dt.timedelta(milliseconds=row["source"]["ts_ms"])
        position = row["source"]["position"]
        if op == "t":
            for key in list(open_versions):
                close(key, at, position)
        elif op == "d":
            close(key_of(before), at, position)
        elif op in ("r", "c", "u"):
            key = key_of(after)
            if op == "u" and before is not None and key_of(before) != key:
                close(key_of(before), at, position)
            held = open_versions.get(key)
            if op != "c" and held is not None and same(held, after):
                open_versions[key] = {**held, **after}
                continue
            close(key, at, position)
            open_versions[key] = {**after, "__start_at": at, "__start_position": position,
                                  "__end_at": None, "__end_position": None, "__current": True,
                                  "__op": op}  # fmt: skip
        else:
            raise AssertionError(f"a change log row of op {op!r}, which the check does not know")
    return done + list(open_versions.values())


def compare_history(
    expected: Sequence[Row], found: Sequence[Row], key_columns: Sequence[str], label: str = ""
) -> None:
    """AssertionError unless ``found`` (the history table's rows) holds exactly the rows of
    ``expected`` (every column of ``found``'s, each as often), at most one open version a key,
    and ``__current`` true exactly where ``__end_position`` is null."""
    columns = sorted(found[0]) if found else sorted(expected[0]) if expected else []
    wrong_flag = [r for r in found if r["__current"] != (r["__end_position"] is None)]
    assert not wrong_flag, f"{label}: __current disagrees with __end_position: {wrong_flag[:3]}"
    opened = Counter(tuple(r[k] for k in key_columns) for r in found if r["__current"])
    twice = {k: n for k, n in opened.items() if n > 1}
    assert not twice, f"{label}: {len(twice)} keys with more than one open version: {twice}"
    want = Counter(_frozen(r, columns) for r in expected)
    have = Counter(_frozen(r, columns) for r in found)
    missing, extra = want - have, have - want
    assert not missing and not extra, (
        f"{label}: the history table differs from the change log's rebuild: "
        f"{sum(missing.values())} versions missing, e.g. {_shown(missing, columns)}; "
        f"{sum(extra.values())} versions not in the rebuild, e.g. {_shown(extra, columns)}"
    )


def assert_history_matches(
    lake: Path | IcebergLake, schema: str, table: str, key_columns: Sequence[str] = ("id",),
    tracked: Sequence[str] | None = None,
) -> int:  # fmt: skip
    """The history table of ``schema.table`` in the Delta lake folder (or Iceberg lake)
    ``lake`` equals the rebuild of its change log (:func:`compare_history`); its rows."""
    changelog, history = read_tables(lake, schema, table)
    expected = rebuild_history(changelog, key_columns, tracked)
    compare_history(expected, history, key_columns, f"{schema}.{table}__history")
    return len(history)


def read_tables(lake: Path | IcebergLake, schema: str, table: str) -> tuple[list[Row], list[Row]]:
    """The change log's rows (``op``, ``before``, ``after``, ``source``) and the history
    table's rows of ``schema.table``, read with deltalake or pyiceberg."""
    columns = ["op", "before", "after", "source"]
    if isinstance(lake, IcebergLake):
        logged = lake.arrow(schema, f"{table}__changelog").select(columns).to_pylist()
        return logged, lake.rows(schema, f"{table}__history")
    where = lake / schema
    logged = DeltaTable(str(where / f"{table}__changelog")).to_pyarrow_table(columns=columns)
    history = DeltaTable(str(where / f"{table}__history")).to_pyarrow_table()
    return logged.to_pylist(), history.to_pylist()


def _frozen(row: Row, columns: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_value(row.get(c)) for c in columns)


def _value(value: Any) -> Any:
    """A hashable, comparable form: datetimes in UTC to the microsecond, decimals normalised."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, list):
        return tuple(_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _value(v)) for k, v in value.items()))
    return value


def _shown(rows: Counter[tuple[Any, ...]], columns: Sequence[str]) -> list[Row]:
    return [dict(zip(columns, r, strict=True)) for r in list(rows)[:3]]
