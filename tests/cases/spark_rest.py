"""Where a running pipeline's micro-batches ran, from Spark's REST API and its checkpoint.

The driver's web UI serves ``/api/v1``: each stage carries its stream's description (``batch =
N``) and its tasks name the executor that ran them. The checkpoint's offset log says which
micro-batches were the initial snapshot's (their end offset is a snapshot offset with splits).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from sparkcdc.spark.offsets import SnapshotOffset, parse, source_position

BATCH = re.compile(r"\bbatch = (\d+)\b")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def application_id(ui: str) -> str:
    """The id of the application whose UI is at ``ui`` (the master's ``app-…``)."""
    apps: list[dict[str, Any]] = get_json(f"{ui}/api/v1/applications")
    return str(apps[0]["id"])


def tasks_by_batch(ui: str) -> dict[int, Counter[str]]:
    """Per micro-batch: how many of its tasks succeeded on each executor id."""
    api = f"{ui}/api/v1/applications/{application_id(ui)}"
    found: dict[int, Counter[str]] = {}
    for stage in get_json(f"{api}/stages"):
        batch = BATCH.search(stage.get("description") or "")
        if batch is None:
            continue
        tasks = get_json(f"{api}/stages/{stage['stageId']}/{stage['attemptId']}/taskList"
                         "?length=100000")  # fmt: skip
        counts = found.setdefault(int(batch.group(1)), Counter())
        counts.update(str(t["executorId"]) for t in tasks if t["status"] == "SUCCESS")
    return found


def _offset(path: Path) -> dict[str, Any]:
    """The source offset a file of Spark's offset log holds (the line after its metadata)."""
    value: dict[str, Any] = json.loads(path.read_text().splitlines()[2])
    return value


def snapshot_batches(checkpoint: Path) -> set[int]:
    """The micro-batches that read splits of the initial snapshot."""
    offsets = checkpoint / "spark" / "offsets"
    return {
        int(p.name)
        for p in offsets.glob("*")
        if p.name.isdigit()
        and isinstance(found := parse(_offset(p)), SnapshotOffset)
        and found.groups
    }


def committed_batches(checkpoint: Path) -> set[int]:
    return {int(p.name) for p in (checkpoint / "spark" / "commits").glob("*") if p.name.isdigit()}


def snapshot_finished(checkpoint: Path) -> bool:
    """Whether a committed micro-batch ended in the log: the snapshot was handed off."""
    offsets = checkpoint / "spark" / "offsets"
    return any(
        source_position(_offset(offsets / str(n))) is not None
        for n in committed_batches(checkpoint)
    )
