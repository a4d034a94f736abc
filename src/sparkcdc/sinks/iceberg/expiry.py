"""Snapshot expiry of an Iceberg table, and the files only the expired snapshots read deleted.

Iceberg's ``expire_snapshots`` with its reachable-file cleanup: the snapshots committed more
than ``retain`` ago leave the table's metadata (one commit), except the current snapshot and the
head of any branch or tag, which stay however old (``history.expire.min-snapshots-to-keep`` 1).
Then every file the expired snapshots reached (manifest list, manifests, data and delete files
live in them) that no remaining snapshot reaches is deleted: a file a remaining snapshot's
manifest lists as deleted is read by no remaining snapshot, so it goes too. Every snapshot of
the last ``retain`` stays readable (time travel, an incremental read). pyiceberg 0.12's expiry
changes the metadata only; the deletion is here. A crash between the commit and the deletion
leaves those files on the storage, as Iceberg's own expiry would.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.manifest import ManifestFile
from pyiceberg.table import Table
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Snapshot


@dataclass(frozen=True)
class Expired:
    """What an expiry did: snapshots expired, files deleted and their bytes."""

    snapshots: int = 0
    files: int = 0
    bytes: int = 0


def expire(
    table: Table, retain: float, now: float | None = None, reach: Reach | None = None
) -> Expired:
    """Expire the snapshots of ``table`` older than ``retain`` seconds and delete the files no
    remaining snapshot reaches (module docstring); ``reach`` keeps what it read for a caller
    that asks the remaining snapshots' files afterwards."""
    cutoff_ms = int(((time.time() if now is None else now) - retain) * 1000)
    kept = _protected(table)
    old = [s for s in table.snapshots() if s.timestamp_ms < cutoff_ms and s.snapshot_id not in kept]
    if not old:
        return Expired()
    reach = Reach(table) if reach is None else reach
    before = reach.files(table.snapshots())
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()
    after = reach.files(table.snapshots())
    gone = {path: size for path, size in before.items() if path not in after}
    for path in gone:
        table.io.delete(path)
    return Expired(len(old), len(gone), sum(gone.values()))


def _protected(table: Table) -> set[int]:
    """The current snapshot and the heads of every branch and tag."""
    heads = {
        ref.snapshot_id
        for ref in table.metadata.refs.values()
        if ref.snapshot_ref_type in (SnapshotRefType.BRANCH, SnapshotRefType.TAG)
    }
    current = table.current_snapshot()
    return heads | ({current.snapshot_id} if current is not None else set())


class Reach:
    """The files snapshots read, each manifest list and manifest read once."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._lists: dict[str, list[ManifestFile]] = {}
        self._entries: dict[str, dict[str, int]] = {}

    def files(self, snapshots: Iterable[Snapshot]) -> dict[str, int]:
        """Every file ``snapshots`` read, with its bytes (0 where the metadata gives none)."""
        io = self.table.io
        found: dict[str, int] = {}
        for snapshot in snapshots:
            found[snapshot.manifest_list] = 0
            listed = self._lists.get(snapshot.manifest_list)
            if listed is None:
                listed = self._lists[snapshot.manifest_list] = snapshot.manifests(io)
            for manifest in listed:
                found[manifest.manifest_path] = manifest.manifest_length
                entries = self._entries.get(manifest.manifest_path)
                if entries is None:
                    entries = self._entries[manifest.manifest_path] = {
                        e.data_file.file_path: e.data_file.file_size_in_bytes
                        for e in manifest.fetch_manifest_entry(io, discard_deleted=True)
                    }
                found.update(entries)
        return found
