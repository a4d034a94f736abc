"""What the pipeline reads from, and repairs in, Spark's checkpoint before a query starts.

Spark keeps a streaming query's progress in ``<checkpoint>/spark``: ``metadata`` (the query id),
``offsets/<batch>`` (the offset planned for each micro-batch, written before the batch runs) and
``commits/<batch>`` (written after the sink returned). Each file is written to a hidden
temporary file first and then renamed, so a ``kill -9`` alone leaves a temporary file; a crash
of the machine can still leave a batch file cut short (:mod:`.torn`).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from sparkcdc.core import errors
from sparkcdc.spark.offsets import source_position

log = logging.getLogger("sparkcdc.pipeline")


def resumes(checkpoint: str | Path) -> bool:
    """Whether the pipeline checkpointed at ``checkpoint`` resumes (Spark's checkpoint holds
    offsets) rather than starts: only a start resolves ``source.startup``."""
    offsets = Path(checkpoint) / "spark" / "offsets"
    return offsets.is_dir() and any(offsets.iterdir())


def batch_files(folder: Path) -> list[Path]:
    """The finished batch files of ``offsets`` or ``commits``: the names made only of digits."""
    return [p for p in folder.glob("*") if p.name.isdigit()] if folder.is_dir() else []


def clear_torn_first_offset(spark_checkpoint: Path) -> list[Path]:
    """Remove what a ``kill -9`` left while Spark wrote the very first offset; returns it.

    With no finished offset file, Spark starts the query at batch 0 and refuses to when
    ``offsets`` or ``commits`` holds anything at all, a temporary file included
    (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``). No batch was planned, so nothing was
    delivered and nothing is lost: the leftovers are removed and the query plans batch 0 again.
    Once any offset file exists this does nothing."""
    offsets = spark_checkpoint / "offsets"
    if batch_files(offsets):
        return []
    torn = [
        p
        for folder in (offsets, spark_checkpoint / "commits")
        if folder.is_dir()
        for p in folder.iterdir()
        if p.is_file()
    ]
    for path in torn:
        path.unlink()
    if torn:
        log.info(
            "the first micro-batch was never planned (the last run stopped while Spark wrote "
            "its offset); removed %d unfinished checkpoint file(s) and starting it again",
            len(torn),
        )
    return torn


def uncommitted_batch(spark_checkpoint: Path) -> int | None:
    """The micro-batch Spark planned and did not commit (a run stopped inside it, which the
    next run writes again), else None."""
    planned = [int(p.name) for p in batch_files(spark_checkpoint / "offsets")]
    committed = [int(p.name) for p in batch_files(spark_checkpoint / "commits")]
    if planned and max(planned) > max(committed, default=-1):
        return max(planned)
    return None


def snapshot_ahead(spark_checkpoint: Path) -> bool:
    """Whether the query starts in its snapshot phase: no offset yet, or the newest is a
    snapshot offset (a restart in the log phase has no snapshot task to warm up for)."""
    found = batch_files(spark_checkpoint / "offsets")
    if not found:
        return True
    newest = max(found, key=lambda p: int(p.name))
    try:
        offset = json.loads(newest.read_text().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return True  # unreadable here: Spark will say so; warming up costs nothing then
    if not isinstance(offset, dict):
        return True
    try:
        return source_position(offset) is None
    except errors.SparkCDCError:
        return True  # not an offset sparkcdc reads: the source says so once it starts


def pipeline_id(spark_checkpoint: Path) -> str:
    """The Delta transaction app id: ``sparkcdc-<Spark query id>`` (stable per checkpoint)."""
    metadata = spark_checkpoint / "metadata"
    for _ in range(100):
        try:
            first = metadata.read_text().splitlines()[0]
            return f"sparkcdc-{json.loads(first)['id']}"
        except (OSError, IndexError, ValueError, KeyError):
            time.sleep(0.1)
    raise errors.SinkError(
        f"Spark's checkpoint {spark_checkpoint} has no query id; remove the checkpoint folder "
        "only together with the sink's tables."
    )
