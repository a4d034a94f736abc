"""A Delta commit written by the sink itself: one JSON file of actions in the table's log.

delta-rs commits a transaction by replaying the table's log twice (before the commit and for
the state after it), about 8 ms for a young table and growing with every commit since the last
checkpoint (bench/history.md); a micro-batch pays it twice per table it touches (bench section
9). A commit is, by the Delta protocol, the file ``_delta_log/<version>.json`` holding the
commit's actions, one JSON object per line, created only if absent: the version's first writer
wins. Here the actions are ``commitInfo``, the ``txn`` of the batch (:mod:`.commits`), the
data files' ``add`` and ``remove`` and the change data files' ``cdc`` (:mod:`.change_data`), the
file made under a temporary name and linked to its final one (``link`` fails if that exists, as
delta-rs's rename without replace does on a folder).

Only where that is all a commit must do: a lake that is a folder (object storage commits
through delta-rs, whose conditional PUT this does not have), and a table of protocol writer
version 2 at most (4 where it is for the change data feed), with no table feature and no
constraint, invariant or generated column to check (:func:`usable`).
Every :data:`CHECKPOINT_EVERY` versions (the table's ``delta.checkpointInterval``) delta-rs
writes a checkpoint, as its own commits do. The kept table object (:mod:`.opened`) is left at
the version it held: the next call that needs it current opens the table anew.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from sparkcdc.core.json_value import JSONObject
from sparkcdc.sinks import storage
from sparkcdc.sinks.delta import change_data, opened
from sparkcdc.sinks.delta.change_data import ChangeFile

CHECKPOINT_EVERY = 10  # delta.checkpointInterval of the tables the sink makes (Delta's default)
CHECKPOINT_KEY = "delta.checkpointInterval"
_CLIENT = "sparkcdc"


@dataclass(frozen=True)
class Removed:
    """A data file the commit removes: its path in the table and its size."""

    path: str
    size: int


_FIELD_RULES = ("delta.invariants", "delta.generationExpression")  # checked on every write


def usable(path: str, table: DeltaTable) -> bool:
    """Whether a commit of this table may be written here (module docstring)."""
    if storage.at(path).remote:
        return False
    protocol = table.protocol()
    if protocol.writer_features or protocol.reader_features or protocol.min_reader_version > 1:
        return False
    config = table.metadata().configuration
    # writer version 4 for the change data feed alone, whose files the commit names itself
    if protocol.min_writer_version > (4 if change_data.enabled(config) else 2):
        return False
    if any(k.startswith("delta.constraints.") for k in config):
        return False
    fields = table.schema().fields
    return not any(f.metadata and any(r in f.metadata for r in _FIELD_RULES) for f in fields)


OPERATION_KEY = "sparkcdc.operation"  # in the commit info: what a commit did, where Delta names
# another (a copy-on-write MERGE is a WRITE, :mod:`.rewrite`)


def properties(txn: tuple[str, int], operation: str | None = None) -> CommitProperties:
    """delta-rs's commit properties: the transaction identifier ``txn`` (app id, batch) and
    the ``operation`` tag."""
    tag = {OPERATION_KEY: operation} if operation else None
    return CommitProperties(app_transactions=[Transaction(*txn)], custom_metadata=tag)


def commit_files(
    path: str,
    table: DeltaTable,
    adds: Sequence[AddAction],
    removes: Sequence[Removed],
    txn: tuple[str, int],
    operation: str | None = None,
    changes: Sequence[ChangeFile] = (),
) -> None:
    """Commit ``adds``, ``removes`` and the change data files ``changes`` with the transaction
    identifier ``txn``: written here where :func:`usable`, else by delta-rs (the kept ``table``
    moved to the new version; given no ``changes``: its commits cannot name them)."""
    if usable(path, table):
        tag = {OPERATION_KEY: operation} if operation else None
        commit(path, table, adds, removes, txn, tag, blind=operation is None, changes=changes)
        return
    if changes:
        raise ValueError(f"a commit of {path} with change data files must be written here")
    now = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [
        RemoveAction(r.path, True, now, r.size) for r in removes
    ]
    actions += adds
    table.create_write_transaction(actions, mode="append", schema=table.schema(),
                                   commit_properties=properties(txn, operation))  # fmt: skip
    table.update_incremental()  # delta-rs leaves the object at the version before
    opened.committed(path, table.version(), *txn)


def commit(
    path: str,
    table: DeltaTable,
    adds: Sequence[AddAction],
    removes: Sequence[Removed],
    txn: tuple[str, int],
    extra: Mapping[str, str] | None = None,
    blind: bool = True,
    changes: Sequence[ChangeFile] = (),
) -> int:
    """Commit ``adds`` and ``removes`` with the transaction identifier ``txn`` (app id, batch)
    as the version after the table's last (``table``'s, or the sink's own commit past it,
    :func:`.opened.head`); ``extra``: entries of the commit info; ``blind``: the commit adds
    rows without having read the table (an append); ``changes``: its change data files. The
    new version;
    ``CommitFailedError`` if another writer made that version first."""
    version = opened.head(path, table) + 1
    now = int(time.time() * 1000)
    info: JSONObject = {
        "timestamp": now,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": "[]"},
        "clientVersion": _CLIENT,
        "isBlindAppend": blind and not removes,
    }
    info.update(extra or {})
    lines: list[JSONObject] = [
        {"commitInfo": info},
        {"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": now}},
    ]
    lines += [{"remove": _remove(r, now)} for r in removes]
    lines += [{"add": _add(a)} for a in adds]
    lines += [{"cdc": _cdc(c)} for c in changes]
    text = "\n".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) for line in lines)
    text += "\n"  # UTF-8 as it is: see file_stats.stats_text
    _create(path, version, text.encode("utf-8"))
    opened.advanced(path, version)
    opened.committed(path, version, txn[0], txn[1])
    interval = int(table.metadata().configuration.get(CHECKPOINT_KEY, "100") or "100")
    if interval > 0 and version % interval == 0:
        fresh = opened.cached(path)  # reads this commit in
        if fresh is not None:
            fresh.create_checkpoint()
    return version


def _add(action: AddAction) -> JSONObject:
    return {
        "path": action.path,
        "partitionValues": dict(action.partition_values),
        "size": action.size,
        "modificationTime": action.modification_time,
        "dataChange": action.data_change,
        "stats": action.stats,
    }


def _cdc(change: ChangeFile) -> JSONObject:
    """A ``cdc`` action (Delta protocol, *Add CDC File*): no data change of its own."""
    return {"path": change.path, "partitionValues": {}, "size": change.size, "dataChange": False}


def _remove(removed: Removed, now: int) -> JSONObject:
    return {
        "path": removed.path,
        "deletionTimestamp": now,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": {},
        "size": removed.size,
    }


def _create(path: str, version: int, data: bytes) -> None:
    """The commit file of ``version`` with ``data``, created only if there is none."""
    folder = os.path.join(storage.local_path(path), "_delta_log")
    final = os.path.join(folder, f"{version:020d}.json")
    tmp = os.path.join(folder, f"_commit_{uuid.uuid4().hex}.json.tmp")
    with open(tmp, "wb") as out:
        out.write(data)
    try:
        os.link(tmp, final)
    except FileExistsError as exc:
        raise CommitFailedError(f"another writer made version {version} of {path}") from exc
    finally:
        os.unlink(tmp)
