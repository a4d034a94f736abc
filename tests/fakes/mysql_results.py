"""The text-protocol answers of the MySQL 8 test primary (``tests/fakes/mysql_primary.py``).

A result set is the column count (length-encoded), one ColumnDefinition41 per column (catalog
``def``, schema, table, org_table, name, org_name as length-encoded strings, 0x0c, charset u16,
length u32, type u8, flags u16, decimals u8, 2 filler bytes), an EOF packet unless the client
negotiated CLIENT_DEPRECATE_EOF, one packet per row (length-encoded strings, 0xfb for NULL), and
an EOF packet (or an OK packet with header 0xfe). :class:`Answers` maps the statements this
project, PyMySQL and a replica send onto such answers, MySQL 8's way.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.cases.mysql8.events import packed

if TYPE_CHECKING:
    from tests.fakes.mysql_primary import MySQLPrimary

T_LONGLONG, T_VAR_STRING = 8, 253
_NUMERIC_FIELDS = {"NUMERIC_PRECISION", "NUMERIC_SCALE", "CHARACTER_MAXIMUM_LENGTH",
                   "CHARACTER_OCTET_LENGTH", "DATETIME_PRECISION", "ORDINAL_POSITION",
                   "SEQ_IN_INDEX", "NON_UNIQUE", "TABLE_ROWS", "File_size", "Position",
                   "@@GLOBAL.server_id", "1"}  # fmt: skip
STATUS_AUTOCOMMIT = 0x0002


lenenc = packed  # the protocol's length-encoded integer is the binlog's packed integer


def lenenc_str(raw: bytes) -> bytes:
    return lenenc(len(raw)) + raw


def ok_packet(header: int = 0, affected: int = 0) -> bytes:
    return bytes([header]) + lenenc(affected) + lenenc(0) + struct.pack("<HH", STATUS_AUTOCOMMIT, 0)


def eof_packet() -> bytes:
    return b"\xfe" + struct.pack("<HH", 0, STATUS_AUTOCOMMIT)


def err_packet(code: int, message: str, state: str = "HY000") -> bytes:
    return b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode()


@dataclass
class Result:
    """A result set: column names, rows; numeric columns are sent as BIGINT, others as text."""

    columns: Sequence[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def packets(self, deprecate_eof: bool) -> list[bytes]:
        out = [lenenc(len(self.columns))]
        for i, name in enumerate(self.columns):
            values = [r[i] for r in self.rows if r[i] is not None]
            numeric = (
                name in _NUMERIC_FIELDS
                or bool(values)
                and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
            )
            kind, charset, length = (T_LONGLONG, 63, 21) if numeric else (T_VAR_STRING, 255, 1024)
            out.append(
                lenenc_str(b"def") + lenenc_str(b"") * 3 + lenenc_str(name.encode()) * 2
                + b"\x0c" + struct.pack("<HIBHB", charset, length, kind, 0, 0) + b"\0\0"
            )  # fmt: skip
        if not deprecate_eof:
            out.append(eof_packet())
        for row in self.rows:
            out.append(b"".join(b"\xfb" if v is None else lenenc_str(_text(v)) for v in row))
        out.append(ok_packet(0xFE) if deprecate_eof else eof_packet())
        return out


def _text(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


class SqlError(Exception):
    """An ERR packet to answer with."""

    def __init__(self, code: int, message: str, state: str = "HY000") -> None:
        super().__init__(message)
        self.code, self.message, self.state = code, message, state


def syntax_error(near: str) -> SqlError:
    return SqlError(1064, "You have an error in your SQL syntax; check the manual that corresponds "
                    f"to your MySQL server version for the right syntax to use near '{near}' at "
                    "line 1", "42000")  # fmt: skip


def _literal(text: str) -> Any:
    text = text.strip()
    if text[:1] in "'\"":
        body = text[1:-1]
        return re.sub(r"\\(.)|''", lambda m: m.group(1) or "'", body)
    try:
        return int(text)
    except ValueError:
        return text


def _split(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` (a regex) outside quotes."""
    parts, quote, start, i = [], "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            m = re.compile(sep, re.I).match(text, i)
            if m and m.end() > i:
                parts.append(text[start:i])
                start = i = m.end()
                continue
        i += 1
    return [*parts, text[start:]]


def _conditions(where: str) -> list[tuple[str, list[Any]]]:
    out = []
    for part in _split(where, r"\s+AND\s+"):
        m = re.match(r"^\s*(\w+)\s*(=|IN)\s*(.+?)\s*$", part, re.I | re.S)
        if not m:
            raise syntax_error(part.strip())
        value = m.group(3)
        items = _split(value.strip()[1:-1], ",") if m.group(2).upper() == "IN" else [value]
        out.append((m.group(1).upper(), [_literal(v) for v in items]))
    return out


_SELECT_IS = re.compile(
    r"^SELECT\s+(?P<cols>.+?)\s+FROM\s+information_schema\.(?P<table>\w+)"
    r"(?:\s+WHERE\s+(?P<where>.+?))?(?:\s+ORDER\s+BY\s+(?P<order>\w+))?$",
    re.I | re.S,
)


class Answers:
    """What the primary answers to each statement (see the module docstring)."""

    def __init__(self, primary: MySQLPrimary) -> None:
        self.p = primary
        self.routes: list[tuple[re.Pattern[str], Callable[[re.Match[str], dict[str, Any]],
                                                           Result | None]]] = [
            (re.compile(p, re.I | re.S), fn) for p, fn in (
                (r"^SET\s+(?P<rest>.+)$", self._set),
                (r"^(START\s+TRANSACTION.*|BEGIN|COMMIT|ROLLBACK)$", lambda m, s: None),
                (r"^SELECT\s+VERSION\(\)$", lambda m, s: Result(["VERSION()"],
                                                                [(self.p.version,)])),
                (r"^SELECT\s+CURRENT_USER\(\)$", lambda m, s: Result(
                    ["CURRENT_USER()"], [(f"{s['user']}@%",)])),
                (r"^SELECT\s+(?P<list>@@.+)$", self._variables_select),
                (r"^SHOW\s+(?:GLOBAL\s+|SESSION\s+)?VARIABLES(?:\s+(?P<filter>.+))?$",
                 self._show_variables),
                (r"^SHOW\s+GRANTS(?:\s+FOR\s+.+)?$", lambda m, s: Result(
                    [f"Grants for {s['user']}@%"], [(g,) for g in self.p.grants_of(s["user"])])),
                (r"^SHOW\s+(?:BINARY|MASTER)\s+LOGS$", self._binary_logs),
                (r"^SHOW\s+MASTER\s+STATUS$", self._master_status),
                (r"^SHOW\s+BINARY\s+LOG\s+STATUS$", self._binary_log_status),
                (_SELECT_IS.pattern, self._information_schema),
            )
        ]  # fmt: skip

    def answer(self, sql: str, session: dict[str, Any]) -> Result | None:
        """The result of ``sql`` (None: an OK packet); SqlError for an ERR packet."""
        text = " ".join(sql.strip().rstrip(";").split())
        for pattern, fn in self.routes:
            m = pattern.match(text)
            if m:
                return fn(m, session)
        raise syntax_error(text[:80])

    # -- statements ---------------------------------------------------------------------

    def _set(self, m: re.Match[str], session: dict[str, Any]) -> None:
        for part in _split(m.group("rest"), ","):
            a = re.match(r"^\s*@(?!@)`?(\w+)`?\s*(?::?=)\s*(.+?)\s*$", part, re.S)
            if a:
                value = a.group(2)
                ref = re.match(r"^@@(?:global\.|session\.)?(\w+)$", value, re.I)
                resolved = self.p.variable(ref.group(1)) if ref else _literal(value)
                session["vars"][a.group(1).lower()] = resolved

    def _variables_select(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        names, values = [], []
        for item in _split(m.group("list"), ","):
            v = re.match(r"^\s*(@@(?:GLOBAL\.|SESSION\.)?(\w+))(?:\s+AS\s+(\w+))?\s*$", item, re.I)
            if not v:
                raise syntax_error(item.strip())
            value = self.p.variable(v.group(2))
            if value is None:
                raise SqlError(1193, f"Unknown system variable '{v.group(2)}'")
            names.append(v.group(3) or v.group(1))
            values.append(value)
        return Result(names, [tuple(values)])

    def _show_variables(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        found = self.p.variables_now()
        wanted: Callable[[str], bool] = lambda name: True  # noqa: E731
        flt = m.group("filter") or ""
        like = re.match(r"^LIKE\s+(.+)$", flt, re.I)
        where = re.match(r"^WHERE\s+(.+)$", flt, re.I)
        if like:
            rx = re.escape(_literal(like.group(1))).replace("%", ".*").replace("_", ".")
            wanted = lambda name: re.fullmatch(rx, name, re.I) is not None  # noqa: E731
        elif where:
            conds = _conditions(where.group(1))
            names = {str(v).lower() for c, vs in conds if c == "VARIABLE_NAME" for v in vs}
            wanted = lambda name: name.lower() in names  # noqa: E731
        rows = [(k, v) for k, v in sorted(found.items()) if wanted(k)]
        return Result(["Variable_name", "Value"], rows)

    def _monitor(self, session: dict[str, Any]) -> None:
        self.p.require(session["user"], "SUPER", "REPLICATION CLIENT")

    def _binary_logs(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        self._monitor(session)
        if not self.p.binlog_on:
            raise SqlError(1381, "You are not using binary logging")
        rows = [(name, size, "No") for name, size in self.p.file_sizes()]
        return Result(["Log_name", "File_size", "Encrypted"], rows)

    def _status(self) -> Result:
        cols = ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
        if not self.p.binlog_on:
            return Result(cols)
        name, size = self.p.file_sizes()[-1]
        return Result(cols, [(name, size, "", "", self.p.gtid_executed().text(",\n"))])

    def _master_status(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        if self.p.version_tuple >= (8, 4):
            raise syntax_error("MASTER STATUS")
        self._monitor(session)
        return self._status()

    def _binary_log_status(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        if self.p.version_tuple < (8, 2):
            raise syntax_error("BINARY LOG STATUS")
        self._monitor(session)
        return self._status()

    def _information_schema(self, m: re.Match[str], session: dict[str, Any]) -> Result:
        table = m.group("table").upper()
        rows = self.p.catalog(table)
        if rows is None:
            raise SqlError(1109, f"Unknown table '{m.group('table')}' in information_schema")
        for column, allowed in _conditions(m.group("where") or ""):
            if rows and column not in rows[0]:
                raise SqlError(1054, f"Unknown column '{column}' in 'where clause'")
            rows = [r for r in rows if any(_same(r.get(column), a) for a in allowed)]
        if m.group("order"):
            order = m.group("order").upper()
            rows = sorted(rows, key=lambda r: r.get(order) or 0)
        names = [n.strip() for n in _split(m.group("cols"), ",")]
        out = []
        for r in rows:
            values = []
            for n in names:
                if n.isdigit():
                    values.append(int(n))
                elif n.upper() in r:
                    values.append(r[n.upper()])
                else:
                    raise SqlError(1054, f"Unknown column '{n}' in 'field list'")
            out.append(tuple(values))
        return Result(names, out)


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, str) and isinstance(wanted, str):
        return value.lower() == wanted.lower()  # information_schema compares without case
    return bool(value == wanted)
