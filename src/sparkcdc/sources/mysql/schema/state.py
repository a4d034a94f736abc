"""The log reader's view of table schemas: which tables are captured, their schemas at the
current point of the stream, the rows decoders that follow them (cached per table id and
schema_id), and the ``op='s'`` rows a DDL statement turns into.

At start the schemas come from the schema history at the start offset, else from the catalog
(then recorded there). Every DDL statement goes through the :class:`SchemaTracker`; each change
of a captured table is recorded in the history at the offset after the statement. The tracker
also follows tables outside the capture (a table renamed into it keeps its columns), which the
history does not hold, so a snapshot of the whole tracker is kept in memory after every DDL
statement: a reconnect rewinds to the snapshot at or before its resume offset (the history is
the fallback, and the only source after a process restart).

After an initial snapshot the history holds each table's schema as the snapshot read it
(:meth:`~sparkcdc.sources.port.Source.record_snapshot_schema`). Limit: schemas read from the
catalog at start otherwise are today's; a DDL on a captured table between the start offset and
that read is applied on top of them again (the rows decoder then stops with a clear error when
the column counts disagree). Start offsets close to "now" make this window small; a locked
schema snapshot would close it. What such a DDL did to the table's rows cannot be told from
today's schema either: its change asks for the table to be read again (the history keeps where
the log ended when each table was read from the catalog).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from typing import Any

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.event import SchemaRow
from sparkcdc.core.existing_rows import ExistingRows
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.binlog.tablemap import TableMap
from sparkcdc.sources.mysql.ddl.parser import DDLSyntaxError, parse
from sparkcdc.sources.mysql.ddl.statements import AlterTable
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.schema.history import SchemaHistory, Schemas
from sparkcdc.sources.mysql.schema.tracker import SchemaChange, SchemaTracker
from sparkcdc.sources.mysql.server.catalog import MySQLCatalog

log = logging.getLogger("sparkcdc.reader")


class SchemaState:
    """Captured tables and their schemas along the stream (see the module docstring)."""

    def __init__(self, source: SourceConfig, history: SchemaHistory) -> None:
        self.source = source
        self.history = history
        self._patterns = [re.compile(p) for p in source.tables]
        self._matches: dict[tuple[str, str], bool] = {}
        self.tracker = self._tracker({})
        self._snapshots: list[tuple[BinlogOffset, dict[str, Any]]] = []
        self._table_maps: dict[int, TableMap] = {}
        self._decoders: dict[tuple[int, str, bool], RowsDecoder] = {}
        self._unknown: set[tuple[str, str]] = set()
        self._sids: dict[int, tuple[TableSchema, str]] = {}
        self._read_at: dict[tuple[str, str], BinlogOffset] = {}  # schemas read this late
        self._loaded: dict[tuple[str, str], BinlogOffset] = {}  # since the last record
        # table id -> (table map, schema, answer of decoder()): valid while both are current
        self._hot: dict[
            tuple[int, bool], tuple[TableMap, TableSchema, tuple[TableMap, RowsDecoder, str]]
        ] = {}

    def captured(self, db: str, table: str) -> bool:
        """Whether ``db.table`` fully matches one of ``source.tables`` and none of
        ``source.tables_exclude`` (and the shadow tables of online schema change tools)."""
        hit = self._matches.get((db, table))
        if hit is None:
            name = str(TableName(db, table))
            hit = self._matches[(db, table)] = any(
                p.fullmatch(name) for p in self._patterns
            ) and not self.source.capture.excludes_table(name)
        return hit

    def _catalog(self) -> MySQLCatalog:
        return MySQLCatalog.of(self.source)

    def _load_one(self, db: str, table: str) -> TableSchema:
        """Today's schema of one table (a statement could not be followed), noting where the
        log ended when it was read (see :meth:`_read_too_late`)."""
        with self._catalog() as cat:
            schema = cat.load_schema(
                db, table, self.source.row_keys.get(str(TableName(db, table)), ())
            )
            self._loaded[(db, table)] = self._read_at[(db, table)] = cat.log_end()
            return schema

    def _tracker(self, schemas: Schemas) -> SchemaTracker:
        return SchemaTracker(dict(schemas), self.captured, self._load_one, self.source.row_keys)

    def load(self, start: BinlogOffset) -> list[SchemaRow]:
        """Schemas in force at ``start``; the rows announcing each captured table."""
        schemas = self.history.schemas_at(start)
        with self._catalog() as cat:
            if schemas is None:
                tables = cat.match_tables(
                    self.source.tables, exclude=self.source.capture.excluded_tables
                )
                cat.check_ready(sorted({db for db, _ in tables}))
                keys = self.source.row_keys
                schemas = {n: cat.load_schema(*n, keys.get(str(n), ())) for n in tables}
                self.history.record(start, schemas, dict.fromkeys(schemas, cat.log_end()))
            else:
                cat.check_ready()
                schemas = self._add_new_tables(cat, start, schemas)
        self.tracker = self._tracker(schemas)
        self._read_at = self.history.read_at()
        self._snapshots = [(start, self.tracker.to_json())]
        self._table_maps.clear()
        self._decoders.clear()
        self._hot.clear()
        return [
            (s.db, s.table, _json(s), None, _change("announce"), s.schema_id())
            for _, s in sorted(self.tracker.captured().items())
        ]

    def _add_new_tables(self, cat: MySQLCatalog, start: BinlogOffset, schemas: Schemas) -> Schemas:
        """``schemas`` plus the tables ``source.tables`` matches now that the history does not
        hold (the filter was widened between two runs): their current schemas, recorded at
        ``start``, so they are announced and their changes decoded from here on."""
        new = [
            t
            for t in cat.match_tables(
                self.source.tables, exclude=self.source.capture.excluded_tables
            )
            if t not in schemas
        ]
        if not new:
            return schemas
        cat.check_ready(sorted({db for db, _ in new}))
        keys = self.source.row_keys
        added: Schemas = {n: cat.load_schema(*n, keys.get(str(n), ())) for n in new}
        log.info(
            "tables new to source.tables since the last run: %s",
            ", ".join(map(str, sorted(added))),
        )
        schemas = {**schemas, **added}
        self.history.record(start, schemas, dict.fromkeys(added, cat.log_end()))
        return schemas

    def apply(
        self, default_db: str, sql: str, after: BinlogOffset, mysql: bool = False
    ) -> list[SchemaRow]:
        """Apply one statement found before ``after`` in a MariaDB (or ``mysql``) binlog; rows
        for the captured tables it changed (recorded in the history at ``after`` first, so a
        crash never loses a change)."""
        self.tracker.native_json = mysql
        previous = self.tracker.captured()
        changes = self.tracker.apply_ddl(default_db or None, sql)
        changes = self._read_too_late(changes, default_db, sql, after)
        self._snapshots = [*self._snapshots[-255:], (after, self.tracker.to_json())]
        if not changes:
            return []
        rows: list[SchemaRow] = []
        for c in changes:
            old = previous.get(c.old_name or (c.db, c.table))
            shown = c.schema or old
            extra: dict[str, Any] = {"from": str(TableName(*c.old_name))} if c.old_name else {}
            if c.existing:
                extra["existing"] = c.existing.to_json()
            rows.append(
                (
                    c.db,
                    c.table,
                    _json(c.schema),
                    _json(old),
                    _change(c.kind, **extra),
                    shown.schema_id() if shown else "",
                )
            )
            log.info("schema of %s changed (%s): %s", TableName(c.db, c.table), c.kind, _short(sql))
        self.history.record(after, self.tracker.captured(), self._loaded)
        self._loaded = {}
        return rows

    def _read_too_late(
        self, changes: list[SchemaChange], default_db: str, sql: str, after: BinlogOffset
    ) -> list[SchemaChange]:
        """``changes`` where a table's schema was read from the catalog after this statement
        ran (the stream's start was before it): the schema holds the statement already, so
        what it did to the rows cannot be told, and the table is read again. An ALTER that
        then changes nothing tracked is reported all the same."""
        late = {n for n, at in self._read_at.items() if after <= at}
        if not late:
            return changes
        why = ExistingRows(resnapshot="the table's schema was read from the catalog after this "
                           "statement ran, so what it did to the rows is not known")  # fmt: skip
        out = [
            replace(c, existing=why) if (c.db, c.table) in late and c.kind in _ALTERING else c
            for c in changes
        ]
        try:
            stmt = parse(sql, default_db or None)
        except DDLSyntaxError:
            return out
        name = stmt.name if isinstance(stmt, AlterTable) else None
        schema = self.tracker.get(*name) if name is not None else None
        if name in late and schema is not None and not any((c.db, c.table) == name for c in out):
            out.append(SchemaChange("alter", *name, schema, None, sql, why))
        return out

    def has_table_map(self, table_id: int) -> bool:
        """Whether a TABLE_MAP event named ``table_id`` (since the stream opened)."""
        return table_id in self._table_maps

    def table_map(self, tm: TableMap) -> None:
        """A TABLE_MAP event: decoders of an id whose map changed are dropped."""
        old = self._table_maps.get(tm.table_id)
        if old is not tm and old != tm:
            self._table_maps[tm.table_id] = tm
            if old is not None:
                self._hot.pop((tm.table_id, False), None)
                self._hot.pop((tm.table_id, True), None)
                for key in [k for k in self._decoders if k[0] == tm.table_id]:
                    del self._decoders[key]

    def decoder(
        self, table_id: int, typed: bool = False
    ) -> tuple[TableMap, RowsDecoder, str] | None:
        """(table map, decoder, schema_id) for rows of ``table_id``; None if not captured.
        Decoders are cached per (table id, schema_id, ``typed``: typed row images)."""
        tm = self._table_maps.get(table_id)
        hot = self._hot.get((table_id, typed))
        if hot is not None and hot[0] is tm and self.tracker.get(tm.db, tm.table) is hot[1]:
            return hot[2]  # the same table map and schema as last time
        if tm is None or not self.captured(tm.db, tm.table):
            return None
        schema = self.tracker.get(tm.db, tm.table)
        if schema is None:
            if (tm.db, tm.table) not in self._unknown:
                self._unknown.add((tm.db, tm.table))
                log.warning(
                    "rows of %s are skipped: its schema is unknown (the statement "
                    "that created it could not be read)",
                    TableName(tm.db, tm.table),
                )
            return None
        known = self._sids.get(id(schema))
        if known is None or known[0] is not schema:  # schema_id() hashes the schema's JSON
            known = self._sids[id(schema)] = (schema, schema.schema_id())
        sid = known[1]
        decoder = self._decoders.get((table_id, sid, typed))
        if decoder is None:
            decoder = self._decoders[(table_id, sid, typed)] = RowsDecoder(tm, schema, typed)
        found = self._hot[(table_id, typed)] = (tm, schema, (tm, decoder, sid))
        return found[2]

    def rewind(self, offset: BinlogOffset) -> None:
        """Schemas as they were at ``offset`` (a reconnect resumes there)."""
        self._table_maps.clear()
        self._decoders.clear()
        self._hot.clear()
        known = [(o, snap) for o, snap in self._snapshots if o <= offset]
        if known:
            self.tracker = SchemaTracker.from_json(
                known[-1][1], self.captured, self._load_one, self.source.row_keys
            )
            self._snapshots = [known[-1]]  # later ones come back as the log is read again
            return
        schemas = self.history.schemas_at(offset)
        if schemas is not None:
            self.tracker = self._tracker(schemas)


_ALTERING = ("alter", "unknown")  # a CREATE's rows are in the log, a RENAME is read again


def _json(schema: TableSchema | None) -> str | None:
    return None if schema is None else json.dumps(schema.to_json(), separators=(",", ":"))


def _change(kind: str, **extra: Any) -> str:
    return json.dumps({"kind": kind, **extra}, separators=(",", ":"))


def _short(sql: str, limit: int = 200) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
