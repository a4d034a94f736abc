"""A protocol-level MySQL 8 primary for the tests: no MySQL server can be installed here, so this
speaks the documented wire format itself (MySQL's client/server protocol: the v10 handshake, the
SSL request, ``caching_sha2_password``'s fast and full authentication, ``mysql_native_password``
through an auth switch, ``COM_QUERY`` with text result sets, ``COM_BINLOG_DUMP`` and
``COM_BINLOG_DUMP_GTID``), answering the catalog's statements (:mod:`tests.fakes.mysql_results`)
and serving binlog files built byte by byte (:mod:`tests.cases.mysql8`; the login:
:mod:`tests.fakes.mysql_wire`; the dump: :mod:`tests.fakes.mysql_dump`).

``MySQLPrimary(user, password)`` serves an empty binlog of its own writer; ``binlog=`` a
:class:`~tests.cases.mysql8.binlog.BinlogWriter`'s files (:meth:`transaction`, :meth:`ddl`,
:meth:`rotate` and :meth:`append` write to it while dumps are open); ``files=`` a dict of file
name -> events (an item may hold several whole events back to back). A list of raw ``events``
(the old form) is sent as it is to any COM_BINLOG_DUMP, then EOF.
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import struct
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.cases.mysql8 import events as ev
from tests.cases.mysql8.binlog import BinlogWriter, Change, Gtid
from tests.cases.mysql8.columns import Table
from tests.cases.mysql8.gtids import GtidSet
from tests.fakes.mysql_dump import FATAL, GTIDS, Dump, gtid_of
from tests.fakes.mysql_frames import FramedFile, split
from tests.fakes.mysql_results import Answers, SqlError, err_packet
from tests.fakes.mysql_wire import OK, SHA2, Link, login

DEFAULT_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


class MySQLPrimary:
    """A MySQL 8 primary on 127.0.0.1 (see the module docstring). ``cached``: the main account's
    password hash is in the server's cache (caching_sha2 fast path); ``accounts``: more users,
    ``{user: (password, plugin)}``; ``require_tls``: ``--require_secure_transport=ON``;
    ``variables`` override the global variables. ``logins`` records how each login went,
    ``queries`` every statement received, ``gtid_dumps`` the set of each GTID dump."""

    def __init__(
        self,
        user: str = "cdc",
        password: str = "cdc-pw",
        events: Sequence[bytes] = (),
        *,
        binlog: BinlogWriter | None = None,
        files: dict[str, list[bytes]] | None = None,
        tables: Iterable[Table] = (),
        version: str = "8.0.36",
        server_id: int = 1,
        server_uuid: str | None = None,
        cached: bool = True,
        cert: Path | None = None,
        key: Path | None = None,
        require_tls: bool = False,
        accounts: dict[str, tuple[str, str]] | None = None,
        grants: Sequence[str] | None = None,
        variables: dict[str, Any] | None = None,
        heartbeat_v2: bool = False,
    ) -> None:
        self.user, self.password, self.events, self.cached = user, password, events, cached
        self.version, self.server_id, self.heartbeat_v2 = version, server_id, heartbeat_v2
        self.version_tuple = tuple(int(x) for x in version.split("-")[0].split(".")[:2])
        if files is None and binlog is None:
            binlog = BinlogWriter(version=version, server_id=server_id)
        self.binlog = binlog
        self.files: dict[str, list[bytes]] = binlog.files if binlog is not None else files or {}
        self.tables = list(tables)
        self.accounts = {user: (password, SHA2), **(accounts or {})}
        self.grants = (
            list(grants)
            if grants is not None
            else [
                "GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `{user}`@`%`"
            ]
        )
        self._uuid = server_uuid
        self.require_tls = require_tls
        self.tls: ssl.SSLContext | None = None
        if cert is not None:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(cert, key)
        elif require_tls:
            raise ValueError("require_tls needs a certificate (cert=, key=)")
        self.overrides = {k.lower(): v for k, v in (variables or {}).items()}
        self.logins: list[str] = []
        self.queries: list[str] = []
        self.gtid_dumps: list[str] = []  # the GTID set of each COM_BINLOG_DUMP_GTID, as text
        self.changed = threading.Condition()
        self.closed = False
        self._answers = Answers(self)
        self._sockets: set[socket.socket] = set()
        self._sizes: dict[str, tuple[int, int]] = {}
        self._frames: dict[str, FramedFile] = {}
        self._gtids: dict[str, tuple[int, GtidSet]] = {}
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = "127.0.0.1", self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    # -- life ------------------------------------------------------------------------------

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        self._listener.close()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def __enter__(self) -> MySQLPrimary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing the binlog while dumps are open --------------------------------------------

    def _writer(self) -> BinlogWriter:
        if self.binlog is None:
            raise RuntimeError("this primary serves fixed files; give it binlog= to write")
        return self.binlog

    def transaction(self, changes: Sequence[Change], gtid: Gtid = None, compressed: bool = False,
                    timestamp: float | None = None) -> list[bytes]:  # fmt: skip
        with self.changed:
            out = self._writer().transaction(changes, gtid, compressed, timestamp)
            self.changed.notify_all()
        return out

    def ddl(self, gtid: Gtid, db: str, sql: str) -> list[bytes]:
        with self.changed:
            out = self._writer().ddl(gtid, db, sql)
            self.changed.notify_all()
        return out

    def rotate(self, name: str | None = None) -> str:
        """Close the last file with a ROTATE and start the next one."""
        with self.changed:
            name = self._writer().rotate(name)
            self.changed.notify_all()
        return name

    def append(self, events: Iterable[bytes]) -> None:
        """Add whole events (their positions are the caller's) to the last file."""
        with self.changed:
            if self.binlog is not None:
                self.binlog.append(events)
            else:
                self.files[self.file_names()[-1]].extend(events)
            self.changed.notify_all()

    def notify(self) -> None:
        """Wake the open dumps after the served files changed behind the primary's back."""
        with self.changed:
            self.changed.notify_all()

    # -- what the answers and dumps read ----------------------------------------------------

    @property
    def binlog_on(self) -> bool:
        return str(self.variable("log_bin")).upper() in ("ON", "1")

    def server_uuid(self) -> str:
        if self._uuid is None:  # the source of the first GTID served, once there is one
            found = next(iter(self.gtid_executed().spans), None)
            if found is None:
                return DEFAULT_UUID
            self._uuid = found
        return self._uuid

    def variables_now(self) -> dict[str, Any]:
        binlog = self.binlog
        found: dict[str, Any] = {
            "version": self.version, "version_comment": "MySQL Community Server - GPL",
            "server_id": self.server_id, "log_bin": "ON", "binlog_format": "ROW",
            "binlog_row_image": "FULL", "gtid_mode": "ON", "enforce_gtid_consistency": "ON",
            "binlog_row_metadata": binlog.row_metadata if binlog else "FULL",
            "binlog_checksum": "CRC32" if binlog is None or binlog.checksum else "NONE",
            "binlog_transaction_compression": "OFF", "binlog_row_value_options": "",
            "binlog_expire_logs_seconds": "2592000", "binlog_encryption": "OFF",
            "log_bin_basename": "/var/lib/mysql/binlog", "max_allowed_packet": "67108864",
            "time_zone": "SYSTEM", "system_time_zone": "UTC", "lower_case_table_names": "0",
            "sql_mode": "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                        "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
            "character_set_server": "utf8mb4", "collation_server": "utf8mb4_0900_ai_ci",
            "transaction_isolation": "REPEATABLE-READ", "autocommit": "ON",
            "require_secure_transport": "ON" if self.require_tls else "OFF",
            "sql_require_primary_key": "OFF", "server_uuid": self.server_uuid(),
        }  # fmt: skip
        found.update(self.overrides)
        if self.files:
            found["gtid_executed"] = self.gtid_executed().text(",\n")
            found["gtid_purged"] = self.previous_gtids(self.file_names()[0]).text(",\n")
        return found

    def variable(self, name: str) -> Any:
        name = name.lower()
        if name in ("gtid_executed", "gtid_purged", "server_uuid"):
            return self.variables_now().get(name, "")
        return self.overrides.get(name, self.variables_now().get(name))

    def grants_of(self, user: str) -> list[str]:
        return [g.replace("{user}", user) for g in self.grants]

    def require(self, user: str, *privileges: str) -> None:
        """SqlError 1227 unless ``user``'s global grants hold one of ``privileges``."""
        held: set[str] = set()
        for grant in self.grants_of(user):
            m = re.match(r"^GRANT\s+(.+?)\s+ON\s+\*\.\*\s+TO\s", grant, re.I)
            if m:
                held |= {" ".join(p.split()).upper() for p in m.group(1).split(",")}
        if not held & {*privileges, "ALL PRIVILEGES", "ALL"}:
            raise SqlError(
                1227,
                "Access denied; you need (at least one of) the "
                f"{', '.join(privileges)} privilege(s) for this operation",
                "42000",
            )

    def file_names(self) -> list[str]:
        return list(self.files)

    def file_size(self, name: str) -> int:
        items = self.files[name]
        count, size = self._sizes.get(name, (0, 4))
        if count != len(items):
            size += sum(len(x) for x in items[count:])
            self._sizes[name] = (len(items), size)
        return size

    def framed(
        self, name: str, pos: int, seq: int, chunk: int
    ) -> tuple[Iterator[bytes], int, int] | None:
        """File ``name``'s events from ``pos`` on as dump packets numbered from ``seq``: (the
        packets in pieces of ``chunk`` bytes, their count, the position after them); None
        where they cannot be sent so."""
        with self.changed:
            items = self.files[name]
            frames = self._frames.get(name)
            if frames is None or frames.items > len(items):
                frames = self._frames[name] = FramedFile()
            frames.extend(items)
            found = frames.packets(pos, seq, chunk)
            return None if found is None else (*found, frames.end)

    def file_sizes(self) -> list[tuple[str, int]]:
        return [(name, self.file_size(name)) for name in self.file_names()]

    def previous_gtids(self, name: str) -> GtidSet:
        for _, data in self.events_from(self.files[name], 4):
            if data[4] == ev.PREVIOUS_GTIDS:
                with contextlib.suppress(ValueError, IndexError, struct.error):  # broken: none
                    return GtidSet.decode(data, 19)
                break
            if data[4] not in (ev.FORMAT_DESCRIPTION,):
                break
        return GtidSet()

    def gtid_executed(self) -> GtidSet:
        if self.binlog is not None:
            with self.changed:
                return self.binlog.gtid_executed.copy()
        names = self.file_names()
        out = self.previous_gtids(names[0]) if names else GtidSet()
        for name in names:
            items = self.files[name]
            count, found = self._gtids.get(name, (0, GtidSet()))
            for item in items[count:]:
                for data in split(item):
                    if data[4] in GTIDS:
                        with contextlib.suppress(ValueError, IndexError):  # a broken one: none
                            found.add(*gtid_of(data))
            self._gtids[name] = (len(items), found)
            out.update(found)
        return out

    def catalog(self, table: str) -> list[dict[str, Any]] | None:
        """The rows of ``information_schema.<table>`` this primary knows (None: unknown)."""
        if table == "TABLES":
            system = [("mysql", "user", "BASE TABLE"), ("sys", "sys_config", "BASE TABLE"),
                      ("sys", "version", "SYSTEM VIEW")]  # fmt: skip
            rows = [{"TABLE_SCHEMA": db, "TABLE_NAME": n, "TABLE_TYPE": k, "ENGINE": "InnoDB",
                     "TABLE_ROWS": 0, "TABLE_COLLATION": "utf8mb4_0900_ai_ci"}
                    for db, n, k in system]  # fmt: skip
            return rows + [{"TABLE_SCHEMA": t.db, "TABLE_NAME": t.name, "TABLE_TYPE": "BASE TABLE",
                            "ENGINE": "InnoDB", "TABLE_ROWS": 0, "TABLE_COLLATION": t.collation}
                           for t in self.tables]  # fmt: skip
        if table == "COLUMNS":
            return [row for t in self.tables for row in t.catalog_rows()]
        if table == "STATISTICS":
            return [{"TABLE_SCHEMA": t.db, "TABLE_NAME": t.name, "INDEX_NAME": "PRIMARY",
                     "NON_UNIQUE": 0, "SEQ_IN_INDEX": k, "COLUMN_NAME": name}
                    for t in self.tables for k, name in enumerate(t.primary_key, 1)]  # fmt: skip
        return None

    def events_from(self, items: list[bytes], pos: int) -> Iterator[tuple[int, bytes]]:
        """(end position, event) of the events of a file from byte ``pos`` on, including those
        appended while iterating; SqlError if ``pos`` is not where an event starts."""
        at, i = 4, 0
        while i < len(items) and at + len(items[i]) <= pos:
            at += len(items[i])
            i += 1
        offset = pos - at
        if offset:
            starts, start = set(), 0
            for data in split(items[i]):
                starts.add(start)
                start += len(data)
            if offset not in starts:
                raise SqlError(FATAL, "bogus data in log event")
        while i < len(items):
            for data in split(items[i], offset):
                pos += len(data)
                yield pos, data
            offset = 0
            i += 1

    # -- connections -----------------------------------------------------------------------

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._listener.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as mysqld does
                self._sockets.add(conn)
                threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        link = Link(conn)
        with contextlib.suppress(OSError, ConnectionError, ssl.SSLError):
            session = login(self, link)
            if session is not None:
                self._commands(link, session)
        self._sockets.discard(conn)
        with contextlib.suppress(OSError):
            link.sock.close()

    def _commands(self, link: Link, session: dict[str, Any]) -> None:
        while True:
            command = link.read()
            code = command[:1]
            if code == b"\x03":  # COM_QUERY
                sql = command[1:].decode("utf-8", "replace")
                self.queries.append(sql)
                try:
                    result = self._answers.answer(sql, session)
                except SqlError as exc:
                    link.send(err_packet(exc.code, exc.message, exc.state))
                    continue
                if result is None:
                    link.send(OK)
                else:
                    for packet in result.packets(not session["eof"]):
                        link.send(packet)
            elif code in (b"\x12", b"\x1e"):  # COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID
                self._dump(link, session, command)
                return
            elif code in (b"\x02", b"\x0e", b"\x15"):  # INIT_DB, PING, REGISTER_SLAVE
                link.send(OK)
            elif code == b"\x01":  # COM_QUIT
                return
            else:
                link.send(err_packet(1047, "Unknown command", "08S01"))

    def _dump(self, link: Link, session: dict[str, Any], command: bytes) -> None:
        if self.events:
            for event in self.events:
                link.send(b"\0" + event)
            link.send(b"\xfe\x00\x00\x02\x00")
            return
        dump = Dump(self, link, session)
        try:
            self.require(session["user"], "REPLICATION SLAVE")
            if command[:1] == b"\x12":
                dump.by_position(command)
            else:
                dump.by_gtid(command)
        except SqlError as exc:
            dump.flush()
            link.send(err_packet(exc.code, exc.message, exc.state))
        dump.flush()
