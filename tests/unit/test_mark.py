"""The sink's batch mark: the reads ahead of an incremental snapshot wait for it to move."""

from __future__ import annotations

import threading
from pathlib import Path

from sparkcdc.spark.incremental.batch_mark import BatchMark


def test_wait_past_returns_when_the_mark_moves(tmp_path: Path) -> None:
    mark = BatchMark(tmp_path / "batch.mark")
    stamp = mark.stamp()
    assert stamp == ""  # no mark yet
    timer = threading.Timer(0.1, mark.touch)
    timer.start()
    assert mark.wait_past(stamp, threading.Event(), limit=600.0)  # False at the limit
    assert mark.stamp() != stamp


def test_wait_past_gives_up_at_its_limit_or_when_stopped(tmp_path: Path) -> None:
    mark = BatchMark(tmp_path / "batch.mark")
    mark.touch()
    stamp = mark.stamp()
    assert not mark.wait_past(stamp, threading.Event(), limit=0.05)
    stop = threading.Event()
    stop.set()
    assert not mark.wait_past(stamp, stop, limit=10.0)


def test_every_touch_moves_the_mark(tmp_path: Path) -> None:
    mark = BatchMark(tmp_path / "deep" / "batch.mark")
    seen = set()
    for _ in range(3):
        mark.touch()
        seen.add(mark.stamp())
    assert len(seen) == 3
    again = BatchMark(tmp_path / "deep" / "batch.mark")  # a restarted sink
    again.touch()
    assert again.stamp() not in seen


def test_a_mark_that_cannot_be_written_fails_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    mark = BatchMark(blocker / "batch.mark")
    mark.touch()  # no error: the reads ahead just wait out their limit
    assert mark.stamp() == ""
