"""Delta tables opened once per process and kept current, not read anew at every commit.

Opening a ``DeltaTable`` replays its log (its last checkpoint and the commits after it); the
sink used to do that several times per table and micro-batch (the transaction version, the
MERGE, the append, the schema checks), a cost that grows with the number of captured tables
(bench section 9). An opened table is kept here by path. Asked for again, it is checked by the
names of its log's commit files: if the one after the version it holds exists (a commit the
sink wrote itself, :mod:`.log_commit`, or another writer's, ``sparkcdc compact``'s say), it is
opened anew, from its last checkpoint; else it is current as it is. (delta-rs's
``update_incremental`` costs as much as an open and, on an object kept long, grows with every
commit since the object was opened; bench/history.md.) A write made through the kept object
(``write_deltalake`` and MERGE given the table) moves it to the new version itself.

A commit the sink writes itself leaves the kept object where it was: the version it made is
noted (:func:`head`), and a caller that needs no more than the table's schema, configuration and
transaction version (the change log's append) takes the object as it is; others get it opened
anew. A table deleted and created again at the same path would leave a kept object at a version
the new log never had: the last known version's commit file must still be there, else the table
is opened anew.

A pipeline's transaction version (:mod:`.commits`) is kept with the table version it was read
at, and set by the sink's own commits, so it is read from the log only after another writer's
commit.
"""

from __future__ import annotations

import os
import threading

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from sparkcdc.sinks import storage

_OPENED: dict[str, DeltaTable] = {}
_HEADS: dict[str, int] = {}  # the last version the sink committed itself (:mod:`.log_commit`)
_TRANSACTIONS: dict[tuple[str, str], tuple[int, int | None]] = {}  # -> (table version, batch)
_LOCK = threading.Lock()
_AHEAD: list[threading.Thread] = []  # threads opening the captured tables (:func:`open_ahead`)
_STOP_AHEAD = threading.Event()


def cached(path: str, current: bool = True) -> DeltaTable | None:
    """The Delta table at ``path`` as opened before; None if it was never opened here, or is
    no longer the table that was. ``current``: up to date (else it may stand before commits
    the sink made itself, :func:`head`; its schema, configuration and protocol are current)."""
    with _LOCK:
        found = _OPENED.get(path)
        known = _HEADS.get(path)
    if found is None:
        return None
    try:
        last = found.version() if known is None else max(known, found.version())
        if _commit_file(path, last):
            if _commit_file(path, last + 1) or (current and last != found.version()):
                found = _reopen(path)  # another's commit since, or the sink's own
            return found
    except Exception:  # noqa: BLE001 - gone or unreadable: opened anew by the caller
        pass
    forget(path)
    return None


def open_ahead(paths: list[str]) -> None:
    """Open the tables at ``paths`` (those that exist) in a thread of its own, until
    :func:`stop_ahead`. A table that fails to open is left to whoever asks for it next."""

    def run() -> None:
        for path in paths:
            if _STOP_AHEAD.is_set():
                return
            try:
                if cached(path) is None:
                    options = storage.delta_options(path)
                    if DeltaTable.is_deltatable(path, storage_options=options):
                        keep(path, DeltaTable(path, storage_options=options))
            except Exception:  # noqa: BLE001 - opened (or failing) again when asked for
                pass

    stop_ahead()  # an earlier run's, in this process
    _STOP_AHEAD.clear()
    thread = threading.Thread(target=run, name="sparkcdc-open-tables", daemon=True)
    with _LOCK:
        _AHEAD.append(thread)
    thread.start()


def stop_ahead() -> None:
    """Stop opening tables ahead, once the table being opened is (the first micro-batch opens
    the ones it needs that are not open yet)."""
    _STOP_AHEAD.set()
    with _LOCK:
        threads = list(_AHEAD)
        _AHEAD.clear()
    for thread in threads:
        thread.join()


def head(path: str, table: DeltaTable) -> int:
    """The table's version: ``table``'s, or the last the sink committed itself past it."""
    with _LOCK:
        known = _HEADS.get(path)
    return table.version() if known is None else max(known, table.version())


def advanced(path: str, version: int) -> None:
    """The sink committed ``version`` of the table at ``path`` itself (:mod:`.log_commit`)."""
    with _LOCK:
        _HEADS[path] = version


def keep(path: str, table: DeltaTable) -> DeltaTable:
    with _LOCK:
        _OPENED[path] = table
        _HEADS.pop(path, None)
    return table


def _reopen(path: str) -> DeltaTable:
    return keep(path, DeltaTable(path, storage_options=storage.delta_options(path)))


def forget(path: str) -> None:
    with _LOCK:
        _OPENED.pop(path, None)
        _HEADS.pop(path, None)
        for key in [k for k in _TRANSACTIONS if k[0] == path]:
            del _TRANSACTIONS[key]


def transaction_version(path: str, table: DeltaTable, app_id: str) -> int | None:
    """The last batch of ``app_id`` the table holds (Delta's transaction identifier)."""
    version = head(path, table)
    with _LOCK:
        found = _TRANSACTIONS.get((path, app_id))
    if found is not None and found[0] == version:
        return found[1]
    try:
        if version != table.version():  # stands before the sink's own commits
            table = _reopen(path)
        batch = table.transaction_version(app_id)
    except DeltaError:  # log files the kept table names were removed (another's cleanup)
        table = _reopen(path)
        batch = table.transaction_version(app_id)
    committed(path, table.version(), app_id, batch)
    return batch


def committed(path: str, version: int, app_id: str, batch_id: int | None) -> None:
    """The table at ``path`` holds batch ``batch_id`` of ``app_id`` as of its ``version``."""
    with _LOCK:
        _TRANSACTIONS[(path, app_id)] = (version, batch_id)


def _commit_file(path: str, version: int) -> bool:
    name = f"{path.rstrip('/')}/_delta_log/{version:020d}.json"
    lake = storage.at(path)
    return lake.exists(name) if lake.remote else os.path.exists(storage.local_path(name))
