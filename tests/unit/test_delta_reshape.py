"""Columns of the Delta sink's tables given new types or dropped (sinks/delta/reshape.py): each a
rewrite committed as one version that keeps every row, the transaction version of the sink's app
id, the table's configuration and its history; again, it commits nothing."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import commits, log_commit, opened, reshape
from sparkcdc.sinks.delta.lake import DeltaTables
from sparkcdc.sinks.storage import LakeStorage
from tests.cases.s3 import MotoS3

APP = "pipeline-1"
NAME = TableName("shop", "t")
SOURCE = pa.struct([pa.field("position", pa.string())])
BATCHES = 3  # one data file and one transaction version each

Values = list[Any]


def fields(kind: pa.DataType, extra: tuple[pa.Field, ...] = ()) -> list[pa.Field]:
    return [pa.field("id", pa.int64()), pa.field("v", kind), *extra]


def make(tables: DeltaTables, kind: pa.DataType, values: Values, *extra: pa.Field) -> None:
    """The replica and change log of :data:`NAME`: id, v of ``kind`` (and ``extra`` columns of
    strings), ``values`` written in :data:`BATCHES` batches; the change log's images, one of
    them a ``before``."""
    columns = fields(kind, extra)
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    found = tables.evolve(NAME, columns, SOURCE)
    assert found == columns
    per = len(values) // BATCHES
    for b in range(BATCHES):
        ids = list(range(b * per, (b + 1) * per))
        rows = [{"id": i, "v": values[i], **{f.name: f"{f.name}{i}" for f in extra}} for i in ids]
        commits.append_replica(replica, pa.Table.from_pylist(rows, pa.schema(columns)), APP, b)
        before = [None] * len(rows)
        if b:
            before[0] = rows[0]  # an update's image
        positions = [{"position": f"{b}.{i}"} for i in ids]
        log = {"op": ["c"] * len(rows), "before": before, "after": rows, "source": positions,
               "transaction": [None] * len(rows)}  # fmt: skip
        schema = pa.schema(commits.arrow_fields(commits.table(changelog)))
        commits.append_changelog(changelog, pa.Table.from_pydict(log, schema), APP, b)


def read(path: str, version: int | None = None, **options: str) -> pa.Table:
    table = DeltaTable(path, version=version, storage_options=options or None)
    return table.to_pyarrow_table().sort_by("id")


def state(path: str, **options: str) -> tuple[int, int | None, str | None]:
    """A table opened anew: its version, the sink's transaction version, checkpoint interval."""
    table = DeltaTable(path, storage_options=options or None)
    config = table.metadata().configuration.get(log_commit.CHECKPOINT_KEY)
    return table.version(), table.transaction_version(APP), config


def column_type(table: pa.Table, name: str) -> pa.DataType:
    return commits.plain_field(table.schema.field(name)).type


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[DeltaTables]:
    yield DeltaTables(LakeStorage(str(tmp_path)))
    for path in (str(tmp_path / "shop" / "t"), str(tmp_path / "shop" / "t__changelog")):
        opened.forget(path)


D = Decimal
MORE = [D("0.00"), D("1.10"), D("-7.05")]
DATES = [dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31)]
CASES = [
    (pa.int32(), pa.int64(), [1, -2, 2**31 - 1, None, -(2**31), 7]),
    (pa.int8(), pa.int32(), [127, -128, 0, None, 1, 2]),
    (pa.int16(), pa.int32(), [32767, -32768, 0, None, 1, 2]),
    (pa.float32(), pa.float64(), [1.5, -0.25, None, 2.0**100, 0.0, 7.125]),
    (pa.decimal128(10, 2), pa.decimal128(14, 2), [D("12345678.90"), D("-0.01"), None, *MORE]),
    (pa.decimal128(10, 2), pa.decimal128(14, 4), [D("99999999.99"), D("-1.25"), None, *MORE]),
    (pa.decimal128(10, 2), pa.decimal128(6, 2), [D("9999.99"), D("-9999.99"), None, *MORE]),
    (pa.date32(), pa.timestamp("us"), [*DATES, None, dt.date(1970, 1, 1), None]),
    (pa.int32(), pa.string(), [1, -2, None, 2**31 - 1, -(2**31), 0]),
]


@pytest.mark.parametrize(("old", "new", "values"), CASES, ids=[f"{o}-{n}" for o, n, _ in CASES])
def test_retype_rewrites_both_tables_as_one_version_each_keeping_what_the_sink_needs(
    tables: DeltaTables, old: pa.DataType, new: pa.DataType, values: Values
) -> None:
    """The replica's column and the change log's image fields take the new type, every value
    cast exactly; one version each; the transaction version, checkpoint interval and earlier
    versions kept; the cached table reports the new types; a second call writes nothing."""
    make(tables, old, values)
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    was = {p: state(p) for p in (replica, changelog)}
    assert was[replica][1:] == (BATCHES - 1, "10")
    expected = pa.array(values, old).cast(new).to_pylist()

    found = tables.retype(NAME, [pa.field("v", new), pa.field("gone", pa.int64())])

    assert found == fields(new)
    assert commits.arrow_fields(commits.table(replica)) == fields(new)
    for path in (replica, changelog):
        version, txn, interval = state(path)
        assert (version, txn, interval) == (was[path][0] + 1, BATCHES - 1, "10")
    rows = read(replica)
    assert column_type(rows, "v") == new and rows.column("v").to_pylist() == expected
    log = DeltaTable(changelog).to_pyarrow_table()
    after = log.column("after").combine_chunks()
    assert after.type.field("v").type == new and log.schema.field("before").type == after.type
    assert {r["id"]: r["v"] for r in after.to_pylist()} == dict(enumerate(expected))
    befores = [r for r in log.column("before").to_pylist() if r]
    assert len(befores) == BATCHES - 1 and all(r["v"] == expected[r["id"]] for r in befores)
    earlier = read(replica, version=was[replica][0])
    assert column_type(earlier, "v") == old
    assert earlier.column("v").to_pylist() == pa.array(values, old).to_pylist()
    if new == pa.timestamp("us"):
        assert "timestampNtz" in (DeltaTable(replica).protocol().reader_features or [])

    assert tables.retype(NAME, [pa.field("v", new)]) == fields(new)
    assert [state(p)[0] for p in (replica, changelog)] == [was[p][0] + 1 for p in was]


def test_the_transaction_version_kept_in_a_checkpoint_is_kept(tables: DeltaTables) -> None:
    """Past the table's checkpoint (every ``delta.checkpointInterval`` versions), where its
    transaction versions are read from the checkpoint, not from the commits since."""
    make(tables, pa.int32(), [1, 2, 3])
    replica = tables.replica(NAME)
    rows = pa.Table.from_pylist([{"id": 3, "v": 4}], pa.schema(fields(pa.int32())))
    for b in range(BATCHES, 12):
        commits.append_replica(replica, rows, APP, b)
    assert any(n.endswith(".checkpoint.parquet") for n in os.listdir(Path(replica, "_delta_log")))

    tables.retype(NAME, [pa.field("v", pa.int64())])

    assert state(replica) == (13, 11, "10") and read(replica).num_rows == 3 + 12 - BATCHES


@pytest.mark.parametrize(
    ("old", "new", "values"),
    [
        (pa.int64(), pa.int32(), [1, 2, 3, 2**31, 5, None]),
        (pa.decimal128(10, 2), pa.decimal128(6, 2), [D("12345.67"), *MORE, D(1), D(2)]),
        (pa.decimal128(10, 2), pa.decimal128(10, 1), [D("1.25"), *MORE, D(1), D(2)]),
    ],
    ids=["int64-int32", "decimal-fewer-digits", "decimal-smaller-scale"],
)
def test_a_value_the_new_type_cannot_hold_is_named_and_nothing_is_committed(
    tables: DeltaTables, old: pa.DataType, new: pa.DataType, values: Values
) -> None:
    make(tables, old, values)
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    was = [state(p) for p in (replica, changelog)]

    with pytest.raises(ValueError) as raised:
        tables.retype(NAME, [pa.field("v", new)])

    text = str(raised.value)
    assert text.startswith(f"a value of column v of {replica} does not fit its new type {new} (")
    assert "\n" not in text and "Traceback" not in text
    assert [state(p) for p in (replica, changelog)] == was
    assert commits.arrow_fields(commits.table(replica)) == fields(old)


def test_a_change_log_image_that_does_not_fit_names_its_struct_field(tables: DeltaTables) -> None:
    """The replica's values fit (it is retyped), an earlier image in the change log does not:
    the change log is left as it was."""
    make(tables, pa.int64(), [1, 2, 3, 4, 5, 6])
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    schema = pa.schema(commits.arrow_fields(commits.table(changelog)))
    update = {"op": ["u"], "before": [{"id": 0, "v": 2**40}], "after": [{"id": 0, "v": 1}],
              "source": [{"position": "9"}], "transaction": [None]}  # fmt: skip
    commits.append_changelog(changelog, pa.Table.from_pydict(update, schema), APP, BATCHES)
    was = state(changelog)

    with pytest.raises(ValueError, match=f"column before.v of {changelog} does not fit .* int32"):
        tables.retype(NAME, [pa.field("v", pa.int32())])

    assert state(changelog) == was
    assert commits.arrow_fields(commits.table(replica)) == fields(pa.int32())


def test_drop_columns_rewrites_the_replica_only(tables: DeltaTables) -> None:
    """One column dropped, then two; again, nothing is committed. Every row and the other
    columns' values are kept, so are the transaction version, the checkpoint interval and the
    version before; the change log keeps the columns."""
    extra = tuple(pa.field(n, pa.string()) for n in "abc")
    make(tables, pa.int32(), [1, 2, 3, 4, 5, 6], *extra)
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    first, log_was = state(replica)[0], state(changelog)
    before = read(replica)

    assert tables.drop_columns(NAME, ["a"]) == fields(pa.int32(), extra[1:])
    assert tables.drop_columns(NAME, ["B", "c", "missing"]) == fields(pa.int32())
    assert tables.drop_columns(NAME, ["b", "c"]) == fields(pa.int32())

    assert state(replica) == (first + 2, BATCHES - 1, "10") and state(changelog) == log_was
    assert read(replica) == before.select(["id", "v"])
    assert commits.arrow_fields(commits.table(replica)) == fields(pa.int32())
    assert read(replica, version=first) == before
    names = pa.schema(DeltaTable(changelog).schema().to_arrow()).field("after").type
    assert [names.field(i).name for i in range(names.num_fields)] == ["id", "v", "a", "b", "c"]


def test_the_sink_writes_values_of_the_new_type_after_a_retype(tables: DeltaTables) -> None:
    """With the tables kept open before the retype (:mod:`.opened`), the next batches' append,
    MERGE and change-log append write int64 values past int32's range as they are."""
    make(tables, pa.int32(), [1, 2, 3, 4, 5, 6])
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    assert commits.arrow_fields(commits.table(replica)) == fields(pa.int32())  # kept open

    tables.retype(NAME, [pa.field("v", pa.int64())])

    assert commits.arrow_fields(commits.table(replica)) == fields(pa.int64())
    big, schema = 2**40, pa.schema(fields(pa.int64()))
    rows = pa.Table.from_pylist([{"id": 100, "v": big}], schema)
    assert commits.append_replica(replica, rows, APP, BATCHES)
    change = {"id": [0], "v": [big + 1], OP_COLUMN: ["u"], ORDER_COLUMN: [0]}
    assert commits.merge_replica(replica, pa.table(change), ["id"], APP, BATCHES + 1)
    got = {r["id"]: r["v"] for r in read(replica).to_pylist()}
    assert (got[0], got[100], len(got)) == (big + 1, big, 7)
    assert state(replica)[1] == BATCHES + 1

    log_schema = pa.schema(commits.arrow_fields(commits.table(changelog)))
    log = {"op": ["c"], "before": [None], "after": [{"id": 100, "v": big}],
           "source": [{"position": "9"}], "transaction": [None]}  # fmt: skip
    assert commits.append_changelog(changelog, pa.Table.from_pydict(log, log_schema), APP, 9)
    after = DeltaTable(changelog).to_pyarrow_table().column("after").to_pylist()
    assert {"id": 100, "v": big} in after


def test_a_commit_made_while_the_rows_are_read_has_the_rewrite_made_again(
    tables: DeltaTables, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's compaction lands after the rewrite read its rows: the rewrite's commit
    fails and it is made again from the compacted version, so no row is kept twice."""
    make(tables, pa.int32(), [1, 2, 3, 4, 5, 6])
    replica = tables.replica(NAME)
    start = reshape._CastRows.__init__
    compactions: list[object] = []

    def compacted_meanwhile(rows: reshape._CastRows, *args: Any) -> None:
        start(rows, *args)
        if not compactions:
            compactions.append(DeltaTable(replica).optimize.compact())

    monkeypatch.setattr(reshape._CastRows, "__init__", compacted_meanwhile)
    first = state(replica)[0]

    tables.retype(NAME, [pa.field("v", pa.int64())])

    assert state(replica) == (first + 2, BATCHES - 1, "10")
    assert read(replica).to_pydict() == {"id": list(range(6)), "v": [1, 2, 3, 4, 5, 6]}
    history = DeltaTable(replica).history(2)
    assert [h["operation"] for h in history] == ["WRITE", "OPTIMIZE"]
    assert history[0][commits.OPERATION_KEY] == reshape.RETYPE


@pytest.mark.s3
def test_retype_and_drop_on_object_storage(s3: MotoS3) -> None:
    options = s3.options()
    tables = DeltaTables(LakeStorage(f"s3://{s3.bucket()}/lake", options))
    extra = pa.field("a", pa.string())
    make(tables, pa.int32(), [1, 2, 3, 4, 5, 2**31 - 1], extra)
    replica, changelog = tables.replica(NAME), tables.changelog(NAME)
    first, log_first = state(replica, **options)[0], state(changelog, **options)[0]

    assert tables.retype(NAME, [pa.field("v", pa.int64())]) == fields(pa.int64(), (extra,))
    assert tables.drop_columns(NAME, ["a"]) == fields(pa.int64())
    assert tables.drop_columns(NAME, ["a"]) == fields(pa.int64())

    assert state(replica, **options) == (first + 2, BATCHES - 1, "10")
    assert state(changelog, **options) == (log_first + 1, BATCHES - 1, "10")
    rows = read(replica, **options)
    assert rows.schema == pa.schema(fields(pa.int64()))
    assert rows.column("v").to_pylist() == [1, 2, 3, 4, 5, 2**31 - 1]
    log = DeltaTable(changelog, storage_options=options).schema().to_arrow()
    assert pa.schema(log).field("after").type.field("v").type == pa.int64()
