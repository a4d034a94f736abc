"""Chunks of a pinned table read after DDL made since the pin's point: its pinned columns found by
``attnum`` under their names now, and a table rewritten since read in a pin of its own.

A query names columns as the catalog names them when it runs (the parser reads the latest
catalog, not the snapshot's), while the rows it reads are the snapshot's. So each column the pin
recorded (:mod:`.pin_token`) is selected by its attnum's name now (a rename), cast to its type
at the pin where ``ALTER COLUMN TYPE`` changed it without a rewrite (the stored values are the
pin's, and the cast gives their text in the pinned type), and as NULL once dropped. The catalog
is read after each COPY (the names the next one uses); a change since the names were read (the
COPY fails on a renamed column, or the catalog differs after it) reads the chunk again.

An ``ALTER TABLE`` that rewrote the table since the point (a volatile default, a converting type
change) made new files whose rows the exported snapshot cannot see: PostgreSQL's table rewrites
are not MVCC-safe, and the table reads empty to older snapshots. Its chunks are then read in a
pin of the table's own, taken then (:mod:`.export`), whose point is their high watermark: the
hand-off keeps the log's changes of their keys from there, and the log reader, judging the
rewrite against the schema at the first point, reads the whole table again
(:mod:`..stream.existing`); a column whose type the rewrite converted reads null until then. A
rewrite alone (VACUUM FULL, CLUSTER, TRUNCATE) keeps reading in the pin: older snapshots still
see the rows VACUUM FULL and CLUSTER moved, and a TRUNCATE's empty table is what the log says
next.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import SourceError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.postgres.chunks.copy import ChunkSession
from sparkcdc.sources.postgres.chunks.export import ExportedSnapshot
from sparkcdc.sources.postgres.chunks.pin_token import PinnedColumn, PinToken
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.attributes import TableAttributes, read_attributes
from sparkcdc.sources.postgres.server.connect import Row
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.wire.lsn import format_lsn

log = logging.getLogger("sparkcdc.snapshot")
T = TypeVar("T")

ATTEMPTS = 10  # COPYs of one chunk the catalog changed during, before the read gives up
UNDEFINED_COLUMN = "42703"
Select = Callable[[list[str], dict[str, str]], str]
"""(select-list expressions, pinned key column -> its name now) -> the chunk's SELECT."""


class PinnedTables:
    """Reads of the tables of pin ``token`` at ``point`` through ``session`` (module docstring);
    :attr:`last_point` is the point the last read saw its table at."""

    def __init__(
        self, source: SourceConfig, session: ChunkSession, token: PinToken, point: LsnOffset
    ) -> None:
        self.source, self.session, self.token, self.point = source, session, token, point
        self.last_point = point
        self._own: dict[str, tuple[ExportedSnapshot, LsnOffset]] = {}  # rewritten tables
        self._then: dict[tuple[str, int], TableAttributes | None] = {}  # (snapshot, oid)
        self._seen: dict[int, TableAttributes] = {}  # the catalog after a table's last COPY
        self._oids: dict[str, int] = {}
        self._types: dict[tuple[int, int], str] = {}

    def read(self, schema: TableSchema, select: Select) -> pa.Buffer:
        """COPY's CSV of ``select`` over ``schema``'s pinned columns as they are now (a table
        the token names no columns of: its columns by name, in the pin)."""
        pinned = self.token.columns.get(schema.name)
        if not pinned:
            self.last_point = self.point
            return self.session.copy(select([self.session.ident(c.name) for c in schema.columns],
                                            {}))  # fmt: skip
        oid = self._oid(schema)
        now = self._seen.get(oid) or self._now(oid, schema)
        for _ in range(ATTEMPTS):
            snapshot, point = self._pin_of(schema.name)
            if rewritten(self._then_of(snapshot, oid), now):
                snapshot, point = self._repin(schema.name, point)
            exprs = selected(pinned, now, self.session.ident, self._type_name,
                             converted=snapshot != self.token.snapshot)  # fmt: skip
            keys = {c.name: a.name for c in pinned
                    if (a := now.by_attnum(c.attnum)) is not None and not a.dropped}  # fmt: skip
            data = self._copy(snapshot, select(exprs, keys))
            self._seen[oid] = after = self._now(oid, schema)
            if data is not None and after == now:
                self.last_point = point
                return data
            now = after
        raise SourceError(
            f"the columns of {schema.name} changed during each of {ATTEMPTS} reads of one "
            "snapshot chunk; run the pipeline again once the table's DDL is done.",
            table=schema.name,
        )

    def _copy(self, snapshot: str, select: str) -> pa.Buffer | None:
        """COPY's CSV of ``select`` in ``snapshot`` (None: it names a column renamed since)."""
        try:
            return _InSnapshot(self.session, snapshot).copy(select)
        except SourceError as exc:
            if exc.fields.get("sqlstate") != UNDEFINED_COLUMN:
                raise
            return None

    def close(self) -> None:
        for held, _ in self._own.values():
            held.close()
        self._own.clear()

    def _pin_of(self, name: str) -> tuple[str, LsnOffset]:
        found = self._own.get(name)
        return (self.token.snapshot, self.point) if found is None else (found[0].pin.token,
                                                                         found[1])  # fmt: skip

    def _repin(self, name: str, was: LsnOffset) -> tuple[str, LsnOffset]:
        """A pin of table ``name``'s own, taken now (module docstring)."""
        found = self._own.pop(name, None)
        if found is not None:
            found[0].close()
        held = ExportedSnapshot(self.source, PostgresSettings.of(self.source).names()[0])
        point = LsnOffset.of(held.pin.point)
        self._own[name] = (held, point)
        log.warning(
            "%s was rewritten by an ALTER TABLE after %s, where the snapshot reads it; its "
            "chunks are read as of %s from here on, and the log reader reads the table again "
            "once it reaches the change", name, format_lsn(was.lsn), format_lsn(point.lsn),
        )  # fmt: skip
        return held.pin.token, point

    def _oid(self, schema: TableSchema) -> int:
        if schema.name not in self._oids:
            rows = self.session.query(
                "SELECT %s::regclass::oid", (self.session.qualified(schema.db, schema.table),)
            )
            self._oids[schema.name] = int(rows[0][0])
        return self._oids[schema.name]

    def _now(self, oid: int, schema: TableSchema) -> TableAttributes:
        found = read_attributes(self.session, oid)
        if found is None:
            raise SourceError(
                f"{schema.name} was dropped while its snapshot was read; take it out of "
                "source.tables, or create it again and start with a new checkpoint.",
                table=schema.name,
            )
        return found

    def _then_of(self, snapshot: str, oid: int) -> TableAttributes | None:
        """The table's attributes as the pin ``snapshot`` sees them."""
        if (snapshot, oid) not in self._then:
            self._then[(snapshot, oid)] = read_attributes(_InSnapshot(self.session, snapshot), oid)
        return self._then[(snapshot, oid)]

    def _type_name(self, type_oid: int, typmod: int) -> str:
        if (type_oid, typmod) not in self._types:
            rows = self.session.query("SELECT format_type(%s, %s)", (type_oid, typmod))
            self._types[(type_oid, typmod)] = str(rows[0][0])
        return self._types[(type_oid, typmod)]


class _InSnapshot:
    """:class:`~..server.attributes.CatalogReads` in the exported snapshot ``snapshot``."""

    def __init__(self, session: ChunkSession, snapshot: str) -> None:
        self.session, self.snapshot = session, snapshot

    @property
    def server_version(self) -> int:
        return self.session.server_version

    def query(self, sql: str, args: Sequence[object] | None = None) -> list[Row]:
        return self._in(lambda: self.session.rows(sql, None if args is None else tuple(args)))

    def copy(self, select: str) -> pa.Buffer:
        return self._in(lambda: self.session.copy(select))

    def _in(self, work: Callable[[], T]) -> T:
        """``work`` with the session's statements in this snapshot (then in its own again)."""
        kept, self.session.snapshot = self.session.snapshot, self.snapshot
        try:
            return work()
        finally:
            self.session.snapshot = kept


def selected(
    pinned: Sequence[PinnedColumn],
    now: TableAttributes,
    ident: Callable[[str], str],
    type_name: Callable[[int, int], str],
    converted: bool = False,
) -> list[str]:
    """The select-list expression of each pinned column (module docstring). ``converted``: the
    table is read past a rewrite, whose type changes converted the stored values (``USING``
    any expression), which may not read as the pinned type: such a column is NULL until the
    table is read again."""
    out = []
    for col in pinned:
        found = now.by_attnum(col.attnum)
        if found is None or found.dropped:
            out.append("NULL")
        elif found.type == (col.type_oid, col.typmod):
            out.append(ident(found.name))
        elif converted:
            out.append("NULL")
        else:  # no rewrite: the stored values are the pinned type's
            out.append(f"CAST({ident(found.name)} AS {type_name(col.type_oid, col.typmod)})")
    return out


def rewritten(then: TableAttributes | None, now: TableAttributes) -> bool:
    """Whether an ALTER TABLE rewrote the table between the two readings: its files changed
    while a live column was added or altered (module docstring)."""
    if then is None or then.storage == now.storage:
        return False
    before = {a.attnum: a.version for a in then.attributes}
    return any(before.get(a.attnum) != a.version for a in now.attributes if not a.dropped)
