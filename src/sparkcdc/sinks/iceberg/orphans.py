"""Orphan data files of an Iceberg table deleted: the files under the table's ``data/`` folder
that no snapshot reads and that were written more than ``retain`` ago.

Iceberg's ``remove_orphan_files`` with ``older_than`` = ``retain``, as Delta's full vacuum
deletes the files no version holds. A micro-batch's write that a crash cut between its data
files and its commit leaves such files, and no expiry ever reaches them (no snapshot lists
them). The age guard keeps any file a commit of the last ``retain`` could still name; the upkeep
runs where no commit of the table runs at the same time (:mod:`.upkeep`). Only ``data/`` is
swept: a crashed commit's manifests under ``metadata/`` stay (they are small and few).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from pyarrow import fs
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import Table


@dataclass(frozen=True)
class Swept:
    """What a sweep deleted: files and their bytes."""

    files: int = 0
    bytes: int = 0


def sweep(table: Table, reached: Iterable[str], retain: float, now: float | None = None) -> Swept:
    """Delete the files under ``table``'s ``data/`` older than ``retain`` seconds that are not
    among ``reached`` (the paths every remaining snapshot reads). A table whose file IO is not
    pyarrow's (no listing) is left as it is."""
    io = table.io
    if not isinstance(io, PyArrowFileIO):
        return Swept()
    scheme, netloc, folder = PyArrowFileIO.parse_location(
        table.location().rstrip("/") + "/data", io.properties
    )
    filesystem = io.fs_by_scheme(scheme, netloc)
    listed = filesystem.get_file_info(fs.FileSelector(folder, recursive=True, allow_not_found=True))
    kept = {PyArrowFileIO.parse_location(path, io.properties)[2] for path in reached}
    cutoff = (time.time() if now is None else now) - retain
    gone = [
        info
        for info in listed
        if info.type == fs.FileType.File
        and info.path not in kept
        and info.mtime is not None
        and info.mtime.timestamp() < cutoff
    ]
    for info in gone:
        filesystem.delete_file(info.path)
    return Swept(len(gone), sum(info.size or 0 for info in gone))
