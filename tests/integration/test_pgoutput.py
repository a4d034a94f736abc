"""pgoutput decoding and value conversion against a real server's bytes.

Changes are read with ``pg_logical_slot_peek_binary_changes`` (the same payloads a replication
connection gets in its XLogData), decoded, and every column converted to Arrow; the expected
values come from SELECT on the same rows, in forms computed by the server itself (epoch
microseconds, day numbers, ISO intervals) or by psycopg2's own parsers.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from sparkcdc.core import temporal
from sparkcdc.core.images import float32_text
from sparkcdc.sources.postgres.pgoutput import literals
from sparkcdc.sources.postgres.pgoutput import messages as m
from sparkcdc.sources.postgres.pgoutput.types import (
    CATALOG_SQL,
    PgType,
    Resolver,
    key_names,
    relation_columns,
    type_message_resolver,
)
from sparkcdc.sources.postgres.pgoutput.values import arrow_type, json_value, to_arrow
from sparkcdc.sources.postgres.throwaway import ThrowawayPostgres
from tests.cases.pg_types import (
    COLUMNS,
    MICROS,
    ROWS,
    SCHEMA,
)

pytestmark = pytest.mark.postgres


SPECIAL_EXPECTED = {  # where SQL has no finite answer: the sentinels
    (1, "ts"): literals.TIMESTAMP_MAX,
    (1, "tstz"): literals.TIMESTAMP_MIN,
    (3, "dt"): literals.DATE_MAX,
    (3, "ts"): literals.TIMESTAMP_MIN,
    (3, "tstz"): literals.TIMESTAMP_MAX,
}


# ---- helpers ------------------------------------------------------------------------------------


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return int(high, 16) << 32 | int(low, 16)


@contextlib.contextmanager
def _session(postgres: ThrowawayPostgres, db: str, *settings: str) -> Iterator[Any]:
    conn = postgres.connect(db)
    try:
        with conn.cursor() as cur:
            for setting in settings:
                cur.execute(setting)
            yield cur
    finally:
        conn.close()


@pytest.fixture
def slot(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[Callable[[str], None]]:
    """Makes the test's slot (named after its database) and publication for some tables;
    drops the slot after the test (a slot holds its database and WAL)."""

    def make(tables: str) -> None:
        postgres.execute(
            f"CREATE PUBLICATION pub FOR TABLE {tables}",
            f"SELECT pg_create_logical_replication_slot('{pgdb}', 'pgoutput')",
            database=pgdb,
        )

    yield make
    postgres.execute(
        f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
        f"WHERE slot_name = '{pgdb}'"
    )


def _peek(
    postgres: ThrowawayPostgres, db: str, *settings: str, version: int = 1
) -> list[tuple[int, bytes]]:
    """The slot's pending payloads (LSN, bytes), read in a session with ``settings``."""
    options = f"'proto_version', '{version}', 'publication_names', 'pub'"
    options += ", 'messages', 'true'" + (", 'streaming', 'on'" if version >= 2 else "")
    with _session(postgres, db, *settings) as cur:
        cur.execute(
            "SELECT lsn::text, data FROM "
            f"pg_logical_slot_peek_binary_changes('{db}', NULL, NULL, {options})"
        )
        return [(_lsn(lsn), bytes(data)) for lsn, data in cur.fetchall()]


def _decode(payloads: list[tuple[int, bytes]]) -> list[m.Message]:
    decoder = m.Decoder()
    return [decoder(data, lsn) for lsn, data in payloads]


def _resolver(postgres: ThrowawayPostgres, db: str) -> Resolver:
    with _session(postgres, db) as cur:
        cur.execute(CATALOG_SQL.replace("= ANY(%s)", ">= 16384"))
        found = {row[0]: PgType(*row) for row in cur.fetchall()}
    return found.get


def _of(messages: list[m.Message], kind: type[Any]) -> list[Any]:
    return [x for x in messages if isinstance(x, kind)]


def _comparable(array: pa.Array) -> list[Any]:
    """Arrow values as the expected ones are written: dates as days, timestamps as
    microseconds (any year), floats as they are."""
    t = array.type
    if pa.types.is_list(t) and (
        pa.types.is_date32(t.value_type) or pa.types.is_timestamp(t.value_type)
    ):
        storage = pa.int32() if pa.types.is_date32(t.value_type) else pa.int64()
        return array.cast(pa.list_(storage)).to_pylist()
    if pa.types.is_date32(t):
        return array.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(t):
        return array.cast(pa.int64()).to_pylist()
    return array.to_pylist()


def _expected(value: Any, logical: str) -> Any:
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, list):
        return [_expected(v, logical[6:-1]) for v in value]
    if isinstance(value, Decimal) and value.is_nan() and logical.startswith("decimal"):
        return None  # numeric(p,s)'s NaN: null
    if logical == "float32" and value is not None:
        return float(np.float32(value))
    return value


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(map(_same, actual, expected))
    if isinstance(actual, float) and isinstance(expected, float):
        return (math.isnan(actual) and math.isnan(expected)) or (
            actual == expected and math.copysign(1, actual) == math.copysign(1, expected)
        )
    return bool(actual == expected) and type(actual) is type(expected)


def _insert_rows(postgres: ThrowawayPostgres, db: str) -> None:
    statements = []
    for i, row in enumerate(ROWS):
        names = ", ".join(["id", *row])
        quoted = ", ".join([str(i), *("'" + v.replace("'", "''") + "'" for v in row.values())])
        statements.append(f"INSERT INTO everything ({names}) VALUES ({quoted})")
    postgres.execute("BEGIN", *statements, "COMMIT", database=db)


def _select_expected(postgres: ThrowawayPostgres, db: str) -> list[tuple[Any, ...]]:
    exprs = [(sql or "{c}").format(c=name) for name, _, _, sql in COLUMNS]
    with _session(postgres, db, "SET IntervalStyle = iso_8601") as cur:
        cur.execute(f"SELECT {', '.join(exprs)} FROM everything ORDER BY id")
        return list(cur.fetchall())


# ---- every type -----------------------------------------------------------------------------


@pytest.fixture
def everything(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> list[m.Message]:
    postgres.execute(*SCHEMA, database=pgdb)
    slot("everything")
    _insert_rows(postgres, pgdb)
    return _decode(_peek(postgres, pgdb))


def test_relation_and_type_messages_map_every_column(
    postgres: ThrowawayPostgres, pgdb: str, everything: list[m.Message]
) -> None:
    (relation,) = _of(everything, m.Relation)
    assert (relation.namespace, relation.name, relation.replica_identity) == (
        "public",
        "everything",
        "d",
    )
    assert key_names(relation) == ("id",)
    types = {t.oid: t for t in _of(everything, m.Type)}
    assert {"mood", "citext", "_mood", "_dnum"} <= {t.name for t in types.values()}
    named = {t.name for t in types.values() if t.namespace == "pg_catalog"}
    assert named == {"int4", "numeric"}  # the domains: their base type's name
    columns = relation_columns(relation, _resolver(postgres, pgdb))
    assert [c.logical for c in columns[1:]] == [logical for _, _, logical, _ in COLUMNS]
    by_name = {c.name: c for c in columns}
    assert (by_name["n"].precision, by_name["n"].scale) == (12, 2)
    assert (by_name["nneg"].precision, by_name["nneg"].scale) == (5, -2)
    assert (by_name["vc"].length, by_name["c"].length, by_name["bt"].length) == (20, 5, 5)
    assert (by_name["vb"].length, by_name["tm3"].fsp, by_name["ts"].fsp) == (10, 3, 6)
    assert (by_name["dn"].precision, by_name["a_dn"].scale) == (10, 2)  # the domain's
    assert (by_name["a_i4"].data_type, by_name["e"].data_type, by_name["dom"].data_type) == (
        "_int4",
        "mood",
        "int4",
    )
    # from Type messages alone: citext by name, a domain as its base type unless numeric
    bare = {c.name: c.logical for c in relation_columns(relation, type_message_resolver(types))}
    assert (bare["ct"], bare["dom"], bare["dn"]) == ("string", "int32", "")
    assert (bare["e"], bare["a_e"], bare["a_dn"]) == ("", "", "")


def test_every_type_converts_to_what_select_returns(
    postgres: ThrowawayPostgres, pgdb: str, everything: list[m.Message]
) -> None:
    (relation,) = _of(everything, m.Relation)
    inserts = _of(everything, m.Insert)
    assert [i.relation for i in inserts] == [relation.oid] * len(ROWS)
    columns = relation_columns(relation, _resolver(postgres, pgdb))
    expected_rows = _select_expected(postgres, pgdb)
    texts = list(zip(*(i.new for i in inserts), strict=True))
    assert [int(v) for v in texts[0]] == list(range(len(ROWS)))  # type: ignore[arg-type]
    for k, (name, _, logical, _) in enumerate(COLUMNS):
        column = columns[k + 1]
        actual = to_arrow(texts[k + 1], column)  # type: ignore[arg-type]
        assert actual.type == arrow_type(logical), name
        got = _comparable(actual)
        for row, want in enumerate(expected_rows):
            expected = SPECIAL_EXPECTED.get((row, name), _expected(want[k], logical))
            assert _same(got[row], expected), (name, row, texts[k + 1][row], got[row], expected)


def test_json_values_agree_with_the_arrow_values(
    postgres: ThrowawayPostgres, pgdb: str, everything: list[m.Message]
) -> None:
    (relation,) = _of(everything, m.Relation)
    columns = relation_columns(relation, _resolver(postgres, pgdb))
    texts = list(zip(*(i.new for i in _of(everything, m.Insert)), strict=True))
    for k, column in enumerate(columns):
        values = texts[k]
        arrow = _comparable(to_arrow(values, column))  # type: ignore[arg-type]
        for text, value in zip(values, arrow, strict=True):
            got = json_value(
                None if text is None else text.decode(), column.data_type, column.logical
            )  # type: ignore[union-attr]
            assert _same(got, _json_of(value, column.logical)), (column.name, text, got)


def _json_of(value: Any, logical: str) -> Any:
    """The row-image JSON form of an Arrow value as :func:`_comparable` gives it."""
    if value is None:
        return None
    if logical.startswith("array<"):
        return [_json_of(v, logical[6:-1]) for v in value]
    if logical == "date":
        return temporal.date_text(value)
    if logical in ("timestamp", "timestamp_ntz"):
        return temporal.timestamp_text(value, "Z" if logical == "timestamp" else "")
    if logical == "binary":
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return f"{value:f}"
    if logical == "float32":
        return float(float32_text(value))
    return value


def test_timestamptz_in_other_session_time_zones(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute(
        "CREATE TABLE z (id int PRIMARY KEY, t timestamptz, a timestamptz[])", database=pgdb
    )
    slot("z")
    values = ["1850-06-01 12:00:00+00", "2024-03-10 06:59:59.999999+00", "2024-07-01 00:00:00.5+00",
              "0010-01-01 00:00:00+00 BC", "1969-12-31 23:59:59.999999+00"]  # fmt: skip
    postgres.execute(
        *(
            f"INSERT INTO z VALUES ({i}, '{v}', ARRAY['{v}'::timestamptz])"
            for i, v in enumerate(values)
        ),
        database=pgdb,
    )
    want = [r[0] for r in postgres.query(f"SELECT {MICROS.format(c='t')} FROM z ORDER BY id", pgdb)]
    for zone in ("America/New_York", "Asia/Kolkata", "Australia/Eucla", "UTC"):
        messages = _decode(_peek(postgres, pgdb, f"SET TimeZone = '{zone}'"))
        (relation,) = _of(messages, m.Relation)
        columns = relation_columns(relation)
        texts = list(zip(*(i.new for i in _of(messages, m.Insert)), strict=True))
        assert _comparable(to_arrow(texts[1], columns[1])) == want, zone  # type: ignore[arg-type]
        assert _comparable(to_arrow(texts[2], columns[2])) == [[w] for w in want], zone  # type: ignore[arg-type]
        if zone == "America/New_York":  # local mean time: an offset with seconds
            assert texts[1][0] == b"1850-06-01 07:03:58-04:56:02"


def test_iso_interval_style_passes_through(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE iv (id int PRIMARY KEY, v interval)", database=pgdb)
    slot("iv")
    values = ["1 year 2 mons", "-1 days +02:03:00", "0", "-00:00:00.000001", "100:00:00",
              "1 mon -1 day", "-2 years -00:00:07", "6 days 23:59:59.999999"]  # fmt: skip
    postgres.execute(
        *(f"INSERT INTO iv VALUES ({i}, '{v}')" for i, v in enumerate(values)), database=pgdb
    )
    with _session(postgres, pgdb, "SET IntervalStyle = iso_8601") as cur:
        cur.execute("SELECT v::text FROM iv ORDER BY id")
        want = [r[0] for r in cur.fetchall()]
    for style in ("postgres", "iso_8601"):
        messages = _decode(_peek(postgres, pgdb, f"SET IntervalStyle = {style}"))
        columns = relation_columns(_of(messages, m.Relation)[0])
        texts = [i.new[1] for i in _of(messages, m.Insert)]
        assert to_arrow(texts, columns[1]).to_pylist() == want, style  # type: ignore[arg-type]


def test_multidimensional_arrays_stop_the_conversion(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE md (id int PRIMARY KEY, a int[])", database=pgdb)
    slot("md")
    postgres.execute(
        "INSERT INTO md VALUES (1, '{{1,2},{3,4}}'), (2, '[0:1]={5,6}')", database=pgdb
    )
    messages = _decode(_peek(postgres, pgdb))
    column = relation_columns(_of(messages, m.Relation)[0])[1]
    first, second = (i.new[1] for i in _of(messages, m.Insert))
    assert first == b"{{1,2},{3,4}}" and second == b"[0:1]={5,6}"
    with pytest.raises(ValueError, match="more than one dimension"):
        to_arrow([first], column)  # type: ignore[list-item]
    assert to_arrow([second], column).to_pylist() == [[5, 6]]  # type: ignore[list-item]


# ---- changes: update, delete, truncate, TOAST, messages, origins, DDL -------------------------


def test_update_and_delete_by_replica_identity(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute(
        "CREATE TABLE kd (id int PRIMARY KEY, a text, b int)",
        "CREATE TABLE kf (id int PRIMARY KEY, a text, b int)",
        "ALTER TABLE kf REPLICA IDENTITY FULL",
        database=pgdb,
    )
    slot("kd, kf")
    statements = []
    for t in ("kd", "kf"):
        statements += [f"INSERT INTO {t} VALUES (1, 'one', 10)", f"UPDATE {t} SET b = 11",
                       f"UPDATE {t} SET id = 2, a = NULL", f"DELETE FROM {t}"]  # fmt: skip
    postgres.execute(*statements, database=pgdb)
    messages = _decode(_peek(postgres, pgdb))
    relations = {r.name: r for r in _of(messages, m.Relation)}
    assert relations["kd"].replica_identity == "d" and relations["kf"].replica_identity == "f"
    assert key_names(relations["kd"]) == ("id",) and key_names(relations["kf"]) == ()
    assert all(c.key for c in relations["kf"].columns)
    kd, kf = relations["kd"].oid, relations["kf"].oid
    changes = [x for x in messages if isinstance(x, m.Insert | m.Update | m.Delete)]
    assert changes == [
        m.Insert(None, kd, [b"1", b"one", b"10"]),
        m.Update(None, kd, None, None, [b"1", b"one", b"11"]),
        m.Update(None, kd, "K", [b"1", None, None], [b"2", None, b"11"]),
        m.Delete(None, kd, "K", [b"2", None, None]),
        m.Insert(None, kf, [b"1", b"one", b"10"]),
        m.Update(None, kf, "O", [b"1", b"one", b"10"], [b"1", b"one", b"11"]),
        m.Update(None, kf, "O", [b"1", b"one", b"11"], [b"2", None, b"11"]),
        m.Delete(None, kf, "O", [b"2", None, b"11"]),
    ]


def test_unchanged_toasted_value(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE big (id int PRIMARY KEY, n int, doc text)", database=pgdb)
    slot("big")
    doc = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 2000) i)"
    postgres.execute(f"INSERT INTO big VALUES (1, 0, {doc})", "UPDATE big SET n = 1", database=pgdb)
    (value,) = postgres.query("SELECT doc FROM big", pgdb)[0]
    assert postgres.query("SELECT pg_column_size(doc) > 2048 FROM big", pgdb) == [(True,)]
    insert, update = (
        x for x in _decode(_peek(postgres, pgdb)) if isinstance(x, m.Insert | m.Update)
    )
    assert isinstance(insert, m.Insert) and insert.new[2] == value.encode()
    assert isinstance(update, m.Update) and update.new == [b"1", b"1", m.UNCHANGED]


def test_truncate_message_and_origin(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute(
        "CREATE TABLE p1 (id serial PRIMARY KEY)",
        "CREATE TABLE p2 (id int PRIMARY KEY, p int REFERENCES p1)",
        database=pgdb,
    )
    slot("p1, p2")
    postgres.execute(
        "TRUNCATE p1, p2 RESTART IDENTITY",
        "TRUNCATE p1 CASCADE",
        "SELECT pg_logical_emit_message(false, 'plain', 'now')",
        "SELECT pg_replication_origin_create('upstream_' || current_database())",
        database=pgdb,
    )
    with _session(
        postgres,
        pgdb,
        "SELECT pg_replication_origin_session_setup('upstream_' || current_database())",
    ) as cur:
        cur.execute("BEGIN")
        cur.execute("SELECT pg_replication_origin_xact_setup('1/2345', now())")
        cur.execute("SELECT pg_logical_emit_message(true, 'pfx', '\\x00ff'::bytea)")
        cur.execute("INSERT INTO p1 DEFAULT VALUES")
        cur.execute("COMMIT")
    messages = _decode(_peek(postgres, pgdb))
    oids = {r.name: r.oid for r in _of(messages, m.Relation)}
    first, second = _of(messages, m.Truncate)
    assert (first.cascade, first.restart_identity) == (False, True)
    assert sorted(first.relations) == sorted([oids["p1"], oids["p2"]])
    assert second.cascade and not second.restart_identity
    assert sorted(second.relations) == sorted([oids["p1"], oids["p2"]])
    plain, prefixed = _of(messages, m.LogicalMessage)
    assert (plain.transactional, plain.prefix, plain.content) == (False, "plain", b"now")
    assert (prefixed.transactional, prefixed.prefix, prefixed.content) == (True, "pfx", b"\x00\xff")
    (origin,) = _of(messages, m.Origin)
    assert (origin.name, origin.commit_lsn) == (f"upstream_{pgdb}", _lsn("1/2345"))
    begins, commits = _of(messages, m.Begin), _of(messages, m.Commit)
    assert len(begins) == len(commits) == 3
    assert all(b.final_lsn == c.commit_lsn for b, c in zip(begins, commits, strict=True))
    assert all(b.commit_time == c.commit_time for b, c in zip(begins, commits, strict=True))
    (now,) = postgres.query("SELECT (extract(epoch FROM now()) * 1000000)::bigint", pgdb)[0]
    assert abs(commits[-1].commit_time - now) < 60_000_000


def test_add_and_drop_column_send_a_new_relation(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE ev (id int PRIMARY KEY, a text)", database=pgdb)
    slot("ev")
    postgres.execute(
        "INSERT INTO ev VALUES (1, 'x')",
        "ALTER TABLE ev ADD COLUMN b numeric(7,3) DEFAULT 1.5",
        "INSERT INTO ev VALUES (2, 'y', 2.25)",
        "ALTER TABLE ev DROP COLUMN a",
        "INSERT INTO ev VALUES (3, 3)",
        database=pgdb,
    )
    shapes = []
    for message in _decode(_peek(postgres, pgdb)):
        if isinstance(message, m.Relation):
            shapes.append([(c.name, c.logical) for c in relation_columns(message)])
        elif isinstance(message, m.Insert):
            shapes.append(message.new)
    assert shapes == [
        [("id", "int32"), ("a", "string")],
        [b"1", b"x"],
        [("id", "int32"), ("a", "string"), ("b", "decimal(7,3)")],
        [b"2", b"y", b"2.250"],
        [("id", "int32"), ("b", "decimal(7,3)")],
        [b"3", b"3.000"],
    ]


# ---- protocol version 2: streamed transactions ------------------------------------------------


def test_streamed_transactions(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE st (id int PRIMARY KEY, pad text)", database=pgdb)
    slot("st")
    fill = "INSERT INTO st SELECT i, repeat('p', 100) FROM generate_series({}, {}) i"
    postgres.execute("BEGIN", fill.format(1, 3000), "COMMIT", database=pgdb)
    postgres.execute("BEGIN", fill.format(3001, 6000), "ROLLBACK", database=pgdb)
    postgres.execute(
        "BEGIN", fill.format(6001, 6010), "SAVEPOINT s1", fill.format(6011, 9000),
        "ROLLBACK TO s1", "COMMIT", database=pgdb,
    )  # fmt: skip
    messages = _decode(_peek(postgres, pgdb, "SET logical_decoding_work_mem = '64kB'", version=2))
    starts = _of(messages, m.StreamStart)
    assert starts and starts[0].first_segment and len(_of(messages, m.StreamStop)) == len(starts)
    commits, aborts = _of(messages, m.StreamCommit), _of(messages, m.StreamAbort)
    committed = {c.xid for c in commits}
    assert len(committed) == 2 and all(c.commit_lsn <= c.end_lsn for c in commits)
    top_abort = [a for a in aborts if a.xid == a.subxid]
    sub_abort = [a for a in aborts if a.xid != a.subxid]
    assert len(top_abort) == 1 and top_abort[0].xid not in committed
    assert len(sub_abort) == 1 and sub_abort[0].xid in committed
    block: int | None = None  # the xid of the open stream block
    by_xid: dict[int | None, list[int]] = {}
    for message in messages:
        if isinstance(message, m.StreamStart | m.StreamStop):
            block = message.xid if isinstance(message, m.StreamStart) else None
        elif isinstance(message, m.Insert | m.Relation):  # inside a block, with an xid: the
            assert block is not None and message.xid is not None  # block's or a subxact's
            if isinstance(message, m.Insert):
                by_xid.setdefault(message.xid, []).append(int(message.new[0]))
    # what was streamed before the abort (the rest is dropped unsent)
    assert by_xid[top_abort[0].xid] and set(by_xid[top_abort[0].xid]) <= set(range(3001, 6001))
    assert by_xid[sub_abort[0].subxid] and set(by_xid[sub_abort[0].subxid]) <= set(
        range(6011, 9001)
    )
    kept = sorted(i for xid in committed for i in by_xid[xid])
    assert kept == [*range(1, 3001), *range(6001, 6011)]
    assert sorted(r[0] for r in postgres.query("SELECT id FROM st", pgdb)) == [
        *range(1, 3001),
        *range(6001, 6011),
    ]


# ---- errors ----------------------------------------------------------------------------------


def test_unknown_and_malformed_messages_raise(
    postgres: ThrowawayPostgres, pgdb: str, slot: Callable[[str], None]
) -> None:
    postgres.execute("CREATE TABLE er (id int PRIMARY KEY)", database=pgdb)
    slot("er")
    postgres.execute("INSERT INTO er VALUES (1)", database=pgdb)
    lsn, insert = next((lsn, d) for lsn, d in _peek(postgres, pgdb) if d[:1] == b"I")
    assert m.decode(insert, lsn=lsn) == m.Insert(None, int.from_bytes(insert[1:5]), [b"1"])
    with pytest.raises(m.PgoutputError, match=rf"type 'b' at LSN {m.lsn_text(lsn)} is unknown"):
        m.decode(b"b" + insert[1:], lsn=lsn)
    with pytest.raises(m.PgoutputError, match="truncated or malformed"):
        m.decode(insert[:-1], lsn=lsn)
    with pytest.raises(m.PgoutputError, match="unknown"):
        m.decode(b"", lsn=lsn)
