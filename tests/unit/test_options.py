"""Options of the ``mysql-cdc`` source: parsing, defaults, and errors that name the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import SnapshotConfig, SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.spark.stream.options import SourceOptions, source_options
from tests.cases.tls import make_certificates

BASE = {"host": "db", "user": "cdc", "tables": r"shop\..*", "schema_history": "/cp/h.jsonl"}


def server_ids(source: SourceConfig) -> tuple[int, ...]:
    """The snapshot readers' server ids of a MySQL source."""
    return MySQLSettings.of(source).snapshot_ids(source.snapshot.parallelism)


def parse(**options: str) -> SourceOptions:
    return SourceOptions.parse({**BASE, **options})


def error(**options: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        parse(**options)
    return err.value


def test_defaults() -> None:
    o = parse()
    s = o.source
    ids = MySQLSettings.of(s)
    assert (s.startup, ids.server_id, ids.server_id_last) == ("initial", 5701, None)
    assert s.snapshot == SnapshotConfig() and server_ids(s) == (5702, 5703)
    assert (o.snapshot_dir, o.table) == (None, None)
    assert (s.signal_table, o.signal_dir, s.snapshot.incremental_chunks) == (None, None, 2)


def test_options_take_the_pipeline_file_s_forms() -> None:
    o = parse(connect_timeout="2s", max_bytes="8MB", batch_mode="itemsize", port="3310")
    assert (o.source.connect_timeout, o.max_bytes, o.batch_mode) == (2.0, 8 * 2**20, "ITEMSIZE")
    assert o.source.port == 3310
    assert parse(connect_timeout="0.5", max_bytes="1024").max_bytes == 1024


def test_signal_options() -> None:
    o = parse(signal_table="ops.signals", signal_dir="/cp/sparkcdc/signals", incremental_chunks="6")
    assert o.source.signal_table == "ops.signals" and o.signal_dir == "/cp/sparkcdc/signals"
    assert o.source.tables == (r"shop\..*", r"ops\.signals")  # captured, so its rows stream
    assert o.source.snapshot.incremental_chunks == 6
    assert parse(signal_table="shop.signals").source.tables == (r"shop\..*",)


def test_snapshot_options() -> None:
    o = parse(
        startup="Snapshot",
        server_id="5701-5705",
        chunk_size="100",
        parallelism="4",
        chunk_key_columns='{"shop.log": ["a", "b"], "shop.x": "id"}',
        distribution_factor_lower="0.5",
        distribution_factor_upper="20",
        snapshot_batch_rows="5000",
        snapshot_dir="/cp/sparkcdc/snapshot",
    )
    assert o.source.startup == "snapshot"
    assert o.source.snapshot == SnapshotConfig(
        chunk_size=100,
        parallelism=4,
        chunk_key_columns={"shop.log": ("a", "b"), "shop.x": ("id",)},
        distribution_factor_lower=0.5,
        distribution_factor_upper=20.0,
        batch_rows=5000,
    )
    assert server_ids(o.source) == (5702, 5703, 5704, 5705)
    assert o.snapshot_dir == "/cp/sparkcdc/snapshot"


@pytest.mark.parametrize(
    ("written", "first", "last"),
    [
        ("6123", 6123, None),
        ("5701-5710", 5701, 5710),
        (" 5701 - 5703 ", 5701, 5703),
        ("", 5701, None),
    ],
)
def test_server_id_single_or_range(written: str, first: int, last: int | None) -> None:
    s = parse(server_id=written).source
    assert (MySQLSettings.of(s).server_id, MySQLSettings.of(s).server_id_last) == (first, last)


def test_table_for_a_batch_read() -> None:
    o = SourceOptions.parse(
        {k: v for k, v in BASE.items() if k != "tables"} | {"table": "shop.a$b"}
    )
    assert o.table == "shop.a$b" and o.source.tables == (r"shop\.a\$b",)
    o = parse(table="shop.orders")  # tables given as well: kept as written
    assert o.table == "shop.orders" and o.source.tables == (r"shop\..*",)
    err = error(tables="")
    assert err.fields["key"] == "tables" and "'table'" in str(err)


def test_round_trip_from_the_pipeline_file() -> None:
    cfg = load_config_text(
        "source: {host: h, user: u, password: pw, tables: ['shop\\.a', 'crm\\..*'],\n"
        "         server_id: 5701-5706, key_columns: {shop.a: id}, signal_table: ops.sig,\n"
        "         snapshot: {chunk_size: 50, parallelism: 5, chunk_key_columns: {shop.a: [k]},\n"
        "                    distribution_factor: {lower: 0.25, upper: 7.5}, batch_rows: 9,\n"
        "                    incremental_chunks: 3}}\n"
        "sink: {path: /lake}\npipeline: {checkpoint: /cp}\n",
        "/",
    )
    opts = source_options(
        cfg.source,
        "/cp/sparkcdc/schema_history.jsonl",
        max_bytes=1024,
        max_items=8,
        batch_mode="MEMSIZE",
        item_rows=16,
        snapshot_dir="/cp/sparkcdc/snapshot",
        signal_dir="/cp/sparkcdc/signals",
    )
    assert opts["server_id"] == "5701-5706" and opts["snapshot_batch_rows"] == "9"
    assert opts["incremental_chunks"] == "3" and opts["signal_table"] == "ops.sig"
    assert opts["signal_dir"] == "/cp/sparkcdc/signals"
    assert opts["snapshot_dir"] == "/cp/sparkcdc/snapshot"
    assert opts["chunk_key_columns"] == '{"shop.a": ["k"]}'
    parsed = SourceOptions.parse(opts)
    assert parsed.source == cfg.source and parsed.snapshot_dir == "/cp/sparkcdc/snapshot"
    assert parsed.signal_dir == "/cp/sparkcdc/signals"
    plain = source_options(
        load_config_text(
            "source: {host: h, user: u, tables: [x]}\nsink: {path: /l}\npipeline: {checkpoint: /c}",
            "/",
        ).source,
        "/h",
        max_bytes=1,
        max_items=1,
        batch_mode="MEMSIZE",
        item_rows=1,
    )
    assert plain["server_id"] == "5701" and plain["startup"] == "initial"
    assert "chunk_key_columns" not in plain and "snapshot_dir" not in plain
    assert "signal_table" not in plain and "signal_dir" not in plain
    assert plain["incremental_chunks"] == "2"


@pytest.mark.parametrize(
    ("options", "key", "says"),
    [
        ({"startup": "oldest"}, "startup", "initial, snapshot, earliest"),
        ({"server_id": "abc"}, "server_id", "5701-5710"),
        ({"server_id": "0"}, "server_id", "1..4294967295"),
        ({"server_id": "9-3"}, "server_id", "write it as 3-9"),
        ({"server_id": "5701-5702"}, "server_id", "parallelism 2 needs at least 3 ids"),
        ({"server_id": "1-3", "parallelism": "3"}, "server_id", "widen it to e.g. 1-4"),
        ({"server_id": "4294967295"}, "server_id", "use at most 4294967293"),
        ({"chunk_size": "0"}, "chunk_size", "out of range"),
        ({"chunk_size": "many"}, "chunk_size", "not a whole number"),
        ({"parallelism": "0"}, "parallelism", "1..64"),
        ({"parallelism": "65"}, "parallelism", "1..64"),
        ({"snapshot_batch_rows": "0"}, "snapshot_batch_rows", "out of range"),
        ({"incremental_chunks": "0"}, "incremental_chunks", "1..64"),
        ({"incremental_chunks": "65"}, "incremental_chunks", "1..64"),
        ({"incremental_chunks": "two"}, "incremental_chunks", "not a whole number"),
        ({"signal_table": "signals"}, "signal_table", "not a db.table name"),
        ({"signal_table": "a.b.c"}, "signal_table", "not a db.table name"),
        ({"signal_table": "`a`.b"}, "signal_table", "holds a backtick"),
        ({"snapshot_delivery": "fast"}, "snapshot_delivery", "not one of rows, store"),
        ({"distribution_factor_lower": "0"}, "distribution_factor_lower", "not above 0"),
        ({"distribution_factor_lower": "x"}, "distribution_factor_lower", "not a number"),
        ({"distribution_factor_upper": "nan"}, "distribution_factor_upper", "not a number"),
        ({"distribution_factor_upper": "0.5"}, "distribution_factor_upper", "at least 1"),
        (
            {"distribution_factor_lower": "9", "distribution_factor_upper": "3"},
            "distribution_factor_upper",
            "below distribution_factor_lower (9)",
        ),
        (
            {"distribution_factor_lower": "2000"},
            "distribution_factor_lower",
            "above distribution_factor_upper (1000)",
        ),
        ({"chunk_key_columns": "{"}, "chunk_key_columns", "not a JSON object"),
        ({"chunk_key_columns": "[1]"}, "chunk_key_columns", "db.table"),
        ({"chunk_key_columns": '{"log": ["a"]}'}, "chunk_key_columns", "at log: 'log' is not"),
        ({"chunk_key_columns": '{"shop.log": []}'}, "chunk_key_columns", "non-empty list"),
        ({"table": "orders"}, "table", "db.table"),
        ({"table": "a.b.c"}, "table", "db.table"),
        ({"tables": "", "table": ""}, "tables", "needs the option 'tables'"),
        ({"port": "70000"}, "port", "1..65535"),
        ({"port": "db"}, "port", "not a whole number"),
        ({"connect_timeout": "soon"}, "connect_timeout", "not a duration"),
        ({"max_bytes": "64XB"}, "max_bytes", "not a size"),
        ({"max_items": "0"}, "max_items", "out of range"),
        ({"item_rows": "none"}, "item_rows", "not a whole number"),
        ({"batch_mode": "fast"}, "batch_mode", "not one of MEMSIZE, ITEMSIZE"),
        ({"heartbeat_interval": "often"}, "heartbeat_interval", "not a duration"),
        (
            {"heartbeat_action_query": "SELECT 1"},
            "heartbeat_action_query",
            "heartbeat_interval is off",
        ),
    ],
)
def test_errors_name_the_option(options: dict[str, str], key: str, says: str) -> None:
    err = error(**options)
    assert err.fields["key"] == key
    message = str(err)
    assert key in message and says in message and message.endswith(".")
    assert ". " not in message.replace("e.g. ", "")  # one sentence
    if key != "tables":
        assert message.startswith(f"the mysql-cdc option '{key}'")


def test_tls_options_round_trip(tmp_path: Path) -> None:
    from sparkcdc.config.model import TlsConfig

    ca = make_certificates(tmp_path)["ca"]
    cfg = load_config_text(
        f"source: {{host: h, user: u, tables: [a\\.b], tls: {{mode: verify-ca, ca: {ca}}}}}\n"
        "sink: {path: /lake}\npipeline: {checkpoint: /cp}\n",
        "/",
    )
    opts = source_options(cfg.source, "/cp/h.jsonl", max_bytes=1, max_items=1,
                          batch_mode="MEMSIZE", item_rows=1)  # fmt: skip
    assert (opts["tls"], opts["tls_ca"]) == ("verify-ca", str(ca))
    assert SourceOptions.parse(opts).source.tls == TlsConfig("verify-ca", ca=str(ca))
    assert parse().source.tls == TlsConfig()
    with pytest.raises(ConfigError, match="'tls'.*not a TLS mode"):
        parse(tls="maybe")


def test_heartbeat_options_round_trip() -> None:
    from sparkcdc.config.model import HeartbeatConfig

    query = "INSERT INTO ops.beat (id, ts) VALUES (1, NOW()) ON DUPLICATE KEY UPDATE ts = NOW()"
    cfg = load_config_text(
        f"source: {{host: h, user: u, tables: [a\\.b], heartbeat: {{interval: 1500ms, "
        f"action_query: '{query}'}}}}\nsink: {{path: /lake}}\npipeline: {{checkpoint: /cp}}\n",
        "/",
    )
    opts = source_options(cfg.source, "/cp/h.jsonl", max_bytes=1, max_items=1,
                          batch_mode="MEMSIZE", item_rows=1)  # fmt: skip
    assert (opts["heartbeat_interval"], opts["heartbeat_action_query"]) == ("1.5", query)
    assert SourceOptions.parse(opts).source.heartbeat == HeartbeatConfig(1.5, query)
    assert SourceOptions.parse(opts).source == cfg.source
    assert parse().source.heartbeat == HeartbeatConfig()
    assert parse(heartbeat_interval="10s").source.heartbeat == HeartbeatConfig(10.0)
    plain = source_options(parse().source, "/h", max_bytes=1, max_items=1,
                           batch_mode="MEMSIZE", item_rows=1)  # fmt: skip
    assert "heartbeat_interval" not in plain and "heartbeat_action_query" not in plain
