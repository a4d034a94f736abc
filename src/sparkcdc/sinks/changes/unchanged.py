"""Values an update left out of the log, filled before a micro-batch is written.

PostgreSQL does not log a TOASTed value an update left alone unless the table's replica
identity is FULL; its reader then sends the change with a JSON after image that lists those
columns under :data:`UNCHANGED_KEY` (first, so a prefix test finds it) instead of their values
(:mod:`sparkcdc.sources.postgres.stream.rows`). Before the table's changes of a micro-batch are
appended to the change log and merged into the replica, each such value is taken from the
latest earlier change of the same key in the micro-batch, else from the replica's row of that
key as it was before the micro-batch (read for those keys only; a replayed batch the replica
already holds is read in the version before it). Where neither holds the value, the micro-batch
stops with a sentence: a placeholder or a null is never written. A micro-batch without marked
changes costs one prefix test of its JSON after images.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import SinkError
from sparkcdc.core.images import UNCHANGED_KEY, UNCHANGED_PREFIX

Key = tuple[object, ...]


@dataclass(frozen=True)
class Left:
    """A change's columns whose values the log left out, and its key text (for the sentence)."""

    columns: tuple[str, ...]
    key: str


class ReplicaRows(Protocol):
    """The replica as it was before the micro-batch being written (each table format reads its
    own: Delta's version before the batch's commit, Iceberg's snapshot before it)."""

    def rows(
        self, names: list[str], keys: list[Key], fields: list[pa.Field]
    ) -> tuple[pa.StructArray, dict[Key, int]]:
        """Its rows whose key (columns ``names``) is one of ``keys``, as structs of ``fields``,
        and the index of each key's row."""


def marked(rows: pa.Table) -> dict[int, Left]:
    """The changes among ``rows`` (one table's envelope rows with ``_pos``) whose JSON after
    image lists columns the log left out, by ``_pos``."""
    after = rows.column("after")
    if pa.types.is_null(after.type):
        return {}
    hit = pc.fill_null(pc.starts_with(after, UNCHANGED_PREFIX), False)
    if not pc.any(hit).as_py():
        return {}
    picked = rows.filter(hit).select(["_pos", "key", "after"]).to_pylist()
    return {
        int(r["_pos"]): Left(tuple(json.loads(r["after"])[UNCHANGED_KEY]), str(r["key"]))
        for r in picked
    }


def keys_of(image: pa.StructArray, names: list[str], where: pa.Array) -> list[Key]:
    """The key values (columns ``names``) of ``image``'s rows ``where``."""
    taken = image.take(where)
    assert isinstance(taken, pa.StructArray)
    return list(zip(*(taken.field(n).to_pylist() for n in names), strict=True))


def fill(
    left: dict[int, Left],
    rows: pa.Table,
    images: tuple[pa.StructArray, pa.StructArray],
    key: Sequence[str],
    replica: ReplicaRows,
    reset_at: int | None,
    label: str,
) -> pa.StructArray:
    """The after images (``images[1]``) of ``rows`` (one table's, in log order, with ``_pos``)
    with the values the changes ``left`` lack (see the module docstring); ``reset_at``: the
    ``_pos`` of a TRUNCATE in the batch, after which the replica holds no row."""
    before, after = images
    pos = rows.column("_pos").combine_chunks()
    where = pc.indices_nonzero(pc.is_in(pos, pa.array(list(left), pos.type)))
    lower = {f.name.lower(): f.name for f in after.type}
    names = [lower[k.lower()] for k in key]
    if not names:  # no key to find the row by
        first = next(iter(left.values()))
        raise _missing(label, first, first.columns[0])
    # a change's row is found by its key before the change (a key update logs the old key)
    has_before = before.is_valid().take(where).to_pylist()
    olds, news = keys_of(before, names, where), keys_of(after, names, where)
    wanted = [o if b else a for o, a, b in zip(olds, news, has_before, strict=True)]
    at = pos.to_numpy(zero_copy_only=False)
    marks = where.to_pylist()
    sources = _sources(marks, wanted, _earlier(after, names, wanted), at, reset_at)
    needed = sorted({k for i, k in zip(marks, wanted, strict=True) if sources[i] == _REPLICA},
                    key=repr)  # fmt: skip
    stored, index = replica.rows(names, needed, list(after.type))
    filled: dict[str, pa.Array] = {}
    for name in dict.fromkeys(c for change in left.values() for c in change.columns):
        plan = [
            (i, sources[i], index.get(k) if sources[i] == _REPLICA else None)
            for i, k in zip(marks, wanted, strict=True)
            if name in left[int(at[i])].columns
        ]
        if name not in lower.values():
            raise _missing(label, left[int(at[plan[0][0]])], name)
        filled[name], bad = _column(after, stored, name, plan)
        if bad:
            raise _missing(label, left[int(at[bad[0]])], name)
    fields = list(after.type)
    columns = [filled.get(f.name, after.field(f.name)) for f in fields]
    return pa.StructArray.from_arrays(columns, fields=fields, mask=after.is_null())


_REPLICA = -1  # a change's values come from the replica's row of its key


def _sources(
    marks: list[int],
    wanted: list[Key],
    earlier: dict[Key, list[int]],
    at: np.ndarray,
    reset_at: int | None,
) -> dict[int, int | None]:
    """Per marked row: the latest earlier row of its key, else :data:`_REPLICA`, else None
    (after a TRUNCATE in the batch the replica holds none of its rows)."""
    out: dict[int, int | None] = {}
    for i, k in zip(marks, wanted, strict=True):
        floor = reset_at if reset_at is not None and at[i] > reset_at else None
        rows = [j for j in earlier.get(k, ()) if j < i and (floor is None or at[j] > floor)]
        out[i] = rows[-1] if rows else (_REPLICA if floor is None else None)
    return out


def _earlier(after: pa.StructArray, names: list[str], wanted: list[Key]) -> dict[Key, list[int]]:
    """The rows (in order) whose after image has one of the keys ``wanted``, by key."""
    mask = after.is_valid()
    for n, values in zip(names, zip(*wanted, strict=True), strict=True):
        field = after.field(n)
        mask = pc.and_(mask, pc.is_in(field, pa.array(list(set(values)), field.type)))
    found = pc.indices_nonzero(mask)
    out: dict[Key, list[int]] = {}
    for j, k in zip(found.to_pylist(), keys_of(after, names, found), strict=True):
        out.setdefault(k, []).append(j)
    return out


def _column(
    after: pa.StructArray,
    stored: pa.StructArray,
    name: str,
    plan: list[tuple[int, int | None, int | None]],
) -> tuple[pa.Array, list[int]]:
    """Column ``name`` of ``after`` with each marked row of ``plan`` (row, earlier row of its
    key or :data:`_REPLICA`, the replica's row) taking its source's value, in log order; and
    the marked rows whose source holds none."""
    n = len(after)
    source = np.arange(n, dtype=np.int64)
    for i, j, r in plan:
        if j is not None and j != _REPLICA:
            source[i] = source[j]  # the earlier change's value, itself filled before
        elif r is not None:
            source[i] = n + r
    values = pa.concat_arrays([after.field(name), stored.field(name)]).take(pa.array(source))
    marked = pa.array([i for i, _, _ in plan], pa.int64())
    nulls = values.take(marked).is_null().to_pylist()
    return values, [i for (i, _, _), null in zip(plan, nulls, strict=True) if null]


def _missing(label: str, change: Left, column: str) -> SinkError:
    return SinkError(
        f"an update of {label} (key {change.key}) left the TOASTed value of column {column} out "
        "of the log, and neither this micro-batch nor the replica holds it: run ALTER TABLE "
        f"{label} REPLICA IDENTITY FULL so that PostgreSQL logs such values, then take a "
        "snapshot of the table (a new checkpoint with startup: initial).",
        table=label,
    )
