"""MySQL 8's PARTIAL_UPDATE_ROWS_EVENT, built byte by byte from its documented layout
(tests/cases/partial_json.py), rewritten into the UPDATE_ROWS v2 event it stands for and read by
the rows decoder (typed and as JSON text): REPLACE/INSERT/REMOVE on nested objects and arrays,
diffs in order, NULL documents, rows whose JSON is logged whole, several rows and JSON columns,
the before image lacking the column; and the pieces — value sizes, paths, the document model
written back to binary, and diffs applied as Python would apply them."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import SourceError
from sparkcdc.core.images import ColumnarRows, StructMaker
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.binlog import json_binary as jb
from sparkcdc.sources.mysql.binlog import json_doc
from sparkcdc.sources.mysql.binlog import tablemap as tm
from sparkcdc.sources.mysql.binlog.json_binary import json_text
from sparkcdc.sources.mysql.binlog.json_diff import (
    INSERT,
    REMOVE,
    REPLACE,
    Cell,
    DiffError,
    Leg,
    apply_diffs,
    parse_path,
    path_text,
    read_diffs,
)
from sparkcdc.sources.mysql.binlog.partial_json import full_update_event
from sparkcdc.sources.mysql.binlog.rows import RowsDecoder
from sparkcdc.sources.mysql.binlog.value_sizes import value_size
from sparkcdc.sources.mysql.schema.column_types import column
from tests.cases import partial_json as pj

UPDATE_ROWS_V2 = 31
START = len(pj.HEADER)

# (id INT PRIMARY KEY, doc JSON, note VARCHAR(20)) in utf8mb4: VARCHAR's metadata is 80 bytes
DOCS = TableSchema(
    "shop", "docs",
    (column("id", "int", nullable=False), column("doc", "json"),
     column("note", "varchar", length=20)),
    ("id",),
)  # fmt: skip
DOCS_MAP = tm.TableMap(5, "shop", "docs", bytes([tm.T_LONG, tm.T_JSON, tm.T_VARCHAR]), (0, 4, 80),
                       (False, True, True))  # fmt: skip
# (id INT PRIMARY KEY, a JSON, b JSON)
PAIR = TableSchema(
    "shop", "pair", (column("id", "int", nullable=False), column("a", "json"), column("b", "json")),
    ("id",),
)  # fmt: skip
PAIR_MAP = tm.TableMap(6, "shop", "pair", bytes([tm.T_LONG, tm.T_JSON, tm.T_JSON]), (0, 4, 4),
                       (False, True, True))  # fmt: skip


def images(schema: TableSchema, table_map: tm.TableMap, event: bytes) -> list[Any]:
    """The rewritten event's rows as (before, after) dicts with JSON columns parsed, read by the
    typed and the JSON-text decoder (which must agree)."""
    new = full_update_event(event, START, len(event), table_map, "shop." + schema.table)
    assert new[:START] == pj.HEADER
    names = [c.name for c in schema.columns]
    jsons = {c.name for c in schema.columns if c.data_type == "json"}

    def parsed(row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The row's values (a column the image leaves out as None, as the typed image has it),
        JSON documents parsed."""
        if row is None:
            return None
        values = {k: row.get(k) for k in names}
        return {k: json.loads(v) if k in jsons and v is not None else v for k, v in values.items()}

    text = RowsDecoder(table_map, schema).decode(UPDATE_ROWS_V2, new, START, len(new))
    assert isinstance(text, list)
    from_text = [(parsed(_loads(b)), parsed(_loads(a))) for _, _, b, a in text]
    typed = RowsDecoder(table_map, schema, typed=True).decode(UPDATE_ROWS_V2, new, START, len(new))
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(typed, ColumnarRows):
        befores, afters = typed.structs(StructMaker(schema).fields)
        pairs = zip(befores.to_pylist(), afters.to_pylist(), strict=True)
    else:
        pairs = ((_named(names, b), _named(names, a)) for _, _, b, a in typed)
    from_typed = [(parsed(b), parsed(a)) for b, a in pairs]
    assert from_typed == from_text
    return from_text


def _loads(image: object) -> dict[str, Any]:
    assert isinstance(image, str)
    row: dict[str, Any] = json.loads(image)
    return row


def _named(names: list[str], image: object) -> dict[str, Any]:
    assert isinstance(image, tuple)
    return dict(zip(names, image, strict=True))


def one_docs_row(before_doc: Any, diff_list: bytes, note: str = "n") -> bytes:
    """A PARTIAL_UPDATE_ROWS event of one full-image row of ``docs`` whose doc is partial."""
    before = [pj.int32(1), pj.json_value(before_doc), pj.varchar(note)]
    after = [pj.int32(1), diff_list, pj.varchar(note)]
    return pj.event(3, [0, 1, 2], [0, 1, 2], [pj.partial_row(before, after, [0], 1)])


NESTED = {"a": {"b": 1, "c": [1, 2, {"d": None}]}, "arr": [10, 20, 30], "b c": "x", 'q"': 1}


@pytest.mark.parametrize(
    ("diff_list", "change"),
    [
        ([pj.diff(REPLACE, "$.a.b", "new")], lambda d: d["a"].update(b="new")),
        ([pj.diff(REPLACE, "$.a.c[2].d", [1, {"e": 2.5}])],
         lambda d: d["a"]["c"][2].update(d=[1, {"e": 2.5}])),
        ([pj.diff(REPLACE, "$.arr[last]", True)], lambda d: d["arr"].__setitem__(2, True)),
        ([pj.diff(REPLACE, "$.arr[last-2]", 7)], lambda d: d["arr"].__setitem__(0, 7)),
        ([pj.diff(INSERT, "$.a.zz", {"k": "v"})], lambda d: d["a"].update(zz={"k": "v"})),
        ([pj.diff(INSERT, "$.arr[0]", -1)], lambda d: d["arr"].insert(0, -1)),
        ([pj.diff(INSERT, "$.arr[9]", 40)], lambda d: d["arr"].append(40)),
        ([pj.diff(INSERT, "$.a.c[1]", "mid")], lambda d: d["a"]["c"].insert(1, "mid")),
        ([pj.diff(REMOVE, "$.a.c")], lambda d: d["a"].pop("c")),
        ([pj.diff(REMOVE, "$.arr[1]")], lambda d: d["arr"].pop(1)),
        ([pj.diff(REMOVE, '$."b c"')], lambda d: d.pop("b c")),
        ([pj.diff(REPLACE, '$."q\\""', "quoted")], lambda d: d.update({'q"': "quoted"})),
        ([pj.diff(INSERT, "$.new", 1), pj.diff(REPLACE, "$.new", 2), pj.diff(REMOVE, "$.arr[0]"),
          pj.diff(REMOVE, "$.arr[0]"), pj.diff(INSERT, "$.arr[last]", 0)],
         lambda d: (d.update(new=2), d.__setitem__("arr", [0, 30]))),
        ([pj.diff(REPLACE, "$ . a . b", 2)], lambda d: d["a"].update(b=2)),
        ([], lambda d: None),  # an empty diff list: the document did not change
    ],
)  # fmt: skip
def test_diffs_are_applied_to_the_before_document(diff_list: list[bytes], change: Any) -> None:
    expected = copy.deepcopy(NESTED)
    change(expected)
    rows = images(DOCS, DOCS_MAP, one_docs_row(NESTED, pj.diffs(*diff_list)))
    before, after = {"id": 1, "doc": NESTED, "note": "n"}, {"id": 1, "doc": expected, "note": "n"}
    assert rows == [(before, after)]


def test_several_rows_partial_whole_and_null_become_the_plain_update_event() -> None:
    doc, whole = {"n": 1, "tags": ["a"]}, {"other": [1, 2]}
    row = [pj.int32(1), pj.json_value(doc), pj.varchar("x")]
    cases = [  # (before doc column, after doc column, partial ranks, expected after document)
        (pj.json_value(doc), pj.diffs(pj.diff(REPLACE, "$.n", 2)), [0], {"n": 2, "tags": ["a"]}),
        (pj.json_value(doc), pj.json_value(whole), [], whole),  # partial bitmap, bit off
        (pj.json_value(doc), pj.json_value(whole), None, whole),  # value_options 0
        (None, pj.json_value(whole), None, whole),  # NULL before
        (pj.json_value(doc), None, [], None),  # NULL after
        (pj.json_value(doc), pj.diffs(), [0], doc),  # an empty diff list
        (pj.json_value(doc), pj.diffs(pj.diff(INSERT, "$.tags[1]", "b")), [0],
         {"n": 1, "tags": ["a", "b"]}),
    ]  # fmt: skip
    partial_rows, full_rows = [], []
    for i, (before, after, partial, expected) in enumerate(cases):
        b = [pj.int32(i), before, row[2]]
        a = [pj.int32(i), after, pj.varchar(f"v{i}")]
        partial_rows.append(pj.partial_row(b, a, partial, 1))
        full = None if expected is None else pj.json_value(expected)
        full_rows.append(pj.full_row(b, [a[0], full, a[2]]))
    event = pj.event(3, [0, 1, 2], [0, 1, 2], partial_rows)
    new = full_update_event(event, START, len(event), DOCS_MAP, "shop.docs")
    assert new == pj.event(3, [0, 1, 2], [0, 1, 2], full_rows)  # byte for byte
    rows = images(DOCS, DOCS_MAP, event)
    assert [a for _, a in rows] == [
        {"id": i, "doc": expected, "note": f"v{i}"} for i, (_, _, _, expected) in enumerate(cases)
    ]
    assert rows[3][0] == {"id": 3, "doc": None, "note": "x"}


def test_two_json_columns_one_partial_one_whole() -> None:
    a0, b0 = {"x": [1, 2, 3]}, {"y": "old"}
    before = [pj.int32(1), pj.json_value(a0), pj.json_value(b0)]
    rows = [
        pj.partial_row(before, [pj.int32(1), pj.diffs(pj.diff(REMOVE, "$.x[0]")),
                                pj.json_value({"y": "new"})], [0], 2),
        pj.partial_row(before, [pj.int32(1), pj.json_value([1]),
                                pj.diffs(pj.diff(INSERT, "$.z", 0))], [1], 2),
        pj.partial_row(before, [pj.int32(1), pj.diffs(pj.diff(REPLACE, "$.x[last]", "L")),
                                pj.diffs(pj.diff(REPLACE, "$.y", None))], [0, 1], 2),
    ]  # fmt: skip
    got = images(PAIR, PAIR_MAP, pj.event(3, [0, 1, 2], [0, 1, 2], rows))
    assert [a for _, a in got] == [
        {"id": 1, "a": {"x": [2, 3]}, "b": {"y": "new"}},
        {"id": 1, "a": [1], "b": {"y": "old", "z": 0}},
        {"id": 1, "a": {"x": [1, 2, "L"]}, "b": {"y": None}},
    ]


def test_the_partial_bitmap_counts_json_columns_left_out_of_the_after_image() -> None:
    """One bit per JSON column of the table (MySQL's pack_row counts them all): with a minimal
    after image holding only b, b's bit is still the second one."""
    before = [pj.int32(1), pj.json_value({"k": 1}), pj.json_value({"k": 2})]
    after = [pj.int32(1), pj.diffs(pj.diff(REPLACE, "$.k", 3))]
    event = pj.event(3, [0, 1, 2], [0, 2], [pj.partial_row(before, after, [1], 2)])
    got = images(PAIR, PAIR_MAP, event)
    assert got[0][1] == {"id": 1, "a": None, "b": {"k": 3}}


def test_a_before_image_without_the_column_cannot_be_applied() -> None:
    """binlog_row_image=MINIMAL: the before image holds the key only."""
    after = [pj.int32(1), pj.diffs(pj.diff(REPLACE, "$.k", 3)), pj.varchar("n")]
    event = pj.event(3, [0], [0, 1, 2], [pj.partial_row([pj.int32(1)], after, [0], 1)])
    with pytest.raises(SourceError) as err:
        full_update_event(event, START, len(event), DOCS_MAP, "shop.docs")
    message = str(err.value)
    assert message == (
        "a partial JSON update of column #2 of shop.docs cannot be applied because the binlog's "
        "before image does not hold that column; set binlog_row_image=FULL, or "
        "binlog_row_value_options=''"
    )
    with pytest.raises(SourceError, match="column doc of shop.docs cannot be applied"):
        full_update_event(event, START, len(event), DOCS_MAP, "shop.docs", ("id", "doc", "note"))


@pytest.mark.parametrize(
    ("diff_list", "match"),
    [
        ([pj.diff(REPLACE, "$.missing", 1)], "does not apply"),
        ([pj.diff(INSERT, "$.k", 1)], "does not apply"),  # the member exists already
        ([pj.diff(REMOVE, "$.k[0]")], "does not apply"),  # not an array
        ([pj.diff(REPLACE, "$", 1)], "does not apply"),  # the root is never a diff's path
        ([pj.diff(REPLACE, "$.k[*]", 1)], "does not apply"),  # no wildcards in diffs
        ([bytes([3, 3]) + b"$.k"], "does not apply"),  # an unknown operation
        ([pj.diff(REPLACE, "$.k", raw=b"\x0e")], "does not apply"),  # damaged binary JSON
    ],
)  # fmt: skip
def test_a_diff_that_does_not_apply_is_an_error(diff_list: list[bytes], match: str) -> None:
    with pytest.raises(SourceError, match=match):
        images(DOCS, DOCS_MAP, one_docs_row({"k": 1}, pj.diffs(*diff_list)))


def test_damaged_events_are_errors() -> None:
    before = [pj.int32(1), None, pj.varchar("n")]
    after = [pj.int32(1), pj.diffs(pj.diff(REPLACE, "$.k", 3)), pj.varchar("n")]
    null = pj.event(3, [0, 1, 2], [0, 1, 2], [pj.partial_row(before, after, [0], 1)])
    with pytest.raises(SourceError, match="changes a NULL document"):
        full_update_event(null, START, len(null), DOCS_MAP, "shop.docs")
    good = one_docs_row({"k": 1}, pj.diffs(pj.diff(REPLACE, "$.k", 3)))
    options_at = good.index(pj.varchar("n")) + len(pj.varchar("n"))
    bad_options = good[:options_at] + b"\x02" + good[options_at + 1 :]
    row = pj.partial_row([pj.int32(1)], [pj.int32(1)], None, 1)
    too_wide = pj.event(4, [0], [0], [row])  # four columns for a table map of three
    for bad in (good[:-1], bad_options, too_wide):
        with pytest.raises(SourceError, match="shop.docs"):
            full_update_event(bad, START, len(bad), DOCS_MAP, "shop.docs")


@pytest.mark.parametrize(
    ("t", "meta", "value", "size"),
    [
        (tm.T_TINY, 0, b"\x01", 1), (tm.T_YEAR, 0, b"\x01", 1), (tm.T_SHORT, 0, b"", 2),
        (tm.T_INT24, 0, b"", 3), (tm.T_LONG, 0, b"", 4), (tm.T_LONGLONG, 0, b"", 8),
        (tm.T_FLOAT, 4, b"", 4), (tm.T_DOUBLE, 8, b"", 8), (tm.T_NULL, 0, b"", 0),
        (tm.T_DATE, 0, b"", 3), (tm.T_TIME, 0, b"", 3), (tm.T_TIMESTAMP, 0, b"", 4),
        (tm.T_DATETIME, 0, b"", 8), (tm.T_TIME2, 0, b"", 3), (tm.T_TIME2, 3, b"", 5),
        (tm.T_TIMESTAMP2, 6, b"", 7), (tm.T_DATETIME2, 1, b"", 6), (tm.T_DATETIME2, 0, b"", 5),
        (tm.T_NEWDECIMAL, 10 << 8 | 2, b"", 5), (tm.T_NEWDECIMAL, 65 << 8 | 30, b"", 30),
        (tm.T_BIT, 1 << 8 | 1, b"", 2), (tm.T_BIT, 8 << 8, b"", 8),
        (tm.T_STRING, tm.T_ENUM << 8 | 2, b"", 2), (tm.T_STRING, tm.T_SET << 8 | 8, b"", 8),
        (tm.T_STRING, tm.T_STRING << 8 | 40, b"\x03abc", 4),  # CHAR(10) utf8mb4: 40 bytes
        (tm.T_STRING, 0xEC << 8 | 0xFC, b"\x03\x00abc", 5),  # CHAR(255) utf8mb4: 1020 bytes
        (tm.T_VARCHAR, 80, b"\x02ab", 3), (tm.T_VARCHAR, 1020, b"\x02\x00ab", 4),
        (tm.T_VAR_STRING, 80, b"\x01a", 2),
        (tm.T_BLOB, 1, b"\x02ab", 3), (tm.T_BLOB, 2, b"\x02\x00ab", 4),
        (tm.T_BLOB, 3, b"\x01\x00\x00a", 4), (tm.T_JSON, 4, b"\x01\x00\x00\x00\x04", 5),
        (tm.T_GEOMETRY, 4, b"\x00\x00\x00\x00", 4),
    ],
)  # fmt: skip
def test_value_sizes(t: int, meta: int, value: bytes, size: int) -> None:
    data = b"\xee" + value + bytes(16)
    assert value_size(t, meta, data, 1) == size


def test_value_sizes_of_unknown_types_are_errors() -> None:
    with pytest.raises(ValueError):
        value_size(99, 0, b"", 0)


@pytest.mark.parametrize(
    ("text", "legs"),
    [
        ("$", ()),
        ('$.a[2]."b c"', ("a", Cell(2), "b c")),
        ("$[last]", (Cell(0, True),)),
        ("$[last-3][0]", (Cell(3, True), Cell(0))),
        ("$[ last - 1 ]", (Cell(1, True),)),
        ('$."a\\"b\\\\c\\u00e9\\n"', ('a"b\\cé\n',)),
        ("$.é_$1", ("é_$1",)),
        (' $ .a [1] ', ("a", Cell(1))),
    ],
)  # fmt: skip
def test_paths(text: str, legs: tuple[Leg, ...]) -> None:
    assert parse_path(text) == legs
    assert parse_path(path_text(legs)) == legs


@pytest.mark.parametrize(
    "text", ["", "a", "$.", "$[", "$[x]", "$[1", "$.*", "$[*]", "$**.a", "$[1 to 2]", '$."a', "$a"]
)
def test_bad_paths(text: str) -> None:
    with pytest.raises(DiffError):
        parse_path(text)


def test_a_document_is_written_as_mysql_lays_it_out() -> None:
    """{"a": 1, "bb": [true, "x", 70000]} by hand from json_binary.h: a small object (count 2,
    size, key entries, value entries, keys, then the array), and in it a small array (the
    literal and the int16 inline, the string and the int32 behind offsets)."""
    entries = bytes([jb.LITERAL, 1, 0, jb.STRING, 13, 0, jb.INT32, 15, 0])
    array = struct.pack("<HH", 3, 19) + entries + b"\x01x" + struct.pack("<i", 70000)
    obj = (
        struct.pack("<HH", 2, 21 + len(array))
        + struct.pack("<HH", 18, 1) + struct.pack("<HH", 19, 2)
        + bytes([jb.INT16, 1, 0, jb.SMALL_ARRAY, 21, 0])
        + b"abb" + array
    )  # fmt: skip
    expected = bytes([jb.SMALL_OBJECT]) + obj
    doc = json_doc.from_python({"bb": [True, "x", 70000], "a": 1})
    assert json_doc.encode(doc) == expected
    assert json_doc.decode(expected) == doc


def test_large_containers_when_small_offsets_do_not_fit() -> None:
    big = "x" * 70000
    value = {"small": [1, 2], "big": [big, 3], "n": -5}
    data = json_doc.encode(json_doc.from_python(value))
    assert data[0] == jb.LARGE_OBJECT
    assert json.loads(json_text(data)) == value
    tree = json_doc.decode(data)
    assert isinstance(tree, dict) and isinstance(tree["small"], list)
    assert json_doc.encode(tree["small"])[0] == jb.SMALL_ARRAY  # a child that fits stays small
    assert json_doc.encode(tree["big"])[0] == jb.LARGE_ARRAY
    assert json_doc.encode(tree) == data


def test_values_keep_their_binary_types() -> None:
    """uint16/uint32 and opaque values are no Python type, and survive a diff elsewhere."""
    decimal = bytes([14, 2, 0x80, 0, 0, 0, 0, 0x7B, 0x2D])  # DECIMAL(14,2) 123.45
    opaque = bytes([tm.T_NEWDECIMAL]) + json_doc.variable_length(len(decimal)) + decimal
    u16, u32 = struct.pack("<H", 65535), struct.pack("<I", 4000000000)
    array = struct.pack("<HH", 3, 4 + 9 + 4 + len(opaque)) + bytes([jb.UINT16]) + u16 + bytes(
        [jb.UINT32, 13, 0, jb.OPAQUE, 17, 0]) + u32 + opaque  # fmt: skip
    data = bytes([jb.SMALL_ARRAY]) + array
    assert json.loads(json_text(data)) == [65535, 4000000000, 123.45]
    tree = json_doc.decode(data)
    assert json_doc.encode(tree) == data
    insert = pj.diff(INSERT, "$[3]", "new")
    apply_diffs(tree, read_diffs(insert, 0, len(insert)))
    assert json.loads(json_text(json_doc.encode(tree))) == [65535, 4000000000, 123.45, "new"]


@pytest.mark.parametrize(
    "damaged",
    [bytes([jb.LARGE_ARRAY]) + struct.pack("<II", 0xFFFFFFFF, 8),  # more entries than bytes
     bytes([jb.SMALL_ARRAY, 1, 0, 7, 0, jb.STRING, 200, 0]),  # an offset past the end
     bytes([jb.STRING, 5]) + b"abc", bytes([jb.LITERAL, 3]), bytes([0x0D, 0]),
     bytes([jb.SMALL_OBJECT, 1, 0, 11, 0, 200, 0, 1, 0, jb.INT16, 1, 0])],  # a key past the end
)  # fmt: skip
def test_damaged_documents_are_errors(damaged: bytes) -> None:
    with pytest.raises(jb.BinaryJsonError):
        json_doc.decode(damaged)


def test_an_empty_document_is_json_null() -> None:
    assert json_doc.decode(b"") == json_doc.NULL and json_doc.encode(json_doc.NULL) == b"\x04\x00"


SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=False)
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12,
)  # fmt: skip
ROOTS = st.lists(VALUES, max_size=4) | st.dictionaries(st.text(max_size=6), VALUES, max_size=4)


def containers(node: Any, legs: tuple[Leg, ...] = ()) -> Iterator[tuple[tuple[Leg, ...], Any]]:
    yield legs, node
    children: list[tuple[Leg, Any]]
    if isinstance(node, dict):
        children = list(node.items())
    else:
        children = [(Cell(i), child) for i, child in enumerate(node)]
    for leg, child in children:
        if isinstance(child, dict | list):
            yield from containers(child, (*legs, leg))


def random_diff(data: st.DataObject, model: Any) -> bytes:
    """One diff that applies to ``model``, applied to it as Python would."""
    chosen: tuple[tuple[Leg, ...], Any] = data.draw(st.sampled_from(list(containers(model))))
    legs, target = chosen
    value = data.draw(VALUES)
    if isinstance(target, dict):
        existing: bool = bool(target) and data.draw(st.booleans())
        if existing:
            key = data.draw(st.sampled_from(sorted(target)))
            op = data.draw(st.sampled_from([REPLACE, REMOVE]))
        else:
            key = data.draw(st.text(max_size=8).filter(lambda k: k not in target))
            op = INSERT
        if op == REMOVE:
            del target[key]
        else:
            target[key] = value
        return pj.diff(op, path_text((*legs, key)), value)
    ops = [INSERT, REPLACE, REMOVE] if target else [INSERT]
    op = data.draw(st.sampled_from(ops))
    limit = len(target) + 2 if op == INSERT else len(target) - 1
    index, from_end = data.draw(st.integers(0, limit)), data.draw(st.booleans())
    at = (len(target) - 1 - index if index < len(target) else 0) if from_end else index
    if op == INSERT:
        target.insert(at, value)
    elif op == REPLACE:
        target[at] = value
    else:
        del target[at]
    return pj.diff(op, path_text((*legs, Cell(index, from_end))), value)


@settings(max_examples=200, deadline=None)
@given(ROOTS, st.data())
def test_diffs_apply_as_they_do_to_python_values(root: Any, data: st.DataObject) -> None:
    model = copy.deepcopy(root)
    written = b"".join(random_diff(data, model) for _ in range(data.draw(st.integers(0, 6))))
    tree = json_doc.from_python(root)
    apply_diffs(tree, read_diffs(written, 0, len(written)))
    assert json.loads(json_text(json_doc.encode(tree))) == model
