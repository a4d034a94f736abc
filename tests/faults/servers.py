"""The campaign's servers, each its own and started once on demand: MariaDB, PostgreSQL,
moto's S3 server and a Spark standalone cluster, in one temporary folder; a database per
trial. The databases run on a clock the campaign can step (:mod:`tests.faults.clock`)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.cluster import StandaloneCluster
from tests.cases.s3 import MotoS3, storage_options
from tests.e2e.workload import DDL, PG_DDL
from tests.faults.clock import ServerClock


class Servers:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.clocks = {
            "mysql": ServerClock(base / "mariadb-clock"),
            "postgres": ServerClock(base / "postgres-clock"),
        }
        self._mariadb: ThrowawayMariaDB | None = None
        self._postgres: ThrowawayPostgres | None = None
        self._s3: MotoS3 | None = None
        self._cluster: StandaloneCluster | None = None
        self._bucket = ""

    @property
    def mariadb(self) -> ThrowawayMariaDB:
        if self._mariadb is None:
            self._mariadb = ThrowawayMariaDB.start(
                base_dir=str(self.base), launcher=self.clocks["mysql"].launcher()
            )
        return self._mariadb

    @property
    def postgres(self) -> ThrowawayPostgres:
        if self._postgres is None:
            self._postgres = ThrowawayPostgres.start(
                base_dir=str(self.base), launcher=self.clocks["postgres"].launcher()
            )
        return self._postgres

    def server(self, source: str) -> Any:
        return self.mariadb if source == "mysql" else self.postgres

    def after_trial(self, source: str, fault: str) -> None:
        """Leave the next trial a server as a new one: the ``source`` server restarted cleanly
        after a trial that stepped its clock (:mod:`tests.faults.clock`)."""
        if fault == "clock-skew":
            self.clocks[source].set(0)
            server = self.server(source)
            server.stop(remove=False)
            server.restart()

    @property
    def s3(self) -> MotoS3:
        if self._s3 is None:
            self._s3 = MotoS3()
        return self._s3

    @property
    def cluster(self) -> StandaloneCluster:
        """A master and two workers of one core each, separate JVMs (the cluster trials')."""
        if self._cluster is None:
            root = self.base / "spark-cluster"
            root.mkdir(exist_ok=True)
            self._cluster = StandaloneCluster(root, workers=2, cores=1)
        return self._cluster

    def s3_lake(self, existing: bool = False, endpoint: str | None = None) -> tuple[str, str]:
        """A lake URL in a new bucket of the S3 server (``existing``: the last one) and the
        pipeline file's ``storage_options`` (``endpoint``: reaching it there, a proxy's)."""
        if not existing:
            self._bucket = self.s3.bucket()
        options = self.s3.options(**({"AWS_ENDPOINT_URL": endpoint} if endpoint else {}))
        return f"s3://{self._bucket}/lake", storage_options(options)

    def s3_options(self) -> dict[str, str]:
        assert self._s3 is not None
        return self._s3.options()

    def drop_database(self, source: str, db: str) -> None:
        if source == "mysql":
            self.mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
            return
        pg = self.postgres
        for _ in range(50):
            pg.execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                f"WHERE database = '{db}' AND active_pid IS NOT NULL"
            )
            slots = pg.query(
                f"SELECT slot_name, active FROM pg_replication_slots WHERE database = '{db}'"
            )
            if not any(active for _, active in slots):
                break
            time.sleep(0.1)
        for slot, _ in slots:
            with contextlib.suppress(Exception):
                pg.execute(f"SELECT pg_drop_replication_slot('{slot}')")
        pg.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')

    def stop(self) -> None:
        for server in (self._mariadb, self._postgres, self._s3, self._cluster):
            if server is not None:
                with contextlib.suppress(Exception):
                    server.stop()


def prepare_database(server: Any, source: str, db: str, rows: int) -> None:
    """The trial's database with the workload's ``accounts`` table holding keys 1..``rows``."""
    if source == "mysql":
        server.execute(f"DROP DATABASE IF EXISTS `{db}`", f"CREATE DATABASE `{db}`")
        server.execute(*(s.format(db=db) for s in DDL))
        if rows:
            server.execute(
                f"INSERT INTO {db}.accounts SELECT seq, 0, seq / 100, CONCAT('s-', seq), "
                f"NOW(6), seq % 256 FROM {db}.seq_1_to_{rows}"
            )
        return
    server.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    server.create_database(db)
    server.execute(*PG_DDL, database=db)
    if rows:
        server.execute(
            "INSERT INTO accounts SELECT i, 0, i / 100.0, 's-' || i, clock_timestamp(), i % 256 "
            f"FROM generate_series(1, {rows}) i",
            database=db,
        )
