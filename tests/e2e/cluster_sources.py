"""The two sources the cluster trial runs from, behind one face: MariaDB and PostgreSQL each fill
``accounts`` for the snapshot, write the pipeline file, start the change workload and read the
source's rows and the change log's changes the way the other does, so the scenario is written
once. Under PostgreSQL's ``REPLICA IDENTITY DEFAULT`` a delete's before image holds the key only:
its change is counted with version -1 on both sides."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.cluster import StandaloneCluster
from tests.e2e.cluster_runs import cluster_config
from tests.e2e.crashes import changelog_identities, replica_rows
from tests.e2e.workload import DDL, PG_DDL, POSTGRES, ChangeWorkload

FIRST = 50_000_000  # the snapshot's keys; the workload's start at 1
COLUMNS = "id, version, balance, owner, updated, flags"
Changes = Counter[tuple[str, int, int]]  # (op, key, version): how many times each


@dataclass(frozen=True)
class MariaDBSource:
    """``db.accounts`` on the session's MariaDB server; its tables land under ``lake/db``."""

    server: ThrowawayMariaDB
    db: str

    @property
    def namespace(self) -> str:
        return self.db

    def fill(self, rows: int) -> None:
        """``db.accounts`` made anew with ``rows`` rows for the snapshot."""
        db = self.db
        self.server.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
        self.server.execute(*(s.format(db=db) for s in DDL))
        self.server.execute(
            f"INSERT INTO {db}.accounts SELECT {FIRST} + seq, 0, seq / 100, CONCAT('s-', seq), "
            f"NOW(6), seq % 256 FROM {db}.seq_1_to_{rows}"
        )

    def config(self, tmp: Path, cluster: StandaloneCluster, lake: str, sink: str,
               chunk_size: int = 1000, batch_rows: int = 2000) -> Path:  # fmt: skip
        """The pipeline file on ``cluster`` into ``lake`` (``sink``: more sink keys)."""
        return cluster_config(
            tmp, self.server, rf"{self.db}\..*", cluster, chunk_size=chunk_size,
            batch_rows=batch_rows, lake=lake, extra_sink=sink,
        )  # fmt: skip

    def workload(self, changes: int, seed: int) -> ChangeWorkload:
        return ChangeWorkload(self.server, self.db, changes, seed)

    def rows(self) -> list[tuple[object, ...]]:
        """The source's rows as the replica holds them (BIT(8) as its number)."""
        return [
            (i, v, b, o, u, int.from_bytes(f, "big") if isinstance(f, bytes) else f)
            for i, v, b, o, u, f in self.server.query(
                f"SELECT {COLUMNS} FROM accounts ORDER BY id", self.db
            )
        ]

    def changes(self, written: Changes) -> Changes:
        """The workload's changes as the change log identifies them."""
        return written


@dataclass(frozen=True)
class PostgresSource:
    """``public.accounts`` in a database of the test's own; its tables land under
    ``lake/public``. The pipeline makes its slot and publication at the first start."""

    server: ThrowawayPostgres
    db: str

    @property
    def namespace(self) -> str:
        return "public"

    def fill(self, rows: int) -> None:
        self.server.execute(
            "DROP TABLE IF EXISTS accounts",
            *PG_DDL,
            f"INSERT INTO accounts SELECT {FIRST} + i, 0, i / 100.0, 's-' || i, "
            f"clock_timestamp(), i % 256 FROM generate_series(1, {rows}) i",
            database=self.db,
        )

    def config(self, tmp: Path, cluster: StandaloneCluster, lake: str, sink: str,
               chunk_size: int = 1000, batch_rows: int = 2000) -> Path:  # fmt: skip
        return cluster_config(
            tmp, self.server, r"public\.accounts", cluster, chunk_size=chunk_size,
            batch_rows=batch_rows, extra_source=f", database: {self.db}", kind="postgres",
            user=self.server.user, password=self.server.password, lake=lake, extra_sink=sink,
        )  # fmt: skip

    def workload(self, changes: int, seed: int) -> ChangeWorkload:
        return ChangeWorkload(self.server, self.db, changes, seed, POSTGRES)

    def rows(self) -> list[tuple[object, ...]]:
        return self.server.query(f"SELECT {COLUMNS} FROM accounts ORDER BY id", self.db)

    def changes(self, written: Changes) -> Changes:
        """The workload's changes as the change log identifies them (a delete's version -1)."""
        return Counter({(op, k, -1 if op == "d" else v): n for (op, k, v), n in written.items()})


Source = MariaDBSource | PostgresSource


def replica_equals_source(source: Source, lake: str, options: dict[str, str]) -> bool:
    return replica_rows(f"{lake}/{source.namespace}/accounts", options) == source.rows()


def logged_changes(source: Source, lake: str, options: dict[str, str]) -> Changes:
    """How many times the change log of ``accounts`` holds each change (op, key, version)."""
    return changelog_identities(f"{lake}/{source.namespace}/accounts__changelog", options)
