"""Delta tables opened once per process and kept current, not read anew at every commit.

Opening a ``DeltaTable`` replays its log (its last checkpoint and the commits after it); the
sink used to do that several times per table and micro-batch (the transaction version, the
MERGE, the append, the schema checks), a cost that grows with the number of captured tables
(bench section 9). An opened table is kept here by path. Asked for again, it is checked by the
names of its log's commit files: if the one after the version it holds exists (another writer
committed, ``sparkcdc compact``'s say), it is brought up to date with ``update_incremental``;
else it is current as it is (``update_incremental`` lists the whole log folder, a cost that
grows with the commits since the last checkpoint). A write made through the kept object
(``write_deltalake`` and MERGE given the table) moves it to the new version itself.

A table deleted and created again at the same path would leave a kept object at a version the
new log never had, which ``update_incremental`` does not notice: the kept version's commit file
must still be there, else the table is opened anew.

A pipeline's transaction version (:mod:`.commits`) is kept with the table version it was read
at, and set by the sink's own commits, so it is read from the log only after another writer's
commit.
"""

from __future__ import annotations

import os
import threading

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from sparkcdc.sinks.delta import storage

_OPENED: dict[str, DeltaTable] = {}
_TRANSACTIONS: dict[tuple[str, str], tuple[int, int | None]] = {}  # -> (table version, batch)
_LOCK = threading.Lock()


def cached(path: str) -> DeltaTable | None:
    """The Delta table at ``path`` as opened before, up to date; None if it was never opened
    here, or is no longer the table that was."""
    with _LOCK:
        found = _OPENED.get(path)
    if found is None:
        return None
    try:
        version = found.version()
        if _commit_file(path, version):
            if _commit_file(path, version + 1):  # another writer's commit
                found.update_incremental()
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
        for key in [k for k in _TRANSACTIONS if k[0] == path]:
            del _TRANSACTIONS[key]


def transaction_version(path: str, table: DeltaTable, app_id: str) -> int | None:
    """The last batch of ``app_id`` the table holds (Delta's transaction identifier)."""
    version = table.version()
    with _LOCK:
        found = _TRANSACTIONS.get((path, app_id))
    if found is not None and found[0] == version:
        return found[1]
    try:
        batch = table.transaction_version(app_id)
    except DeltaError:  # log files the kept table names were removed (another's cleanup)
        forget(path)
        table = keep(path, DeltaTable(path, storage_options=storage.delta_options(path)))
        version, batch = table.version(), table.transaction_version(app_id)
    committed(path, version, app_id, batch)
    return batch


def committed(path: str, version: int, app_id: str, batch_id: int | None) -> None:
    """The table at ``path`` holds batch ``batch_id`` of ``app_id`` as of its ``version``."""
    with _LOCK:
        _TRANSACTIONS[(path, app_id)] = (version, batch_id)


def _commit_file(path: str, version: int) -> bool:
    name = f"{path.rstrip('/')}/_delta_log/{version:020d}.json"
    lake = storage.at(path)
    return lake.exists(name) if lake.remote else os.path.exists(storage.local_path(name))
