"""Regression test of the fault campaign's ``disk-full``: the lake's disk full while a micro-batch
is written, then freed.

The campaign found a run that ended with Spark's report of a Python traceback instead of one
sentence: the upkeep's schedule (``_sparkcdc/upkeep.json``) was first written in the batch that
met the full disk, and its OSError reached Spark unnamed. Here, on a small tmpfs of its own
(mounting needs root), each table format ends that batch with one sentence naming the batch, and
the batch written again after the disk is freed commits each change once."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.errors import SinkError
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS as A
from tests.contract.sink_harness import DeltaHarness, IcebergHarness, SinkHarness

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


class Frame:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table


def row(i: int, owner: str) -> dict[str, Any]:
    return {"id": i, "owner": owner, "balance": "1.00"}


def batch(b: int) -> Frame:
    """Batch ``b``: account ``b`` created, account 0 renamed (batch 0 creates it)."""
    changes = Changes(pos=1000 * (b + 1)).schema(A)
    if b == 0:
        changes.change("c", A, after=row(0, "o0"))
    else:
        changes.change("u", A, row(0, f"o{b - 1}"), row(0, f"o{b}"))
    return Frame(changes.change("c", A, after=row(b + 1, "new")).table())


@pytest.fixture(params=["delta", "iceberg"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SinkHarness]:
    lake = tmp_path / "lake"
    lake.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(lake)], check=True)
    try:
        yield IcebergHarness(tmp_path) if request.param == "iceberg" else DeltaHarness(tmp_path)
    finally:
        subprocess.run(["umount", "-l", str(lake)], check=False)


def fill(folder: Path) -> Path:
    """``folder``'s file system filled to its last byte by one file (returned)."""
    filler = folder / ".filler"
    with contextlib.suppress(OSError), filler.open("wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
            f.flush()
    return filler


def test_disk_full_ends_the_batch_in_one_sentence_and_the_batch_again_writes_once(
    harness: SinkHarness, tmp_path: Path
) -> None:
    sink = harness.open()
    sink.write_batch(batch(0), 0)
    (tmp_path / "lake" / "_sparkcdc" / "upkeep.json").unlink(missing_ok=True)
    filler = fill(tmp_path / "lake")
    with pytest.raises(SinkError) as failed:
        sink.write_batch(batch(1), 1)
    sentence = str(failed.value)
    assert "batch 1" in sentence and "No space left on device" in sentence, sentence
    assert "\n" not in sentence
    assert sink.figures().error is failed.value  # what `sparkcdc run` prints
    filler.unlink()
    again = harness.open()  # the pipeline run again
    again.write_batch(batch(1), 1)
    again.write_batch(batch(2), 2)
    assert harness.replica("shop", "accounts") == {0: "o2", 1: "new", 2: "new", 3: "new"}
    assert [op for op, _, _ in harness.changelog("shop", "accounts")] == ["c", "c", "u", "c",
                                                                          "u", "c"]  # fmt: skip
