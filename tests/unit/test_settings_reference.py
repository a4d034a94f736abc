"""The common source settings are declared once (``config/settings.py``): the README's
configuration reference and docs/spark.md's option table name exactly the settings, and every
setting travels from the pipeline file through the Spark options and back unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.settings import REQUIRED, SOURCE_SETTINGS, option_names, value_of
from sparkcdc.sources.registry import BUILT_IN, source_type
from sparkcdc.spark.stream.options import OTHER_OPTIONS, SourceOptions, source_options

ROOT = Path(__file__).resolve().parents[2]


def first_table(text: str, heading: str) -> list[list[str]]:
    section = text[text.index(heading) :]
    start = 0 if heading.startswith("|") else section.index("\n|") + 1
    block = section[start:].split("\n\n", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def own_keys() -> set[str]:
    return {key for name in BUILT_IN for key in source_type(name).settings.KEYS}


def test_the_readme_reference_names_every_source_setting_and_its_default() -> None:
    rows = first_table((ROOT / "README.md").read_text(), "## Configuration reference")
    cells = {key: row[1] for row in rows for key in re.findall(r"`(source\.[a-z_.]+)`", row[0])}
    documented = {key.removeprefix("source.") for key in cells}
    model = {".".join(s.key.split(".")[:2]) for s in SOURCE_SETTINGS}
    assert documented == model | own_keys() | {"type", "password"}
    for setting in SOURCE_SETTINGS:
        if setting.default is REQUIRED or setting.shown in ("—", "the type's"):
            continue
        cell = cells["source." + ".".join(setting.key.split(".")[:2])].replace("`", "")
        assert setting.shown in cell, (setting.key, setting.shown, cell)


def documented_options() -> set[str]:
    rows = first_table((ROOT / "docs" / "spark.md").read_text(), "| option | meaning |")
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row[0])}


def test_the_spark_options_table_names_every_option() -> None:
    assert documented_options() == set(option_names()) | own_keys() | set(OTHER_OPTIONS)


@pytest.mark.parametrize("kind", sorted(BUILT_IN))
def test_every_setting_reaches_the_spark_source_unchanged(kind: str, tmp_path: Path) -> None:
    cfg = load_config_text(
        f"source: {{type: {kind}, host: h, user: u, tables: ['a\\.b', 'c\\..*'], port: 7,\n"
        "  startup: latest, key_columns: {a.b: [x, y]}, connect_timeout: 3s,\n"
        "  reconnect_timeout: 45s,\n"
        "  signal_table: a.signals, tls: disabled, heartbeat: {interval: 2s, action_query: X},\n"
        "  snapshot: {chunk_size: 9, parallelism: 3, chunk_key_columns: {a.b: [z]},\n"
        "    distribution_factor: {lower: 0.5, upper: 9}, batch_rows: 11,\n"
        "    incremental_chunks: 4, incremental_window: 1s},\n"
        "  tables_exclude: ['a\\.x'], columns: {exclude: ['a\\.b\\.s'], include: ['.*']},\n"
        "  skip_operations: [d], shadow_tables: capture,\n"
        "  masks: [{columns: ['a\\.b\\.e'], hash: md5, salt: pep},\n"
        "    {columns: ['a\\.b\\.n'], mask: 3}, {columns: ['a\\.b\\.m'], truncate: 2}]}\n"
        f"sink: {{path: {tmp_path / 'lake'}}}\npipeline: {{checkpoint: {tmp_path / 'cp'}}}\n",
        str(tmp_path),
    )
    paths = ("status_file", "snapshot_dir", "signal_dir", "batch_mark", "log_dir", "stop_file",
             "start_file")  # fmt: skip
    options = source_options(cfg.source, "history", max_bytes=1, max_items=1,
                             batch_mode="MEMSIZE", item_rows=1, sink_type="delta",
                             **{path: str(tmp_path / path) for path in paths})  # fmt: skip
    assert set(options) <= documented_options(), set(options) - documented_options()
    back = SourceOptions.parse(options, kind).source
    for setting in SOURCE_SETTINGS:
        if setting.options:
            want = value_of(cfg.source, setting.field)
            assert value_of(back, setting.field) == want, setting.key
            assert want != setting.default, f"{setting.key} not set"
