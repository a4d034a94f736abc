"""The replica's side of a micro-batch: the latest change per key, by log order.

A MERGE must see each key once. Every change becomes an *action* ordered by its log position
(``2 * position``, ``+ 1`` for the upsert half): a delete is a delete of its key; an insert or
update is an upsert of its key; an update that changes the key is also a delete of the old key
just before. The action with the highest order per key wins (a group-by inside Arrow, no Python
per row).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.event import OP_TRUNCATE
from sparkcdc.sinks.delta.commits import OP_COLUMN, ORDER_COLUMN


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
    parts = []
    for image, mask, op_value, step in (
        (before, pc.or_(deleted, key_moved), "d", 0),
        (after, pc.invert(deleted), "u", 1),
    ):
        mask = pc.and_(mask, live)
        flat = image.filter(mask).flatten()
        order = pc.add(pc.multiply(pos.filter(mask), 2), step)
        kind = pa.repeat(pa.scalar(op_value, pa.string()), len(order))
        parts.append(
            pa.Table.from_arrays([*flat, kind, order], names=[*names, OP_COLUMN, ORDER_COLUMN])
        )
    actions = pa.concat_tables(parts)
    if actions.num_rows == 0:
        return actions
    key_names = [n for n in names if n.lower() in {k.lower() for k in key}]
    latest = actions.group_by(key_names).aggregate([(ORDER_COLUMN, "max")])
    return actions.filter(
        pc.is_in(actions.column(ORDER_COLUMN), latest.column(f"{ORDER_COLUMN}_max"))
    )
