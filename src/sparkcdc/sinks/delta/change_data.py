"""The change data feed of the sink's own copy-on-write commit (:mod:`.rewrite`).

A table with ``delta.enableChangeDataFeed`` gets, in each commit that changes rows, a change
data file (Delta protocol, *Change Data Files*): the table's columns and ``_change_type``,
under ``_change_data/``, named by a ``cdc`` action of the same commit (``dataChange`` false).
Readers take a commit's changes from its ``cdc`` files alone where it has any, else its added
and removed files as inserts and deletes of whole files.

The rows are the commit's net effect per key, as Delta's MERGE writes them: of the rows the
commit drops (``old``, the candidates' rows whose key the batch names) a key the batch upserts
gives ``update_preimage`` then ``update_postimage``, any other ``delete``; an upserted key not
among them ``insert``. A delete of a key the table lacks gives nothing.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkcdc.sinks.storage import LakeStorage

ENABLE_KEY = "delta.enableChangeDataFeed"  # the table property that turns the feed on
CHANGE_TYPE = "_change_type"
FOLDER = "_change_data"
_ROW = "_sparkcdc_row"


@dataclass(frozen=True)
class ChangeFile:
    """A change data file the commit names: its path in the table and its size."""

    path: str
    size: int


def enabled(configuration: Mapping[str, str | None]) -> bool:
    """Whether a table's properties turn its change data feed on."""
    return str(configuration.get(ENABLE_KEY) or "").strip().lower() == "true"


def change_rows(old: pa.Table, upserts: pa.Table, key_names: Sequence[str]) -> pa.Table:
    """The change data rows of a commit that drops the rows ``old`` and adds ``upserts`` (both
    in the table's columns, one row per key; module docstring): ``old``'s rows first, then
    ``upserts``', each with its ``_change_type``."""
    names = list(key_names)
    updated_old = has_key(old, upserts.select(names), names)
    updated_new = has_key(upserts, old.select(names), names)
    before = old.append_column(
        CHANGE_TYPE, pc.if_else(updated_old, "update_preimage", "delete").cast(pa.string())
    )
    after = upserts.append_column(
        CHANGE_TYPE, pc.if_else(updated_new, "update_postimage", "insert").cast(pa.string())
    )
    return pa.concat_tables([before, after])


def write_change_file(lake: LakeStorage, path: str, rows: pa.Table) -> ChangeFile:
    """``rows`` (:func:`change_rows`) as a new change data file of the table at ``path``."""
    name = f"{FOLDER}/cdc-00000-{uuid.uuid4()}.c000.snappy.parquet"
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, compression="snappy")
    data = buffer.getvalue()
    lake.mkdir(f"{path.rstrip('/')}/{FOLDER}")
    lake.write_new_file(f"{path.rstrip('/')}/{name}", data)
    return ChangeFile(name, len(data))


def has_key(rows: pa.Table, keys: pa.Table, names: list[str]) -> pa.Array:
    """For each of ``rows``, whether ``keys`` holds its key (null matching nothing)."""
    if rows.num_rows == 0 or keys.num_rows == 0:
        return pa.array([False] * rows.num_rows, pa.bool_())
    if len(names) == 1:
        found = pc.is_in(rows.column(names[0]), value_set=keys.column(0).combine_chunks(),
                         skip_nulls=True)  # fmt: skip
        return pc.fill_null(found, False)
    numbered = rows.select(names).append_column(_ROW, pa.array(range(rows.num_rows), pa.int64()))
    matched = numbered.join(keys, keys=names, join_type="left semi").column(_ROW)
    return pc.is_in(pa.array(range(rows.num_rows), pa.int64()),
                    value_set=matched.combine_chunks())  # fmt: skip
