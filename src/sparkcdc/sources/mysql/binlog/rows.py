"""Rows events -> change tuples ``(op, key_json, before, after)``: row images as JSON text, or
typed (a tuple of every column's typed value, :mod:`sparkcdc.core.images`).

A WRITE/UPDATE/DELETE_ROWS event (v1: 23/24/25 as MariaDB writes them, v2: 30/31/32 as MySQL
8 writes them) is laid out as

    table id u48, flags u16, [v2: extra-data length u16 counting itself, extra data]
    column count (packed int), columns-present bitmap, [UPDATE: after-image present bitmap]
    rows: null bitmap over the *present* columns, then each present non-NULL value back to back
          (UPDATE: the before image, then the after image)

Decoding is the hot path, so :class:`RowsDecoder` generates one Python function per
(event kind, present bitmaps) of its table with ``exec``: runs of fixed-width columns are read
by one precompiled ``struct`` call, values are turned into JSON text in place, and each row's
JSON object is one f-string over pre-escaped ``"column":`` prefixes; a typed image is one
tuple. A second variant of each image is generated for rows with NULLs, where null bits decide
which values are present.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

from sparkcdc.core.errors import SourceError
from sparkcdc.core.event import LogChange
from sparkcdc.core.images import ColumnarRows
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog import native
from sparkcdc.sources.mysql.binlog.native import decode_event, native_layout
from sparkcdc.sources.mysql.binlog.rowcode import ColumnCode, Namespace, column_code, plain
from sparkcdc.sources.mysql.binlog.tablemap import TableMap, read_packed_int
from sparkcdc.sources.mysql.binlog.typedvalues import key_text

_RowsFn = Callable[[bytes, int, int], tuple[list[LogChange] | ColumnarRows, int]]


_MAX_LAYOUTS = 512
_LAYOUTS: dict[tuple[bytes, tuple[int, ...], tuple[bool, ...], TableSchema, bool, bool], _Layout]
_LAYOUTS = {}


def _indent(lines: list[str], n: int = 4) -> list[str]:
    return [" " * n + line for line in lines]


class RowsDecoder:
    """Decodes the rows events of one table map with the tracked schema of that table.

    The table map gives each column's binlog type and metadata; the schema gives names, the
    key, signedness, charsets and ENUM/SET members (encodings: :mod:`sparkcdc.core.schema`).
    ``key_json`` is the JSON array of the ``schema.key`` values taken from the after image
    (the before image for deletes, or when a minimal after image lacks them); None when the
    schema has no key. Images hold only the columns the event marks present.
    The generated code is shared by every decoder of the same layout (types, metadata, NULL
    flags and schema; the table id does not matter), so building a decoder for each TABLE_MAP
    event, which MariaDB writes before every transaction's rows, costs a dictionary lookup.
    With ``typed`` the images are tuples of every column's typed value (None for a column the
    event leaves out), the key still JSON text.
    """

    def __init__(self, table_map: TableMap, schema: TableSchema, typed: bool = False) -> None:
        cross_check(table_map, schema)
        self.table_map = table_map
        self.schema = schema
        self.typed = typed
        compiled = typed and native.available()
        key = (table_map.column_types, table_map.column_meta, table_map.nullable, schema, typed,
               compiled)  # fmt: skip
        layout = _LAYOUTS.get(key)
        if layout is None:
            if len(_LAYOUTS) >= _MAX_LAYOUTS:
                del _LAYOUTS[next(iter(_LAYOUTS))]
            layout = _LAYOUTS[key] = _Layout(table_map, schema, typed, compiled)
        self._layout = layout
        self.where = layout.where
        self.ncols = layout.ncols

    def decode(
        self, event_type: int, data: bytes, start: int, end: int
    ) -> list[LogChange] | ColumnarRows:
        """Decode ``data[start:end]`` (the rows event after the common header, no checksum)."""
        kind = _KINDS.get(event_type)
        if kind is None:  # compressed ones are inflated first (binlog.compressed)
            raise SourceError(f"binlog event type {event_type} is not a rows event")
        compiled = self._layout.compiled
        if compiled is not None:
            try:
                rows, stop = decode_event(
                    compiled, kind, event_type >= ev.WRITE_ROWS_V2, data, start, end
                )
            except ValueError as exc:
                raise self._misfit(exc) from exc
            if stop != end:
                raise self._misfit(None)
            return rows
        p = start + 8
        if event_type >= ev.WRITE_ROWS_V2:
            p += data[p] | data[p + 1] << 8
        ncols, p = read_packed_int(data, p)
        if ncols != self.ncols:
            raise SourceError(
                f"a rows event of {self.where} has {ncols} columns but its table map has "
                f"{self.ncols}",
                table=self.where,
            )
        nbm = (ncols + 7) // 8
        present = bytes(data[p : p + nbm])
        p += nbm
        present2 = b""
        if kind == "u":
            present2 = bytes(data[p : p + nbm])
            p += nbm
        fn = self._layout.function(kind, present, present2)
        try:
            changes, stop = fn(data, p, end)
        except (struct.error, IndexError, ValueError, KeyError) as exc:
            raise self._misfit(exc) from exc
        if stop != end:
            raise self._misfit(None)
        return changes

    def _misfit(self, cause: Exception | None) -> SourceError:
        return SourceError(
            f"a rows event of {self.where} does not match its table map and schema "
            f"({cause or 'the row images do not end where the event ends'})",
            table=self.where,
        )


def _no_columns(buf: bytes, p: int, end: int) -> tuple[list[LogChange], int]:
    if p < end:
        raise ValueError("a row image holds no column")
    return [], p


_KINDS = {
    **{t: "c" for t in ev.WRITE_ROWS},
    **{t: "u" for t in ev.UPDATE_ROWS},
    **{t: "d" for t in ev.DELETE_ROWS},
}


def cross_check(table_map: TableMap, schema: TableSchema) -> None:
    """The column names and integer signedness the table map's optional metadata holds (when
    the server writes it) are the tracked schema's; else the schema is out of date."""
    tracked = [c.name for c in schema.columns]
    named = list(table_map.column_names)
    if named and [n.lower() for n in named] != [n.lower() for n in tracked]:
        raise SourceError(
            f"the binlog names the columns of {schema.name} {named} but the tracked schema has "
            f"{tracked}; the schema is out of date (a DDL was missed): restart from a new "
            "snapshot (startup: initial)",
            table=schema.name,
        )
    for i, unsigned in table_map.unsigned:
        col = schema.columns[i]
        if unsigned != col.unsigned:
            sign = "UNSIGNED" if unsigned else "SIGNED"
            raise SourceError(
                f"the binlog has column {col.name} of {schema.name} as {sign} but the tracked "
                "schema does not; the schema is out of date (a DDL was missed): restart from a "
                "new snapshot (startup: initial)",
                table=schema.name,
            )


class _Layout:
    """The generated decode functions of one table layout, per (kind, present bitmaps)."""

    def __init__(
        self, table_map: TableMap, schema: TableSchema, typed: bool, compiled: bool
    ) -> None:
        self.where = schema.name
        self.typed = typed
        self.table_map = table_map
        self.ncols = len(table_map.column_types)
        if self.ncols != len(schema.columns):
            hidden = (
                ", or the server logs columns the table does not show (a functional index's "
                "hidden column, which early MySQL 8.0 releases logged)"
                if self.ncols > len(schema.columns)
                else ""
            )
            raise SourceError(
                f"the binlog has {self.ncols} columns for {self.where} but the tracked schema "
                f"has {len(schema.columns)}; the schema is out of date (a DDL was missed){hidden}",
                table=self.where,
            )
        self._ns = Namespace()
        self._codes: list[ColumnCode] = [
            column_code(t, meta, col, self.where, self._ns, typed)
            for t, meta, col in zip(
                table_map.column_types, table_map.column_meta, schema.columns, strict=True
            )
        ]
        lower = [c.name.lower() for c in schema.columns]
        self._key = [lower.index(k.lower()) for k in schema.key]
        texts = [key_text(c) if typed else None for c in schema.columns]
        self._key_text = [None if fn is None else self._ns.add("key", fn) for fn in texts]
        self.compiled = native_layout(table_map, schema, self._key, texts) if compiled else None
        self._names = [
            json.dumps(c.name).replace("{", "{{").replace("}", "}}") for c in schema.columns
        ]
        self._structs: dict[str, str] = {}
        self._fns: dict[tuple[str, bytes, bytes], _RowsFn] = {}

    def function(self, kind: str, present: bytes, present2: bytes) -> _RowsFn:
        fn = self._fns.get((kind, present, present2))
        if fn is None:
            fn = self._fns[(kind, present, present2)] = self._build(kind, present, present2)
        return fn

    def _struct(self, fmt: str) -> str:
        name = self._structs.get(fmt)
        if name is None:
            name = self._structs[fmt] = self._ns.add("S", struct.Struct("<" + fmt).unpack_from)
        return name

    def _run(self, run: list[int], pre: str) -> list[str]:
        """Read a run of fixed-width columns with one struct call."""
        if not run:
            return []
        codes = [self._codes[i] for i in run]
        fields = [
            [f"{pre}{i}"] if c.post is plain else [f"{pre}f{i}_{j}" for j in range(c.nfields)]
            for i, c in zip(run, codes, strict=True)
        ]
        flat = [f for fs in fields for f in fs]
        fn = self._struct("".join(c.fmt for c in codes))
        lines = [f"{', '.join(flat)}, = {fn}(buf, p)", f"p += {sum(c.width for c in codes)}"]
        for i, c, fs in zip(run, codes, fields, strict=True):
            if c.post is not None and c.post is not plain:
                lines += c.post(fs, f"{pre}{i}")
        return lines

    def _values(self, cols: list[int], pre: str, nulls: bool) -> list[str]:
        """Statements reading the present columns; with ``nulls`` the null bits are checked."""
        lines: list[str] = []
        run: list[int] = []
        for k, i in enumerate(cols):
            code = self._codes[i]
            check = nulls and self.table_map.nullable[i]
            if code.read is None and not check:
                run.append(i)
                continue
            lines += self._run(run, pre)
            run = []
            one = self._run([i], pre) if code.read is None else code.read(f"{pre}{i}")
            if check:
                null = "None" if self.typed else "'null'"
                lines += [f"if nb & {1 << k}:", f"    {pre}{i} = {null}", "else:", *_indent(one)]
            else:
                lines += one
        return lines + self._run(run, pre)

    def _columns(self, present: bytes) -> list[int]:
        """The columns a present bitmap names."""
        bits = int.from_bytes(present, "little")
        return [i for i in range(self.ncols) if bits >> i & 1]

    def _image(self, present: bytes, pre: str) -> tuple[list[str], str, str | None]:
        """Code reading one row image; the f-string of its JSON object; of its key (or None)."""
        cols = self._columns(present)
        nb_len = (len(cols) + 7) // 8
        if nb_len == 1:
            lines = ["nb = buf[p]", "p += 1"]
        else:
            lines = [f"nb = int.from_bytes(buf[p:p + {nb_len}], 'little')", f"p += {nb_len}"]
        fast = self._values(cols, pre, nulls=False)
        if any(self.table_map.nullable[i] for i in cols):
            lines += ["if nb:", *_indent(self._values(cols, pre, nulls=True)), "else:"]
            lines += _indent(fast)
        else:
            lines += fast
        if self.typed:
            values = [f"{pre}{i}" if i in cols else "None" for i in range(self.ncols)]
            row = "(" + ", ".join(values) + ",)"
        else:
            obj = ",".join(f"{self._names[i]}:{{{pre}{i}}}" for i in cols)
            row = "f" + repr("{{" + obj + "}}")
        key = None
        if self._key and all(i in cols for i in self._key):
            texts = [self._key_text[i] for i in self._key]
            parts = [
                f"{{{pre}{i}}}" if fn is None else f"{{{fn}({pre}{i})}}"
                for i, fn in zip(self._key, texts, strict=True)
            ]
            key = "f" + repr("[" + ",".join(parts) + "]")
        return lines, row, key

    def _build(self, kind: str, present: bytes, present2: bytes) -> _RowsFn:
        """Generate and compile the decode loop for one event kind and present bitmaps (rows
        of no column would take no bytes, and the loop would never end: refused)."""
        if not self._columns(present) and not (kind == "u" and self._columns(present2)):
            return _no_columns
        body, row_a, key_a = self._image(present, "a")
        if kind == "u":
            lines_b, row_b, key_b = self._image(present2, "b")
            body += lines_b
            body.append(f"app(('u', {key_b or key_a}, {row_a}, {row_b}))")
        elif kind == "c":
            body.append(f"app(('c', {key_a}, None, {row_a}))")
        else:
            body.append(f"app(('d', {key_a}, {row_a}, None))")
        src = "\n".join(
            [
                "def _rows(buf, p, end):",
                "    out = []",
                "    app = out.append",
                "    while p < end:",
                *_indent(body, 8),
                "    return out, p",
            ]
        )
        env: dict[str, Any] = dict(self._ns.env)
        exec(compile(src, f"<rows {self.where} {kind}>", "exec"), env)  # noqa: S102
        fn: _RowsFn = env["_rows"]
        fn.__doc__ = src
        return fn
