"""Micro-batches handed to the sink as Arrow files (no Spark, no database)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from sparkcdc.core.errors import ConfigError, SinkError
from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.store.batch_files import BatchFiles, expand
from tests.cases.envelopes import rows

F = "mysql-bin.000001"


def test_a_file_event_expands_to_the_batch_events_in_order(tmp_path: Path) -> None:
    files = BatchFiles(tmp_path / "log")
    events = [rows(0, 3), rows(3, 2)]
    ref = files.write(BinlogOffset(F, 200), events)
    assert ref.column("op").to_pylist() == ["f"]
    before, after = rows(10, 1), rows(20, 2)
    stream = pa.Table.from_batches([before, ref, after])
    got, images = expand(stream)
    assert images == []
    assert got.column("key").to_pylist() == (
        pa.Table.from_batches([before, *events, after]).column("key").to_pylist()
    )
    assert expand(pa.Table.from_batches([before]))[0].num_rows == 1  # no file event: as it was


def test_files_are_released_up_to_the_committed_end_only(tmp_path: Path) -> None:
    files = BatchFiles(tmp_path)
    for pos, skip in ((100, 0), (150, 7), (200, 0), (1000, 0)):
        files.write(BinlogOffset(F, pos, skip=skip), [rows(pos, 1)])
    assert files.release(BinlogOffset(F, 200)) == 3
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == 1 and BinlogOffset(F, 1000).position().replace(":", "-") in left[0]
    assert files.release(BinlogOffset(F, 200)) == 0


def test_a_missing_or_altered_file_is_a_sentence_not_a_silent_gap(tmp_path: Path) -> None:
    files = BatchFiles(tmp_path)
    ref = files.write(BinlogOffset(F, 200), [rows(0, 3)])
    path = next(tmp_path.iterdir())
    files.write(BinlogOffset(F, 200), [rows(0, 2)])  # the same end, other events
    with pytest.raises(SinkError, match="holds 2 log events where the stream announced 3"):
        expand(pa.Table.from_batches([ref]))
    path.unlink()
    with pytest.raises(SinkError, match="restart the pipeline"):
        expand(pa.Table.from_batches([ref]))


def test_an_unwritable_folder_is_named_with_its_option(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="option log_dir must name a folder"):
        BatchFiles(blocker / "log").write(BinlogOffset(F, 200), [rows(0, 1)])
