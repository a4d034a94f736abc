"""Deterministic rows and whole workloads for the MySQL 8 writer (benchmarks and end-to-end tests).

:func:`sample_row` gives row ``i`` of any table (every column type has a value derived from
``i``; key columns are unique per ``i``). :func:`single_row_inserts` writes ``n`` transactions of
one INSERT each; :func:`mixed_workload` writes ``n`` row changes (inserts, updates and deletes
mixed, several per transaction) and returns the table's content afterwards.
"""

from __future__ import annotations

import datetime as dt
import random
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from tests.cases.mysql8.binlog import BinlogWriter, Change
from tests.cases.mysql8.columns import Table, TypeSpec

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_EPOCH = dt.datetime(2020, 1, 1)


def sample_value(spec: TypeSpec, i: int) -> Any:
    """A value of the column type ``spec`` for row ``i`` (distinct for distinct small ``i``)."""
    base = spec.base
    if base in _INT_BITS:
        bits = _INT_BITS[base] - (0 if spec.unsigned else 1)
        return i % (1 << bits)
    if base == "decimal":
        whole = i % 10 ** min(spec.length - spec.scale, 9)
        if spec.scale:
            return Decimal(f"{whole}.{(i * 7) % 10**spec.scale:0{spec.scale}d}")
        return Decimal(whole)
    if base in ("float", "double"):
        return i * 0.5
    if base == "bit":
        return i % (1 << spec.length)
    if base == "year":
        return 1901 + i % 255
    if base == "date":
        return dt.date(2000, 1, 1) + dt.timedelta(days=i % 20000)
    fraction = (i * 37) % 1_000_000 // 10 ** (6 - spec.scale) * 10 ** (6 - spec.scale)
    if base == "time":
        return dt.timedelta(seconds=i % 3_000_000, microseconds=fraction)
    if base in ("datetime", "timestamp"):
        return _EPOCH + dt.timedelta(seconds=i, microseconds=fraction)
    if base in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        text = f"r{i}é"
        return text[: spec.length] if base in ("char", "varchar") else text * 3
    if base in ("binary", "varbinary"):
        return i.to_bytes(8, "big")[-spec.length :] if spec.length < 8 else i.to_bytes(8, "big")
    if base in ("tinyblob", "blob", "mediumblob", "longblob"):
        return b"\x00\xff" + i.to_bytes(8, "little")
    if base == "enum":
        return spec.values[i % len(spec.values)]
    if base == "set":
        return {spec.values[i % len(spec.values)]}
    if base == "json":
        return {"i": i, "tags": ["a", "b"], "ok": i % 2 == 0}
    if base in ("geometry", "point"):
        return bytes(4) + struct.pack("<BIdd", 1, 1, float(i), -float(i))
    raise ValueError(f"no sample value for {spec.column_type}")


def sample_row(table: Table, i: int) -> tuple[Any, ...]:
    """Row ``i`` of ``table`` in column order."""
    return tuple(sample_value(spec, i) for spec in table.specs)


def _gtids(uuid: str | None, start_gno: int) -> Callable[[int], tuple[str, int] | None]:
    if uuid is None:
        return lambda k: None
    return lambda k: (uuid, start_gno + k)


def single_row_inserts(
    writer: BinlogWriter, table: Table, n: int, *, first: int = 1, gtid_uuid: str | None = None,
    start_gno: int = 1, compressed: bool = False, row: Callable[[int], Any] | None = None,
) -> None:  # fmt: skip
    """``n`` transactions of one inserted row each (rows ``first`` ..), GTIDs ``gtid_uuid:
    start_gno`` .. (anonymous without a uuid)."""
    make = row or (lambda i: sample_row(table, i))
    gtid = _gtids(gtid_uuid, start_gno)
    write = writer.transaction
    for k in range(n):
        write([("c", table, None, make(first + k))], gtid(k), compressed)


def mixed_workload(
    writer: BinlogWriter, table: Table, n: int, *, rows_per_transaction: int = 10,
    gtid_uuid: str | None = None, start_gno: int = 1, seed: int = 0, compressed: bool = False,
) -> dict[tuple[Any, ...], tuple[Any, ...]]:  # fmt: skip
    """``n`` row changes in transactions of ``rows_per_transaction``: about half inserts of new
    rows, 30% updates and 20% deletes of live ones. The table content afterwards, by key."""
    rng = random.Random(seed)
    keys = table.key_indexes or tuple(range(len(table.columns)))
    live: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    order: list[tuple[Any, ...]] = []
    gtid = _gtids(gtid_uuid, start_gno)
    next_i, done, k = 1, 0, 0
    while done < n:
        changes: list[Change] = []
        for _ in range(min(rows_per_transaction, n - done)):
            roll = rng.random()
            if not live or roll < 0.5:
                after = sample_row(table, next_i)
                next_i += 1
                key = tuple(after[j] for j in keys)
                live[key] = after
                order.append(key)
                changes.append(("c", table, None, after))
                continue
            key = order[rng.randrange(len(order))]
            while key not in live:
                key = order[rng.randrange(len(order))]
            before = live[key]
            if roll < 0.8:
                fresh = list(sample_row(table, next_i + 1_000_000 + done))
                after = tuple(before[j] if j in keys else fresh[j] for j in range(len(fresh)))
                live[key] = after
                changes.append(("u", table, before, after))
            else:
                del live[key]
                changes.append(("d", table, before, None))
        done += len(changes)
        writer.transaction(changes, gtid(k), compressed)
        k += 1
    return live
