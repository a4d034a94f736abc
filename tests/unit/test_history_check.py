"""The history check of the end-to-end tests (``tests/e2e/history_check.py``) on a hand-made
change log: its rebuild gives the versions the specification names, and it fails on a history
table with a version missing, one twice, a wrong end position or two open versions of a key,
read back from real Delta tables."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.e2e.history_check import assert_history_matches, compare_history, rebuild_history

Row = dict[str, Any]


def change(op: str, n: int, before: Row | None = None, after: Row | None = None) -> Row:
    """A change log row at position ``p<n>``, committed ``n`` seconds after the epoch."""
    return {"op": op, "before": before, "after": after,
            "source": {"position": f"p{n:03d}", "ts_ms": n * 1000}}  # fmt: skip


def acct(i: int, owner: str, balance: int = 1) -> Row:
    return {"id": i, "owner": owner, "balance": balance}


CHANGELOG = [
    change("r", 1, after=acct(1, "ann")),
    change("r", 1, after=acct(2, "bob")),
    change("u", 2, acct(1, "ann"), acct(1, "ann", 5)),  # untracked: in place
    change("u", 3, acct(1, "ann", 5), acct(1, "amy", 5)),
    change("d", 4, before=acct(2, "bob")),
    change("c", 5, after=acct(2, "bea")),
    change("u", 6, acct(2, "bea"), acct(3, "bea")),  # the key changed
    change("t", 7),
    change("c", 8, after=acct(4, "dan")),
]


def at(n: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=n)


def rebuilt() -> list[Row]:
    return rebuild_history(reversed(CHANGELOG), ["id"], tracked=["id", "owner"])


def test_the_rebuild_follows_the_specification() -> None:
    found = sorted(
        (r["id"], r["owner"], r["balance"], r["__start_position"], r["__end_position"],
         r["__current"], r["__op"]) for r in rebuilt()
    )  # fmt: skip
    assert found == [
        (1, "amy", 5, "p003", "p007", False, "u"),
        (1, "ann", 5, "p001", "p003", False, "r"),
        (2, "bea", 1, "p005", "p006", False, "c"),
        (2, "bob", 1, "p001", "p004", False, "r"),
        (3, "bea", 1, "p006", "p007", False, "u"),
        (4, "dan", 1, "p008", None, True, "c"),
    ]
    first = next(r for r in rebuilt() if r["__start_position"] == "p001" and r["id"] == 1)
    assert (first["__start_at"], first["__end_at"]) == (at(1), at(3))
    every_column = rebuild_history(CHANGELOG, ["id"])  # the balance tracked too: one more
    assert len(every_column) == 7


def missing(rows: list[Row]) -> list[Row]:
    return rows[1:]


def twice(rows: list[Row]) -> list[Row]:
    return [*rows, rows[0]]


def wrong_end(rows: list[Row]) -> list[Row]:
    closed = next(i for i, r in enumerate(rows) if r["__end_position"] is not None)
    return [{**r, "__end_position": "p002"} if i == closed else r for i, r in enumerate(rows)]


def reopened(rows: list[Row]) -> list[Row]:
    closed = next(i for i, r in enumerate(rows) if r["id"] == 1)
    return [{**r, "__end_at": None, "__end_position": None, "__current": True}
            if i == closed else r for i, r in enumerate(rows)]  # fmt: skip


def two_open(rows: list[Row]) -> list[Row]:
    held = next(r for r in rows if r["__current"])
    return [*rows, {**held, "__start_position": "p007", "__op": "r"}]


def microsecond_late(rows: list[Row]) -> list[Row]:
    return [{**rows[0], "__start_at": rows[0]["__start_at"] + dt.timedelta(microseconds=1)},
            *rows[1:]]  # fmt: skip


CORRUPTIONS = [missing, twice, wrong_end, reopened, two_open, microsecond_late]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_a_corrupted_history_fails_the_check(corrupt: Callable[[list[Row]], list[Row]]) -> None:
    good = rebuilt()
    compare_history(good, list(reversed(good)), ["id"])  # order does not matter
    with pytest.raises(AssertionError):
        compare_history(good, corrupt(good), ["id"])


IMAGE = pa.struct([("id", pa.int64()), ("owner", pa.string()), ("balance", pa.int64())])
SOURCE = pa.struct([("position", pa.string()), ("ts_ms", pa.int64())])
LOG = pa.schema([("op", pa.string()), ("before", IMAGE), ("after", IMAGE), ("source", SOURCE)])
TIMESTAMP = pa.timestamp("us", tz="UTC")
HISTORY = pa.schema([
    *IMAGE, ("__start_at", TIMESTAMP), ("__start_position", pa.string()),
    ("__end_at", TIMESTAMP), ("__end_position", pa.string()), ("__current", pa.bool_()),
    ("__op", pa.string()),
])  # fmt: skip


def write_lake(lake: Path, history: list[Row]) -> None:
    """The change log and a history table of ``shop.accounts`` as Delta tables in ``lake``."""
    logged = pa.Table.from_pylist(CHANGELOG, schema=LOG)
    write_deltalake(str(lake / "shop" / "accounts__changelog"), logged, mode="overwrite")
    versions = pa.Table.from_pylist(history, schema=HISTORY)
    write_deltalake(str(lake / "shop" / "accounts__history"), versions, mode="overwrite")


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_the_check_reads_delta_tables_and_fails_on_a_corrupted_one(
    tmp_path: Path, corrupt: Callable[[list[Row]], list[Row]]
) -> None:
    write_lake(tmp_path, rebuilt())
    assert assert_history_matches(tmp_path, "shop", "accounts", tracked=["id", "owner"]) == 6
    write_lake(tmp_path, corrupt(rebuilt()))
    with pytest.raises(AssertionError, match="accounts__history"):
        assert_history_matches(tmp_path, "shop", "accounts", tracked=["id", "owner"])
