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
A snapshot lives only as long as the connection that exported it (:mod:`.export`): once that
ended (its walsender terminated, the server restarted, the connection broke) no statement can
take it again, and the read stops with a sentence saying so and how a restart goes on
(:func:`snapshot_gone`).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg2
import pyarrow as pa
import pyarrow.csv as pcsv

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.sources.postgres.chunks.sql import text_literal
from sparkcdc.sources.postgres.server.connect import Row, Session

T = TypeVar("T")
BLOCK_BYTES = 4 << 20  # CSV blocks parsed in parallel
_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT"
# SET TRANSACTION SNAPSHOT of a snapshot whose exporter ended: "invalid snapshot identifier"
# (its file went with the exporter's transaction), "could not import the requested snapshot"
# (the exporter is no longer running)
GONE_SQLSTATES = ("22023", "55000")


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
                self._begin(cur, self.snapshot)
                return work(cur)
            finally:
                if not self._conn.closed:
                    cur.execute("ROLLBACK")  # read only: nothing to keep

        return self._with_cursor(sql, in_snapshot)

    def _begin(self, cur: Any, snapshot: str) -> None:
        """A transaction in ``snapshot``; one gone is refused with :func:`snapshot_gone`."""
        try:
            cur.execute(f"{_BEGIN} {text_literal(snapshot)}")
        except psycopg2.Error as exc:
            if exc.pgcode not in GONE_SQLSTATES:
                raise
            words = getattr(exc.diag, "message_primary", None) or str(exc).strip()
            raise snapshot_gone(snapshot, self.address, str(words), exc.pgcode) from exc


def snapshot_gone(snapshot: str, address: str, words: str, sqlstate: str) -> SourceError:
    """The sentence for exported snapshot ``snapshot`` gone from the server at ``address``
    (the server's ``words``): why, and what a restart does (a new pin, the chunks not read yet
    read in it, the log from each chunk's own point: :mod:`.export`)."""
    return SourceError(
        f"the exported snapshot {snapshot} the snapshot's chunks are read in is gone from "
        f"PostgreSQL at {address} ({words.rstrip('.')}): the connection that exported it ended "
        "(its walsender was terminated, the server restarted or the connection broke), and no "
        "chunk can be read in it any more; restart the pipeline, which exports a new snapshot "
        "and reads in it the chunks not read yet, as of its later point (the chunks read "
        "already are kept, and the log brings each chunk up to date from its own point), or "
        "run a batch read again.",
        snapshot=snapshot,
        sqlstate=sqlstate,
    )


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
