"""An Iceberg lake as the tests read it back: with pyiceberg and the lake's embedded SQL catalog
(a SQLite file in the lake's folder), as a user reads it, through none of the sink's code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError

CATALOG_FILE = Path("_sparkcdc") / "iceberg-catalog.db"


def as_iceberg(cfg: Path) -> Path:
    """The pipeline file ``cfg`` with ``sink.type: iceberg`` instead of Delta (written over)."""
    text = cfg.read_text()
    changed = re.sub(r"sink: \{type: delta,", "sink: {type: iceberg,", text)
    assert changed != text, "the pipeline file names no Delta sink"
    cfg.write_text(changed)
    return cfg


class IcebergLake:
    """The Iceberg tables of the lake in the folder ``root`` (its embedded catalog), or of the
    SQL catalog at ``catalog`` (sqlalchemy's URI) with more of pyiceberg's ``properties`` (a
    warehouse on object storage)."""

    def __init__(
        self, root: Path, catalog: str | None = None, properties: dict[str, str] | None = None
    ) -> None:
        self.root = root
        self.file = root / CATALOG_FILE if catalog is None else None
        self.uri = f"sqlite:///{self.file}" if catalog is None else catalog
        self.properties = properties or {"warehouse": f"file://{root}"}
        self._catalog: Catalog | None = None

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = load_catalog("sparkcdc", type="sql", uri=self.uri, **self.properties)
        return self._catalog

    def arrow(self, namespace: str, table: str) -> pa.Table:
        return self.catalog.load_table((namespace, table)).scan().to_arrow()

    def rows(self, namespace: str, table: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.arrow(namespace, table).to_pylist()
        return rows

    def snapshots(self, namespace: str, table: str) -> int:
        """How many snapshots the table has (-1 while there is no table or no catalog)."""
        if self.file is not None and not self.file.exists():
            return -1
        try:
            return len(self.catalog.load_table((namespace, table)).snapshots())
        except NoSuchTableError:
            return -1
