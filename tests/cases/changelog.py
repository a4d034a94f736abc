"""What end-to-end tests read from a change log: the ``source`` names of its rows of one op."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
from deltalake import DeltaTable


def source_names(path: Path, op: str) -> set[tuple[Any, ...]]:
    """The distinct (db, schema, table, snapshot) of the ``source`` of the change log's rows
    whose op is ``op``."""
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=["op", "source"])
    picked = rows.filter(pc.equal(rows.column("op"), op)).column("source").to_pylist()
    return {(s["db"], s["schema"], s["table"], s["snapshot"]) for s in picked}
