"""Torn files of Spark's checkpoint, found and repaired (or refused) before a query starts.

Spark writes ``offsets/N`` and ``commits/N`` through a temporary file and a rename, without
syncing either: after a ``kill -9`` followed by a machine crash (or a file system that reorders
writes) the newest file can be cut short. Spark then stops on Jackson's "Unexpected
end-of-input", and deleting the file by hand can make it worse (a batch committed twice:
``CONCURRENT_STREAM_LOG_UPDATE``). Only the newest file of each folder is looked at, and::

    torn commits/N, offsets/N whole     the sink returned before Spark began commits/N: remove
                                        it; Spark runs batch N again from offsets/N with the
                                        same ends, and the sinks skip what they hold
    torn offsets/N, no commits/N        no table of the sink holds batch N: remove it, Spark
                                        plans batch N again from offsets/N-1; a table holds
                                        it: refuse (a new plan of N could end elsewhere, and
                                        the sink would skip the rows it holds not)
    torn offsets/N, commits/N present   refuse: batch N's end is known nowhere else
    any other file unreadable           refuse, naming it

A refusal is one sentence naming the file and the way out. Nothing here guesses an offset.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from sparkcdc.core import errors
from sparkcdc.spark.pipeline.offset_log import newest_batch, parse_offset_file

log = logging.getLogger("sparkcdc.pipeline")

BatchHolders = Callable[[str, int], list[str]]
"""The sink's tables that hold batch ``batch_id`` of pipeline ``app`` (:func:`repair_torn`)."""

WAY_OUT = (
    "restore the file from a backup, or start the pipeline anew (a new checkpoint and sink path, "
    "which snapshots the tables again)"
)


def commit_problem(text: str) -> str | None:
    """What is wrong with the content of a ``commits/N`` file (None: nothing)."""
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].startswith("v") or not lines[0][1:].isdigit():
        return "it does not hold a version line and a metadata line"
    try:
        value = json.loads(lines[1])
    except ValueError:
        return "its metadata line is not JSON"
    return None if isinstance(value, dict) else "its metadata line is not a JSON object"


def offset_problem(text: str, batch: int) -> str | None:
    """What is wrong with the content of an ``offsets/N`` file (None: nothing)."""
    try:
        found = parse_offset_file(text, batch)
    except ValueError as exc:
        return str(exc)
    return None if found.sources else "it names no source offset"


def repair_torn(spark_checkpoint: Path, holders: BatchHolders | None) -> list[Path]:
    """Remove the newest ``offsets``/``commits`` file when it is torn and safe to remove (module
    docstring); the files removed. Raises :class:`~sparkcdc.core.errors.CheckpointTorn`."""
    offsets = newest_batch(spark_checkpoint / "offsets")
    commits = newest_batch(spark_checkpoint / "commits")
    offset_torn = offsets is not None and _problem(offsets, offset_problem) is not None
    commit_torn = commits is not None and _problem(commits, commit_problem) is not None
    if offsets is not None and offset_torn:
        batch = int(offsets.name)
        if commits is not None and int(commits.name) >= batch:
            raise _refusal(offsets, "its batch was committed and its end is kept nowhere else")
        if holders is None:
            raise _refusal(offsets, "the sink cannot tell whether it holds the batch")
        held = holders(_query_id(spark_checkpoint), batch)
        if held:
            raise _refusal(offsets, f"the sink's table {held[0]} holds its batch {batch}")
        removed = _remove(offsets, f"batch {batch} was planned, and no table of the sink holds it")
        return removed + (_repair_commit(commits, spark_checkpoint) if commit_torn else [])
    if commits is not None and commit_torn:
        return _repair_commit(commits, spark_checkpoint)
    return []


def _repair_commit(commits: Path | None, spark_checkpoint: Path) -> list[Path]:
    """Remove a torn ``commits/N`` whose ``offsets/N`` is whole (the sinks hold batch N)."""
    assert commits is not None
    planned = spark_checkpoint / "offsets" / commits.name
    if not planned.is_file() or _problem(planned, offset_problem) is not None:
        raise _refusal(commits, f"its batch's offset file {_shown(planned)} is missing or torn")
    return _remove(commits, f"the sinks hold batch {commits.name}, which Spark writes again")


def _problem(path: Path, check: Callable[..., str | None]) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    except OSError as exc:
        raise errors.CheckpointTorn(
            f"Spark's checkpoint file {_shown(path)} cannot be read ({exc.strerror}); "
            "make it readable by the pipeline's user."
        ) from None
    return check(text) if check is commit_problem else check(text, int(path.name))


def _query_id(spark_checkpoint: Path) -> str:
    """The pipeline id the sinks record batches under (``sparkcdc-<Spark query id>``)."""
    metadata = spark_checkpoint / "metadata"
    try:
        return f"sparkcdc-{json.loads(metadata.read_text().splitlines()[0])['id']}"
    except (OSError, IndexError, ValueError, KeyError, TypeError):
        raise _refusal(metadata, "it holds no query id to match the sink's batches") from None


def _remove(path: Path, why: str) -> list[Path]:
    crc = path.with_name(f".{path.name}.crc")
    removed = [p for p in (path, crc) if p.exists()]
    for found in removed:
        found.unlink()
    log.warning("removed Spark's torn checkpoint file %s (cut short by a crash): %s", _shown(path),
                why)  # fmt: skip
    return removed


def _refusal(path: Path, why: str) -> errors.CheckpointTorn:
    return errors.CheckpointTorn(
        f"Spark's checkpoint file {_shown(path)} is cut short or unreadable and cannot be "
        f"repaired ({why}): {WAY_OUT}."
    )


def _shown(path: Path) -> str:
    return str(path)
