"""The crash trials of the exactly-once tests: ``kill -9`` of ``sparkcdc run`` while a workload
writes, and what the lake holds afterwards (a folder, or object storage with its options)."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.e2e.cli import crash, start
from tests.e2e.workload import ChangeWorkload


def changelog_identities(
    path: Path | str, options: dict[str, str] | None = None
) -> Counter[tuple[str, int, int]]:
    """How many times the Delta change log holds each change (:func:`identities`)."""
    table = DeltaTable(str(path), storage_options=options)
    return identities(table.to_pyarrow_table(columns=["op", "before", "after"]).to_pylist())


def identities(rows: list[dict[str, Any]]) -> Counter[tuple[str, int, int]]:
    """How many times change-log ``rows`` hold each change (op, key, version); a delete whose
    before image holds the key only (PostgreSQL's ``REPLICA IDENTITY DEFAULT``) has version -1."""
    seen: Counter[tuple[str, int, int]] = Counter()
    for row in rows:
        image = row["before"] if row["op"] == "d" else row["after"]
        known = image.get("version")
        seen[(row["op"], int(image["id"]), -1 if known is None else int(known))] += 1
    return seen


def assert_exactly_once(
    seen: Counter[tuple[str, int, int]], expected: Counter[tuple[str, int, int]], changes: int
) -> None:
    """The change log's changes ``seen`` are the ``expected`` ones, each once (at least
    ``changes``): no duplicate, none missing, none never made."""
    duplicates = {k: n for k, n in seen.items() if n > 1}
    missing = expected - seen
    unexpected = seen - expected
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert not missing, f"{len(missing)} changes missing, e.g. {list(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} changes never made, e.g. {list(unexpected)[:5]}"
    assert sum(seen.values()) == sum(expected.values()) >= changes


def source_rows(server: ThrowawayMariaDB, db: str) -> list[tuple[object, ...]]:
    return server.query(
        "SELECT id, version, balance, owner, updated, flags FROM accounts ORDER BY id", db
    )


def replica_rows(
    path: Path | str, options: dict[str, str] | None = None
) -> list[tuple[object, ...]]:
    table = DeltaTable(str(path), storage_options=options)
    return accounts(table.to_pyarrow_table().sort_by("id").to_pylist())


def accounts(rows: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    """The workload's ``accounts`` rows as the source's query gives them (by id)."""
    rows = sorted(rows, key=lambda r: r["id"])
    return [
        (r["id"], r["version"], r["balance"], r["owner"], r["updated"], r["flags"]) for r in rows
    ]


def version(path: str, options: dict[str, str] | None = None) -> int:
    """The Delta table's latest version (-1 while there is none)."""
    if not DeltaTable.is_deltatable(path, storage_options=options):
        return -1
    return DeltaTable(path, storage_options=options).version()


def crash_trials(
    cfg: Path, written_to: Callable[[], int], workload_of: Callable[[int], ChangeWorkload],
    trials: int, rng: random.Random,
) -> Counter[tuple[str, int, int]]:  # fmt: skip
    """``trials`` runs of the pipeline, each with a part of the workload written meanwhile and
    ``kill -9`` once the run has written (``written_to``: the change log's version, growing
    with every commit) and a random moment more; the changes written."""
    expected: Counter[tuple[str, int, int]] = Counter()
    for trial in range(trials):
        workload = workload_of(trial)
        workload.next_id = trial * 10_000_000 + 1  # each part inserts keys of its own
        written = written_to()
        proc = start(cfg)
        workload.start()
        deadline = time.monotonic() + 300
        while written_to() <= written:  # crash only once this run has written
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the restarted pipeline wrote nothing in 300 s"
            time.sleep(0.1)
        time.sleep(rng.uniform(0.5, 3.0))
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        crash(proc)
        workload.join()
        assert workload.error is None, workload.error
        expected += workload.expected
    return expected
