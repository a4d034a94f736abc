"""The sink registry and the envelope's side channels every sink reads (no Spark, no Delta
table written)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import SinkConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.batch_events import chunk_table, is_truncate
from sparkcdc.sinks.delta import SINK_TYPE as DELTA
from sparkcdc.sinks.port import SinkContext
from sparkcdc.sinks.registry import BUILT_IN, check_sink, chunk_writer, open_sink, sink_type
from sparkcdc.spark.stream.options import SourceOptions, source_options
from tests.e2e.cli import in_process
from tests.fakes.sink import MemorySink

BASE = "source: {host: h, user: u, tables: [x]}\npipeline: {checkpoint: /c}\n"


def test_every_built_in_sink_type_is_found_by_its_name() -> None:
    for name in BUILT_IN:
        assert sink_type(name).name == name
    assert sink_type(" Delta ") is DELTA
    assert chunk_writer("delta") is DELTA.chunk_writer


def test_an_unknown_sink_type_names_the_key_and_the_known_types() -> None:
    with pytest.raises(ConfigError, match=r"sink.type: 'hudi' is not a supported sink; use "
                       r"one of delta, iceberg or a module of your own") as err:  # fmt: skip
        sink_type("hudi")
    assert err.value.fields["key"] == "sink.type"


def test_a_module_of_ones_own_is_a_sink_type(tmp_path: Path) -> None:
    config = load_config_text(BASE + f"sink: {{type: tests.fakes.sink, path: {tmp_path}}}\n", "/")
    assert config.sink.type == "tests.fakes.sink"
    check_sink(config.sink)
    assert isinstance(open_sink(config.sink, SinkContext(lambda: "p")), MemorySink)
    assert chunk_writer(config.sink.type) is None


def test_compact_refuses_a_sink_that_keeps_no_upkeep(tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(BASE.replace("/c", str(tmp_path / "cp"))
                   + f"sink: {{type: tests.fakes.sink, path: {tmp_path}}}\n")  # fmt: skip
    code, _, err = in_process("compact", str(cfg))
    assert code == 78, err
    assert "sink.type: the sink tests.fakes.sink keeps no upkeep, so sparkcdc compact" in err
    assert sink_type("delta").keeper is not None and sink_type("iceberg").keeper is not None


def test_a_resnapshot_is_refused_for_a_sink_other_than_delta(tmp_path: Path) -> None:
    text = BASE.replace("tables: [x]", "tables: [x], on_log_gone: resnapshot")
    with pytest.raises(
        ConfigError, match="replicas, which the sink tests.fakes.sink cannot do"
    ) as err:
        load_config_text(text + f"sink: {{type: tests.fakes.sink, path: {tmp_path}}}\n", "/")
    assert err.value.fields["key"] == "source.on_log_gone"
    assert load_config_text(text + "sink: {path: /l}\n", "/").source.on_log_gone == "resnapshot"


def test_a_sink_types_own_keys_are_allowed_for_it_only(tmp_path: Path) -> None:
    own = BASE + f"sink: {{type: tests.fakes.sink, path: {tmp_path}, label: 7}}\n"
    assert load_config_text(own, "/").sink.settings == {"label": "7"}
    with pytest.raises(ConfigError, match="allowed keys are type, path, maintenance, "
                       r"storage_options, snapshot_in_changelog, history, "
                       r"change_data_feed\.$") as err:  # fmt: skip
        load_config_text(BASE + "sink: {path: /l, label: 7}\n", "/")
    assert err.value.fields["key"] == "sink.label"
    assert load_config_text(BASE + "sink: {path: /l}\n", "/").sink.settings == {}


def test_the_delta_check_of_a_folder_needs_no_storage(tmp_path: Path) -> None:
    check_sink(SinkConfig(path=str(tmp_path / "lake")))  # a folder's errors come on writing


def test_the_sink_type_reaches_the_snapshot_tasks_options() -> None:
    source = load_config_text(BASE + "sink: {path: /l}\n", "/").source

    def parsed(**sink: str) -> SourceOptions:
        opts = source_options(source, "/h", max_bytes=1, max_items=1, batch_mode="MEMSIZE",
                              item_rows=1, **sink)  # fmt: skip
        return SourceOptions.parse(opts)

    assert parsed(sink_type="tests.fakes.sink").sink_type == "tests.fakes.sink"
    assert parsed().sink_type == "delta"


@pytest.mark.parametrize(
    ("row", "truncates"),
    [
        ({"schema_id": "s1", "after": json.dumps({"kind": "truncate"})}, True),
        ({"schema_id": "s1", "after": json.dumps({"kind": "alter"}), "ddl": "TRUNCATE t"}, False),
        ({"schema_id": "s1", "after": None, "ddl": "  truncate table t"}, True),
        ({"schema_id": "s1", "after": None, "ddl": "ALTER TABLE t ADD c INT"}, False),
        ({"schema_id": "", "after": json.dumps({"kind": "truncate"})}, False),  # never announced
    ],
)
def test_a_truncate_is_told_by_its_kind_else_its_statement(
    row: dict[str, object], truncates: bool
) -> None:
    assert is_truncate(row) is truncates


def test_a_chunk_file_missing_or_short_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chunk.arrow"
    rows = pa.table({"key": ["[1]", "[2]"], "id": [1, 2]})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
        writer.write_table(rows)
    assert chunk_table(json.dumps({"path": str(path), "rows": 2})).to_pylist() == [
        {"id": 1}, {"id": 2}
    ]  # fmt: skip
    with pytest.raises(ValueError, match="holds 2 rows, its event says 3"):
        chunk_table(json.dumps({"path": str(path), "rows": 3}))
    with pytest.raises(OSError, match="must stay readable by the sink"):
        chunk_table(json.dumps({"path": str(tmp_path / "gone.arrow"), "rows": 2}))


def test_leaving_the_snapshot_out_of_the_change_log_is_a_sink_setting_the_tasks_get() -> None:
    def loaded(sink: str) -> SinkConfig:
        return load_config_text(BASE + f"sink: {{path: /l{sink}}}\n", "/").sink

    assert loaded("").snapshot_in_changelog is True
    assert loaded(", snapshot_in_changelog: false").snapshot_in_changelog is False
    with pytest.raises(ConfigError, match="sink.snapshot_in_changelog") as err:
        loaded(", snapshot_in_changelog: sometimes")
    assert err.value.fields["key"] == "sink.snapshot_in_changelog"
    source = load_config_text(BASE + "sink: {path: /l}\n", "/").source
    for kept in (True, False):
        opts = source_options(source, "/h", max_bytes=1, max_items=1, batch_mode="MEMSIZE",
                              item_rows=1, snapshot_in_changelog=kept)  # fmt: skip
        assert SourceOptions.parse(opts).snapshot_in_changelog is kept
    with pytest.raises(ConfigError, match="snapshot_in_changelog") as err:
        SourceOptions.parse({**opts, "snapshot_in_changelog": "maybe"})
    assert err.value.fields["key"] == "snapshot_in_changelog"


def test_a_resnapshot_is_refused_with_the_snapshot_out_of_the_change_log() -> None:
    """A re-snapshot finds the keys deleted meanwhile by its rows in the change log: without
    them it would take every key for gone."""
    text = BASE.replace("tables: [x]", "tables: [x], on_log_gone: resnapshot")
    with pytest.raises(ConfigError, match="sink.snapshot_in_changelog is false") as err:
        load_config_text(text + "sink: {path: /l, snapshot_in_changelog: false}\n", "/")
    assert err.value.fields["key"] == "source.on_log_gone"
    assert load_config_text(text + "sink: {path: /l}\n", "/").source.on_log_gone == "resnapshot"
