"""The chunk dialect's connection: queries and ``COPY ... TO STDOUT`` reads, optionally inside
an exported snapshot, and COPY's CSV parsed into Arrow text columns.

Chunks are read with ``COPY (SELECT ...) TO STDOUT WITH (FORMAT csv)``: every value in its
type's text output form, in the session settings of :mod:`..server.connect` (those of the
replication connection), so the very text pgoutput sends for the same value. libpq moves it,
``pyarrow.csv`` parses it in parallel into string columns (NULL is the unquoted empty field,
an empty string the quoted one), and no Python object is made per value.

With ``snapshot`` (a name exported by a replication slot's creation) every statement runs in
``BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '...'`` and so
sees the database as of that snapshot; without, each statement sees the latest committed data.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.csv as pcsv

from sparkcdc.config.model import SourceConfig
from sparkcdc.sources.postgres.chunks.sql import text_literal
from sparkcdc.sources.postgres.server.connect import Row, Session

T = TypeVar("T")
BLOCK_BYTES = 4 << 20  # CSV blocks parsed in parallel
_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT"


def reader_name(snapshot: str | None) -> str:
    """The ``application_name`` of a session reading in ``snapshot``: the snapshot's holder
    tells from it whether readers still use the snapshot (:mod:`.holder`)."""
    return "sparkcdc" if snapshot is None else f"sparkcdc reads {snapshot}"


class ChunkSession(Session):
    """A :class:`Session` whose statements run in ``snapshot`` when one is given, and which
    reads query results as CSV (:meth:`copy`)."""

    def __init__(self, source: SourceConfig, database: str, snapshot: str | None = None) -> None:
        super().__init__(source, database, reader_name(snapshot))
        self.snapshot = snapshot

    def rows(self, sql: str, args: tuple[object, ...] | None = None) -> list[Row]:
        """The rows of one query (in the snapshot, when given)."""
        if self.snapshot is None:
            return self.query(sql, args)

        def fetch(cur: Any) -> list[Row]:
            cur.execute(sql, args)
            return list(cur.fetchall())

        return self._run(sql, fetch)

    def copy(self, select: str) -> pa.Buffer:
        """The result of ``select`` as COPY's CSV (in the snapshot, when given)."""
        sql = f"COPY ({select}) TO STDOUT WITH (FORMAT csv)"

        def read(cur: Any) -> pa.Buffer:
            out = io.BytesIO()
            cur.copy_expert(sql, out)
            return pa.py_buffer(out.getbuffer())  # no copy: the buffer keeps ``out`` alive

        return self._run(sql, read)

    def _run(self, sql: str, work: Callable[[Any], T]) -> T:
        """``work(cursor)``, in the snapshot's transaction when one is given; a refusal as a
        sparkcdc error; a lost connection reopened once."""

        def in_snapshot(cur: Any) -> T:
            if self.snapshot is None:
                return work(cur)
            try:
                cur.execute(f"{_BEGIN} {text_literal(self.snapshot)}")
                return work(cur)
            finally:
                if not self._conn.closed:
                    cur.execute("ROLLBACK")  # read only: nothing to keep

        return self._with_cursor(sql, in_snapshot)


def text_columns(data: pa.Buffer, count: int) -> list[pa.Array]:
    """COPY's CSV of ``count`` columns as string arrays (NULL for the unquoted empty field),
    parsed in blocks in parallel (a row longer than a block is read whole all the same)."""
    if data.size == 0:
        return [pa.array([], pa.string()) for _ in range(count)]
    names = [f"c{i}" for i in range(count)]
    table = pcsv.read_csv(
        pa.BufferReader(data),
        read_options=pcsv.ReadOptions(column_names=names, block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    return [table.column(i).combine_chunks() for i in range(count)]
