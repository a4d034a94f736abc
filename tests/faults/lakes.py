"""The lake as the checker reads it: Delta tables with delta-rs (a folder, or object storage
with its options), Iceberg tables with pyiceberg and the lake's embedded catalog; none of the
pipeline's sink code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from tests.e2e.iceberg_lake import IcebergLake


class DeltaTables:
    """The Delta tables under ``root/<schema>/`` (a folder or an ``s3://`` URL)."""

    def __init__(self, root: str, schema: str, options: dict[str, str] | None = None) -> None:
        self.root, self.schema, self.options = root.rstrip("/"), schema, options

    def rows(self, table: str) -> list[dict[str, Any]] | None:
        try:
            found = DeltaTable(f"{self.root}/{self.schema}/{table}", storage_options=self.options)
        except TableNotFoundError:
            return None
        rows: list[dict[str, Any]] = found.to_pyarrow_table().to_pylist()
        return rows


class IcebergTables:
    """The Iceberg tables of namespace ``schema`` in the lake folder ``root``."""

    def __init__(self, root: Path, schema: str) -> None:
        self.lake, self.schema = IcebergLake(root), schema

    def rows(self, table: str) -> list[dict[str, Any]] | None:
        if self.lake.snapshots(self.schema, table) < 0:
            return None
        self.lake = IcebergLake(self.lake.root)  # a fresh catalog sees the newest snapshot
        return self.lake.rows(self.schema, table)
