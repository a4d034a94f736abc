"""The Iceberg sink's catalog from the ``sink`` section: the embedded SQL catalog by default, a
catalog of one's own from ``sink.catalog``, the S3 options of ``sink.storage_options`` given to
pyiceberg, and the refusals that name the setting (no Spark, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import SinkConfig
from sparkcdc.config.secret import Secret
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.iceberg.catalog import open_catalog, properties
from sparkcdc.sinks.registry import check_sink, sink_type

BASE = "source: {host: h, user: u, tables: [x]}\npipeline: {checkpoint: /c}\n"


def test_the_catalog_mapping_becomes_the_sink_types_own_settings() -> None:
    text = BASE + ("sink: {type: iceberg, path: s3://b/lake, catalog: {type: rest, "
                   "uri: 'http://127.0.0.1:8181', token: t0k3n}}\n")  # fmt: skip
    sink = load_config_text(text, "/").sink
    assert sink.type == "iceberg"
    assert sink.settings == {
        "catalog.type": "rest", "catalog.uri": "http://127.0.0.1:8181", "catalog.token": "t0k3n"
    }  # fmt: skip
    assert "t0k3n" not in str(sink.redacted())
    with pytest.raises(ConfigError) as err:
        load_config_text(BASE + "sink: {path: /l, catalog: {type: rest}}\n", "/")
    assert err.value.fields["key"] == "sink.catalog"  # a Delta sink has no catalog


def test_a_folder_lake_gets_the_embedded_sql_catalog_in_it(tmp_path: Path) -> None:
    config = SinkConfig(path=str(tmp_path / "lake"), type="iceberg")
    found = properties(config)
    assert found == {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path / 'lake' / '_sparkcdc' / 'iceberg-catalog.db'}",
        "warehouse": f"file://{tmp_path / 'lake'}",
    }
    check_sink(config)  # creates the folder and the catalog's file
    assert (tmp_path / "lake" / "_sparkcdc" / "iceberg-catalog.db").is_file()
    assert open_catalog(config).list_namespaces() == []


def test_a_catalog_of_ones_own_and_the_s3_options() -> None:
    config = SinkConfig(
        path="s3://bucket/lake", type="iceberg",
        storage_options={"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "us-east-1",
                         "AWS_SECRET_ACCESS_KEY": Secret("s3cr3t")},
        settings={"catalog.uri": "http://127.0.0.1:8181", "catalog.warehouse": "wh"},
    )  # fmt: skip
    assert properties(config) == {
        "type": "rest", "uri": "http://127.0.0.1:8181", "warehouse": "wh",
        "s3.endpoint": "http://127.0.0.1:9", "s3.region": "us-east-1",
        "s3.secret-access-key": "s3cr3t",
    }  # fmt: skip
    sql = SinkConfig(path="s3://bucket/lake", type="iceberg",
                     settings={"catalog.uri": "sqlite:////tmp/c.db"})  # fmt: skip
    assert properties(sql)["type"] == "sql" and properties(sql)["warehouse"] == "s3://bucket/lake"


def test_an_object_storage_lake_without_a_catalog_is_refused_with_the_way_out() -> None:
    with pytest.raises(ConfigError, match="needs a catalog that is not a file in it") as err:
        properties(SinkConfig(path="s3://bucket/lake", type="iceberg"))
    assert err.value.fields["key"] == "sink.catalog"
    with pytest.raises(ConfigError, match="sink.catalog.uri is missing"):
        properties(SinkConfig(path="/l", type="iceberg", settings={"catalog.type": "rest"}))
    text = BASE + "sink: {type: iceberg, path: /l, catalog: rest}\n"
    with pytest.raises(ConfigError, match="give the catalog's properties as a mapping") as err:
        properties(load_config_text(text, "/").sink)
    assert err.value.fields["key"] == "sink.catalog"


def test_a_catalog_that_cannot_be_reached_names_the_setting_and_no_secret() -> None:
    config = SinkConfig(
        path="/tmp/unused", type="iceberg",
        settings={"catalog.uri": "http://127.0.0.1:9", "catalog.token": "t0k3n"},
    )  # fmt: skip
    with pytest.raises(ConfigError, match="sink.catalog: the Iceberg catalog at "
                       "http://127.0.0.1:9 cannot be used") as err:  # fmt: skip
        sink_type("iceberg").check(config)
    assert "t0k3n" not in str(err.value)


def test_a_catalog_refused_prints_no_password_from_its_uri(tmp_path: Path) -> None:
    """A SQL catalog whose database refuses the login, and one whose URI cannot be parsed: the
    sentence names sink.catalog and never the password."""
    login = "postgresql+psycopg2://cdc:pa55word@127.0.0.1"
    for uri in (f"{login}:9/catalog", f"{login}:no-port/catalog"):
        given = {"catalog.uri": uri, "catalog.credential": "cr3d"}
        config = SinkConfig(path=str(tmp_path / "lake"), type="iceberg", settings=given)
        with pytest.raises(ConfigError, match="sink.catalog: the Iceberg catalog") as err:
            sink_type("iceberg").check(config)
        assert "pa55word" not in str(err.value) and "cr3d" not in str(err.value)
        assert err.value.__cause__ is None  # nor in a chained traceback
