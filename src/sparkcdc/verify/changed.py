"""The keys a table's change log shows changed after a log position (for a running pipeline:
a difference of such a key may be a change in flight, see :mod:`.table`)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.verify.compare import labels


def changed_keys(rows: pa.Table | None, key: Sequence[str]) -> set[str]:
    """The labels of the keys (before or after images) of a change log's ``rows`` (those whose
    ``source.position`` sorts after a position; None: no change log)."""
    if rows is None:
        return set()
    found: set[str] = set()
    for image in ("before", "after"):
        values = rows.column(image).combine_chunks()
        if not isinstance(values, pa.StructArray) or len(values) == 0:
            continue
        present = pc.is_valid(values)
        table = pa.Table.from_arrays([values.field(k) for k in key], names=list(key))
        found.update(labels(table.filter(present), key))
    return found
