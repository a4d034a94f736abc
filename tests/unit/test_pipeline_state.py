"""``sparkcdc status`` without Spark: the run lock tells running from stopped (a ``kill -9``'d
holder leaves its file but not its lock), and a checkpoint's files give the committed batch, the
batch planned after it, and the source process's figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.cli.status import describe_state
from sparkcdc.core.errors import SparkCDCError
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.spark.pipeline.run_lock import RUN_LOCK, hold_run_lock, running_holder
from sparkcdc.spark.pipeline.state import NEVER_RUN, RUNNING, STOPPED, read_pipeline_state

HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from sparkcdc.spark.pipeline.run_lock import hold_run_lock\n"
    "with hold_run_lock(Path(sys.argv[1])):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(120)\n"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the run lock of ``tmp_path/cp``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "cp" / "sparkcdc")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_a_held_lock_reads_as_running_and_refuses_a_second_run(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    own = tmp_path / "cp" / "sparkcdc"
    found = running_holder(own)
    assert found is not None and found.pid == holder.pid and found.started
    with pytest.raises(SparkCDCError) as refused, hold_run_lock(own, wait=0.2):
        pass
    assert str(refused.value) == (
        f"The pipeline with checkpoint {tmp_path / 'cp'} is already running as process "
        f"{holder.pid}, started {found.started}; stop it first, or give this pipeline a "
        "pipeline.checkpoint of its own."
    )
    state = read_pipeline_state(tmp_path / "cp", BinlogOffset)
    assert (state.state, state.pid) == (RUNNING, holder.pid)


def test_a_killed_holder_leaves_its_file_but_not_its_lock(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    own = tmp_path / "cp" / "sparkcdc"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert json.loads((own / RUN_LOCK).read_text())["pid"] == holder.pid  # the file stays
    assert running_holder(own) is None
    assert read_pipeline_state(tmp_path / "cp", BinlogOffset).state == NEVER_RUN  # no batch
    with hold_run_lock(own) as lock:  # the next run starts
        assert running_holder(own) == lock.holder and lock.holder.pid == os.getpid()
    assert running_holder(own) is None


def write_batch(spark: Path, batch: int, offset: dict[str, object], committed: bool) -> None:
    for folder in ("offsets", "commits"):
        (spark / folder).mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1714557600000, "conf": {}})
    (spark / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{json.dumps(offset)}")
    if committed:
        (spark / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_a_stopped_pipeline_shows_its_batches_and_the_source_figures(tmp_path: Path) -> None:
    checkpoint = tmp_path / "cp"
    assert read_pipeline_state(checkpoint, BinlogOffset).exists is False
    spark = checkpoint / "spark"
    split = {"table": "shop.b", "index": 0, "lo": None, "hi": [1000]}
    snapshot = {"tables": ["shop.a", "shop.b"], "current": 1, "batch": 3, "groups": [[split]]}
    write_batch(spark, 0, {"snapshot": snapshot}, committed=True)
    log_offset = {"file": "mysql-bin.000002", "pos": 4, "gtid": "0-1-9", "skip": 0}
    incremental = {"v": 1, "known": ["shop.a"]}  # rides along; left out of what is shown
    write_batch(spark, 1, {**log_offset, "incremental": incremental}, committed=True)
    write_batch(spark, 2, {"file": "mysql-bin.000002", "pos": 900, "gtid": "0-1-12"}, False)
    os.utime(spark / "commits" / "1", (1714557605.25, 1714557605.25))
    (checkpoint / "sparkcdc").mkdir()
    (checkpoint / "sparkcdc" / "metrics.json").write_text(json.dumps({
        "position": "mysql-bin.000002:900 gtid 0-1-12", "caught_up": False,
        "committed_ts_ms": 1714557600000, "updated_ms": 1714557602500,
        "snapshot": {"shop.a": {"splits_done": 4, "splits_total": 4, "rows": 4000, "done": True}},
        "incremental": {"table": "shop.b", "rows": 250, "estimate": 1000, "queued": [],
                        "paused": False},
    }))  # fmt: skip
    state = read_pipeline_state(checkpoint, BinlogOffset)
    assert (state.state, state.pid) == (STOPPED, None)
    assert state.committed is not None and state.committed.batch == 1
    assert state.committed.at == "2024-05-01T10:00:05.250Z"  # the commit file's time
    assert state.committed.position == "mysql-bin.000002:4 gtid 0-1-9"
    assert state.committed.offset == log_offset
    assert state.planned is not None and state.planned.batch == 2
    assert state.planned.position == "mysql-bin.000002:900 gtid 0-1-12"
    assert state.source is not None and state.source.lag_s == 2.5
    lines = dict(describe_state(state))
    assert lines["state"] == "stopped" and lines["committed"].startswith("batch 1 at 2024-05-01T")
    assert lines["planned"].endswith("not committed: the next run writes it again")
    assert lines["lag"] == "2.5s (newest committed change from 2024-05-01T10:00:00.000Z)"
    assert lines["snapshot"] == "shop.a  4/4 chunks · 4,000 rows · done"
    assert lines["incremental"] == "shop.b ~25% · 250 of ~1,000 rows"
    (spark / "commits" / "1").unlink()
    (spark / "commits" / "0").unlink()
    (spark / "offsets" / "2").unlink()
    (spark / "offsets" / "1").unlink()
    planned = read_pipeline_state(checkpoint, BinlogOffset).planned
    assert planned is not None
    assert planned.position == "initial snapshot of 2 tables, at shop.b"
    assert planned.offset == {
        "snapshot": {"tables": ["shop.a", "shop.b"], "current": 1, "batch": 3}
    }


def test_a_resnapshot_under_way_is_shown(tmp_path: Path) -> None:
    own = tmp_path / "sparkcdc"
    own.mkdir()
    assert read_pipeline_state(tmp_path, BinlogOffset).resnapshot_since is None
    (own / "resnapshot.json").write_text(json.dumps({"since": "0000000003:0000000004"}))
    state = read_pipeline_state(tmp_path, BinlogOffset)
    assert state.resnapshot_since == "0000000003:0000000004"
    assert ("resnapshot", "the log position was gone: tables read again since "
            "0000000003:0000000004") in describe_state(state)  # fmt: skip


def test_a_run_names_its_spark_ui_in_its_lock_and_status_shows_it(tmp_path: Path) -> None:
    own = tmp_path / "cp" / "sparkcdc"
    with hold_run_lock(own) as lock:  # the session still starts: no address yet
        state = read_pipeline_state(tmp_path / "cp", BinlogOffset)
        assert (state.state, state.spark_ui) == (RUNNING, None)
        assert "spark ui" not in dict(describe_state(state))
        lock.record_spark_ui("http://host-1:4041")
        assert json.loads((own / RUN_LOCK).read_text())["spark_ui"] == "http://host-1:4041"
        state = read_pipeline_state(tmp_path / "cp", BinlogOffset)
        assert state.spark_ui == "http://host-1:4041" and state.pid == os.getpid()
        lines = describe_state(state)
        assert lines[:2] == [("state", lines[0][1]), ("spark ui", "http://host-1:4041")]
        assert lines[0][1].startswith(f"running (process {os.getpid()}, started ")
        lock.record_spark_ui(None)  # pipeline.spark.ui: false
        assert "spark_ui" not in json.loads((own / RUN_LOCK).read_text())
        assert read_pipeline_state(tmp_path / "cp", BinlogOffset).spark_ui is None
    with hold_run_lock(own) as lock:  # a later run: the earlier run's address is gone
        assert running_holder(own) == lock.holder and lock.holder.spark_ui is None
    state = read_pipeline_state(tmp_path / "cp", BinlogOffset)  # stopped: no address shown
    assert state.spark_ui is None and "spark ui" not in dict(describe_state(state))
