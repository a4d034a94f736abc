"""Compaction of an Iceberg table: small data files rewritten into few, the rows unchanged.

Iceberg's ``rewrite_data_files`` with its bin-packing strategy, as far as a copy-on-write table
needs it: the data files below the target size, in the order the scan plans them, are packed
into groups of at most the target's bytes (a group of one file is left as it is); each group's
rows are read in the table's current schema (a file written before a column was added reads
nulls for it) and written as new files; every group's old files leave and new files enter in
one snapshot whose operation is ``replace`` (the table's data is the same: readers of its
appends skip it). A table with delete files (another engine's merge-on-read writes) is not
rewritten: its rows are more than its data files hold.

pyiceberg 0.12 writes no ``replace`` snapshot; :class:`_Replace` is its overwrite with the
operation its summary names changed, tested against the pinned release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.table import FileScanTask, Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _OverwriteFiles
from pyiceberg.typedef import EMPTY_DICT

UPKEEP_KEY = "sparkcdc.upkeep"  # in the summary of the upkeep's snapshots


@dataclass(frozen=True)
class Rewritten:
    """What a compaction did: data files read and the files they became."""

    removed: int = 0
    added: int = 0


class _Replace(_OverwriteFiles):
    """An overwrite committed as Iceberg's ``replace`` operation (the summary's counts as an
    overwrite computes them)."""

    def _summary(self, snapshot_properties: dict[str, str] = EMPTY_DICT) -> Summary:
        found = super()._summary(snapshot_properties)
        return Summary(Operation.REPLACE, **found.additional_properties)


def data_file_sizes(table: Table) -> list[int]:
    """The bytes of each data file of the table's current snapshot."""
    if table.current_snapshot() is None:
        return []
    return [task.file.file_size_in_bytes for task in table.scan().plan_files()]


def compact(table: Table, target: int, small_files: int) -> Rewritten:
    """Rewrite the table's data files below ``target`` bytes once there are ``small_files`` of
    them (module docstring); what it did (nothing: 0 and 0)."""
    if table.current_snapshot() is None:
        return Rewritten()
    tasks = list(table.scan().plan_files())
    if any(task.delete_files for task in tasks):
        return Rewritten()
    small = [task for task in tasks if task.file.file_size_in_bytes < target]
    if len(small) < small_files:
        return Rewritten()
    groups = [group for group in bins(small, target) if len(group) > 1]
    if not groups:
        return Rewritten()
    removed = added = 0
    with table.transaction() as tx:  # one catalog commit, at the end of the block
        rewrite = _Replace(
            operation=Operation.OVERWRITE, transaction=tx, io=table.io,
            snapshot_properties={UPKEEP_KEY: "compaction"},
        )  # fmt: skip
        for group in groups:
            scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
            written = _dataframe_to_data_files(
                table_metadata=table.metadata, df=scan.to_table(group), io=table.io,
                write_uuid=rewrite.commit_uuid,
            )  # fmt: skip
            for data_file in written:
                rewrite.append_data_file(data_file)
                added += 1
            for task in group:
                rewrite.delete_data_file(task.file)
                removed += 1
        rewrite.commit()
    return Rewritten(removed, added)


def bins(tasks: Sequence[FileScanTask], target: int) -> list[list[FileScanTask]]:
    """``tasks`` in order, cut into consecutive groups of at most ``target`` bytes each."""
    groups: list[list[FileScanTask]] = []
    size = 0
    for task in tasks:
        bytes_ = task.file.file_size_in_bytes
        if not groups or size + bytes_ > target:
            groups.append([])
            size = 0
        groups[-1].append(task)
        size += bytes_
    return groups
