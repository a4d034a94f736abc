"""``sink.history``: which captured tables keep a history table (:mod:`sparkcdc.core.history_spec`).

``true`` (every captured table), a list of ``db.table`` names, or a mapping of names to ``{}``
/ ``true`` (every column tracked), ``{track: [col, ...]}`` or ``{except: [col, ...]}``. Each
mistake is a ConfigError naming the key; a column the table lacks is found by the sink, once it
knows the table's schema.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sparkcdc.config.values import as_bool, as_table_name, as_text, fail
from sparkcdc.core.history_spec import HistorySpec, TableHistory

KEY = "sink.history"
TABLE_KEYS = ("track", "except")


def as_history(value: object, key: str = KEY) -> HistorySpec:
    """The ``sink.history`` value as a :class:`HistorySpec` (module docstring)."""
    if isinstance(value, list):
        names = [as_table_name(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return HistorySpec(tables={n: TableHistory() for n in names})
    if isinstance(value, dict):
        tables: dict[str, TableHistory] = {}
        for name, own in value.items():
            table = as_table_name(name, f"{key}.{name}")
            tables[table] = _table(own, f"{key}.{name}")
        return HistorySpec(tables=tables)
    if value is None or value == "":
        return HistorySpec()
    return HistorySpec(every=as_bool(value, key))


def _table(value: object, key: str) -> TableHistory:
    if value is None or value == "" or value == {}:
        return TableHistory()
    if not isinstance(value, dict):
        if as_bool(value, key):
            return TableHistory()
        fail(key, "is false; leave the table out of sink.history instead")
    for name in value:
        if name not in TABLE_KEYS:
            fail(f"{key}.{name}", f"is not a known key; use one of {', '.join(TABLE_KEYS)}")
    if "track" in value and "except" in value:
        fail(key, "gives both track and except; keep one of them")
    if "track" in value:
        return TableHistory(track=_columns(value["track"], f"{key}.track"))
    return TableHistory(untracked=_columns(value["except"], f"{key}.except"))


def _columns(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        fail(key, "must be a non-empty list of column names")
    names = tuple(as_text(v, f"{key}[{i}]").strip() for i, v in enumerate(value))
    for i, name in enumerate(names):
        if not name:
            fail(f"{key}[{i}]", "is empty; give a column name")
    return names


def check_captured(spec: HistorySpec, tables: Sequence[str], excluded: Sequence[str]) -> None:
    """ConfigError naming the key of a table ``sink.history`` names that the source's
    ``tables`` patterns do not capture (or ``tables_exclude`` leaves out)."""
    for name in spec.tables:
        captured = any(re.fullmatch(t, name) for t in tables)
        if not captured or any(re.fullmatch(t, name) for t in excluded):
            fail(f"{KEY}.{name}", f"names {name}, which the pipeline does not capture; add it "
                 "to source.tables or take it out of sink.history")  # fmt: skip
