"""``run_pipeline`` and the CLI around it: errors come back as their sentence (exit status 2),
SIGTERM lets the batch in flight commit, and the status file feeds the progress line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sparkcdc.config.model import Config, PipelineConfig, SinkConfig, SourceConfig, StoreConfig
from sparkcdc.core.errors import ConfigError, LogPositionGone
from sparkcdc.core.schema import TableSchema
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.sources.mysql.throwaway import free_port
from sparkcdc.spark.pipeline.checkpoint import clear_torn_first_offset, snapshot_ahead
from sparkcdc.spark.pipeline.progress import Progress
from sparkcdc.spark.pipeline.run import run_pipeline
from sparkcdc.spark.pipeline.session import SPARK_LOG_LEVEL, spark_log_level
from tests.cases.command import sparkcdc as cli
from tests.fakes.database import FakeLog

pytestmark = pytest.mark.spark

ITEMS = TableSchema("shop", "items", (column("id", "int"), column("v", "varchar")), ("id",))


def inserts(lo: int, hi: int) -> list[list[object]]:
    return [
        ["c", "shop", "items", json.dumps([i]), None, json.dumps({"id": i, "v": f"v{i}"})]
        for i in range(lo, hi)
    ]


def config(tmp: Path) -> Config:
    return Config(
        source=SourceConfig(
            str(tmp / "log.jsonl"), 0, "cdc", "", (r"shop\..*",), "earliest", "tests.fakes"
        ),
        sink=SinkConfig(str(tmp / "lake")),
        pipeline=PipelineConfig(
            checkpoint=str(tmp / "checkpoint"),
            trigger_seconds=0.2,
            store=StoreConfig(max_bytes=1 << 20),
            spark_master="local[2]",
        ),
    )


def test_a_log_reader_error_fails_the_run_with_its_sentence(tmp_path: Path) -> None:
    log = FakeLog(tmp_path / "log.jsonl", [ITEMS])
    log.commit(inserts(0, 10))
    sentence = (
        "binlog file mysql-bin.000001 was purged on the server; restart with startup: latest."
    )
    log.fail("LogPositionGone", sentence)
    log.commit(inserts(10, 20))
    seen: list[Progress] = []
    with pytest.raises(LogPositionGone) as caught:
        run_pipeline(config(tmp_path), progress=seen.append)
    # a position gone also names the oldest the server holds and the ways out
    assert str(caught.value).startswith(sentence.rstrip(".") + "; the oldest position")
    assert "source.on_log_gone: resnapshot" in str(caught.value)


def test_sigterm_lets_the_batch_in_flight_commit(tmp_path: Path) -> None:
    log = FakeLog(tmp_path / "log.jsonl", [ITEMS])
    log.commit(inserts(0, 50))
    script = textwrap.dedent(
        f"""
        import os, sys
        from sparkcdc.config.model import *
        from sparkcdc.spark.pipeline.run import run_pipeline
        cfg = Config(SourceConfig({str(tmp_path / "log.jsonl")!r}, 0, "cdc", "",
                                  ("shop\\\\..*",), "earliest", "tests.fakes"),
                     SinkConfig({str(tmp_path / "lake")!r}),
                     PipelineConfig({str(tmp_path / "checkpoint")!r}, 0.2, StoreConfig(),
                                    "local[2]"))
        n = run_pipeline(cfg)
        print("batches", n, flush=True)
        os._exit(0)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    replica = tmp_path / "lake" / "shop" / "items"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if (replica / "_delta_log").exists() and DeltaTable(str(replica)).count() == 50:
            break
        time.sleep(0.3)
    log.commit(inserts(50, 60))
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode()[-3000:]
    assert b"batches" in out
    count = DeltaTable(str(replica)).count()
    assert count in (50, 60)  # never a part of the second transaction
    status = json.loads((tmp_path / "checkpoint" / "sparkcdc" / "metrics.json").read_text())
    assert status["position"] is not None


def test_cli_reports_a_bad_file_by_its_key(tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text("source: {type: mysql, host: 127.0.0.1, user: cdc, tables: ['a\\\\..*']}\n")
    done = cli("check", str(cfg))
    assert done.returncode == 78  # a configuration error
    assert done.stderr.startswith("sparkcdc: ") and "sink" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_run_fails_before_spark_when_the_server_is_unreachable(tmp_path: Path) -> None:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {free_port()}, user: cdc, password: x, "
        f"tables: ['a\\\\..*'], connect_timeout: 2}}\n"
        f"sink: {{type: delta, path: {tmp_path / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {tmp_path / 'cp'}}}\n"
    )
    done = cli("run", str(cfg), "--quiet", java=False)  # no Spark could start
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("sparkcdc: ") and "Traceback" not in done.stderr
    assert not (tmp_path / "cp" / "spark").exists()


def test_a_wrong_spark_log_level_is_named_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SPARK_LOG_LEVEL, "loud")
    with pytest.raises(ConfigError, match="SPARKCDC_SPARK_LOG_LEVEL='loud' is not a log level"):
        run_pipeline(config(tmp_path))
    assert not (tmp_path / "checkpoint").exists()
    monkeypatch.setenv(SPARK_LOG_LEVEL, " warn")
    assert spark_log_level() == "WARN"
    monkeypatch.delenv(SPARK_LOG_LEVEL)
    assert spark_log_level() is None


def test_workers_are_warmed_only_for_a_snapshot_still_ahead(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets"
    assert snapshot_ahead(tmp_path)  # a new query
    offsets.mkdir()
    (offsets / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"snapshot": {"batch": 1}}\n')
    assert snapshot_ahead(tmp_path)
    (offsets / "12").write_text('v1\n{"batchWatermarkMs":0}\n{"file": "b.000001", "pos": 4}\n')
    (offsets / "9").write_text('v1\n{"batchWatermarkMs":0}\n{"snapshot": {"batch": 9}}\n')
    assert not snapshot_ahead(tmp_path)  # the newest offset is in the log phase


def test_a_first_offset_torn_by_kill_9_does_not_block_the_restart(tmp_path: Path) -> None:
    # kill -9 while Spark writes its first offset leaves the temporary file behind; Spark then
    # refuses to start a new query in an offsets folder that is not empty
    log = FakeLog(tmp_path / "log.jsonl", [ITEMS])
    log.commit(inserts(0, 10))
    offsets = tmp_path / "checkpoint" / "spark" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.3f1c9a2e-51b4-4c3e-9d7a-1f0e8b2c4d6a.tmp").write_text("v1\n")
    (offsets / "..0.3f1c9a2e-51b4-4c3e-9d7a-1f0e8b2c4d6a.tmp.crc").write_bytes(b"crc")
    run_pipeline(config(tmp_path), available_now=True)
    assert DeltaTable(str(tmp_path / "lake" / "shop" / "items")).count() == 10
    assert (offsets / "0").exists()


def test_a_committed_offset_is_never_cleared(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    (offsets / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"file": "b.000001", "pos": 4}\n')
    (offsets / ".1.tmp").write_text("v1\n")
    assert clear_torn_first_offset(tmp_path) == []
    assert sorted(p.name for p in offsets.iterdir()) == [".1.tmp", "0"]
