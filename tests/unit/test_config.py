"""Pipeline YAML: values, environment references, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.config.load import load_config, load_config_text
from sparkcdc.config.model import SnapshotConfig, SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.mysql.settings import MySQLSettings
from tests.cases.tls import make_certificates

BASE = """
source: {type: mysql, host: db.local, port: 3307, user: cdc, password: secret,
         tables: ["shop\\\\..*", 'crm\\.users'], startup: earliest}
sink: {type: delta, path: ./lake}
pipeline: {checkpoint: ./checkpoints/shop, trigger: 1s, store: {max_bytes: 64MB}}
"""


def server_ids(source: SourceConfig) -> tuple[int, ...]:
    """The snapshot readers' server ids of a MySQL source."""
    return MySQLSettings.of(source).snapshot_ids(source.snapshot.parallelism)


def error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, "/base")
    return err.value


def test_readme_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PASSWORD", "0123")
    cfg_file = tmp_path / "pipeline.yaml"
    cfg_file.write_text(
        "source: {type: mysql, host: 127.0.0.1, port: 3306, user: cdc, "
        'password: ${MYSQL_PASSWORD},\n         tables: ["shop\\\\..*"], startup: initial}\n'
        "sink:   {type: delta, path: ./lake}\n"
        "pipeline: {checkpoint: ./checkpoints/shop, trigger: 1s, store: {max_bytes: 64MB}}\n"
    )
    cfg = load_config(cfg_file)
    assert cfg.source.password.reveal() == "0123"
    assert cfg.source.tables == ("shop\\..*",)
    assert cfg.source.port == 3306 and MySQLSettings.of(cfg.source).server_id == 5701
    assert cfg.source.startup == "initial" and cfg.source.snapshot == SnapshotConfig()
    assert MySQLSettings.of(cfg.source).server_id_last is None
    assert server_ids(cfg.source) == (5702, 5703)
    assert cfg.sink.path == str(tmp_path / "lake")
    assert cfg.pipeline.checkpoint == str(tmp_path / "checkpoints" / "shop")
    assert cfg.pipeline.trigger_seconds == 1.0
    assert cfg.pipeline.store.max_bytes == 64 * 1024 * 1024
    assert cfg.pipeline.spark_master == "local[*]"


def test_all_options() -> None:
    cfg = load_config_text(
        """
source:
  type: MariaDB
  host: h
  user: u
  tables: 'a\\.b'
  startup: "gtid:0-1-55, 1-2-3"
  server_id: 99
  connect_timeout: 500ms
  key_columns: {"shop.log": [a, b], "shop.x": id}
sink: {path: s3://bucket/lake}
pipeline:
  checkpoint: /abs/cp
  trigger: 2m
  store: {max_bytes: 512KiB, max_items: 10, batch_mode: itemsize, item_rows: 7}
  spark: {master: "local[2]", conf: {spark.sql.shuffle.partitions: 4}}
""",
        "/base",
    )
    s = cfg.source
    assert (s.type, s.port, s.password.reveal(), MySQLSettings.of(s).server_id) == (
        "mysql",
        3306,
        "",
        99,
    )
    assert s.tables == ("a\\.b",) and s.startup == "gtid:0-1-55,1-2-3"
    assert s.connect_timeout == 0.5
    assert s.key_columns == {"shop.log": ("a", "b"), "shop.x": ("id",)}
    assert cfg.sink.path == "s3://bucket/lake" and cfg.pipeline.checkpoint == "/abs/cp"
    p = cfg.pipeline
    assert p.trigger_seconds == 120.0
    assert (p.store.max_bytes, p.store.max_items, p.store.batch_mode, p.store.item_rows) == (
        512 * 1024,
        10,
        "ITEMSIZE",
        7,
    )
    assert p.spark_master == "local[2]" and p.spark_conf == {"spark.sql.shuffle.partitions": "4"}


@pytest.mark.parametrize(
    "startup",
    [
        "initial",
        "snapshot",
        "earliest",
        "latest",
        "gtid:0-1-5",
        "gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77:80,4f22fb58-82db-22f2-af44-d91bba53a673:5",
        "position:mysql-bin.000003:1234",
        "timestamp:1767225600000",
    ],
)
def test_valid_startup(startup: str) -> None:
    cfg = load_config_text(BASE.replace("startup: earliest", f"startup: '{startup}'"), "/b")
    assert cfg.source.startup == startup


def test_startup_defaults_to_initial() -> None:
    cfg = load_config_text(BASE.replace(", startup: earliest", ""), "/b")
    assert cfg.source.startup == "initial" and cfg.source.takes_snapshot
    assert load_config_text(BASE.replace("earliest", "SNAPSHOT"), "/b").source.startup == "snapshot"
    assert not load_config_text(BASE, "/b").source.takes_snapshot
    assert SourceConfig("h", 1, "u", "", ("a\\.b",)).startup == "initial"


@pytest.mark.parametrize(
    "startup",
    ["oldest", "gtid:abc", "position:mysql-bin:12", "position:f.000001:x", "timestamp:now"],
)
def test_invalid_startup(startup: str) -> None:
    err = error(BASE.replace("startup: earliest", f"startup: '{startup}'"))
    assert err.fields["key"] == "source.startup"
    assert "earliest" in str(err) and "position:<binlog file>:<pos>" in str(err)


def test_environment_references(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_PORT", "3310")
    monkeypatch.delenv("NOPE", raising=False)
    text = BASE.replace("port: 3307", "port: ${DB_PORT}").replace(
        "host: db.local", "host: ${NOPE:-fallback}"
    )
    cfg = load_config_text(text.replace("password: secret", "password: '$${x}'"), "/b")
    assert cfg.source.port == 3310 and cfg.source.host == "fallback"
    assert cfg.source.password.reveal() == "${x}"
    err = error(BASE.replace("password: secret", "password: ${NOPE}"))
    assert err.fields["key"] == "source.password" and "NOPE" in str(err)


def test_commands_that_never_connect_need_no_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    text = BASE.replace("password: secret", "password: ${NOPE}")
    assert load_config_text(text, "/b", connects=False).source.password.reveal() == ""
    elsewhere = text.replace("host: db.local", "host: ${NOPE}")
    with pytest.raises(ConfigError, match="NOPE") as err:
        load_config_text(elsewhere, "/b", connects=False)
    assert err.value.fields["key"] == "source.host"


def test_malformed_yaml_names_the_line() -> None:
    err = error("source:\n  host: a\n  tables: [x\nsink: {}\n")
    assert "line" in str(err) and err.fields["line"] >= 3


@pytest.mark.parametrize(
    ("replace", "by", "key", "says"),
    [
        ("max_bytes: 64MB", "max_bytes: 64XB", "pipeline.store.max_bytes", "use e.g. 64MB"),
        ("trigger: 1s", "trigger: soon", "pipeline.trigger", "not a duration"),
        ("port: 3307", "port: 70000", "source.port", "1..65535"),
        ("port: 3307", "port: abc", "source.port", "not a whole number"),
        ("type: mysql", "type: oracle", "source.type", "postgres"),
        ("type: mysql", "type: no_such.module", "source.type", "importing no_such.module failed"),
        ("type: mysql", "type: os.path", "source.type", "os.path has no SOURCE_TYPE"),
        (
            "type: delta",
            "type: hudi",
            "sink.type",
            "not a supported sink; use one of delta, iceberg",
        ),
        ("type: delta", "type: no_such.sink", "sink.type", "importing no_such.sink failed"),
        ("type: delta", "type: os.path", "sink.type", "os.path has no SINK_TYPE"),
        ("tables: [", "tables: ['(', ", "source.tables[0]", "regular expression"),
        ("startup: earliest", "startup: earliest, colour: red", "source.colour", "allowed keys"),
        ("{max_bytes: 64MB}", "{max_bytes: 64MB, size: 1}", "pipeline.store.size", "max_bytes"),
        ("user: cdc,", "", "source.user", "missing"),
        (
            "store: {max_bytes: 64MB}",
            "store: {batch_mode: fast}",
            "pipeline.store.batch_mode",
            "MEMSIZE",
        ),
    ],
)
def test_errors_name_the_key(replace: str, by: str, key: str, says: str) -> None:
    assert replace in BASE
    err = error(BASE.replace(replace, by, 1))
    assert err.fields["key"] == key
    assert str(err).startswith(f"{key}: ") and says in str(err)


def test_missing_sections_and_unknown_top_level() -> None:
    assert error("").fields["key"] == "source"
    err = error(BASE + "extra: 1\n")
    assert err.fields["key"] == "extra" and "source, sink, pipeline" in str(err)
    err = error(BASE.replace("sink: {type: delta, path: ./lake}", "sink: {type: delta}"))
    assert err.fields["key"] == "sink.path"
    err = error(BASE.replace("pipeline: {", "pipeline: {spark: {cores: 2}, "))
    assert err.fields["key"] == "pipeline.spark.cores"


def test_key_columns_name_a_table_in_its_text_form() -> None:
    quoted = BASE.replace(
        "startup: earliest", """startup: earliest, key_columns: {'"shop.eu".log': [a]}"""
    )
    assert load_config_text(quoted, "/b").source.key_columns == {'"shop.eu".log': ("a",)}
    bad = BASE.replace("startup: earliest", "startup: earliest, key_columns: {shop.eu.log: a}")
    err = error(bad)
    assert err.fields["key"] == "source.key_columns.shop.eu.log"
    assert 'double-quoting a part that holds a dot ("sales.eu".orders)' in str(err)


def test_key_columns_shape() -> None:
    bad = BASE.replace("startup: earliest", "startup: earliest, key_columns: {logtable: [a]}")
    assert error(bad).fields["key"] == "source.key_columns.logtable"
    bad = BASE.replace("startup: earliest", "startup: earliest, key_columns: [a]")
    assert error(bad).fields["key"] == "source.key_columns"


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read"):
        load_config(tmp_path / "missing.yaml")


def with_source(extra: str, startup: str = "earliest") -> str:
    """BASE with ``extra`` (``key: value, ...``) added to the source mapping."""
    return BASE.replace("startup: earliest", f"startup: {startup}, {extra}")


@pytest.mark.parametrize(
    ("written", "first", "last", "snapshot_ids"),
    [
        ("5800", 5800, None, (5801, 5802)),
        ("'5701-5710'", 5701, 5710, tuple(range(5702, 5711))),
        ("5701-5703", 5701, 5703, (5702, 5703)),
        ("'5701 - 5704'", 5701, 5704, (5702, 5703, 5704)),
        ("[5701, 5703]", 5701, 5703, (5702, 5703)),
    ],
)
def test_server_id_single_or_range(
    written: str, first: int, last: int | None, snapshot_ids: tuple[int, ...]
) -> None:
    s = load_config_text(with_source(f"server_id: {written}", "initial"), "/b").source
    ids = MySQLSettings.of(s)
    assert (ids.server_id, ids.server_id_last, server_ids(s)) == (first, last, snapshot_ids)
    assert s.redacted()["server_id"] == first and s.redacted()["server_id_last"] == last


def test_derived_snapshot_server_ids_follow_parallelism() -> None:
    s = load_config_text(with_source("server_id: 10, snapshot: {parallelism: 4}"), "/b").source
    assert server_ids(s) == (11, 12, 13, 14)
    # a range narrower than the snapshot needs is fine when the startup takes no snapshot
    s = load_config_text(with_source("server_id: 7-7, snapshot: {parallelism: 4}"), "/b").source
    assert (MySQLSettings.of(s).server_id, server_ids(s)) == (7, ())


def test_snapshot_settings() -> None:
    cfg = load_config_text(
        """
source:
  host: h
  user: u
  tables: 'shop\\..*'
  startup: snapshot
  server_id: 5701-5705
  snapshot:
    chunk_size: 100
    parallelism: 4
    chunk_key_columns: {"shop.log": [a, b], "shop.x": id}
    distribution_factor: {lower: 0.5, upper: 20}
    batch_rows: 5000
sink: {path: /lake}
pipeline: {checkpoint: /cp}
""",
        "/base",
    )
    assert cfg.source.snapshot == SnapshotConfig(
        chunk_size=100,
        parallelism=4,
        chunk_key_columns={"shop.log": ("a", "b"), "shop.x": ("id",)},
        distribution_factor_lower=0.5,
        distribution_factor_upper=20.0,
        batch_rows=5000,
    )
    assert server_ids(cfg.source) == (5702, 5703, 5704, 5705)
    assert cfg.source.redacted()["snapshot"] == {
        "chunk_size": 100,
        "parallelism": 4,
        "chunk_key_columns": {"shop.log": ["a", "b"], "shop.x": ["id"]},
        "distribution_factor": {"lower": 0.5, "upper": 20.0},
        "batch_rows": 5000,
        "incremental_chunks": 2,
        "incremental_window": 0.3,
    }
    # one bound alone keeps the other's default; batch_rows may be below chunk_size
    s = load_config_text(
        with_source("snapshot: {chunk_size: 10, batch_rows: 5, distribution_factor: {upper: 3}}"),
        "/b",
    ).source.snapshot
    assert (s.distribution_factor_lower, s.distribution_factor_upper) == (0.05, 3.0)
    assert (s.chunk_size, s.batch_rows) == (10, 5)


@pytest.mark.parametrize(
    ("extra", "startup", "key", "says"),
    [
        ("server_id: 0", "earliest", "source.server_id", "1..4294967295"),
        ("server_id: 4294967296", "earliest", "source.server_id", "1..4294967295"),
        ("server_id: abc", "earliest", "source.server_id", "5701-5710"),
        ("server_id: 5701-", "earliest", "source.server_id", "not a server id"),
        ("server_id: 10-5", "earliest", "source.server_id", "write it as 5-10"),
        ("server_id: 0-5", "earliest", "source.server_id", "1..4294967295"),
        ("server_id: 5-4294967296", "earliest", "source.server_id", "1..4294967295"),
        ("server_id: [5701]", "earliest", "source.server_id", "[5701, 5710]"),
        ("server_id: [1, 2, 3]", "earliest", "source.server_id", "[5701, 5710]"),
        ("server_id: [x, 5]", "earliest", "source.server_id[0]", "not a whole number"),
        ("server_id: {a: 1}", "earliest", "source.server_id", "not a mapping"),
        ("server_id: 5701-5702", "initial", "source.server_id", "needs at least 3 ids"),
        ("server_id: 5701-5701", "snapshot", "source.server_id", "widen it to e.g. 5701-5703"),
        (
            "server_id: 1-4, snapshot: {parallelism: 4}",
            "initial",
            "source.server_id",
            "source.snapshot.parallelism 4 needs at least 5 ids",
        ),
        ("server_id: 4294967294", "initial", "source.server_id", "use at most 4294967293"),
        ("snapshot: {chunk_size: 0}", "earliest", "source.snapshot.chunk_size", "out of range"),
        ("snapshot: {chunk_size: -1}", "initial", "source.snapshot.chunk_size", "out of range"),
        ("snapshot: {chunk_size: 1.5}", "initial", "source.snapshot.chunk_size", "whole number"),
        ("snapshot: {parallelism: 0}", "initial", "source.snapshot.parallelism", "1..64"),
        ("snapshot: {parallelism: 65}", "initial", "source.snapshot.parallelism", "1..64"),
        ("snapshot: {parallelism: two}", "initial", "source.snapshot.parallelism", "whole number"),
        ("snapshot: {batch_rows: 0}", "initial", "source.snapshot.batch_rows", "out of range"),
        ("snapshot: {batch_rows: [1]}", "initial", "source.snapshot.batch_rows", "not a list"),
        (
            "snapshot: {distribution_factor: {lower: 0}}",
            "initial",
            "source.snapshot.distribution_factor.lower",
            "not above 0",
        ),
        (
            "snapshot: {distribution_factor: {lower: -0.5}}",
            "initial",
            "source.snapshot.distribution_factor.lower",
            "not above 0",
        ),
        (
            "snapshot: {distribution_factor: {lower: low}}",
            "initial",
            "source.snapshot.distribution_factor.lower",
            "not a number",
        ),
        (
            "snapshot: {distribution_factor: {upper: inf}}",
            "initial",
            "source.snapshot.distribution_factor.upper",
            "not a number",
        ),
        (
            "snapshot: {distribution_factor: {upper: 0.9}}",
            "initial",
            "source.snapshot.distribution_factor.upper",
            "at least 1",
        ),
        (
            "snapshot: {distribution_factor: {lower: 8, upper: 4}}",
            "initial",
            "source.snapshot.distribution_factor.upper",
            "below source.snapshot.distribution_factor.lower (8)",
        ),
        (
            "snapshot: {distribution_factor: {lower: 2000}}",
            "initial",
            "source.snapshot.distribution_factor.lower",
            "above source.snapshot.distribution_factor.upper (1000)",
        ),
        (
            "snapshot: {distribution_factor: {middle: 1}}",
            "initial",
            "source.snapshot.distribution_factor.middle",
            "allowed keys are lower, upper",
        ),
        (
            "snapshot: {distribution_factor: 2}",
            "initial",
            "source.snapshot.distribution_factor",
            "mapping of lower, upper",
        ),
        (
            "snapshot: {chunk_key_columns: [a]}",
            "initial",
            "source.snapshot.chunk_key_columns",
            "db.table",
        ),
        (
            "snapshot: {chunk_key_columns: {log: [a]}}",
            "initial",
            "source.snapshot.chunk_key_columns.log",
            "not a db.table name",
        ),
        (
            "snapshot: {chunk_key_columns: {shop.log: []}}",
            "initial",
            "source.snapshot.chunk_key_columns.shop.log",
            "non-empty list",
        ),
        (
            "snapshot: {chunk_key_columns: {shop.log: ['']}}",
            "initial",
            "source.snapshot.chunk_key_columns.shop.log[0]",
            "give a column name",
        ),
        (
            "snapshot: {chunk_rows: 5}",
            "initial",
            "source.snapshot.chunk_rows",
            "allowed keys are chunk_size, parallelism",
        ),
        ("snapshot: 5", "initial", "source.snapshot", "mapping of chunk_size"),
    ],
)
def test_snapshot_errors_name_the_key(extra: str, startup: str, key: str, says: str) -> None:
    err = error(with_source(extra, startup))
    assert err.fields["key"] == key
    message = str(err)
    assert message.startswith(f"{key}: ") and message.endswith(".") and says in message
    assert ". " not in message.replace("e.g. ", "")  # one sentence


def test_incremental_chunks() -> None:
    s = load_config_text(with_source("snapshot: {incremental_chunks: 8}"), "/b").source
    assert s.snapshot.incremental_chunks == 8
    assert s.redacted()["snapshot"]["incremental_chunks"] == 8
    assert load_config_text(BASE, "/b").source.snapshot.incremental_chunks == 2


@pytest.mark.parametrize(
    ("written", "says"),
    [("0", "1..64"), ("65", "1..64"), ("two", "not a whole number"), ("[2]", "not a list")],
)
def test_incremental_chunks_errors(written: str, says: str) -> None:
    err = error(with_source(f"snapshot: {{incremental_chunks: {written}}}"))
    key = "source.snapshot.incremental_chunks"
    assert err.fields["key"] == key and str(err).startswith(f"{key}: ") and says in str(err)


def test_incremental_window() -> None:
    s = load_config_text(with_source("snapshot: {incremental_window: 50ms}"), "/b").source
    assert s.snapshot.incremental_window == pytest.approx(0.05)
    assert load_config_text(BASE, "/b").source.snapshot.incremental_window == 0.3
    assert load_config_text(with_source("snapshot: {incremental_window: 0}"), "/b").source


@pytest.mark.parametrize(
    ("written", "says"), [("2m", "longer than 60s"), ("soon", "not a duration")]
)
def test_incremental_window_errors(written: str, says: str) -> None:
    err = error(with_source(f"snapshot: {{incremental_window: {written}}}"))
    key = "source.snapshot.incremental_window"
    assert err.fields["key"] == key and says in str(err)


@pytest.mark.parametrize(
    ("patterns", "signal_table", "tables"),
    [
        # not captured yet: the table is added, escaped
        ([r"shop\..*"], "ops.signals", (r"shop\..*", r"ops\.signals")),
        # captured by a pattern already: left as written
        ([r"shop\..*"], "shop.signals", (r"shop\..*",)),
        ([".*"], "ops.sig$", (".*",)),
        # a pattern matching only part of the name does not capture it
        ([r"ops\.sig"], "ops.signals", (r"ops\.sig", r"ops\.signals")),
        # a schema with a dot: the text form double-quotes it
        ([r"shop\..*"], '"ops.eu".signals', (r"shop\..*", r'"ops\.eu"\.signals')),
    ],
)
def test_signal_table_is_captured(
    patterns: list[str], signal_table: str, tables: tuple[str, ...]
) -> None:
    listed = ", ".join(f"'{p}'" for p in patterns)
    text = (
        f"source: {{host: h, user: u, tables: [{listed}], signal_table: '{signal_table}'}}\n"
        "sink: {path: /l}\npipeline: {checkpoint: /c}\n"
    )
    s = load_config_text(text, "/b").source
    assert s.signal_table == signal_table and s.tables == tables
    assert s.redacted()["signal_table"] == signal_table
    plain = load_config_text(BASE, "/b").source
    assert plain.signal_table is None and plain.redacted()["signal_table"] is None


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("signals", "not a db.table name"),
        ("a.b.c", "not a db.table name"),
        ("'.signals'", "not a db.table name"),
        ("'ops.'", "not a db.table name"),
        ("'`ops`.signals'", "holds a backtick"),
        ("[ops.signals]", "not a list"),
    ],
)
def test_signal_table_errors(written: str, says: str) -> None:
    err = error(with_source(f"signal_table: {written}"))
    key = "source.signal_table"
    assert err.fields["key"] == key and str(err).startswith(f"{key}: ") and says in str(err)
    assert ". " not in str(err).replace("e.g. ", "")


@pytest.mark.parametrize("named", ["mariadb", "MariaDB", "MYSQL"])
def test_a_built_in_type_is_kept_under_its_own_name(named: str) -> None:
    cfg = load_config_text(BASE.replace("type: mysql", f"type: {named}", 1), "/b")
    assert cfg.source.type == "mysql"


def test_tls_takes_a_mode_or_a_mapping_of_mode_and_files(tmp_path: Path) -> None:
    from sparkcdc.config.model import TlsConfig

    assert load_config_text(BASE, "/").source.tls == TlsConfig("preferred")
    assert load_config_text(with_source("tls: REQUIRED"), "/").source.tls == TlsConfig("required")
    ca = make_certificates(tmp_path)["ca"]
    written = with_source(f"tls: {{mode: verify_identity, ca: {ca}}}")
    assert load_config_text(written, "/").source.tls == TlsConfig("verify-identity", ca=str(ca))
    for extra, says in [
        ("tls: sometimes", "source.tls.mode: 'sometimes' is not a TLS mode; use one of"),
        ("tls: {mode: required, ca: /nowhere.pem}", "source.tls.ca: no file at /nowhere.pem"),
        (f"tls: {{cert: {ca}}}", "source.tls: a client certificate needs both cert and key"),
        ("tls: {verify: yes}", "source.tls: unknown key 'verify'"),
        (f"tls: {{ca: {tmp_path / 'ca.key'}}}", "source.tls.ca: .* is not a PEM certificate"),
        (f"tls: {{cert: {ca}, key: {ca}}}", "source.tls.cert: .* are not a PEM certificate"),
    ]:
        with pytest.raises(ConfigError, match=says):
            load_config_text(with_source(extra), "/")


def test_on_log_gone_is_fail_unless_resnapshot_is_asked_for() -> None:
    assert load_config_text(BASE, "/b").source.on_log_gone == "fail"
    text = BASE.replace("startup: earliest", "startup: earliest, on_log_gone: Resnapshot")
    assert load_config_text(text, "/b").source.on_log_gone == "resnapshot"
    err = error(BASE.replace("startup: earliest", "startup: earliest, on_log_gone: skip"))
    assert err.fields["key"] == "source.on_log_gone" and "resnapshot" in str(err)


def test_on_unmatched_is_fail_unless_warn_is_asked_for() -> None:
    assert load_config_text(BASE, "/b").source.on_unmatched == "fail"
    text = BASE.replace("startup: earliest", "startup: earliest, on_unmatched: Warn")
    assert load_config_text(text, "/b").source.on_unmatched == "warn"
    err = error(BASE.replace("startup: earliest", "startup: earliest, on_unmatched: ignore"))
    assert err.fields["key"] == "source.on_unmatched" and "fail, warn" in str(err)
