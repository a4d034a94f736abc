"""Spark's offset log, read without Spark: ``<checkpoint>/spark/offsets/<batch>``.

Spark writes one file per planned micro-batch before it runs (see :mod:`.checkpoint`)::

    v1
    {"batchWatermarkMs":0,"batchTimestampMs":1714557600123,"conf":{...}}
    {"file": "mysql-bin.000003", "pos": 1234, "gtid": "0-1-42", "skip": 0}

a version line, the batch's metadata, then one line per source of the query with the offset the
batch ends at (the source's own JSON), or ``-`` for a source with none yet. ``commits/<batch>``
is written once the sink returned; the newest number in each folder is the newest batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.core import errors
from sparkcdc.core.json_value import JSONObject
from sparkcdc.spark.pipeline.checkpoint import batch_files

VERSION_PREFIX = "v"


@dataclass(frozen=True)
class OffsetFile:
    """One planned micro-batch: its number, when Spark planned it and each source's end."""

    batch: int
    planned_ms: int | None  # the metadata's batchTimestampMs
    sources: tuple[JSONObject | None, ...]

    @property
    def offset(self) -> JSONObject | None:
        """The end offset of the first source (a sparkcdc query has one)."""
        return self.sources[0] if self.sources else None


def parse_offset_file(text: str, batch: int) -> OffsetFile:
    """The offset file of ``batch`` whose content is ``text``; ValueError says what is wrong."""
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].startswith(VERSION_PREFIX):
        raise ValueError("it does not start with a version line and a metadata line")
    try:
        version = int(lines[0][len(VERSION_PREFIX) :])
    except ValueError:
        raise ValueError(f"its version line {lines[0][:20]!r} is not v<number>") from None
    if version != 1:
        raise ValueError(f"it is of version {version}, and only version 1 is known")
    metadata = _json_object(lines[1], "metadata")
    stamp = metadata.get("batchTimestampMs")
    sources = tuple(
        None if line.strip() == "-" else _json_object(line, "source offset")
        for line in lines[2:]
        if line.strip()
    )
    return OffsetFile(batch, int(stamp) if isinstance(stamp, int) else None, sources)


def read_offset_file(path: Path) -> OffsetFile:
    """The offset file at ``path`` (named by its batch number)."""
    try:
        return parse_offset_file(path.read_text(encoding="utf-8"), int(path.name))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise errors.SparkCDCError(
            f"Spark's offset file {path} cannot be read ({exc}); the checkpoint was changed by "
            "hand or by another program, so restore it or start the pipeline anew together with "
            "its sink's tables."
        ) from None


def newest_batch(folder: Path) -> Path | None:
    """The batch file with the largest number in ``offsets`` or ``commits``; None if none."""
    found = batch_files(folder)
    return max(found, key=lambda p: int(p.name)) if found else None


def _json_object(line: str, what: str) -> JSONObject:
    try:
        value = json.loads(line)
    except ValueError:
        raise ValueError(f"its {what} line is not JSON: {line[:60]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"its {what} line is not a JSON object: {line[:60]!r}")
    return value
