"""The status file: what the source process writes is what every reader gets back, and a file
of an older version (keys missing) or with a value of the wrong type still reads."""

from __future__ import annotations

import json
from pathlib import Path

from sparkcdc.spark.stream.status import KEY_TYPES, Status, read_status, write_status

WRITTEN: Status = {
    "position": "mysql-bin.000001:4:0",
    "events": 9,
    "rows": 3,
    "connected": True,
    "reconnects": 0,
    "heartbeats": 2,
    "last_event_ts_ms": 1_700_000_000_000,
    "last_row_read_ms": None,
    "committed_offset": None,
    "committed_ts_ms": None,
    "committed_rows": 0,
    "caught_up": False,
    "store_pending_bytes": 10,
    "store_used_bytes": 20,
    "store_peak_bytes": 30,
    "peak_rss_bytes": 40,
    "snapshot": {
        "shop.users": {
            "splits_done": 1,
            "splits_total": 2,
            "rows": 5,
            "rows_per_s": 2.5,
            "eta_s": 1.0,
            "done": False,
        }
    },
    "snapshot_running": True,
    "incremental": {
        "table": "shop.orders",
        "rows": 7,
        "estimate": 100,
        "queued": ["shop.items"],
        "paused": False,
        "reason": None,
        "reasons": {},
    },
    "error": {"type": "SourceError", "message": "the connection broke"},
}


def test_a_written_status_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_status(path, WRITTEN)
    found = read_status(path)
    assert found is not None
    updated = found.pop("updated_ms")
    assert isinstance(updated, int) and updated > 0
    assert found == WRITTEN


def test_an_older_file_reads_with_its_keys_missing(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"position": "mysql-bin.000001:4:0", "events": 9}))
    assert read_status(path) == {"position": "mysql-bin.000001:4:0", "events": 9}


def test_unknown_keys_and_values_of_another_type_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"events": "9", "rows": True, "connected": 1, "later": 1,
                                "caught_up": True, "committed_ts_ms": None}))  # fmt: skip
    assert read_status(path) == {"caught_up": True, "committed_ts_ms": None}


def test_no_file_or_not_an_object_reads_as_none(tmp_path: Path) -> None:
    assert read_status(tmp_path / "missing.json") is None
    (tmp_path / "list.json").write_text("[1]")
    assert read_status(tmp_path / "list.json") is None
    (tmp_path / "half.json").write_text('{"events": ')
    assert read_status(tmp_path / "half.json") is None


def test_the_reader_knows_every_key_of_the_status() -> None:
    assert set(KEY_TYPES) == Status.__optional_keys__ == set(WRITTEN) | {"updated_ms"}
