"""Pipeline YAML: values, environment references, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.config.load import load_config, load_config_text
from sparkcdc.core.errors import ConfigError

BASE = """
source: {type: mysql, host: db.local, port: 3307, user: cdc, password: secret,
         tables: ["shop\\\\..*", 'crm\\.users'], startup: earliest}
sink: {type: delta, path: ./lake}
pipeline: {checkpoint: ./checkpoints/shop, trigger: 1s, store: {max_bytes: 64MB}}
"""


def error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, "/base")
    return err.value


def test_readme_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PASSWORD", "0123")
    cfg_file = tmp_path / "pipeline.yaml"
    cfg_file.write_text(
        "source: {type: mysql, host: 127.0.0.1, port: 3306, user: cdc, "
        'password: ${MYSQL_PASSWORD},\n         tables: ["shop\\\\..*"], startup: earliest}\n'
        "sink:   {type: delta, path: ./lake}\n"
        "pipeline: {checkpoint: ./checkpoints/shop, trigger: 1s, store: {max_bytes: 64MB}}\n"
    )
    cfg = load_config(cfg_file)
    assert cfg.source.password == "0123"
    assert cfg.source.tables == ("shop\\..*",)
    assert cfg.source.port == 3306 and cfg.source.server_id == 5701
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
    assert (s.type, s.port, s.password, s.server_id) == ("mysql", 3306, "", 99)
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
        "earliest",
        "latest",
        "gtid:0-1-5",
        "position:mysql-bin.000003:1234",
        "timestamp:1767225600000",
    ],
)
def test_valid_startup(startup: str) -> None:
    cfg = load_config_text(BASE.replace("startup: earliest", f"startup: '{startup}'"), "/b")
    assert cfg.source.startup == startup


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
    assert cfg.source.password == "${x}"
    err = error(BASE.replace("password: secret", "password: ${NOPE}"))
    assert err.fields["key"] == "source.password" and "NOPE" in str(err)


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
        ("type: mysql", "type: postgres", "source.type", "mysql"),
        ("type: delta", "type: iceberg", "sink.type", "delta"),
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


def test_key_columns_shape() -> None:
    bad = BASE.replace("startup: earliest", "startup: earliest, key_columns: {logtable: [a]}")
    assert error(bad).fields["key"] == "source.key_columns.logtable"
    bad = BASE.replace("startup: earliest", "startup: earliest, key_columns: [a]")
    assert error(bad).fields["key"] == "source.key_columns"


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read"):
        load_config(tmp_path / "missing.yaml")
