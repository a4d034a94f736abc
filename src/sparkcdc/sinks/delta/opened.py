"""Delta tables opened once per process and brought up to date, not read anew at every commit.

Opening a ``DeltaTable`` replays its log (its last checkpoint and the commits after it); the
sink used to do that several times per table and micro-batch (the transaction version, the
MERGE, the append, the schema checks), a cost that grows with the number of captured tables
(bench section 9). An opened table is kept here by path and, when asked for again, brought up
to date with ``update_incremental`` (it reads only the commits after the version it holds, so
another writer's commits, ``sparkcdc compact``'s say, are seen). A write made through the kept
object (``write_deltalake`` and MERGE given the table) moves it to the new version itself.

A table deleted and created again at the same path would leave a kept object at a version the
new log never had; ``update_incremental`` does not notice that, so the kept version's commit
file is checked to still be there, else the table is opened anew.
"""

from __future__ import annotations

import threading

from deltalake import DeltaTable

from sparkcdc.sinks.delta import storage

_OPENED: dict[str, DeltaTable] = {}
_LOCK = threading.Lock()


def cached(path: str) -> DeltaTable | None:
    """The Delta table at ``path`` as opened before, up to date; None if it was never opened
    here, or is no longer the table that was."""
    with _LOCK:
        found = _OPENED.get(path)
    if found is None:
        return None
    try:
        found.update_incremental()
        if _still_there(path, found.version()):
            return found
    except Exception:  # noqa: BLE001 - gone or unreadable: opened anew by the caller
        pass
    forget(path)
    return None


def keep(path: str, table: DeltaTable) -> DeltaTable:
    with _LOCK:
        _OPENED[path] = table
    return table


def forget(path: str) -> None:
    with _LOCK:
        _OPENED.pop(path, None)


def _still_there(path: str, version: int) -> bool:
    lake = storage.at(path)
    return lake.exists(f"{path.rstrip('/')}/_delta_log/{version:020d}.json")
