"""The Iceberg sink's commits against the embedded SQL catalog (no Spark): a composite key's
upserts and deletes exact, the batch marker surviving another writer's rewrite and snapshot
expiry, and a commit that lost a race with another writer tried again on the table as it now is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.config.model import SinkConfig
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.iceberg.catalog import open_catalog
from sparkcdc.sinks.port import Sink, SinkContext
from sparkcdc.sinks.registry import open_sink
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS

A = ACCOUNTS
LINES = TableSchema(
    "shop", "lines",
    (column("order_id", "bigint"), column("line", "int"), column("qty", "int")),
    primary_key=("order_id", "line"),
)  # fmt: skip


@dataclass(frozen=True)
class Frame:
    table: pa.Table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


def lake(tmp_path: Path) -> SinkConfig:
    return SinkConfig(path=str(tmp_path / "lake"), type="iceberg")


def opened(config: SinkConfig) -> Sink:
    return open_sink(config, SinkContext(app_id=lambda: "pipeline-1"))


def rows(config: SinkConfig, table: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (
        open_catalog(config).load_table(("shop", table)).scan().to_arrow().to_pylist()
    )
    return found


def account(i: int, owner: str) -> dict[str, Any]:
    return {"id": i, "owner": owner, "balance": f"{i}.00"}


def line(order: int, number: int, qty: int) -> dict[str, Any]:
    return {"order_id": order, "line": number, "qty": qty}


def test_a_composite_key_deletes_and_upserts_only_its_own_rows(tmp_path: Path) -> None:
    """Keys (1,1) (1,2) (2,1) (2,2): changing (1,2) and deleting (2,1) reaches rows whose key
    columns each hold a changed value, (1,1) and (2,2), which stay as they were."""
    config = lake(tmp_path)
    sink = opened(config)
    first = Changes(pos=1000).schema(LINES)
    for order in (1, 2):
        for number in (1, 2):
            first.change("c", LINES, after=line(order, number, 10 * order + number))
    sink(Frame(first.table()), 0)
    second = (
        Changes(pos=2000)
        .change("u", LINES, line(1, 2, 12), line(1, 2, 99))
        .change("d", LINES, before=line(2, 1, 21))
    )
    sink(Frame(second.table()), 1)
    held = sorted((r["order_id"], r["line"], r["qty"]) for r in rows(config, "lines"))
    assert held == [(1, 1, 11), (1, 2, 99), (2, 2, 22)]


def test_the_batch_marker_survives_a_rewrite_and_snapshot_expiry(tmp_path: Path) -> None:
    """Another writer rewrites the replica and the change log (no marker in its snapshots) and
    expires every older snapshot; batch 0 replayed writes nothing, batch 1 is written."""
    config = lake(tmp_path)
    batch = Frame(Changes(pos=1000).schema(A).change("c", A, after=account(1, "a")).table())
    opened(config)(batch, 0)
    catalog = open_catalog(config)
    for name in ("accounts", "accounts__changelog"):
        table = catalog.load_table(("shop", name))
        table.overwrite(table.scan().to_arrow())
        table.maintenance.expire_snapshots().older_than(_now()).commit()
        assert len(catalog.load_table(("shop", name)).snapshots()) == 1
    again = opened(config)
    again(batch, 0)
    assert len(rows(config, "accounts__changelog")) == 1
    again(Frame(Changes(pos=2000).change("c", A, after=account(2, "b")).table()), 1)
    assert sorted(r["id"] for r in rows(config, "accounts")) == [1, 2]
    assert len(rows(config, "accounts__changelog")) == 2


def test_a_commit_that_lost_a_race_is_tried_again_on_the_table_as_it_is(tmp_path: Path) -> None:
    config = lake(tmp_path)
    sink = opened(config)
    sink(Frame(Changes(pos=1000).schema(A).change("c", A, after=account(1, "a")).table()), 0)
    other = opened(config)  # another writer commits to the same tables meanwhile
    other(Frame(Changes(pos=2000).change("c", A, after=account(2, "b")).table()), 1)
    sink(Frame(Changes(pos=3000).change("u", A, account(1, "a"), account(1, "c")).table()), 2)
    assert sorted((r["id"], r["owner"]) for r in rows(config, "accounts")) == [(1, "c"), (2, "b")]
    assert len(rows(config, "accounts__changelog")) == 3


def _now() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=1)


NAMED = TableSchema(
    "shop", "named", (column("code", "varchar"), column("n", "int")), primary_key=("code",)
)  # fmt: skip


def test_many_keys_reach_their_rows_by_ranges_and_the_others_in_them_stay(tmp_path: Path) -> None:
    """More keys than one Iceberg ``In`` takes (reach.IN_LIMIT), spread over the table with gaps
    (integer keys) and in text order (text keys): the ranges that reach them cover rows the
    batch did not change, which stay as they were."""
    config = lake(tmp_path)
    sink = opened(config)
    first = Changes(pos=1000).schema(A).schema(NAMED)
    for i in range(9000):
        first.change("c", A, after=account(i, f"o{i}"))
        first.change("c", NAMED, after={"code": f"k{i:05d}", "n": i})
    sink(Frame(first.table()), 0)
    second = Changes(pos=100_000)
    for i in range(0, 9000, 3):  # 3,000 keys: every third one updated, deleted or moved
        if i % 2:
            second.change("u", A, account(i, f"o{i}"), account(i, f"u{i}"))
            second.change("u", NAMED, {"code": f"k{i:05d}", "n": i}, {"code": f"k{i:05d}", "n": -i})
        else:
            second.change("d", A, before=account(i, f"o{i}"))
            second.change("d", NAMED, before={"code": f"k{i:05d}", "n": i})
    second.change("u", A, account(1, "o1"), account(20_000, "moved"))  # a key update
    sink(Frame(second.table()), 1)
    want = {i: (f"u{i}" if i % 2 else None) if i % 3 == 0 else f"o{i}" for i in range(9000)}
    want = {i: o for i, o in want.items() if o is not None and i != 1} | {20_000: "moved"}
    assert {r["id"]: r["owner"] for r in rows(config, "accounts")} == want
    named = {r["code"]: r["n"] for r in rows(config, "named")}
    assert named == {
        f"k{i:05d}": (-i if i % 2 else None) if i % 3 == 0 else i
        for i in range(9000)
        if i % 3 or i % 2
    }
