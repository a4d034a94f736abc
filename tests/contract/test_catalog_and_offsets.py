"""The source port's contract, part 1: offsets, startup, the catalog (run against every source)."""

from __future__ import annotations

import json
import re

import pytest

from sparkcdc.core.errors import ConfigError, NoTablesMatched, SourceError, TableWithoutKey
from sparkcdc.core.offset import Offset
from sparkcdc.sources.readiness import captured_tables, check_source
from tests.contract.harness import Harness


def test_offsets_order_as_the_log_and_round_trip_through_json(harness: Harness) -> None:
    table = harness.create("t")
    source = harness.source(table)
    with source.catalog() as catalog:
        before = catalog.log_end()
        harness.commit("t", [("c", 1, "a")])
        after = catalog.log_end()
    assert before < after and before.at_boundary and after.at_boundary
    assert before.position() < after.position()
    for offset in (before, after):
        text = json.dumps(offset.to_json())
        back = source.offset(json.loads(text))
        assert back == offset and hash(back) == hash(offset) and isinstance(back, Offset)
        assert back.to_json() == offset.to_json()
    inside = before.with_skip(3)
    assert before < inside < after and not inside.at_boundary
    assert inside.same_transaction(before) and not inside.same_transaction(after)
    assert source.offset(inside.to_json()) == inside
    names = [f.name for f in source.offsets.SOURCE_FIELDS]
    assert set(after.source_fields()) == set(names)
    assert source.offsets.EVENT_COUNTER in (None, *names)


def test_an_offset_from_json_that_is_none_of_its_own_is_refused(harness: Harness) -> None:
    source = harness.source(harness.create("t"))
    with pytest.raises(ValueError):
        source.offset({"neither": "file", "nor": "seq"})


def test_startup_offsets_resolve_where_they_say(harness: Harness) -> None:
    table = harness.create("t", rows=3)
    source = harness.source(table)
    with source.catalog() as catalog:
        end = catalog.log_end()
    assert source.startup_offset("latest") == end
    assert source.startup_offset("earliest") <= end
    with pytest.raises(ConfigError):
        source.startup_offset("yesterday")


def test_tables_and_schemas_with_their_logical_types(harness: Harness) -> None:
    table = harness.create("t")
    source = harness.source(table)
    assert captured_tables(source) == [table]
    db, _, name = table.partition(".")
    with source.catalog() as catalog:
        catalog.check_ready([db])
        schema = catalog.load_schema(db, name)
    assert (schema.db, schema.table, schema.key) == (db, name, ("id",))
    assert [(c.name, c.logical) for c in schema.columns] == [("id", "int64"), ("v", "string")]
    assert schema.spark_ddl() == "`id` bigint, `v` string"


def test_a_database_not_ready_to_stream_is_refused_with_its_fix(harness: Harness) -> None:
    table = harness.create("t")
    db, _, _ = table.partition(".")
    with harness.source(table).catalog() as catalog:
        catalog.check_ready([db])  # ready as the harness sets it up
    with harness.unready(table).catalog() as catalog, pytest.raises(SourceError) as caught:
        catalog.check_ready([db])
    message = str(caught.value)
    assert message.endswith(".") and message.count(". ") == 0, message  # one sentence
    assert "; " in message  # what is wrong; what to do about it


def test_a_filter_matching_nothing_is_one_sentence(harness: Harness) -> None:
    harness.create("t")
    source = harness.source("nothing.here")
    with source.catalog() as catalog, pytest.raises(NoTablesMatched):
        catalog.match_tables(["nothing\\.here"])


def test_each_pattern_must_match_when_asked(harness: Harness) -> None:
    table = harness.create("t")
    db, _, _ = table.partition(".")
    patterns = [re.escape(table), re.escape(f"{db}.tt")]
    with harness.source(table).catalog() as catalog:
        assert catalog.match_tables(patterns) == [(db, "t")]  # a running pipeline asks so
        with pytest.raises(NoTablesMatched) as caught:
            catalog.match_tables(patterns, each=True)  # check and a start ask so
    assert caught.value.fields == {"key": "source.tables", "patterns": patterns[1:]}
    assert repr(patterns[1]) in str(caught.value) and isinstance(caught.value, ConfigError)


def test_tables_exclude_leaves_matched_tables_out(harness: Harness) -> None:
    kept, left = harness.create("t"), harness.create("audit")
    db, _, _ = kept.partition(".")
    with harness.source(kept).catalog() as catalog:
        assert catalog.match_tables([re.escape(db) + r"\..*"]) == [(db, "audit"), (db, "t")]
        assert catalog.match_tables([re.escape(db) + r"\..*"], exclude=[re.escape(left)]) == [
            (db, "t")
        ]
        with pytest.raises(NoTablesMatched):
            catalog.match_tables([re.escape(left)], exclude=[re.escape(left)])


def test_a_table_named_as_a_shadow_table_is_left_out_with_a_warning(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    kept, shadow = harness.create("t"), harness.create("_t_old")
    source = harness.source(kept, shadow)
    assert captured_tables(source) == [kept]
    with pytest.raises(NoTablesMatched):  # its own pattern matches nothing else
        check_source(source)
    assert f"source.tables matches {shadow}" in caplog.text
    assert "source.shadow_tables: capture" in caplog.text


def test_the_signal_table_is_checked(harness: Harness) -> None:
    table = harness.create("t")
    db, _, _ = table.partition(".")
    with harness.source(table).catalog() as catalog:
        catalog.check_signal_table(table)
        with pytest.raises(ConfigError) as caught:
            catalog.check_signal_table(f"{db}.no_signals")
    assert caught.value.fields["key"] == "source.signal_table"
    assert f"{db}.no_signals" in str(caught.value)


def test_a_startup_is_checked_as_it_resolves(harness: Harness) -> None:
    source = harness.source(harness.create("t"))
    source.check_startup("latest")
    source.check_startup("earliest")
    with pytest.raises(ConfigError):
        source.check_startup("yesterday")


def test_a_table_without_a_key_needs_key_columns(harness: Harness) -> None:
    keyed = harness.create("t")
    db, _, _ = keyed.partition(".")
    harness.create("nokey", keyed=False)
    with harness.source(keyed).catalog() as catalog:
        assert catalog.load_schema(db, "t", ("v",)).key == ("id",)  # a primary key wins
        with pytest.raises(TableWithoutKey):
            catalog.load_schema(db, "nokey")
        assert catalog.load_schema(db, "nokey", ("id",)).key == ("id",)
