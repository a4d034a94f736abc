"""What the contract suite needs of a source besides the port: a table of its own to write to.

Every harness makes tables of the same shape, ``(id BIGINT PRIMARY KEY, v VARCHAR(40))``, and
commits transactions of inserts, updates and deletes to them the way its database does (SQL on
a real server, lines of the fake database's file); the suite then looks at them only through the
port, as the rest of sparkcdc does.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from sparkcdc.sources.port import Source
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from sparkcdc.sources.registry import open_source
from tests.fakes.database import FakeLog

Write = tuple[str, int, str | None]
"""(op ``c``/``u``/``d``, id, v): one row change of a harness table."""

_server_ids = itertools.count(7400)


class Harness(Protocol):
    name: str

    def create(self, table: str, rows: int = 0, keyed: bool = True) -> str:
        """Create ``table`` with ids ``1 .. rows`` (v = ``v<id>``), its ``id`` the primary key
        unless not ``keyed``; its ``a.b`` name."""

    def commit(self, table: str, writes: list[Write]) -> None:
        """One transaction of ``writes`` to ``table``."""

    def source(self, *tables: str) -> Source:
        """The source capturing ``tables`` (``a.b`` names), opened through the registry."""

    def contents(self, table: str) -> dict[int, str]:
        """The table now, by id (asked of the database itself, not of the port)."""

    def unready(self, table: str) -> Source:
        """A source capturing ``table`` that its database is not ready to stream to (MariaDB:
        a user without the replication privileges; the fake: its log switched off)."""


@dataclass
class MariaDBHarness:
    server: ThrowawayMariaDB
    db: str
    name: str = "mysql"

    def create(self, table: str, rows: int = 0, keyed: bool = True) -> str:
        key = " PRIMARY KEY" if keyed else " NOT NULL"
        self.server.execute(
            f"CREATE TABLE `{table}` (id BIGINT{key}, v VARCHAR(40))", database=self.db
        )
        if rows:
            self.server.execute(
                f"INSERT INTO `{table}` SELECT seq, CONCAT('v', seq) FROM seq_1_to_{rows}",
                database=self.db,
            )
        return f"{self.db}.{table}"

    def commit(self, table: str, writes: list[Write]) -> None:
        sql = []
        for op, i, v in writes:
            if op == "c":
                sql.append(f"INSERT INTO `{table}` VALUES ({i}, '{v}')")
            elif op == "u":
                sql.append(f"UPDATE `{table}` SET v = '{v}' WHERE id = {i}")
            else:
                sql.append(f"DELETE FROM `{table}` WHERE id = {i}")
        self.server.execute("BEGIN", *sql, "COMMIT", database=self.db)

    def source(self, *tables: str) -> Source:
        patterns = tuple(t.replace(".", "\\.") for t in tables)
        config = self.server.source_config(*patterns, server_id=next(_server_ids))
        ids = MySQLSettings.of(config)
        return open_source(replace(config, settings=replace(ids, server_id_last=ids.server_id + 2)))

    def contents(self, table: str) -> dict[int, str]:
        rows = self.server.query(f"SELECT id, v FROM `{table}`", database=self.db)
        return {int(i): str(v) for i, v in rows}

    def unready(self, table: str) -> Source:
        user = f"reader{next(_server_ids)}"
        self.server.execute(
            f"CREATE USER '{user}'@'%' IDENTIFIED BY 'secret'",
            f"GRANT SELECT ON `{self.db}`.* TO '{user}'@'%'",
        )
        config = self.server.source_config(table.replace(".", "\\."))
        return open_source(replace(config, user=user, password="secret"))


@dataclass
class FakeHarness:
    folder: Path
    name: str = "fake"
    tables: dict[str, dict[int, str]] = field(default_factory=dict)
    keyed: set[str] = field(default_factory=set)
    log: FakeLog | None = None

    def _schema(self, table: str) -> TableSchema:
        columns = (Column("id", "bigint", nullable=False, logical="int64"),
                   Column("v", "varchar", length=40, logical="string"))  # fmt: skip
        return TableSchema("fake", table, columns, ("id",) if table in self.keyed else ())

    def create(self, table: str, rows: int = 0, keyed: bool = True) -> str:
        self.tables[table] = {}
        if keyed:
            self.keyed.add(table)
        schemas = [self._schema(t) for t in self.tables]
        path = self.folder / "db.jsonl"
        if self.log is None:
            self.log = FakeLog(path, schemas)
        else:  # a new table: the header names it, the transactions stay
            lines = path.read_text().splitlines()
            lines[0] = json.dumps({"schemas": [s.to_json() for s in schemas], "not_ready": None})
            path.write_text("\n".join(lines) + "\n")
        if rows:
            self.commit(table, [("c", i, f"v{i}") for i in range(1, rows + 1)])
        return f"fake.{table}"

    def commit(self, table: str, writes: list[Write]) -> None:
        assert self.log is not None
        state = self.tables[table]
        rows = []
        for op, i, v in writes:
            before = None if op == "c" else _image(i, state[i])
            after = None if op == "d" else _image(i, v or "")
            rows.append([op, "fake", table, json.dumps([i]), before, after])
            if op == "d":
                del state[i]
            else:
                state[i] = v or ""
        self.log.commit(rows)

    def source(self, *tables: str) -> Source:
        patterns = tuple(t.replace(".", "\\.") for t in tables)
        config = SourceConfig(str(self.folder / "db.jsonl"), 0, "", "", patterns,
                              type="tests.fakes")  # fmt: skip
        return open_source(config)

    def contents(self, table: str) -> dict[int, str]:
        return dict(self.tables[table])

    def unready(self, table: str) -> Source:
        path = self.folder / "db.jsonl"
        lines = path.read_text().splitlines()
        header = json.loads(lines[0]) | {"not_ready": "the fake log is off; switch it on."}
        path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
        return self.source(table)


@dataclass
class PostgresHarness:
    """Tables in schema ``public`` of a database of the test's own; every source gets a slot
    and a publication of its own, made when the source is opened (as a pipeline's first start
    makes them), which the ``pgdb`` fixture drops after the test."""

    server: ThrowawayPostgres
    db: str
    name: str = "postgres"

    def create(self, table: str, rows: int = 0, keyed: bool = True) -> str:
        key = " PRIMARY KEY" if keyed else " NOT NULL"
        self.server.execute(
            f"CREATE TABLE {table} (id bigint{key}, v varchar(40))", database=self.db
        )
        if rows:
            self.server.execute(
                f"INSERT INTO {table} SELECT i, 'v' || i FROM generate_series(1, {rows}) i",
                database=self.db,
            )
        return f"public.{table}"

    def commit(self, table: str, writes: list[Write]) -> None:
        sql = []
        for op, i, v in writes:
            if op == "c":
                sql.append(f"INSERT INTO {table} VALUES ({i}, '{v}')")
            elif op == "u":
                sql.append(f"UPDATE {table} SET v = '{v}' WHERE id = {i}")
            else:
                sql.append(f"DELETE FROM {table} WHERE id = {i}")
        self.server.execute("BEGIN", *sql, "COMMIT", database=self.db)

    def _config(self, tables: tuple[str, ...], user: str, password: str) -> SourceConfig:
        name = f"contract_{next(_server_ids)}"
        return SourceConfig(
            self.server.host, self.server.port, user, password,
            tuple(t.replace(".", "\\.") for t in tables), type="postgres",
            settings=PostgresSettings(database=self.db, slot=name, publication=name),
        )  # fmt: skip

    def source(self, *tables: str) -> Source:
        source = open_source(self._config(tables, self.server.user, self.server.password))
        if all(t.startswith("public.") for t in tables):
            source.startup_offset("earliest")  # the slot and the publication, once
        return source

    def contents(self, table: str) -> dict[int, str]:
        rows = self.server.query(f"SELECT id, v FROM {table}", database=self.db)
        return {int(i): str(v) for i, v in rows}

    def unready(self, table: str) -> Source:
        user = f"reader{next(_server_ids)}"
        self.server.execute(
            f"CREATE ROLE {user} LOGIN PASSWORD 'secret'",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {user}",
            database=self.db,
        )
        return open_source(self._config((table,), user, "secret"))


def _image(i: int, v: str) -> str:
    return json.dumps({"id": i, "v": v}, separators=(",", ":"))
