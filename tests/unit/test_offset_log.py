"""Spark's offset files read without Spark: the version line, the metadata line, one line per
source; what is wrong with a file that is not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.core.errors import SparkCDCError
from sparkcdc.spark.pipeline.offset_log import newest_batch, parse_offset_file, read_offset_file

METADATA = {
    "batchWatermarkMs": 0,
    "batchTimestampMs": 1714557600123,
    "conf": {"spark.sql.shuffle.partitions": "4"},
}
BINLOG = {"file": "mysql-bin.000003", "pos": 1234, "gtid": "0-1-42", "skip": 0}


def offset_text(*sources: str) -> str:
    """An offset file as Spark writes it (``json.dumps`` of Python's offsets has spaces)."""
    return "\n".join(["v1", json.dumps(METADATA, separators=(",", ":")), *sources])


def test_an_offset_file_gives_its_batch_time_and_source_offset() -> None:
    found = parse_offset_file(offset_text(json.dumps(BINLOG)), 7)
    assert found.batch == 7 and found.planned_ms == 1714557600123
    assert found.sources == (BINLOG,) and found.offset == BINLOG


def test_a_source_without_an_offset_is_a_dash_and_a_file_may_end_in_a_newline() -> None:
    found = parse_offset_file(offset_text("-", json.dumps({"lsn": "0/16B3748"})) + "\n", 0)
    assert found.sources == (None, {"lsn": "0/16B3748"}) and found.offset is None
    assert parse_offset_file(offset_text(), 0).offset is None  # no source line at all


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "it does not start with a version line"),
        ("v1", "it does not start with a version line and a metadata line"),
        ('{"file": "x"}\n{}', "it does not start with a version line"),
        ("vX\n{}", "its version line 'vX' is not v<number>"),
        ("v2\n{}\n{}", "it is of version 2, and only version 1 is known"),
        ("v1\nnot json\n{}", "its metadata line is not JSON"),
        ("v1\n{}\n[1, 2]", "its source offset line is not a JSON object"),
    ],
)
def test_what_is_wrong_with_a_file_that_is_no_offset_file(text: str, says: str) -> None:
    with pytest.raises(ValueError, match="^" + says.replace("(", r"\(")):
        parse_offset_file(text, 0)


def test_reading_names_the_file_and_the_newest_batch_skips_unfinished_files(
    tmp_path: Path,
) -> None:
    offsets = tmp_path / "offsets"
    assert newest_batch(offsets) is None  # no folder yet
    offsets.mkdir()
    for batch in (2, 9, 10):
        (offsets / str(batch)).write_text(offset_text(json.dumps({**BINLOG, "pos": batch})))
    (offsets / ".11.0b7c.tmp").write_text("v1\n")  # Spark's temporary file, not renamed yet
    newest = newest_batch(offsets)
    assert newest is not None and newest.name == "10"  # by number, not by name
    assert read_offset_file(newest).offset == {**BINLOG, "pos": 10}
    broken = offsets / "12"
    broken.write_text("v1\n")
    with pytest.raises(SparkCDCError, match=f"Spark's offset file {broken} cannot be read"):
        read_offset_file(broken)
