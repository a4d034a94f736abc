"""Section ``pg-stream``: PostgreSQL log streaming of the section-1 workload, in the same run.

A throwaway PostgreSQL (:class:`~sparkcdc.sources.postgres.throwaway.ThrowawayPostgres`, its
autovacuum off so it does not run during the measurements) gets database ``bench``, table
``public.events`` of :data:`bench.workload.TABLE_DDL`'s columns in PostgreSQL types and a
publication for it; before anything is written, one logical slot (pgoutput) per measured run is
created, so every run reads exactly the same changes from its own slot. Then the workload:
``inserts`` single-row insert transactions (a server-side loop committing each row), then
``update_rounds`` transactions each updating every row; the WAL's insert position after them is
the end every reader reads to.

Measured, taking turns (:func:`bench.baselines.alternating`):

- sparkcdc's log reader alone (``bench.run.reader_only``: opened through the source port,
  typed images, the store drained) until every change arrived;
- ``pg_recvlogical --endpos`` (PostgreSQL's C client): binary pgoutput to ``/dev/null``;
- :class:`PlainPgoutputReader`: what a Python user writes with psycopg2's replication support,
  every pgoutput message decoded with :mod:`struct` into one dict per change;
- the transports (:mod:`bench.pg_transport`): sparkcdc's reader once more over psycopg2's
  ``LogicalReplicationConnection`` in place of its own wire client, and both inside TLS
  (``source.tls: required``; the server runs with ``ssl=on`` and a certificate made for the
  run, the baselines above connect without TLS).

CPU seconds per run: the bench process's, its children's (``pg_recvlogical``) and the server's
(the postmaster and its backends: mostly the WAL sender decoding the WAL for pgoutput). Where
the time goes in sparkcdc's reader: one more run from a slot of its own, in a subprocess under
``py-spy record --nonblocking`` (:func:`timed_drain`: also the seconds to the last single-row
transaction), its samples summarised per thread and by innermost sparkcdc function.

Last, the whole pipeline: ``sparkcdc run --available-now`` from a slot of its own into a Delta
lake (:func:`pipeline_run`), its micro-batches' seconds (start-up excluded) next to
``pg_recvlogical``'s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import stat
import statistics
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from glob import glob
from pathlib import Path
from typing import Any

import psycopg2
from psycopg2.extras import LogicalReplicationConnection, StopReplication
from tests.cases.tls import make_certificates

from bench import baselines, pg_transport, stream
from sparkcdc.config.model import SourceConfig, TlsConfig
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.stream.transport import LogStream, OpenStream, open_wire_stream
from sparkcdc.sources.postgres.throwaway import ServerTls, ThrowawayPostgres
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn

ReaderOnly = Callable[[Any, int, Path], baselines.Measurement]  # (server or config, rows, folder)
Cpu = list[tuple[float, float, float]]  # per run: bench process, its children, the server

DATABASE = "bench"
PUBLICATION = "bench_events"
# the measured readers, one slot each per run; the last three: sparkcdc's reader over the
# other transports (TRANSPORTS)
KINDS = ("sparkcdc", "recvlogical", "python", "psycopg2", "wire-tls", "psycopg2-tls")
TRANSPORT_NAMES = {
    "psycopg2": "sparkcdc log reader over psycopg2 (libpq), clear text",
    "wire-tls": "sparkcdc log reader over its wire client, TLS",
    "psycopg2-tls": "sparkcdc log reader over psycopg2 (libpq), TLS",
}
PROFILE_SLOT = "bench_profile"
RUN_SLOT = "bench_run"  # the whole pipeline's run (:func:`pipeline_run`)
SPY_RATE = 97  # samples per second, off the beat of timers
TABLE_DDL = (
    "CREATE TABLE public.events (id bigint PRIMARY KEY, account int NOT NULL, "
    "amount numeric(12,2), note varchar(64), created timestamp(6), flag smallint)"
)
SINGLES = """\
CREATE PROCEDURE singles(n bigint) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 0 .. n - 1 LOOP
    INSERT INTO public.events
      VALUES (i, i % 1000, i * 0.01, 'note-' || i, localtimestamp(6), i % 2);
    COMMIT;
  END LOOP;
END $$"""


def slot_name(kind: str, run: int) -> str:
    """The slot of run ``run`` (from 0) of reader ``kind``."""
    return f"bench_{kind.replace('-', '_')}_{run}"


# -- the server and the workload -------------------------------------------------------------


def server_base(work: Path) -> str | None:
    """``work`` if the server's account can enter it (as root the server runs as another user:
    every folder above must let others in), else None: the default temporary folder."""
    if os.geteuid() != 0:
        return str(work)
    folder = work.resolve()
    for part in (folder, *folder.parents):
        if not part.stat().st_mode & stat.S_IXOTH:
            return None
    return str(folder)


def prepare(server: ThrowawayPostgres, slots: list[str]) -> dict[str, int]:
    """Database, table, procedure and publication; then ``slots`` (pgoutput), before any
    change is written. Each slot's start LSN by name."""
    server.create_database(DATABASE)
    server.execute(
        TABLE_DDL, SINGLES, f"CREATE PUBLICATION {PUBLICATION} FOR TABLE public.events",
        database=DATABASE,
    )  # fmt: skip
    starts = {}
    for slot in slots:
        [(lsn,)] = server.query(
            f"SELECT lsn::text FROM pg_create_logical_replication_slot('{slot}', 'pgoutput')",
            database=DATABASE,
        )
        starts[slot] = parse_lsn(lsn)
    return starts


@dataclass(frozen=True)
class Load:
    inserts: int
    update_rounds: int
    seconds: float
    end_lsn: int

    @property
    def changes(self) -> int:
        return self.inserts * (1 + self.update_rounds)


def write_workload(server: ThrowawayPostgres, inserts: int, update_rounds: int) -> Load:
    """``inserts`` single-row insert transactions, then ``update_rounds`` transactions each
    updating every row; the WAL's insert position after the last commit."""
    started = time.perf_counter()
    server.execute(f"CALL singles({inserts})", database=DATABASE)
    for _ in range(update_rounds):
        server.execute(
            "UPDATE public.events SET amount = amount + 1, flag = 1 - flag", database=DATABASE
        )
    seconds = time.perf_counter() - started
    [(end,)] = server.query("SELECT pg_current_wal_insert_lsn()::text", database=DATABASE)
    return Load(inserts, update_rounds, seconds, parse_lsn(end))


def source_config(
    slot: str, host: str, port: int, user: str, password: str, tls: str = "disabled"
) -> SourceConfig:
    """sparkcdc's source configuration reading ``public.events`` from ``slot``."""
    settings = PostgresSettings(database=DATABASE, slot=slot, publication=PUBLICATION)
    return SourceConfig(
        host, port, user, password, (r"public\.events",), startup="earliest", type="postgres",
        settings=settings, tls=TlsConfig(tls),
    )  # fmt: skip


def pipeline_run(server: ThrowawayPostgres, load: Load, work: Path) -> dict[str, Any]:
    """``sparkcdc run --available-now`` from :data:`RUN_SLOT` (made before the writes) into a
    Delta lake: its time split as section 1 splits it (start-up, micro-batches, stop)."""
    folder = work / "pipeline"
    folder.mkdir()
    cfg = folder / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: postgres, host: {server.host}, port: {server.port}, "
        f"user: {server.user}, password: '{server.password}', database: {DATABASE}, "
        f"tables: ['public\\.events'], slot: {RUN_SLOT}, publication: {PUBLICATION}, "
        "startup: earliest}\n"
        f"sink: {{type: delta, path: {folder / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {folder / 'checkpoint'}, trigger: 1s, "
        "store: {max_bytes: 64MB}}\n"
    )
    total, lines = stream.timed_run(cfg)
    found = stream.where_time_goes(total, lines)
    if found["batch_rows"] != load.changes:
        raise RuntimeError(f"sparkcdc run wrote {found['batch_rows']:,} changes, not "
                           f"{load.changes:,}")  # fmt: skip
    return found | {"total_s": total, "rows_per_s": load.changes / max(found["batches_s"], 1e-9)}


def checked(open_stream: OpenStream, encrypted: bool) -> OpenStream:
    """``open_stream``, checking that each stream it opens is (or is not) inside TLS."""

    def opened(*args: Any) -> LogStream:
        stream: Any = open_stream(*args)
        inside = stream.encrypted if hasattr(stream, "encrypted") else stream.conn.encrypted
        if inside != encrypted:
            stream.close()
            raise RuntimeError(f"the stream is {'' if inside else 'not '}inside TLS")
        return stream  # type: ignore[no-any-return]

    return opened


TRANSPORTS: dict[str, tuple[OpenStream, str]] = {  # kind: (opener, source.tls)
    "psycopg2": (checked(pg_transport.Psycopg2Stream, False), "disabled"),
    "wire-tls": (checked(open_wire_stream, True), "required"),
    "psycopg2-tls": (checked(pg_transport.Psycopg2Stream, True), "required"),
}


def confirmed_lsn(server: ThrowawayPostgres, slot: str) -> int:
    """The slot's confirmed position (0 if it has none)."""
    [(text,)] = server.query(
        f"SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{slot}'"
    )
    return 0 if text is None else parse_lsn(text)


# -- pg_recvlogical ----------------------------------------------------------------------------


def recvlogical_tool() -> str:
    """The newest ``/usr/lib/postgresql/<version>/bin/pg_recvlogical``, else the one on PATH."""
    found = sorted(
        (p for p in glob("/usr/lib/postgresql/*/bin/pg_recvlogical")
         if Path(p).parent.parent.name.isdigit()),
        key=lambda p: int(Path(p).parent.parent.name),
    )  # fmt: skip
    tool = found[-1] if found else shutil.which("pg_recvlogical")
    if tool is None:
        raise RuntimeError("pg_recvlogical is not installed (Debian package postgresql-client)")
    return tool


def pg_recvlogical(server: ThrowawayPostgres, slot: str, load: Load) -> baselines.Measurement:
    """``pg_recvlogical --start --endpos`` on ``slot``, binary pgoutput to /dev/null; it must
    exit 0 and have confirmed the slot up to the end LSN."""
    dsn = (
        f"host={server.host} port={server.port} user={server.user} dbname={DATABASE} "
        "sslmode=disable"
    )
    command = [
        recvlogical_tool(), "-d", dsn, "--slot", slot, "--start", "--no-loop",
        "-o", "proto_version=1", "-o", f"publication_names={PUBLICATION}",
        "--endpos", format_lsn(load.end_lsn), "-f", "/dev/null",
    ]  # fmt: skip
    env = {**os.environ, "PGPASSWORD": server.password}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"pg_recvlogical exited {done.returncode}: {done.stderr[-2000:]}")
    confirmed = confirmed_lsn(server, slot)
    if confirmed < load.end_lsn:
        raise RuntimeError(
            f"pg_recvlogical stopped with slot {slot} at {format_lsn(confirmed)}, before the "
            f"end {format_lsn(load.end_lsn)}: {done.stderr[-2000:]}"
        )
    name = "pg_recvlogical --endpos (C, pgoutput to /dev/null)"
    return baselines.Measurement(name, load.changes, elapsed)


# -- the plain-Python baseline -----------------------------------------------------------------


_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_COLUMN_TYPE = struct.Struct(">Ii")  # type oid, type modifier
_COMMIT = struct.Struct(">BQQq")  # flags, commit LSN, end LSN, commit time
_OPS = {b"I": "c", b"U": "u", b"D": "d"}
TEXT_TO_PYTHON: dict[int, Callable[[str], Any]] = {
    16: lambda text: text == "t", 20: int, 21: int, 23: int, 700: float, 701: float,
    1700: Decimal, 25: str, 1043: str, 1082: date.fromisoformat, 1114: datetime.fromisoformat,
}  # fmt: skip
Row = dict[str, Any]


@dataclass(frozen=True)
class Relation:
    schema: str
    table: str
    columns: list[tuple[str, Callable[[str], Any]]]  # name, text -> Python value


def _cstring(data: bytes, pos: int) -> tuple[str, int]:
    end = data.index(b"\0", pos)
    return data[pos:end].decode(), end + 1


class PlainPgoutputReader:
    """The plain-Python baseline: the straightforward consumer a Python user writes for
    psycopg2's ``consume_stream``. Each pgoutput (v1) message is decoded with :mod:`struct`,
    every change into a dict (values converted from their text per column type); a
    transaction's changes are handed over at its commit, confirmed with ``send_feedback``; it
    stops at the first commit ending at or after ``end_lsn`` (or once ``expected`` changes
    arrived)."""

    def __init__(self, end_lsn: int, expected: int) -> None:
        self.end_lsn, self.expected = end_lsn, expected
        self.relations: dict[int, Relation] = {}
        self.transaction: list[Row] = []
        self.changes = self.transactions = 0

    def __call__(self, msg: Any) -> None:
        data: bytes = msg.payload
        kind = data[:1]
        if kind in _OPS:
            self.transaction.append(self.change(kind, data))
        elif kind == b"B":
            self.transaction = []
        elif kind == b"C":
            _flags, _commit, end, _time = _COMMIT.unpack_from(data, 1)
            self.deliver(self.transaction)
            msg.cursor.send_feedback(flush_lsn=end)
            if end >= self.end_lsn or self.changes >= self.expected:
                raise StopReplication
        elif kind == b"R":
            self.relation(data)
        # Type, Origin, Truncate, Message: none in this workload

    def deliver(self, changes: list[Row]) -> None:
        """A whole transaction's changes (here counted, then dropped)."""
        self.changes += len(changes)
        self.transactions += 1
        self.transaction = []

    def relation(self, data: bytes) -> None:
        """Relation: oid, namespace, name, replica identity, columns (flags, name, type)."""
        (oid,) = _U32.unpack_from(data, 1)
        schema, pos = _cstring(data, 5)
        table, pos = _cstring(data, pos)
        (count,) = _U16.unpack_from(data, pos + 1)  # after the replica identity setting
        pos += 3
        columns = []
        for _ in range(count):
            name, pos = _cstring(data, pos + 1)  # after the flags
            type_oid, _modifier = _COLUMN_TYPE.unpack_from(data, pos)
            pos += _COLUMN_TYPE.size
            columns.append((name, TEXT_TO_PYTHON.get(type_oid, str)))
        self.relations[oid] = Relation(schema, table, columns)

    def change(self, kind: bytes, data: bytes) -> Row:
        """Insert (N tuple), Update (optional K/O tuple, N tuple) or Delete (K/O tuple)."""
        (oid,) = _U32.unpack_from(data, 1)
        relation = self.relations[oid]
        before = after = None
        pos = 5
        if kind != b"I" and data[pos : pos + 1] in (b"K", b"O"):
            before, pos = self.values(data, pos + 1, relation)
        if kind != b"D":
            after, pos = self.values(data, pos + 1, relation)  # after the N
        return {
            "op": _OPS[kind],
            "schema": relation.schema,
            "table": relation.table,
            "before": before,
            "after": after,
        }

    def values(self, data: bytes, pos: int, relation: Relation) -> tuple[Row, int]:
        """TupleData: the column count, then per column n (null), u (unchanged TOAST, left
        out) or t + length + text."""
        (count,) = _U16.unpack_from(data, pos)
        pos += 2
        row: Row = {}
        for name, convert in relation.columns[:count]:
            kind = data[pos]
            pos += 1
            if kind == 0x74:  # t
                (length,) = _U32.unpack_from(data, pos)
                pos += 4
                row[name] = convert(data[pos : pos + length].decode())
                pos += length
            elif kind == 0x6E:  # n
                row[name] = None
        return row, pos


def plain_python(server: ThrowawayPostgres, slot: str, load: Load) -> baselines.Measurement:
    """:class:`PlainPgoutputReader` on ``slot`` through psycopg2's replication connection."""
    reader = PlainPgoutputReader(load.end_lsn, load.changes)
    started = time.perf_counter()
    conn = psycopg2.connect(
        server.dsn(DATABASE), connection_factory=LogicalReplicationConnection, sslmode="disable"
    )
    try:
        cur = conn.cursor()
        options = {"proto_version": "1", "publication_names": PUBLICATION}
        cur.start_replication(slot_name=slot, decode=False, options=options)
        with contextlib.suppress(StopReplication):
            cur.consume_stream(reader)
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    if reader.changes != load.changes:
        raise RuntimeError(f"the plain-Python reader got {reader.changes:,} of {load.changes:,}")
    name = "plain Python (psycopg2 + struct, a dict per change)"
    return baselines.Measurement(name, reader.changes, elapsed)


# -- CPU ---------------------------------------------------------------------------------------


def own_cpu_s() -> float:
    """CPU seconds of this process so far (all its threads)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def children_cpu_s() -> float:
    """CPU seconds of this process's children that ended (``pg_recvlogical``)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _stat(pid: int | str) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # from the state on: ppid is [1]


def server_cpu_s(server: ThrowawayPostgres) -> float:
    """CPU seconds of the postmaster, its running backends and those it reaped (Linux)."""
    postmaster = server.process.pid
    fields = _stat(postmaster)
    ticks = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                child = _stat(entry.name)
                if int(child[1]) == postmaster:
                    ticks += int(child[11]) + int(child[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def with_cpu(
    measure: Callable[[], baselines.Measurement], server: ThrowawayPostgres, cpu: Cpu
) -> Callable[[], baselines.Measurement]:
    """``measure``, appending each run's CPU seconds: bench process, its children, server."""

    def run() -> baselines.Measurement:
        before = own_cpu_s(), children_cpu_s(), server_cpu_s(server)
        m = measure()
        time.sleep(0.2)  # the server reaps the ended WAL sender
        after = own_cpu_s(), children_cpu_s(), server_cpu_s(server)
        cpu.append((after[0] - before[0], after[1] - before[1], after[2] - before[2]))
        return m

    return run


# -- where sparkcdc's reader spends its time ---------------------------------------------------


def profile_reader(server: ThrowawayPostgres, load: Load, work: Path) -> dict[str, Any]:
    """sparkcdc's reader alone once more, from its own slot, in a subprocess under
    ``py-spy record`` (running threads only): its samples summarised by :func:`summarise`."""
    spy = Path(sys.executable).with_name("py-spy")
    tool = str(spy) if spy.exists() else shutil.which("py-spy")
    if tool is None:
        raise RuntimeError("py-spy is not installed (pip install py-spy)")
    raw, out = work / "pg-profile.txt", work / "pg-profile.json"
    spec = {"host": server.host, "port": server.port, "user": server.user,
            "pw": server.password, "slot": PROFILE_SLOT, "inserts": load.inserts,
            "update_rounds": load.update_rounds, "folder": str(work), "out": str(out)}  # fmt: skip
    done = subprocess.run(
        [tool, "record", "--nonblocking", "--full-filenames", "--rate", str(SPY_RATE),
         "--format", "raw", "--output", str(raw),
         "--", sys.executable, "-m", "bench.postgres", "profile", json.dumps(spec)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the profiled reader failed: {done.stderr[-3000:]}")
    return {**json.loads(out.read_text()), **summarise(raw.read_text())}


def _thread(frames: list[str]) -> str:
    """The thread a py-spy stack was sampled in, by the functions on it."""
    if any("log_thread.py" in f for f in frames):
        return "reader"
    if any("timed_drain" in f for f in frames):
        return "drain"
    return "other"


def _function(frame: str) -> str:
    """``function (/…/sparkcdc/a/b.py:12)`` as ``a.b.function``: the path from the package
    (``sparkcdc/``, ``site-packages/`` or the standard library), no folder of this machine."""
    name, _, where = frame.rpartition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for root in ("/sparkcdc/", "site-packages/", "/python3."):
        if root in path:
            path = path.rsplit(root, 1)[1]
            path = path.split("/", 1)[1] if root == "/python3." else path
            break
    else:
        path = Path(path).name
    return f"{path.removesuffix('.py').replace('/', '.')}.{name or frame}"


def summarise(raw: str, top: int = 10) -> dict[str, Any]:
    """py-spy raw stacks by thread (the reader thread, the bench thread draining the store,
    the rest: imports, opening), and the reader thread's by innermost sparkcdc function
    (else the innermost frame), as CPU seconds and shares."""
    threads: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        thread = _thread(frames)
        threads[thread] += int(count)
        if thread == "reader":
            own = [f for f in frames if "/sparkcdc/" in f]
            functions[_function(own[-1] if own else frames[-1])] += int(count)
    reader = threads["reader"] or 1
    return {
        "rate": SPY_RATE,
        "threads_cpu_s": {name: n / SPY_RATE for name, n in threads.most_common()},
        "reader_top": [
            {"function": name, "cpu_s": n / SPY_RATE, "share": n / reader}
            for name, n in functions.most_common(top)
        ],
    }


def timed_drain(config: SourceConfig, load: Load, folder: Path) -> dict[str, float]:
    """sparkcdc's reader opened and drained as ``bench.run.reader_only`` does it; the seconds
    to every change and to the last of the single-row insert transactions."""
    from sparkcdc.sources.registry import open_source
    from sparkcdc.store.ring import EventStore

    source = open_source(config)
    start = source.startup_offset("earliest")
    store = EventStore(max_bytes=64 * 1024 * 1024, max_items=16384, batch_mode="MEMSIZE")
    reader = source.open_reader(start, store, str(folder / "history.jsonl"), 2048, typed=True)
    seen, inserts_s = 0, 0.0
    started = time.perf_counter()
    reader.start()
    try:
        while seen < load.changes:
            if reader.error is not None:
                raise reader.error
            batch = store.get(timeout=1.0)
            if batch is None:
                continue
            seen += sum(item.rows for item in batch.items if not item.is_ddl)
            store.ack(batch)
            if not inserts_s and seen >= load.inserts:
                inserts_s = time.perf_counter() - started
        return {"seconds": time.perf_counter() - started, "inserts_s": inserts_s}
    finally:
        reader.stop()


def _profile_main(spec_text: str) -> None:
    """In the profiled subprocess: :func:`timed_drain` on the spec's slot."""
    spec = json.loads(spec_text)
    config = source_config(spec["slot"], spec["host"], spec["port"], spec["user"], spec["pw"])
    load = Load(spec["inserts"], spec["update_rounds"], 0.0, 0)
    figures = timed_drain(config, load, Path(spec["folder"]))
    Path(spec["out"]).write_text(json.dumps(figures))


# -- the section -------------------------------------------------------------------------------


def measure(
    server: ThrowawayPostgres, load: Load, reader_only: ReaderOnly, repeats: int, work: Path
) -> tuple[list[baselines.Measurement], tuple[Cpu, ...]]:
    """The readers, taking turns, each run from a slot of its own."""
    turns = {kind: iter(range(repeats)) for kind in KINDS}
    login = server.host, server.port, server.user, server.password

    def slot(kind: str) -> str:
        return slot_name(kind, next(turns[kind]))

    folder = work / "sparkcdc"
    folder.mkdir()
    cpu: tuple[Cpu, ...] = tuple([] for _ in KINDS)

    def over(kind: str) -> Callable[[], baselines.Measurement]:
        open_stream, tls = TRANSPORTS[kind]
        measure = pg_transport.reader_over(open_stream, TRANSPORT_NAMES[kind])
        return lambda: measure(source_config(slot(kind), *login, tls), load.changes, folder)

    measured = baselines.alternating(
        repeats,
        with_cpu(
            lambda: reader_only(source_config(slot("sparkcdc"), *login), load.changes, folder),
            server, cpu[0],
        ),
        with_cpu(lambda: pg_recvlogical(server, slot("recvlogical"), load), server, cpu[1]),
        with_cpu(lambda: plain_python(server, slot("python"), load), server, cpu[2]),
        *(with_cpu(over(kind), server, cpu[i]) for i, kind in enumerate(KINDS) if i >= 3),
    )  # fmt: skip
    return measured, cpu


def _figures(m: baselines.Measurement, cpu: Cpu) -> dict[str, Any]:
    """A reader's figures for results.json: the median run, every run, median CPU seconds."""
    return {
        "name": m.name,
        "rows": m.rows,
        "seconds": m.seconds,
        "rows_per_s": m.rows_per_s,
        "runs": list(m.runs),
        "bench_cpu_s": statistics.median(c[0] for c in cpu),
        "child_cpu_s": statistics.median(c[1] for c in cpu),
        "server_cpu_s": statistics.median(c[2] for c in cpu),
    }


def pg_stream_section(
    args: argparse.Namespace, work: Path, reader_only: ReaderOnly
) -> dict[str, Any]:
    """PostgreSQL log streaming: sparkcdc's reader, pg_recvlogical, plain Python; sparkcdc's
    reader over psycopg2, and both transports inside TLS."""
    inserts = args.pg_changes // (1 + args.update_rounds)
    slots = [slot_name(k, i) for i in range(args.repeats) for k in KINDS]
    slots += [PROFILE_SLOT, RUN_SLOT]
    certificates = work / "certificates"
    certificates.mkdir()
    certs = make_certificates(certificates)
    server = ThrowawayPostgres.start(
        base_dir=server_base(work), settings={"autovacuum": "off"},
        tls=ServerTls(certs["server"], certs["key"]),
    )  # fmt: skip
    try:
        prepare(server, slots)
        load = write_workload(server, inserts, args.update_rounds)
        [(version,)] = server.query("SHOW server_version")
        print(f"PostgreSQL {version}: wrote {load.changes:,} changes in {load.seconds:.1f}s, "
              f"to {format_lsn(load.end_lsn)}", flush=True)  # fmt: skip
        measured, cpu = measure(server, load, reader_only, args.repeats, work)
        for m in measured:
            runs = ", ".join(f"{s:.2f}" for s in m.runs)
            print(f"  {m.name}: {m.rows_per_s:,.0f}/s (median of {runs} s)", flush=True)
        profile = profile_reader(server, load, work) if not args.pg_no_profile else None
        run = pipeline_run(server, load, work)
        print(f"  sparkcdc run --available-now: {run['rows_per_s']:,.0f}/s "
              f"({run['batches_s']:.2f} s of micro-batches)", flush=True)  # fmt: skip
    finally:
        server.stop()
    cdc, recv, plain, over_pq, wire_tls, pq_tls = measured
    return {
        "changes": load.changes,
        "inserts": inserts,
        "update_rounds": args.update_rounds,
        "server_version": str(version),
        "write_s": load.seconds,
        "sparkcdc": _figures(cdc, cpu[0]),
        "pg_recvlogical": _figures(recv, cpu[1]),
        "plain_python": _figures(plain, cpu[2]),
        "ratio_recvlogical": cdc.rows_per_s / recv.rows_per_s,
        "ratio_plain_python": cdc.rows_per_s / plain.rows_per_s,
        "profile": profile,
        "run": run | {"ratio_recvlogical": run["rows_per_s"] / recv.rows_per_s},
        "transports": {
            "wire": _figures(cdc, cpu[0])
            | {"name": "sparkcdc log reader over its wire client, clear text"},
            "psycopg2": _figures(over_pq, cpu[3]),
            "wire_tls": _figures(wire_tls, cpu[4]),
            "psycopg2_tls": _figures(pq_tls, cpu[5]),
            "ratio_clear": cdc.rows_per_s / over_pq.rows_per_s,
            "ratio_tls": wire_tls.rows_per_s / pq_tls.rows_per_s,
            "tls_cost_wire": wire_tls.seconds / cdc.seconds,
            "tls_cost_psycopg2": pq_tls.seconds / over_pq.seconds,
        },
    }


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "profile":
        _profile_main(sys.argv[2])
    else:
        raise SystemExit("usage: python -m bench.postgres profile SPEC_JSON")
