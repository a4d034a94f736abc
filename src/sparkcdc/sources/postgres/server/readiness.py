"""Is a PostgreSQL server ready for change data capture, and may the user capture the tables?

The checks (each refusal one sentence naming the server, the setting or statement, and the way
out), in the order a new installation meets them, as Debezium and Flink CDC check a server
before they stream (``wal_level``, the REPLICATION attribute, free slots, table privileges and
replica identity):

* PostgreSQL 10 or later (pgoutput);
* ``wal_level = logical``, ``max_wal_senders`` > 0, ``max_replication_slots`` > 0
  (:class:`~sparkcdc.core.errors.LogNotReady`; each takes a restart);
* the user is superuser or has the REPLICATION attribute (MissingPrivilege; roles on managed
  services that grant replication through a role, such as ``rds_replication``, are not covered);
* a free slot, when the pipeline's slot still has to be created (SourceError listing the slots),
  or, when it exists, a logical pgoutput slot of the pipeline's database;
* USAGE on the captured schemas and SELECT on the captured tables (MissingPrivilege with the
  GRANTs, found with ``has_schema_privilege`` and ``has_table_privilege``);
* each captured table (each leaf partition of a partitioned one) has a replica identity that
  lets PostgreSQL publish its updates and deletes: a primary key, ``FULL`` or ``USING INDEX``.
  With ``DEFAULT`` and no primary key, or ``NOTHING``, PostgreSQL refuses UPDATE and DELETE on
  the table once it is in a publication, so ``source.key_columns`` alone does not do
  (TableWithoutKey naming ``ALTER TABLE … REPLICA IDENTITY FULL``);
* the publication publishes the captured tables, or the user may create it or add them
  (:func:`~.publication.plan_publication`: MissingPrivilege with the statement to run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparkcdc.core.errors import LogNotReady, MissingPrivilege, SourceError, TableWithoutKey
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.postgres.server.connect import Session
from sparkcdc.sources.postgres.server.publication import (
    check_slot_kind,
    no_free_slot,
    slot_state,
)

_SETTINGS_SQL = (
    "SELECT name, setting FROM pg_settings"
    " WHERE name IN ('wal_level', 'max_wal_senders', 'max_replication_slots')"
)
_ROLE_SQL = "SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user"
_SLOT_COUNT_SQL = "SELECT count(*) FROM pg_replication_slots"
_SCHEMAS_SQL = (
    "SELECT s.name, has_schema_privilege(n.oid, 'USAGE') FROM unnest(%s::text[]) AS s(name)"
    " JOIN pg_namespace n ON n.nspname = s.name ORDER BY 1"
)
_TABLES_SQL = (
    "SELECT n.nspname, c.relname, has_table_privilege(c.oid, 'SELECT')"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE (n.nspname, c.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    " ORDER BY 1, 2"
)
# the captured tables and, for a partitioned one, its leaf partitions, with their identity
_IDENTITY_SQL = (
    "SELECT rn.nspname, r.relname, n.nspname, c.relname, c.relreplident,"
    " EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)"
    " FROM pg_class r JOIN pg_namespace rn ON rn.oid = r.relnamespace"
    " CROSS JOIN LATERAL {tree} t"
    " JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE t.isleaf AND c.relkind = 'r'"
    " AND (rn.nspname, r.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
    " ORDER BY 1, 2, 3, 4"
)
_TREE = (
    "(SELECT relid, isleaf FROM pg_partition_tree(r.oid) WHERE r.relkind = 'p'"
    " UNION ALL SELECT r.oid, true WHERE r.relkind <> 'p')"
)
_NO_TREE = "(SELECT r.oid AS relid, true AS isleaf)"  # before PostgreSQL 12
_RESTART = "and restart the server"


def check_server(conn: Session, slot: str | None = None) -> None:
    """Raise unless the server writes logical WAL, lets the user replicate, and (``slot``:
    the pipeline's slot) has a slot free should that slot still have to be created, or has
    it as a pgoutput slot of this database."""
    where = f"PostgreSQL at {conn.address}"
    if conn.server_version < 100000:
        raise SourceError(
            f"{where} runs version {conn.server_version // 10000}, but change data capture "
            "with pgoutput needs PostgreSQL 10 or later; upgrade the server.",
        )
    found = {str(k): str(v) for k, v in conn.query(_SETTINGS_SQL)}
    level = found.get("wal_level", "")
    if level != "logical":
        raise LogNotReady(
            f"wal_level is {level or 'unset'} on {conn.address} but change data capture needs "
            f"logical; run ALTER SYSTEM SET wal_level = logical as a superuser {_RESTART}.",
            variable="wal_level",
            value=level,
            expected="logical",
        )
    _check_role(conn)
    for name in ("max_wal_senders", "max_replication_slots"):
        if int(found.get(name, "0")) == 0:
            raise LogNotReady(
                f"{name} is 0 on {conn.address}, so no replication connection can stream; run "
                f"ALTER SYSTEM SET {name} = 10 as a superuser {_RESTART}.",
                variable=name,
                value="0",
                expected="1 or more",
            )
    state = None if slot is None else slot_state(conn, slot)
    if state is not None:
        check_slot_kind(conn, state, conn.database)
    elif slot is not None:
        used = int(conn.query(_SLOT_COUNT_SQL)[0][0])
        if used >= int(found["max_replication_slots"]):
            raise no_free_slot(conn, slot)


def _check_role(conn: Session) -> None:
    rows = conn.query(_ROLE_SQL)
    superuser, replication = (bool(v) for v in rows[0]) if rows else (False, False)
    if not (superuser or replication):
        raise MissingPrivilege(
            f"User '{conn.user}' on {conn.address} has neither the REPLICATION attribute nor "
            "superuser, and logical replication needs one; as an administrator run ALTER ROLE "
            f"{conn.ident(conn.user)} REPLICATION.",
            user=conn.user,
            missing=["REPLICATION"],
        )


def check_access(conn: Session, schemas: Sequence[str], tables: Sequence[TableName]) -> None:
    """Raise MissingPrivilege (with the GRANTs) unless the user has USAGE on ``schemas`` and
    on the schemas of ``tables``, and SELECT on ``tables``."""
    names = sorted({*schemas, *(s for s, _ in tables)})
    no_usage = [str(s) for s, ok in conn.query(_SCHEMAS_SQL, (names,)) if not ok]
    args = ([s for s, _ in tables], [t for _, t in tables])
    no_select = [(str(s), str(t)) for s, t, ok in conn.query(_TABLES_SQL, args) if not ok]
    if not no_usage and not no_select:
        return
    user = conn.ident(conn.user)
    lacks, grants = [], []
    if no_usage:
        listed = ", ".join(conn.ident(s) for s in no_usage)
        lacks.append(f"USAGE on schema {listed}")
        grants.append(f"GRANT USAGE ON SCHEMA {listed} TO {user}")
    if no_select:
        listed = ", ".join(conn.qualified(s, t) for s, t in no_select)
        lacks.append(f"SELECT on {listed}")
        grants.append(f"GRANT SELECT ON {listed} TO {user}")
    raise MissingPrivilege(
        f"User '{conn.user}' lacks {' and '.join(lacks)} on {conn.address}; as an "
        f"administrator run {'; '.join(grants)}.",
        user=conn.user,
        missing=[p.split(" ")[0] for p in lacks],
    )


def check_identity(
    conn: Session, tables: Sequence[TableName], key_columns: Mapping[str, Sequence[str]]
) -> None:
    """Raise TableWithoutKey for the first captured table (or leaf partition of one) whose
    updates and deletes PostgreSQL cannot publish (see the module docstring)."""
    tree = _TREE if conn.server_version >= 120000 else _NO_TREE
    args = ([s for s, _ in tables], [t for _, t in tables])
    for db, table, schema, name, identity, has_key in conn.query(
        _IDENTITY_SQL.format(tree=tree), args
    ):
        if identity == "n" or (identity == "d" and not has_key):
            raise _without_identity(
                conn,
                TableName(str(db), str(table)),
                TableName(str(schema), str(name)),
                str(identity),
                key_columns,
            )


def _without_identity(
    conn: Session,
    captured: TableName,
    leaf: TableName,
    identity: str,
    key_columns: Mapping[str, Sequence[str]],
) -> TableWithoutKey:
    full = str(captured)
    what = f"Table {full}" if leaf == captured else f"Partition {leaf} of {full}"
    state = "REPLICA IDENTITY NOTHING" if identity == "n" else "no primary key"
    fix = f"ALTER TABLE {conn.qualified(*leaf)} REPLICA IDENTITY FULL"
    keys = "" if key_columns.get(full) else (
        f', and name the columns that identify a row with source.key_columns: {{"{full}": '
        "[col, ...]}"
    )  # fmt: skip
    return TableWithoutKey(
        f"{what} on {conn.address} has {state}, so PostgreSQL refuses its updates and deletes "
        f"once it is published; as its owner run {fix} (or REPLICA IDENTITY USING INDEX on a "
        f"unique index of NOT NULL columns){keys}.",
        db=captured[0],
        table=captured[1],
        replica_identity=identity,
    )
