"""Where one binlog dump stands: the file, the format description, the GTID position and the
time of the last event, shared by the event loop (:mod:`.dispatch`), the transaction events
(:mod:`.transactions`) and the log reader (:mod:`.reader`).

One :class:`BinlogState` lives as long as its log reader; :meth:`BinlogState.restart` sets it to
a resume offset when a connection opens. The event loop writes it per event, so it is a plain
slotted class whose fields are read and written directly, not through methods.
"""

from __future__ import annotations

from sparkcdc.core.offset import position_text
from sparkcdc.sources.mysql.binlog import events as ev
from sparkcdc.sources.mysql.binlog.gtid import (
    GtidSet,
    format_mariadb_gtid,
    is_mysql_gtid,
    parse_mariadb_gtid,
)
from sparkcdc.sources.mysql.binlog.tablemap import TableMap
from sparkcdc.sources.mysql.offset import BinlogOffset, file_sequence
from sparkcdc.sources.mysql.server.flavour import is_mariadb


class BinlogState:
    """The position of one binlog dump and what decoding its events needs (module docstring)."""

    __slots__ = (
        "bare_begin", "fd", "file", "file_prefix", "gtid_set", "gtid_text", "gtids", "id_lens",
        "maps", "mysql", "read_pos", "resume", "server_id", "sids", "standalone", "trailer",
        "ts_ms",
    )  # fmt: skip

    def __init__(self) -> None:
        self.file = ""
        self.file_prefix = ""  # the file's part of an event position
        self.fd: ev.FormatDescription | None = None
        self.standalone = False  # the open transaction is one statement (no BEGIN)
        self.bare_begin = False  # a BEGIN came while no GTID event had opened a transaction
        self.mysql = False  # the format description names a MySQL server
        self.gtids: dict[int, tuple[int, int]] = {}  # MariaDB's GTID position
        self.gtid_set = GtidSet()  # MySQL's
        self.sids: dict[bytes, str] = {}  # MySQL server uuids, as text
        self.gtid_text: str | None = None  # the position as text, once per change
        self.resume: BinlogOffset | None = None  # a split transaction to resume
        self.read_pos = 0  # the end of the last event read, in ``file``
        self.server_id = 0  # the server that wrote the open transaction
        self.ts_ms = 0  # the timestamp of the last event read, in milliseconds
        # per format description: table id width per rows event type, checksum bytes, and the
        # table maps parsed already (MariaDB repeats the same TABLE_MAP in every transaction)
        self.id_lens: dict[int, int] = {}
        self.trailer = 0
        self.maps: dict[bytes, TableMap] = {}

    def restart(self, resume: BinlogOffset) -> None:
        """A connection opens at ``resume``: its file and GTID position, no format yet."""
        self.set_file(resume.file)
        self.standalone = False
        self.set_format(None)
        self.gtids, self.gtid_set = _gtid_state(resume.gtid)
        self.gtid_text = None
        self.resume = resume if resume.skip else None

    def set_file(self, file: str) -> None:
        """The stream is in ``file`` now (a name a ROTATE gave is checked before it is kept)."""
        if file and (not file.isprintable() or "\ufffd" in file):
            raise ValueError(f"a binlog file name holds bytes no file name has: {file!r}")
        self.file_prefix = position_text(file_sequence(file)) + ":" if file else ""
        self.file = file

    def set_format(self, fd: ev.FormatDescription | None) -> None:
        """A new format description: table id widths, checksum bytes, no table maps yet."""
        self.fd = fd
        self.maps.clear()
        if fd is not None:
            self.mysql = not is_mariadb(fd.server_version)
            self.id_lens = {
                t: 4 if fd.post_header_len(t) == 6 else 6
                for t in (*ev.ROWS_EVENTS, ev.PARTIAL_UPDATE_ROWS)
            }
            self.trailer = ev.CHECKSUM_LEN if fd.checksum else 0

    def gtid_position(self) -> str:
        """The GTID position of everything before the open transaction, as text."""
        text = self.gtid_text
        if text is None:
            gtids = self.gtid_set.text() if self.mysql else format_mariadb_gtid(self.gtids)
            text = self.gtid_text = gtids
        return text

    def boundary(self, next_pos: int) -> BinlogOffset:
        """The transaction boundary before the event at ``next_pos`` of the current file."""
        return BinlogOffset(self.file, next_pos, self.gtid_position())


def _gtid_state(text: str) -> tuple[dict[int, tuple[int, int]], GtidSet]:
    """The GTID position ``text`` names: MariaDB's, or MySQL's GTID set."""
    try:
        if is_mysql_gtid(text):
            return {}, GtidSet.parse(text)
        return parse_mariadb_gtid(text), GtidSet()
    except ValueError:
        return {}, GtidSet()
