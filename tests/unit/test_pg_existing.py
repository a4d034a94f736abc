"""The judgement of a Relation message against the catalog (``stream/existing.py``) where a real
server cannot stage it on demand: the catalog read after more DDL than the message shows (the
pipeline behind the log), changes that look alike in the message, a rewrite with and without a
column changed; the schema history file (``stream/history.py``); and the column types a table's
state gives an incremental snapshot's chunks (``chunks/view_token.py``)."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.postgres.chunks.view_token import ViewToken, view_token
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.pgoutput.messages import RelationColumn
from sparkcdc.sources.postgres.pgoutput.types import column
from sparkcdc.sources.postgres.server.attributes import Attribute, TableAttributes
from sparkcdc.sources.postgres.stream.existing import Baseline, TableState, judge
from sparkcdc.sources.postgres.stream.history import RelationHistory

INT, TEXT, NUMERIC, OID = 23, 25, 1700, 26
Spec = tuple[str, int, int]  # name, type OID, typmod


def schema(*specs: Spec) -> TableSchema:
    cols = tuple(column(n, oid, mod) for n, oid, mod in specs)
    return TableSchema("public", "t", cols, primary_key=("id",))


def catalog(storage: str, *attrs: Attribute) -> TableAttributes:
    return TableAttributes(storage, attrs)


def attr(num: int, name: str, oid: int = INT, version: str = "1", **kw: object) -> Attribute:
    return Attribute(num, name, oid, -1, version=version, **kw)  # type: ignore[arg-type]


def dropped(num: int, version: str = "9") -> Attribute:
    return Attribute(num, f"........pg.dropped.{num}........", 0, -1, True, version=version)


def relation(*specs: Spec) -> tuple[tuple[RelationColumn, ...], list]:
    sent = tuple(RelationColumn(0, n, oid, mod) for n, oid, mod in specs)
    return sent, [column(n, oid, mod) for n, oid, mod in specs]


START = catalog("100", attr(1, "id"), attr(2, "a", TEXT))
S = schema(("id", INT, -1), ("a", TEXT, -1))
FIRST = Baseline(START, (1, 2), 2)


def test_a_relation_read_after_more_ddl_takes_each_added_column_in_turn() -> None:
    """ADD c DEFAULT 5, a change, ADD d DEFAULT 'x': the first message lists c only."""
    now = catalog("100", *START.attributes, attr(3, "c", missing="5", version="2"),
                  attr(4, "d", TEXT, missing="x", version="3"))  # fmt: skip
    first = judge(S, FIRST, *relation(("id", INT, -1), ("a", TEXT, -1), ("c", INT, -1)), now)
    assert first.existing.fill == {"c": 5} and not first.existing.resnapshot
    assert first.baseline == Baseline(now, (1, 2, 3), 3)
    new = schema(("id", INT, -1), ("a", TEXT, -1), ("c", INT, -1))
    sent = relation(("id", INT, -1), ("a", TEXT, -1), ("c", INT, -1), ("d", TEXT, -1))
    second = judge(new, first.baseline, *sent, now)
    assert second.existing.fill == {"d": "x"}


def test_a_rename_after_the_messages_point_waits_for_its_own_message() -> None:
    now = catalog("100", attr(1, "id"), attr(2, "b", TEXT, version="2"))
    same = judge(S, FIRST, *relation(("id", INT, -1), ("a", TEXT, -1)), now)
    assert same.columns == S.columns and not same.existing
    renamed = judge(S, same.baseline, *relation(("id", INT, -1), ("b", TEXT, -1)), now)
    assert renamed.existing.copy == {"b": "a"}


def test_a_column_dropped_and_added_again_under_its_name_is_read_again() -> None:
    now = catalog("100", attr(1, "id"), dropped(2), attr(3, "a", TEXT, missing="x", version="3"))
    found = judge(S, FIRST, *relation(("id", INT, -1), ("a", TEXT, -1)), now)
    assert found.columns == S.columns and found.existing.resnapshot
    again = judge(S, found.baseline, *relation(("id", INT, -1), ("a", TEXT, -1)), now)
    assert not again.existing  # the catalog matched the message: judged once


def test_an_added_column_dropped_since_leaves_the_messages_added_one_unknown() -> None:
    """c added then dropped, d added: the message's third column is c (dropped after it) or d
    (c dropped before it): which value the rows hold cannot be told."""
    now = catalog("100", *START.attributes, dropped(3), attr(4, "d", missing="4", version="4"))
    found = judge(S, FIRST, *relation(("id", INT, -1), ("a", TEXT, -1), ("c", INT, -1)), now)
    assert found.existing.resnapshot


def test_a_drop_before_the_message_and_an_add_after_it_are_told_apart_by_count() -> None:
    now = catalog("100", attr(1, "id"), dropped(2), attr(3, "c", missing="1", version="3"))
    found = judge(S, FIRST, *relation(("id", INT, -1)), now)
    assert not found.existing and [c.name for c in found.columns] == ["id"]
    assert found.baseline is not None and found.baseline.attnums == (1,)
    ambiguous = judge(S, FIRST, *relation(("id", INT, -1), ("c", INT, -1)), now)
    assert ambiguous.existing.resnapshot  # c added before, or a renamed and dropped after


def test_a_rewrite_keeps_values_unless_a_column_changed_with_it() -> None:
    sent = relation(("id", INT, -1), ("a", TEXT, -1))
    vacuumed = catalog("200", *START.attributes)
    assert not judge(S, FIRST, *sent, vacuumed).existing  # VACUUM FULL, CLUSTER, TRUNCATE
    not_null = catalog("100", attr(1, "id"), attr(2, "a", TEXT, version="5"))
    assert not judge(S, FIRST, *sent, not_null).existing  # SET NOT NULL: no rewrite
    both = catalog("200", attr(1, "id"), attr(2, "a", TEXT, version="5"))
    found = judge(S, FIRST, *sent, both).existing.resnapshot  # retyped and back
    assert found and "rewritten while column(s) a changed" in found
    volatile = catalog("200", *START.attributes, attr(3, "u", TEXT, version="7"))
    added = relation(("id", INT, -1), ("a", TEXT, -1), ("u", TEXT, -1))
    assert judge(S, FIRST, *added, volatile).existing.resnapshot


def test_a_type_change_without_a_rewrite_is_kept_where_the_new_type_reads_each_value() -> None:
    s = schema(("id", INT, -1), ("n", NUMERIC, (10 << 16 | 2) + 4))
    start = catalog("100", attr(1, "id"), attr(2, "n", NUMERIC))
    wider = relation(("id", INT, -1), ("n", NUMERIC, (12 << 16 | 2) + 4))
    now = catalog("100", attr(1, "id"), attr(2, "n", NUMERIC, version="2"))
    found = judge(s, Baseline(start, (1, 2), 2), *wider, now)
    assert not found.existing and found.columns[1].precision == 12
    as_oid = relation(("id", OID, -1), ("n", NUMERIC, (10 << 16 | 2) + 4))  # int4 -1: oid 2^32-1
    assert judge(s, Baseline(start, (1, 2), 2), *as_oid, now).existing.resnapshot


def test_partitions_that_disagree_and_array_defaults_are_read_again() -> None:
    sent = relation(("id", INT, -1), ("a", TEXT, -1), ("c", INT, -1))
    unsure = catalog("100", *START.attributes, attr(3, "c", unsure=True, version="3"))
    assert judge(S, FIRST, *sent, unsure).existing.resnapshot
    arrays = relation(("id", INT, -1), ("a", TEXT, -1), ("c", 1007, -1))
    now = catalog("100", *START.attributes, Attribute(3, "c", 1007, -1, version="3", missing="{1}"))
    assert judge(S, FIRST, *arrays, now).existing.resnapshot
    assert judge(S, FIRST, *sent, None).existing.resnapshot  # the table is gone


def test_the_history_gives_each_tables_latest_state_at_or_before_an_offset(tmp_path: Path) -> None:
    path = tmp_path / "schema_history.jsonl"
    history = RelationHistory(path)
    later = TableState(schema(("id", INT, -1)), Baseline(START, None, 2))
    history.record(LsnOffset(100), ("public", "t"), TableState(S, FIRST))
    history.record(LsnOffset(200, 3), ("public", "t"), later)
    with open(path, "ab") as f:
        f.write(b'{"v": 1, "offset": {"lsn": "0/1')  # torn by a crash
    again = RelationHistory(path)
    assert again.states_at(LsnOffset(200, 2)) == {("public", "t"): TableState(S, FIRST)}
    assert again.states_at(LsnOffset(200, 3)) == {("public", "t"): later}
    assert again.states_at(LsnOffset(99)) == {}
    again.record(LsnOffset(300), ("public", "u"), TableState(S, None))
    assert len(path.read_text().splitlines()) == 3  # the torn line cut off first


def test_a_states_column_types_are_its_relations_else_its_baselines_attributes() -> None:
    """The types an incremental snapshot casts a retyped column back to: the last Relation
    message's (kept in the history), else those of the baseline read with the schema (a
    record written before types were kept); none where the baseline places no column."""
    relation_types = ((INT, -1), (TEXT, 40))
    kept = TableState(S, FIRST, relation_types)
    assert TableState.from_json(kept.to_json()) == kept
    assert kept.column_types() == relation_types
    old_record = {k: v for k, v in kept.to_json().items() if k != "types"}
    assert TableState.from_json(old_record).column_types() == ((INT, -1), (TEXT, -1))
    assert TableState(S, Baseline(START, None, 2)).column_types() is None
    assert TableState(S, None).column_types() is None
    token = view_token(TableState(S, FIRST, relation_types))
    assert ViewToken.parse(token.text()) == token and token.then == START
    assert [(c.name, c.attnum, c.typmod) for c in token.columns] == [("id", 1, -1), ("a", 2, 40)]
    unplaced = view_token(TableState(S, Baseline(START, None, 2)))
    assert unplaced.columns == () and unplaced.then == START  # read by name
