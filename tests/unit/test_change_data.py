"""The replica's change data feed (sinks/delta/change_data.py): the rows of a batch, the feed of
the sink's own copy-on-write commits read back with delta-rs's ``load_cdf``, next to what
delta-rs's own MERGE writes for the same batches, and the tables it is left to."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import SinkConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks import delta
from sparkcdc.sinks.changes.latest import OP_COLUMN, ORDER_COLUMN
from sparkcdc.sinks.delta import change_data, commits, log_commit
from sparkcdc.sinks.port import SinkContext
from sparkcdc.sinks.registry import open_sink
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases.envelopes import Changes

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
Feed = set[tuple[int, str | None, str]]  # (key, name, _change_type)
ITEMS = TableSchema("shop", "items", (column("id", "int"), column("v", "varchar")), ("id",))
BASE = "source: {host: h, user: u, tables: [x]}\npipeline: {checkpoint: /c}\n"


def rows(values: dict[int, str | None]) -> pa.Table:
    return pa.table({"id": list(values), "name": list(values.values())}, schema=SCHEMA)


def feed_of(table: pa.Table) -> Feed:
    return {(r["id"], r["name"], r["_change_type"]) for r in table.to_pylist()}


def test_a_batch_s_rows_are_its_net_effect_per_key() -> None:
    """Dropped rows whose key is upserted are pre-images and the upserts post-images; other
    dropped rows are deletes, other upserts inserts (a key deleted and inserted again in one
    batch is an upsert here: the latest change per key)."""
    old = rows({1: "one", 2: "two", 3: "three"})  # the candidates' rows the batch names
    upserts = rows({1: "ONE", 3: "three", 4: "four"})  # 3: deleted, then inserted as it was
    found = change_data.change_rows(old, upserts, ["id"])
    assert found.column_names == ["id", "name", "_change_type"]
    assert feed_of(found) == {
        (1, "one", "update_preimage"), (1, "ONE", "update_postimage"),
        (2, "two", "delete"),
        (3, "three", "update_preimage"), (3, "three", "update_postimage"),
        (4, "four", "insert"),
    }  # fmt: skip


def test_a_delete_of_a_key_the_table_lacks_gives_nothing(tmp_path: Path) -> None:
    assert change_data.change_rows(SCHEMA.empty_table(), SCHEMA.empty_table(), ["id"]).num_rows == 0
    path = str(tmp_path / "t")
    commits.ensure_replica(path, list(SCHEMA))
    commits.merge_replica(path, changes({1: "a"}), ("id",), "app", 0)
    assert commits.merge_replica(path, changes({9: None}), ("id",), "app", 1)
    table = DeltaTable(path)
    assert table.version() == 2 and table.transaction_version("app") == 1
    assert feed_of(pa.table(table.load_cdf(starting_version=2))) == set()
    assert len(list((tmp_path / "t" / "_change_data").iterdir())) == 1  # batch 0's insert


def test_a_compound_key_matches_on_every_column_and_null_matches_nothing() -> None:
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    old = pa.table({"a": [1, 1, None], "b": ["x", "y", "z"]}, schema=schema)
    new = pa.table({"a": [1, 2, None], "b": ["y", "x", "z"]}, schema=schema)
    found = change_data.change_rows(old, new, ["a", "b"]).to_pylist()
    assert [(r["a"], r["b"], r["_change_type"]) for r in found] == [
        (1, "x", "delete"), (1, "y", "update_preimage"), (None, "z", "delete"),
        (1, "y", "update_postimage"), (2, "x", "insert"), (None, "z", "insert"),
    ]  # fmt: skip


def changes(batch: dict[int, str | None]) -> pa.Table:
    """One row per key: a name upserts it, None deletes it."""
    keys = sorted(batch)
    return pa.table(
        {
            "id": pa.array(keys, pa.int64()),
            "name": [batch[k] for k in keys],
            OP_COLUMN: ["d" if batch[k] is None else "u" for k in keys],
            ORDER_COLUMN: pa.array(range(len(keys)), pa.int64()),
        }
    )


def delta_rs_merge(path: str, batch: pa.Table, reset: bool) -> None:
    """The MERGE the sink falls back to (sinks/delta/commits.py), made by delta-rs itself."""
    helper = [OP_COLUMN, ORDER_COLUMN]
    merger = (
        DeltaTable(path)
        .merge(batch, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete(predicate=f"s.{OP_COLUMN} = 'd'")
        .when_matched_update_all(predicate=f"s.{OP_COLUMN} <> 'd'", except_cols=helper)
        .when_not_matched_insert_all(predicate=f"s.{OP_COLUMN} <> 'd'", except_cols=helper)
    )
    if reset:
        merger = merger.when_not_matched_by_source_delete()
    merger.execute()


batches = st.lists(
    st.tuples(
        st.dictionaries(
            st.integers(0, 30),
            st.one_of(st.none(), st.text("ab", max_size=2)),
            min_size=1,
            max_size=10,
        ),
        st.booleans(),
    ),  # fmt: skip
    min_size=1,
    max_size=5,
)


@settings(max_examples=20, deadline=None)
@given(batches=batches)
def test_the_sink_s_commits_feed_what_delta_rs_s_merge_feeds(
    tmp_path_factory: pytest.TempPathFactory, batches: list[tuple[dict[int, str | None], bool]]
) -> None:
    """Each batch (a reset: a TRUNCATE first) written by the sink's own commit and, to a twin
    table, by delta-rs's MERGE: ``load_cdf`` of each version reads the same changes, and the
    ones a dict model of the table gives."""
    ours, theirs = (str(tmp_path_factory.mktemp(n)) for n in ("ours", "theirs"))
    for path in (ours, theirs):
        commits.ensure_replica(path, list(SCHEMA))
        for first in (0, 20):  # two data files: candidates pruned by their key ranges
            write_deltalake(path, rows({i: f"r{i}" for i in range(first, first + 10)}),
                            mode="append")  # fmt: skip
    model = {i: f"r{i}" for i in [*range(10), *range(20, 30)]}
    for batch_id, (batch, reset) in enumerate(batches):
        expected: Feed = set()
        for key, name in model.items():
            if reset or key in batch:
                kind = "delete" if batch.get(key) is None else "update_preimage"
                expected.add((key, name, kind))
        for key, name in batch.items():
            if name is not None:
                expected.add((key, name, "update_postimage" if key in model else "insert"))
        model = {} if reset else model
        model = {k: v for k, v in (model | batch).items() if v is not None}
        assert commits.merge_replica(ours, changes(batch), ("id",), "app", batch_id, reset)
        before = DeltaTable(theirs).version()
        delta_rs_merge(theirs, changes(batch), reset)
        written = DeltaTable(ours)
        assert written.history(1)[0]["operation"] == "WRITE"  # the sink's own commit
        found = feed_of(pa.table(written.load_cdf(starting_version=written.version())))
        made = DeltaTable(theirs)  # a MERGE that changes nothing commits nothing
        merged = made.load_cdf(starting_version=before + 1, allow_out_of_range=True)
        assert found == expected == feed_of(pa.table(merged))
        assert {r["id"]: r["name"] for r in written.to_pyarrow_table().to_pylist()} == model


def test_a_feed_table_with_a_constraint_is_merged_by_delta_rs_which_writes_the_feed(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "t")
    commits.ensure_replica(path, list(SCHEMA))
    write_deltalake(path, rows({1: "a", 2: "b"}), mode="append")
    DeltaTable(path).alter.add_constraint({"positive": "id > 0"})
    table = commits.open_table(path)
    assert table is not None and not log_commit.usable(path, table)
    assert commits.merge_replica(path, changes({2: None, 3: "c"}), ("id",), "app", 0)
    made = DeltaTable(path)
    assert made.history(1)[0]["operation"] == "MERGE"
    found = feed_of(pa.table(made.load_cdf(starting_version=made.version())))
    assert found == {(2, "b", "delete"), (3, "c", "insert")}


def test_replicas_get_the_feed_unless_the_sink_s_key_turns_it_off(tmp_path: Path) -> None:
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    commits.ensure_replica(on, list(SCHEMA))
    commits.ensure_replica(off, list(SCHEMA), change_data_feed=False)
    assert DeltaTable(on).metadata().configuration[change_data.ENABLE_KEY] == "true"
    assert DeltaTable(on).protocol().min_writer_version == 4
    assert change_data.ENABLE_KEY not in DeltaTable(off).metadata().configuration
    for path in (on, off):
        table = commits.open_table(path)
        assert table is not None and log_commit.usable(path, table)

    def given(value: str | None) -> SinkConfig:
        own = {} if value is None else {"change_data_feed": value}
        return SinkConfig(path=str(tmp_path), settings=own)

    assert delta.change_data_feed(given(None)) and not delta.change_data_feed(given("False"))
    with pytest.raises(ConfigError, match=r"^sink\.change_data_feed: 'sometimes' is neither"):
        delta.change_data_feed(given("sometimes"))


def test_with_change_data_feed_false_the_sink_s_replicas_have_none(tmp_path: Path) -> None:
    """``sink: {change_data_feed: false}`` read from a pipeline file: the replicas the sink
    creates lack the property, delta-rs refuses ``load_cdf`` of them, and their upserts are still
    the sink's own commits; a replica made before keeps its feed (nothing is changed on it)."""
    older = tmp_path / "lake" / "shop" / "accounts"
    commits.ensure_replica(str(older), [pa.field("id", pa.int32())])
    text = f"{BASE}sink: {{path: {tmp_path / 'lake'}, change_data_feed: false}}\n"
    config = load_config_text(text, str(tmp_path))
    sink = open_sink(config.sink, SinkContext(app_id=lambda: "app"))
    for batch in range(3):
        changes = Changes(pos=1000 + 100 * batch)
        if batch == 0:
            changes.schema(ITEMS)
        changes.change("c", ITEMS, after={"id": batch, "v": f"v{batch}"})
        if batch:
            changes.change("u", ITEMS, {"id": 0, "v": "v0"}, {"id": 0, "v": f"w{batch}"})
        sink.write(changes.table(), batch)  # type: ignore[attr-defined]
    made = DeltaTable(str(tmp_path / "lake" / "shop" / "items"))
    assert change_data.ENABLE_KEY not in made.metadata().configuration
    assert made.protocol().min_writer_version == 2
    assert made.history(1)[0]["operation"] == "WRITE"  # the copy-on-write, no feed file
    assert sorted(made.to_pyarrow_table().column("v").to_pylist()) == ["v1", "v2", "w2"]
    with pytest.raises(DeltaError, match="does not have change data enabled"):
        pa.table(made.load_cdf())
    assert DeltaTable(str(older)).metadata().configuration[change_data.ENABLE_KEY] == "true"
