"""Capture filters: the rules (core/capture.py) and the log reader's items under them
(sources/captured_items.py)."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.core.capture import CaptureRules, Mask
from sparkcdc.core.envelope import EnvelopeBuilder
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.schema import Column, TableSchema
from sparkcdc.sources.captured_items import captured_item
from sparkcdc.sources.mysql.offset import BinlogOffset
from tests.cases.envelopes import FILE, add

USERS = TableSchema(
    "shop",
    "users",
    (
        Column("id", "int", logical="int32"),
        Column("email", "varchar", logical="string"),
        Column("ssn", "varchar", logical="string"),
        Column("note", "varchar", logical="string"),
        Column("age", "int", logical="int32"),
    ),
    primary_key=("id",),
)
RULES = CaptureRules(
    columns_exclude=(r"shop\.users\.ssn",),
    masks=(
        Mask((r"shop\.users\.email",), "hash", algorithm="sha256", salt="pepper"),
        Mask((r"shop\.users\.note",), "truncate", length=3),
    ),
)


def _hash(value: str) -> str:
    return hashlib.sha256(b"pepper" + value.encode()).hexdigest()


def test_the_captured_schema_leaves_columns_out_under_an_id_of_its_own() -> None:
    captured = RULES.schema(USERS)
    assert captured.column_names() == ["id", "email", "note", "age"]
    assert captured.schema_id() not in (USERS.schema_id(), "")
    assert TableSchema.from_json(captured.to_json()).schema_id() == captured.schema_id()
    other = CaptureRules(columns_exclude=(r"shop\.users\.(ssn|age)",))
    assert other.schema(USERS).schema_id() != captured.schema_id()
    assert RULES.schema(captured) == captured  # applied once
    assert CaptureRules().schema(USERS) is USERS


def test_a_key_column_left_out_or_masked_and_a_masked_number_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"source.columns would leave out shop.users.id"):
        CaptureRules(columns_exclude=(r"shop\.users\.id",)).check(USERS)
    with pytest.raises(ConfigError, match=r"would leave out shop.users.id"):
        CaptureRules(columns_include=(r"shop\.users\.email",)).check(USERS)
    with pytest.raises(ConfigError, match=r"source.masks would mask shop.users.id"):
        CaptureRules(masks=(Mask((r".*\.id",), "mask", length=3),)).check(USERS)
    with pytest.raises(ConfigError, match=r"text columns only.*shop.users.age is int"):
        CaptureRules(masks=(Mask((r".*\.age",), "mask", length=3),)).check(USERS)
    RULES.check(USERS)


def test_json_images_lose_left_out_columns_and_masked_ones_are_masked() -> None:
    after = json.dumps({"id": 1, "email": "a@b.c", "ssn": "123", "note": "hello", "age": None})
    image = json.loads(RULES.json_image("shop", "users", after) or "")
    assert image == {"id": 1, "email": _hash("a@b.c"), "note": "hel", "age": None}
    stars = CaptureRules(masks=(Mask((r".*\.email",), "mask", length=4),))
    assert json.loads(stars.json_image("shop", "users", after) or "")["email"] == "****"
    unchanged = json.dumps({"\x00unchanged": ["ssn", "note"], "id": 1})
    assert json.loads(RULES.json_image("shop", "users", unchanged) or "") == {
        "\x00unchanged": ["note"], "id": 1,
    }  # fmt: skip
    assert RULES.json_image("shop", "orders", after) == after  # another table: as it was


def _item(typed: bool) -> tuple[LogItem, EnvelopeBuilder]:
    b = EnvelopeBuilder(BinlogOffset)
    schema_text = json.dumps(USERS.to_json())
    add(b, [("s", None, None, '{"kind": "alter"}')], "shop", "users", USERS.schema_id(),
        pos=100, schema=schema_text, ddl="ALTER TABLE users ADD note varchar(9)")  # fmt: skip
    row = (1, "a@b.c", "secret-ssn", "hello", 30)
    if typed:
        b.extend([("c", "[1]", None, row), ("d", "[1]", row, None)], "shop", "users",
                 USERS.schema_id(), position="0000000001:0000000200",
                 index=0, own=(1, FILE, 200, None, ""), ts_ms=0, transaction="", total_order=1,
                 data_collection_order=1, images=USERS)  # fmt: skip
    else:
        text = json.dumps(dict(zip(USERS.column_names(), row, strict=True)))
        add(b, [("c", "[1]", None, text), ("d", "[1]", text, None)], "shop", "users",
            USERS.schema_id(), pos=200)  # fmt: skip
    batch = b.build()
    boundaries = ((1, BinlogOffset(FILE, 150)),)
    return LogItem(BinlogOffset(FILE, 300), batch, boundaries=boundaries,
                   images=b.typed_images(batch)), b  # fmt: skip


@pytest.mark.parametrize("typed", [False, True], ids=["json", "typed"])
def test_a_log_item_carries_nothing_a_rule_leaves_out(typed: bool) -> None:
    item, _ = _item(typed)
    out = captured_item(RULES, item)
    assert out.after == item.after
    everything = json.dumps(out.batch.to_pylist() if out.batch else [], default=str)
    everything += json.dumps([i.rows.to_pylist() for i in out.images], default=str)
    assert "secret-ssn" not in everything and "a@b.c" not in everything
    assert _hash("a@b.c") in everything
    captured_id = RULES.schema(USERS).schema_id()
    assert out.batch is not None
    assert set(out.batch.column("schema_id").to_pylist()) == {captured_id}
    announced = TableSchema.from_json(json.loads(out.batch.column("schema")[0].as_py()))
    assert announced == RULES.schema(USERS)
    for images in out.images:
        assert images.schema_id == captured_id
        assert images.rows.column("after").type.names == ["id", "email", "note", "age"]


def test_skipped_operations_leave_the_item_and_its_boundaries_are_counted_again() -> None:
    item, _ = _item(False)
    out = captured_item(CaptureRules(skip_operations=("d",)), item)
    assert out.batch is not None
    assert out.batch.column("op").to_pylist() == ["s", "c"]
    assert out.boundaries == item.boundaries and out.after == item.after
    inserts = captured_item(CaptureRules(skip_operations=("c", "t")), item)  # an alter stays
    assert inserts.batch is not None and inserts.batch.column("op").to_pylist() == ["s", "d"]
    item = LogItem(item.after, item.batch, boundaries=((2, BinlogOffset(FILE, 250)),))
    out = captured_item(CaptureRules(skip_operations=("c",)), item)
    assert out.boundaries == ((1, BinlogOffset(FILE, 250)),)


def test_the_capture_settings_from_the_pipeline_file_and_their_refusals() -> None:
    base = """
source:
  host: 127.0.0.1
  user: root
  tables: ['shop\\..*']
  {extra}
sink: {{path: lake}}
pipeline: {{checkpoint: ck}}
"""
    extra = """tables_exclude: ['shop\\.audit']
  columns: {exclude: ['shop\\.users\\.ssn']}
  skip_operations: [d, t]
  masks:
    - {columns: ['shop\\.users\\.email'], hash: SHA-256, salt: pepper}
    - {columns: ['shop\\.users\\.note'], truncate: 3}"""
    config = load_config_text(base.format(extra=extra), connects=False)
    rules = config.source.capture
    assert rules.tables_exclude == (r"shop\.audit",) and rules.skip_operations == ("d", "t")
    assert rules.masks[0].algorithm == "sha256" and rules.masks[1].length == 3
    assert "pepper" not in repr(config.source) and "pepper" not in str(config.source.redacted())
    for wrong, key in [
        ("skip_operations: [x]", "source.skip_operations[0]"),
        ("columns: {keep: [a]}", "source.columns.keep"),
        ("masks: [{columns: [a], hash: nohash}]", "source.masks[0].hash"),
        ("masks: [{columns: [a], mask: 2, truncate: 3}]", "source.masks[0]"),
        ("masks: [{columns: [a], mask: 2, salt: s}]", "source.masks[0].salt"),
        ("tables_exclude: ['(']", "source.tables_exclude[0]"),
    ]:
        with pytest.raises(ConfigError) as caught:
            load_config_text(base.format(extra=wrong), connects=False)
        assert caught.value.fields.get("key") == key, caught.value


def test_masked_struct_images_keep_nulls() -> None:
    plan = RULES.plan("shop", "users", USERS.column_names())
    assert plan is not None
    struct = pa.array([{"email": "x", "ssn": "1"}, None, {"email": None, "ssn": None}])
    out = plan.struct(struct)
    assert out.to_pylist() == [{"email": _hash("x")}, None, {"email": None}]


def test_a_masked_column_that_a_ddl_made_a_number_stops_with_a_sentence() -> None:
    plan = RULES.plan("shop", "users", USERS.column_names())
    assert plan is not None
    with pytest.raises(ConfigError, match=r"shop.users.email holds values that are no text"):
        plan.json_image(json.dumps({"id": 1, "email": 42}))
    with pytest.raises(ConfigError, match=r"shop.users.note holds values that are no text"):
        plan.struct(pa.array([{"note": 5}]))
    assert plan.json_image(json.dumps({"id": 1, "email": None})) == '{"id":1,"email":null}'
