"""The replica's columns reshaped as ``pipeline.schema_changes`` says, for every table format:
a schema row's kinds refused (``exception``), its plan (:mod:`.replica_plan`) applied through
the format's :meth:`~.lake.TableFormat.retype` (``try_evolve`` keeping a type the values do not
fit), and the columns it drops kept until the micro-batch's changes are written."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa

from sparkcdc.core.errors import SinkError
from sparkcdc.core.schema import TableSchema
from sparkcdc.core.schema_policy import SchemaChange, SchemaPolicy
from sparkcdc.core.table_name import TableName
from sparkcdc.sinks.changes.replica_plan import ChangeRefused, plan_replica, refuse_changes

if TYPE_CHECKING:
    from sparkcdc.sinks.changes.lake import TableFormat

log = logging.getLogger("sparkcdc.sink")


class Reshaper:
    """The replicas of ``tables`` under ``policy``."""

    def __init__(self, tables: TableFormat, policy: SchemaPolicy) -> None:
        self.tables = tables
        self.policy = policy
        # columns to drop from replicas once the micro-batch's changes are written
        self.dropping: dict[TableName, tuple[str, ...]] = {}

    def refuse(self, table: str, changes: list[SchemaChange], ddl: str) -> None:
        """SinkError with the sentence if a kind of ``changes`` is refused."""
        try:
            refuse_changes(table, changes, self.policy, ddl)
        except ChangeRefused as exc:
            raise SinkError(str(exc), table=table) from exc

    def columns(
        self, name: TableName, stored: list[pa.Field], schema: TableSchema,
        changes: list[SchemaChange],
    ) -> list[pa.Field]:  # fmt: skip
        """The replica's columns for ``changes`` (``schema`` the source's after them; ``stored``
        the replica's now), its columns retyped already; the ones to add are the caller's."""
        try:
            plan = plan_replica(stored, schema, changes, self.policy)
        except ChangeRefused as exc:
            raise SinkError(str(exc), table=str(name)) from exc
        columns = list(plan.columns)
        if plan.retyped:
            columns = self._retype(name, plan.retyped, stored, columns)
        if plan.dropped:
            self.dropping[name] = tuple(dict.fromkeys(self.dropping.get(name, ()) + plan.dropped))
        return columns

    def _retype(
        self,
        name: TableName,
        retyped: tuple[tuple[pa.Field, bool], ...],
        stored: list[pa.Field],
        columns: list[pa.Field],
    ) -> list[pa.Field]:
        """``columns`` once the replica's ``retyped`` columns have their new types; where the
        values do not fit and ``try_evolve`` decided, the types stay (a warning)."""
        try:
            self.tables.retype(name, [f for f, _ in retyped])
            return columns
        except ValueError as exc:
            if not all(tried for _, tried in retyped):
                setting = self.policy.setting("alter_column_type")
                raise SinkError(
                    f"the replica of {name} cannot take a column's new type ({exc}) as "
                    f"{setting} asks; set it to try_evolve or lenient to keep the old type",
                    table=str(name),
                ) from exc
            log.warning("the replica of %s keeps its column types: %s (try_evolve)", name, exc)
            kept = {f.name.lower(): f for f in stored}
            return [kept.get(f.name.lower(), f) for f in columns]
        except Exception as exc:
            raise SinkError(
                f"could not retype the {self.tables.label} tables of {name}: {exc}",
                table=str(name),
            ) from exc

    def drop_pending(self) -> dict[TableName, list[pa.Field]]:
        """Drop the columns kept for the end of the micro-batch; each replica's columns now."""
        now: dict[TableName, list[pa.Field]] = {}
        for name, names in list(self.dropping.items()):
            try:
                now[name] = self.tables.drop_columns(name, list(names))
            except Exception as exc:
                raise SinkError(
                    f"could not drop {', '.join(names)} from the {self.tables.label} replica "
                    f"of {name}: {exc}",
                    table=str(name),
                ) from exc
            del self.dropping[name]
        return now
