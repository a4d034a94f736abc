"""The replica's side of a micro-batch, whatever the table format: the latest change per key,
by log order.

A MERGE must see each key once. Every change becomes an *action* ordered by its log position
(``2 * position``, ``+ 1`` for the upsert half): a delete is a delete of its key; an insert or
update is an upsert of its key; an update that changes the key is also a delete of the old key
just before. The action with the highest order per key wins (a group-by inside Arrow, no Python
per row).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.chunk import refuse_array_key
from sparkcdc.core.errors import ConfigError, SinkError
from sparkcdc.core.event import OP_TRUNCATE
from sparkcdc.core.schema import TableSchema

OP_COLUMN = "_sparkcdc_op"  # an action's kind: 'd' delete, 'u' upsert
ORDER_COLUMN = "_sparkcdc_order"  # an action's place in log order


def latest_changes(
    rows: pa.Table,
    before: pa.StructArray,
    after: pa.StructArray,
    columns: list[pa.Field],
    key: tuple[str, ...],
    reset_at: int | None,
) -> pa.Table:
    """The latest change per key of ``rows`` (changes of one table, ``_pos`` = log order).

    Returns ``columns`` plus ``OP_COLUMN`` ('d' delete or 'u' upsert) and ``ORDER_COLUMN``.
    ``reset_at``: the position of a TRUNCATE/DROP in the batch; earlier changes are dropped,
    and so are the ``t`` rows a TRUNCATE left in the change log (they change no row).
    """
    names = [f.name for f in columns]
    op = rows.column("op").combine_chunks()
    pos = rows.column("_pos").combine_chunks()
    live = pc.greater(pos, reset_at) if reset_at is not None else pc.is_valid(pos)
    live = pc.and_(live, pc.not_equal(op, OP_TRUNCATE))
    deleted = pc.equal(op, "d")
    key_moved = pc.equal(op, "u")
    changed = None
    for k in key:
        i = names.index(next(n for n in names if n.lower() == k.lower()))
        differs = pc.fill_null(pc.not_equal(before.field(i), after.field(i)), False)
        changed = differs if changed is None else pc.or_(changed, differs)
    key_moved = pc.and_(key_moved, changed) if changed is not None else pc.and_(key_moved, False)
    gone = pc.and_(pc.or_(deleted, key_moved), live)
    parts = [_actions(after, pc.and_(pc.invert(deleted), live), pos, names, "u", 1)]
    if pc.any(gone).as_py():  # deletes, keys moved: the old key's delete
        parts.insert(0, _actions(before, gone, pos, names, "d", 0))
    actions = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    key_names = [n for n in names if n.lower() in {k.lower() for k in key}]
    if actions.num_rows == 0 or _one_per_key(actions, key_names):
        return actions
    latest = actions.group_by(key_names).aggregate([(ORDER_COLUMN, "max")])
    return actions.filter(
        pc.is_in(actions.column(ORDER_COLUMN), latest.column(f"{ORDER_COLUMN}_max"))
    )


def _actions(
    image: pa.StructArray, mask: pa.Array, pos: pa.Array, names: list[str], op: str, step: int
) -> pa.Table:
    """The rows of ``image`` where ``mask`` holds, as actions ``op`` ordered ``2 * pos + step``."""
    flat = image.filter(mask).flatten()
    order = pc.add(pc.multiply(pos.filter(mask), 2), step)
    kind = pa.repeat(pa.scalar(op, pa.string()), len(order))
    return pa.Table.from_arrays([*flat, kind, order], names=[*names, OP_COLUMN, ORDER_COLUMN])


def _one_per_key(actions: pa.Table, key_names: list[str]) -> bool:
    """Whether each action's one-column key is its own (no group-by needed: a batch of
    changes to distinct rows, as many tables' batches are)."""
    if len(key_names) != 1:
        return False
    column = actions.column(key_names[0])
    return column.null_count == 0 and bool(pc.count_distinct(column).as_py() == actions.num_rows)


def check_key(schema: TableSchema, columns: Sequence[pa.Field]) -> None:
    """SinkError when a key column of ``schema`` is an array (no upsert can match rows on it)
    or not among the replica's ``columns`` (``pipeline.schema_changes`` left it out)."""
    key = {k.lower() for k in schema.key}
    missing = key - {f.name.lower() for f in columns}
    if missing:
        raise SinkError(
            f"the key of {schema.name} is ({', '.join(schema.key)}), and its replica has no "
            f"column {', '.join(sorted(missing))} (pipeline.schema_changes left it out), so "
            "changes cannot be merged by key; let the column's change through "
            "(lenient or evolve) and start again",
            table=schema.name,
        )
    for column in schema.columns:
        if column.name.lower() in key:
            try:
                refuse_array_key(column.name, column.logical, schema.name)
            except ConfigError as exc:
                raise SinkError(str(exc), table=schema.name) from exc
