"""The steps the campaign's phases are made of, read from what a running pipeline leaves behind:
Spark's offset and commit logs in the checkpoint (each micro-batch's end offset, the ones
committed), PostgreSQL's slot statistics; and the writes a phase makes itself (a signal, a
schema change, one big transaction)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.cli import purge_binlogs_to
from tests.e2e.workload import MARIADB, POSTGRES, ChangeWorkload
from tests.faults.checker import Identity, LakeTables, identity
from tests.faults.kinds import Target

Position = tuple[int, ...]


def wait_until(what: str, ready: Callable[[], bool], t: Target, timeout: float = 300) -> None:
    """Poll ``ready`` until it holds; RuntimeError if the pipeline ends first or time runs out."""
    deadline = time.monotonic() + timeout
    while not ready():
        if not t.pipeline.alive():
            raise RuntimeError(f"the pipeline ended before {what}: {t.pipeline.output()[-600:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} in {timeout:g}s")
        time.sleep(0.1)


def batch_offset(t: Target, committed: bool = False) -> dict[str, Any] | None:
    """The end offset of the newest micro-batch Spark planned (``committed``: the newest it
    committed), as sparkcdc wrote it; None before the first."""
    spark = t.checkpoint / "spark"
    folder = spark / ("commits" if committed else "offsets")
    numbers = [int(p.name) for p in folder.glob("*") if p.name.isdigit()] if folder.is_dir() else []
    for number in sorted(numbers, reverse=True):
        with contextlib.suppress(OSError, ValueError, IndexError):
            lines = (spark / "offsets" / str(number)).read_text().splitlines()
            found: dict[str, Any] = json.loads(lines[2])  # v1, Spark's metadata, our offset
            return found
    return None


def position(offset: dict[str, Any] | None) -> Position | None:
    """A stream offset's place in the log, in log order: (binlog number, byte, skip) or
    (LSN, skip); None for a snapshot offset or none."""
    if offset is None or "position" not in offset:
        return None
    return log_position(offset["position"])


def log_position(found: dict[str, Any]) -> Position:
    """A source offset's JSON (MariaDB's file and pos, PostgreSQL's lsn) as a place in the log."""
    skip = int(found.get("skip", 0))
    if "file" in found:
        return (int(str(found["file"]).rsplit(".", 1)[1]), int(found["pos"]), skip)
    high, low = str(found["lsn"]).split("/")
    return ((int(high, 16) << 32) + int(low, 16), skip)


def handoff_file(t: Target) -> Path:
    """The initial snapshot's hand-off to the log, written as its last split is planned."""
    return t.checkpoint / "sparkcdc" / "snapshot" / "handoff.json"


def snapshot_splits(t: Target) -> list[Path]:
    """The finished splits of the (re-)snapshot under way."""
    return list((t.checkpoint / "sparkcdc" / "snapshot" / "splits").glob("*/*.json"))


def in_handoff(t: Target) -> bool:
    """Whether no committed batch ends past the hand-off's largest high watermark yet."""
    tables = json.loads(handoff_file(t).read_text()).values()
    highs = [log_position(h) for table in tables for h in table["highs"]]
    done = position(batch_offset(t, committed=True))
    return done is None or not highs or done < max(highs)


def incremental_chunks(t: Target) -> int:
    """The chunks the incremental snapshot under way delivered, per the newest offset."""
    run = ((batch_offset(t) or {}).get("incremental") or {}).get("run") or {}
    return int(run.get("chunks", 0))


def log_end(t: Target) -> Position:
    """Where the source's log ends now (skip 0)."""
    if t.source == "mysql":
        file, pos = t.server.query("SHOW MASTER STATUS")[0][:2]
        return log_position({"file": file, "pos": pos})
    [(lsn,)] = t.server.query("SELECT pg_current_wal_lsn()::text", t.database)
    return log_position({"lsn": lsn})


def signal(t: Target, action: str, *args: str) -> str:
    """``sparkcdc signal ACTION --config <the trial's file> ARGS``; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "signal", action,
         "--config", str(t.pipeline.cfg), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"sparkcdc signal {action} failed: {done.stdout}{done.stderr}")
    return done.stdout


def slot_streamed(t: Target) -> int:
    """Transactions the trial database's slot streamed before their commit, per the server's
    ``pg_stat_replication_slots``."""
    rows = t.server.query(
        "SELECT coalesce(sum(s.stream_txns), 0) FROM pg_stat_replication_slots s "
        "JOIN pg_replication_slots r USING (slot_name) "
        f"WHERE r.database = '{t.database}'"
    )
    return int(rows[0][0])


class BigTransaction:
    """One transaction inserting ``rows`` new keys from ``first`` + 1 in one INSERT … SELECT, on
    a connection of its own, open until :meth:`commit`. Its outcome is read back from the source
    when the commit's answer was lost (the keys are new: all there, or none)."""

    def __init__(self, t: Target, first: int, rows: int) -> None:
        self.t, self.first, self.rows = t, first, rows
        self.conn: Any = None

    def open(self) -> None:
        t, keys = self.t, f"{self.first} + seq"
        self.conn = t.server.connect(t.database)
        with self.conn.cursor() as cur:
            if t.source == "mysql":
                cur.execute("SET autocommit=0")
                numbers, owner, now = f"seq_1_to_{self.rows}", "CONCAT('big-', seq)", "NOW(6)"
            else:
                self.conn.autocommit = False
                numbers = f"generate_series(1, {self.rows}) seq"
                owner, now = "'big-' || seq", "clock_timestamp()"
            cur.execute(
                "INSERT INTO accounts (id, version, balance, owner, updated, flags) "
                f"SELECT {keys}, 0, seq / 100.0, {owner}, {now}, seq % 256 FROM {numbers}"
            )

    def commit(self) -> Counter[Identity]:
        """Commit (if the connection still stands); the changes the source holds of it."""
        with contextlib.suppress(Exception):  # a server restarted under it: rolled back
            self.conn.commit()
        with contextlib.suppress(Exception):
            self.conn.close()
        [(held,)] = self.t.server.query(
            f"SELECT count(*) FROM accounts WHERE id > {self.first} "
            f"AND id <= {self.first + self.rows}",
            self.t.database,
        )
        if int(held) not in (0, self.rows):
            raise RuntimeError(f"the big transaction left {held} of its {self.rows} rows")
        if not held:
            self.t.notes["big_txn"] = "rolled back (its connection was lost)"
            return Counter()
        return Counter(("c", self.first + i, 0) for i in range(1, self.rows + 1))


def workload(t: Target, first: int, changes: int, live: dict[int, int]) -> ChangeWorkload:
    """A workload of new keys from ``first`` that also updates and deletes the ``live`` keys
    (key: version)."""
    dialect = MARIADB if t.source == "mysql" else POSTGRES
    writes = ChangeWorkload(t.server, t.database, changes, t.rng.randrange(1 << 30), dialect)
    writes.next_id, writes.live = first, dict(live)
    return writes


def delivered(lake: LakeTables, changes: Counter[Identity]) -> bool:
    """Whether the lake's change log holds every one of ``changes`` (a delete's version is
    left out, as the checker leaves it)."""
    try:
        rows = lake.rows("accounts__changelog")
    except Exception:  # a table being written
        return False
    held = {identity(r) for r in rows or []}
    return all((op, key, -1 if op == "d" else v) in held for op, key, v in changes)


def lose_log(t: Target) -> None:
    """The log past the stopped pipeline's position lost: MariaDB's binlogs purged up to a new
    file, the trial database's PostgreSQL slot dropped."""
    if t.source == "mysql":
        t.server.execute("FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
        purge_binlogs_to(t.server, str(t.server.query("SHOW BINARY LOGS")[-1][0]))
        return
    for (slot,) in t.server.query(
        f"SELECT slot_name FROM pg_replication_slots WHERE database = '{t.database}'"
    ):
        t.server.execute(f"SELECT pg_drop_replication_slot('{slot}')")
