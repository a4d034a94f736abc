"""gh-ost and pt-online-schema-change on MariaDB, each with its own statement sequence (shadow
table, copy, triggers or the binlog applier's writes, the RENAME swap, the old table dropped)
while a writer churns the table: the pipeline captures ``shop\\..*``, yet the shadow tables get
no tables of their own in the lake; the swap reaches the replica as one schema change of the
table (never an emptied replica), which is then read again; the replica ends equal to the
source with the new column, and the change log holds each of the writer's changes once, none of
the tools' copy traffic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import write_config
from tests.e2e.incremental_runs import (
    CountedChurn,
    Launch,
    binlog_event,
    changelog,
    notes,
    stop,
    wait_for,
)
from tests.e2e.snapshot_workload import load_items

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = "id, version, name, amount"
ROWS = 3000  # even ids 2..6000


def _copy(server: ThrowawayMariaDB, db: str, statement: str) -> None:
    """The tools' row copy over the key range the table has when it starts (rows written
    later reach the copy by the triggers or the binlog): chunks of 500 keys, as each tool
    writes it (``{lo}``, ``{hi}``)."""
    [(low, high)] = server.query("SELECT MIN(id), MAX(id) FROM items", db)
    for lo in range(int(low), int(high) + 1, 500):
        server.execute(statement.format(lo=lo, hi=lo + 499), database=db)


def pt_online_schema_change(server: ThrowawayMariaDB, db: str, pause: Callable[[], None]) -> None:
    """pt-online-schema-change --alter 'ADD COLUMN note …': its statements, in its order."""
    new, old = "_items_new", "_items_old"
    server.execute(
        f"CREATE TABLE `{db}`.`{new}` LIKE `{db}`.`items`",
        f"ALTER TABLE `{db}`.`{new}` ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n'",
        f"CREATE TRIGGER `pt_osc_{db}_items_del` AFTER DELETE ON `{db}`.`items` FOR EACH ROW "
        f"DELETE IGNORE FROM `{db}`.`{new}` WHERE `{db}`.`{new}`.`id` <=> OLD.`id`",
        f"CREATE TRIGGER `pt_osc_{db}_items_upd` AFTER UPDATE ON `{db}`.`items` FOR EACH ROW "
        f"BEGIN DELETE IGNORE FROM `{db}`.`{new}` WHERE !(OLD.`id` <=> NEW.`id`) AND "
        f"`{db}`.`{new}`.`id` <=> OLD.`id`; REPLACE INTO `{db}`.`{new}` ({COLUMNS}) VALUES "
        "(NEW.`id`, NEW.`version`, NEW.`name`, NEW.`amount`); END",
        f"CREATE TRIGGER `pt_osc_{db}_items_ins` AFTER INSERT ON `{db}`.`items` FOR EACH ROW "
        f"REPLACE INTO `{db}`.`{new}` ({COLUMNS}) VALUES "
        "(NEW.`id`, NEW.`version`, NEW.`name`, NEW.`amount`)",
        database=db,
    )
    _copy(server, db, (
        f"INSERT LOW_PRIORITY IGNORE INTO `{db}`.`{new}` ({COLUMNS}) SELECT {COLUMNS} FROM "
        f"`{db}`.`items` FORCE INDEX(`PRIMARY`) WHERE ((`id` >= {{lo}})) AND ((`id` <= {{hi}})) "
        "LOCK IN SHARE MODE /*pt-online-schema-change copy nibble*/"
    ))  # fmt: skip
    server.execute(
        f"ANALYZE TABLE `{db}`.`{new}`",
        f"RENAME TABLE `{db}`.`items` TO `{db}`.`{old}`, `{db}`.`{new}` TO `{db}`.`items`",
        f"DROP TABLE IF EXISTS `{db}`.`{old}`",
        database=db,
    )


def gh_ost(server: ThrowawayMariaDB, db: str, pause: Callable[[], None]) -> None:
    """gh-ost --alter 'ADD COLUMN note …': its changelog and ghost tables, the row copy, the
    binlog applier's writes of the changes made meanwhile (the writer paused: the applier's
    catch-up), the sentry table and the atomic cut-over."""
    ghc, gho, sentry = "_items_ghc", "_items_gho", "_items_del"
    server.execute(
        f"CREATE TABLE `{db}`.`{ghc}` (id bigint auto_increment, last_update timestamp not null "
        "DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, hint varchar(64) charset ascii "
        "not null, value varchar(4096) charset ascii not null, primary key(id), unique key "
        "hint_uidx(hint)) auto_increment=256 comment='gh-ost changelog'",
        f"CREATE TABLE `{db}`.`{gho}` LIKE `{db}`.`items`",
        f"ALTER TABLE `{db}`.`{gho}` ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n'",
        f"INSERT /* gh-ost */ INTO `{db}`.`{ghc}` (id, hint, value) VALUES (NULLIF(2, 0), "
        "'state', 'GhostTableMigrated') ON DUPLICATE KEY UPDATE last_update=NOW(), "
        "value=VALUES(value)",
        database=db,
    )
    _copy(server, db, (
        f"INSERT /* gh-ost `{db}`.`items` */ IGNORE INTO `{db}`.`{gho}` ({COLUMNS}) "
        f"(SELECT {COLUMNS} FROM `{db}`.`items` FORCE INDEX (`PRIMARY`) WHERE "
        "((`id` > {lo}) OR ((`id` = {lo}))) AND ((`id` < {hi}) OR ((`id` = {hi}))) "
        "LOCK IN SHARE MODE)"
    ))  # fmt: skip
    pause()
    server.execute(
        f"REPLACE /* gh-ost */ INTO `{db}`.`{gho}` ({COLUMNS}) SELECT {COLUMNS} FROM "
        f"`{db}`.`items`",
        f"DELETE /* gh-ost */ FROM `{db}`.`{gho}` WHERE id NOT IN (SELECT id FROM `{db}`.`items`)",
        f"CREATE TABLE `{db}`.`{sentry}` (id int auto_increment primary key) engine=InnoDB "
        "comment='ghost-cut-over-sentry'",
        f"DROP /* gh-ost */ TABLE IF EXISTS `{db}`.`{sentry}`",
        f"RENAME /* gh-ost */ TABLE `{db}`.`items` TO `{db}`.`{sentry}`, `{db}`.`{gho}` TO "
        f"`{db}`.`items`",
        f"DROP TABLE IF EXISTS `{db}`.`{ghc}`",
        f"DROP TABLE IF EXISTS `{db}`.`{sentry}`",
        database=db,
    )


def _differences(held: list[tuple[object, ...]], want: list[tuple[object, ...]]) -> str:
    a, b = {r[0]: r for r in held}, {r[0]: r for r in want}
    return (
        f"only in the replica {[a[k] for k in sorted(set(a) - set(b))][:5]}, only at the "
        f"source {[b[k] for k in sorted(set(b) - set(a))][:5]}, different "
        f"{[(a[k], b[k]) for k in sorted(set(a) & set(b)) if a[k] != b[k]][:5]}"
    )


def _replica(path: Path) -> list[tuple[object, ...]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted((r["id"], r["version"], r["name"], r["amount"], r.get("note")) for r in rows)


@pytest.mark.parametrize("tool", [pt_online_schema_change, gh_ost], ids=["pt-osc", "gh-ost"])
def test_an_online_schema_change_reaches_the_replica_as_one_change_of_its_table(
    tool: Callable[[ThrowawayMariaDB, str, Callable[[], None]], None],
    mariadb: ThrowawayMariaDB,
    tmp_path: Path,
    launch: Launch,
) -> None:
    db = "osc_" + tool.__name__[:6]
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    load_items(mariadb, db, ROWS)
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup="initial",
                       extra_source=", server_id: '7301-7310'")  # fmt: skip
    lake = tmp_path / "lake" / db

    def source() -> list[tuple[object, ...]]:
        has_note = any(c[0] == "note" for c in mariadb.query("SHOW COLUMNS FROM items", db))
        rows = mariadb.query(f"SELECT {COLUMNS}{', note' if has_note else ''} FROM items", db)
        return sorted((*r[:4], r[4] if has_note else None) for r in rows)

    proc = launch(cfg)
    churns = [CountedChurn(mariadb, db, top=2 * ROWS, seed=31, pause=0.01)]
    try:
        wait_for(proc, lambda: (lake / "items").exists() and _replica(lake / "items") == source(),
                 "the initial snapshot", 180)  # fmt: skip
        versions = DeltaTable(str(lake / "items")).version()
        churns[0].start()

        def pause() -> None:
            churns[-1].halt()

        tool(mariadb, db, pause)
        if not churns[-1].is_alive():  # gh-ost paused the writer for its catch-up
            churns.append(CountedChurn(mariadb, db, top=churns[0].top, seed=32, pause=0.01))
            churns[-1].start()
        wait_for(proc, lambda: bool(notes(tmp_path / "lake", "completed")),
                 "the table read again after the swap", 180)  # fmt: skip
    finally:
        for churn in churns:
            if churn.ident is not None:
                churn.halt()
    try:
        wait_for(proc, lambda: _replica(lake / "items") == source(), "the replica", 90)
    except AssertionError as exc:
        held, want = _replica(lake / "items"), source()
        raise AssertionError(f"{exc}; {_differences(held, want)}") from None
    stop(proc)

    assert sorted(p.name for p in lake.iterdir()) == ["items", "items__changelog"]
    assert {row[4] for row in _replica(lake / "items")} == {"n"}
    table = DeltaTable(str(lake / "items"))
    for version in range(versions, table.version() + 1):  # never emptied by the swap
        table.load_as_version(version)
        assert table.to_pyarrow_table(columns=["id"]).num_rows > ROWS // 2, version
    rows = changelog(lake / "items__changelog")
    events = Counter(binlog_event(r["source"]) for r in rows if r["op"] != "r")
    assert max(events.values()) == 1
    assert sum(events.values()) == sum(c.changes for c in churns)
    assert {n["details"].get("signal") for n in notes(tmp_path / "lake", "queued")} == {
        "schema-change"
    }
