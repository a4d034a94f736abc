"""The publication and the replication slot of a pipeline: what pgoutput sends, and from where.

A publication names the tables whose changes pgoutput sends. :func:`ensure_publication` creates
it ``FOR TABLE`` the captured tables, or adds the captured tables it lacks; it never removes a
table (one no longer captured stays, and a log line says so), and it never changes how an
existing publication publishes: it says what to run instead. Creating one takes the CREATE
privilege on the database and owning every table; adding tables takes owning the publication
and those tables (or superuser): without that, the error prints the statement for an
administrator. Like Debezium's ``publication.autocreate.mode = filtered``, but adding rather
than ``SET TABLE`` (which would drop tables another pipeline may read). The same decision,
made without changing anything (:func:`plan_publication`), is what ``sparkcdc check`` and the
start of ``sparkcdc run`` check before Spark starts, so a refusal never waits for the stream.

On PostgreSQL 13+ a publication is made ``WITH (publish_via_partition_root = true)``: the
changes of a partitioned table's partitions are sent as changes of the partitioned table, the
one table sparkcdc captures (:meth:`~.catalog.PostgresCatalog.match_tables` lists the root, not
its partitions), so a new partition or a row moving between partitions needs nothing. An
existing publication that publishes a captured partitioned table without it is refused.

A logical slot keeps the WAL its consumer has not confirmed; :func:`ensure_slot` creates the
pipeline's slot with pgoutput in its database and checks an existing one (its plugin, database,
and whether its WAL is still there).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sparkcdc.core.errors import ConfigError, LogPositionGone, MissingPrivilege, SourceError
from sparkcdc.core.logs import counted
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.postgres.server.connect import Session
from sparkcdc.sources.postgres.wire.lsn import parse_lsn

log = logging.getLogger("sparkcdc.source")

PLUGIN = "pgoutput"
_PUBLICATION_SQL = (
    "SELECT pg_has_role(p.pubowner, 'USAGE'), p.puballtables, p.pubinsert, p.pubupdate,"
    " p.pubdelete, {via_root} FROM pg_publication p WHERE p.pubname = %s"
)
_PUBLISHED_SQL = (
    "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2"
)
_TABLES_SQL = (
    "SELECT n.nspname, c.relname, c.relkind, pg_has_role(c.relowner, 'USAGE')"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE (n.nspname, c.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)
_RIGHTS_SQL = (
    "SELECT r.rolsuper, has_database_privilege(current_database(), 'CREATE')"
    " FROM pg_roles r WHERE r.rolname = current_user"
)
_SLOT_SQL = (
    "SELECT slot_name, plugin, slot_type, database, active, active_pid, restart_lsn::text,"
    " confirmed_flush_lsn::text, {wal} FROM pg_replication_slots WHERE slot_name = %s"
)
_SLOTS_SQL = (
    "SELECT current_setting('max_replication_slots')::int,"
    " array(SELECT slot_name::text FROM pg_replication_slots ORDER BY 1)"
)
_CREATE_SLOT_SQL = "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, %s)"
_DROP_SLOT_SQL = "SELECT pg_drop_replication_slot(%s)"


@dataclass(frozen=True)
class SlotState:
    """A replication slot as ``pg_replication_slots`` shows it; ``wal_status`` (reserved,
    extended, unreserved, lost) and ``safe_wal_size`` (bytes before it is lost, None when
    unlimited) only from PostgreSQL 13."""

    name: str
    plugin: str | None
    slot_type: str
    database: str | None
    active: bool
    active_pid: int | None
    restart_lsn: int | None
    confirmed_flush_lsn: int | None
    wal_status: str | None
    safe_wal_size: int | None


# -- publications ---------------------------------------------------------------------------


def publication_tables(conn: Session, name: str) -> list[TableName]:
    """The tables publication ``name`` publishes (partitioned tables under their root when it
    publishes via the root)."""
    return [TableName(str(s), str(t)) for s, t in conn.query(_PUBLISHED_SQL, (name,))]


@dataclass(frozen=True)
class PublicationPlan:
    """What making publication ``name`` publish the captured tables takes: ``statement``
    (its CREATE PUBLICATION, or ALTER PUBLICATION … ADD TABLE; None when it publishes them
    all), the tables that adds, and the tables it publishes besides (they are left in it)."""

    name: str
    statement: str | None
    added: tuple[TableName, ...]
    extra: tuple[TableName, ...] = ()

    @property
    def creates(self) -> bool:
        """Whether the publication does not exist yet."""
        return self.statement is not None and self.statement.startswith("CREATE")


def plan_publication(
    conn: Session, name: str, tables: Sequence[TableName], user: str
) -> PublicationPlan:
    """What :func:`ensure_publication` would do, changing nothing: MissingPrivilege (with the
    statement for an administrator) unless ``user`` may do it, ConfigError for a publication
    that would leave changes out (see the module docstring)."""
    wanted = sorted(set(tables))
    via_root = "p.pubviaroot" if conn.server_version >= 130000 else "false"
    found = conn.query(_PUBLICATION_SQL.format(via_root=via_root), (name,))
    kinds = _table_kinds(conn, wanted)
    if not found:
        _check_rights(conn, name, wanted, user, kinds, create=True)
        return PublicationPlan(name, create_publication_sql(conn, name, wanted), tuple(wanted))
    owned, all_tables, *actions, root = (bool(v) for v in found[0])
    _check_publishing(conn, name, actions, root, [t for t in wanted if kinds[t][0] == "p"])
    published = set(publication_tables(conn, name))
    extra = tuple(sorted(published - set(wanted))) if not all_tables else ()
    missing = [] if all_tables else [t for t in wanted if t not in published]
    if not missing:
        return PublicationPlan(name, None, (), extra)
    kinds = {t: (k, owned and mine) for t, (k, mine) in kinds.items()}
    _check_rights(conn, name, missing, user, kinds, create=False)
    sql = f"ALTER PUBLICATION {conn.ident(name)} ADD TABLE {_list(conn, missing)}"
    return PublicationPlan(name, sql, tuple(missing), extra)


def ensure_publication(
    conn: Session, name: str, tables: Sequence[TableName], user: str
) -> list[TableName]:
    """Make publication ``name`` publish ``tables`` (see the module docstring); the tables it
    added (all of them when it created the publication)."""
    plan = plan_publication(conn, name, tables, user)
    if plan.extra:
        log.info(
            "publication %s on %s also publishes %s, which this pipeline does not capture; "
            "they are left in it",
            name, conn.address, ", ".join(map(str, plan.extra)),
        )  # fmt: skip
    if plan.statement is not None:
        conn.query(plan.statement)
        if plan.creates:
            log.info("created publication %s for %s on %s", name, counted(len(plan.added), "table"),
                     conn.address)  # fmt: skip
        else:
            log.info("added %s to publication %s on %s", counted(len(plan.added), "table"), name,
                     conn.address)  # fmt: skip
    return list(plan.added)


def create_publication_sql(conn: Session, name: str, tables: Sequence[TableName]) -> str:
    """The CREATE PUBLICATION statement for ``tables``."""
    sql = f"CREATE PUBLICATION {conn.ident(name)}"
    if tables:
        sql += f" FOR TABLE {_list(conn, tables)}"
    if conn.server_version >= 130000:
        sql += " WITH (publish_via_partition_root = true)"
    return sql


def _table_kinds(conn: Session, tables: Sequence[TableName]) -> dict[TableName, tuple[str, bool]]:
    """Each table's relkind and whether the user owns it (ConfigError for one that is gone)."""
    rows = conn.query(_TABLES_SQL, ([s for s, _ in tables], [t for _, t in tables]))
    kinds = {TableName(str(s), str(t)): (str(k), bool(mine)) for s, t, k, mine in rows}
    gone = [str(t) for t in tables if t not in kinds]
    if gone:
        raise ConfigError(
            f"Table {', '.join(gone)} does not exist on {conn.address} (any more); check "
            "source.tables.",
            key="source.tables",
        )
    return kinds


def _check_rights(
    conn: Session,
    name: str,
    tables: Sequence[TableName],
    user: str,
    kinds: dict[TableName, tuple[str, bool]],
    create: bool,
) -> None:
    """Raise MissingPrivilege with the statement to run unless ``user`` may create the
    publication (``create``) or add ``tables`` to it."""
    superuser, may_create = (bool(v) for v in conn.query(_RIGHTS_SQL)[0])
    if superuser or (all(kinds[t][1] for t in tables) and (may_create or not create)):
        return
    if create:
        what = f"Publication {name} does not exist in database '{conn.database}'"
        needs = "creating one takes the CREATE privilege on the database and owning its tables"
        sql = create_publication_sql(conn, name, tables)
    else:
        what = f"Publication {name} lacks {_list(conn, tables)}"
        needs = "adding them takes owning the publication and the tables"
        sql = f"ALTER PUBLICATION {conn.ident(name)} ADD TABLE {_list(conn, tables)}"
    raise MissingPrivilege(
        f"{what} on {conn.address} and user '{user}' may not change that ({needs}, or a "
        f"superuser); as an administrator run {sql} (or name another publication in "
        "source.publication).",
        user=user,
        missing=["CREATE" if create else "ALTER PUBLICATION"],
        statement=sql,
    )


def _check_publishing(
    conn: Session, name: str, actions: list[bool], via_root: bool, partitioned: list[TableName]
) -> None:
    """Raise ConfigError if the existing publication would leave out changes sparkcdc needs."""
    left_out = [a for a, on in zip(("insert", "update", "delete"), actions, strict=True) if not on]
    if left_out:
        raise ConfigError(
            f"Publication {name} on {conn.address} does not publish {', '.join(left_out)}, so "
            f"those changes would be missed; as its owner run ALTER PUBLICATION "
            f"{conn.ident(name)} SET (publish = 'insert, update, delete, truncate'), or name "
            "another publication in source.publication.",
            key="source.publication",
        )
    if partitioned and not via_root:
        raise ConfigError(
            f"Publication {name} on {conn.address} publishes the partitioned table "
            f"{_list(conn, partitioned)} under its partitions' names; as its owner run ALTER "
            f"PUBLICATION {conn.ident(name)} SET (publish_via_partition_root = true), or name "
            "another publication in source.publication.",
            key="source.publication",
        )


def _list(conn: Session, tables: Sequence[TableName]) -> str:
    return ", ".join(conn.qualified(s, t) for s, t in tables)


# -- replication slots ----------------------------------------------------------------------


def slot_state(conn: Session, name: str) -> SlotState | None:
    """The slot ``name``, None if the server has none of that name."""
    wal = "wal_status, safe_wal_size" if conn.server_version >= 130000 else "NULL, NULL"
    rows = conn.query(_SLOT_SQL.format(wal=wal), (name,))
    if not rows:
        return None
    slot, plugin, kind, database, active, pid, restart, confirmed, status, safe = rows[0]
    return SlotState(
        name=str(slot),
        plugin=None if plugin is None else str(plugin),
        slot_type=str(kind),
        database=None if database is None else str(database),
        active=bool(active),
        active_pid=None if pid is None else int(pid),
        restart_lsn=None if restart is None else parse_lsn(str(restart)),
        confirmed_flush_lsn=None if confirmed is None else parse_lsn(str(confirmed)),
        wal_status=None if status is None else str(status),
        safe_wal_size=None if safe is None else int(safe),
    )


def ensure_slot(conn: Session, name: str, database: str) -> SlotState:
    """The logical slot ``name`` of ``database`` decoding with pgoutput, created if missing
    (``conn`` must be connected to ``database``: a slot belongs to the database it is made
    in); SourceError for a slot of another kind or database, LogPositionGone for a slot whose
    WAL is gone."""
    if conn.database != database:
        raise ValueError(f"slot {name} belongs to {database}, not to {conn.database}")
    state = slot_state(conn, name)
    if state is None:
        try:
            conn.query(_CREATE_SLOT_SQL, (name, PLUGIN))
            log.info("created replication slot %s on %s", name, conn.address)
        except SourceError as exc:
            if exc.fields.get("sqlstate") == "53400":
                raise no_free_slot(conn, name) from exc
            if exc.fields.get("sqlstate") != "42710":  # not made by another process meanwhile
                raise
        state = slot_state(conn, name)
        assert state is not None, name
    check_slot(conn, state, database)
    return state


def check_slot(conn: Session, state: SlotState, database: str) -> None:
    """Raise unless ``state`` is a usable pgoutput slot of ``database``."""
    check_slot_kind(conn, state, database)
    where = f"Replication slot {state.name} on {conn.address}"
    drop = f"SELECT pg_drop_replication_slot('{state.name}')"
    if state.wal_status == "lost":
        raise LogPositionGone(
            f"{where} has lost the WAL it was keeping (wal_status lost: more WAL than "
            f"max_slot_wal_keep_size piled up behind it), so the changes since its position "
            f"are gone; drop it with {drop} and start the pipeline afresh with startup: initial.",
            slot=state.name,
        )
    if state.wal_status == "unreserved":
        log.warning(
            "replication slot %s on %s is about to lose its WAL (wal_status unreserved); "
            "the pipeline must catch up or max_slot_wal_keep_size be raised",
            state.name, conn.address,
        )  # fmt: skip


def check_slot_kind(conn: Session, state: SlotState, database: str) -> None:
    """Raise SourceError unless ``state`` is a logical slot decoding with pgoutput in
    ``database`` (any other cannot serve the pipeline, whatever its position)."""
    drop = f"SELECT pg_drop_replication_slot('{state.name}')"
    where = f"Replication slot {state.name} on {conn.address}"
    if state.slot_type != "logical" or state.plugin != PLUGIN:
        kind = "is a physical slot" if state.slot_type != "logical" else f"uses {state.plugin}"
        raise SourceError(
            f"{where} {kind}, not the logical decoding plugin {PLUGIN}; name another slot in "
            f"source.slot, or drop this one with {drop} if nothing else uses it.",
            slot=state.name,
        )
    if state.database != database:
        raise SourceError(
            f"{where} belongs to database '{state.database}', not '{database}' "
            f"(source.database); name another slot in source.slot, or drop this one with "
            f"{drop} if nothing else uses it.",
            slot=state.name,
        )


def drop_slot(conn: Session, name: str) -> bool:
    """Drop the slot ``name``; False if there was none. SourceError while a process uses it."""
    state = slot_state(conn, name)
    if state is None:
        return False
    if state.active:
        raise SourceError(
            f"Replication slot {name} on {conn.address} is in use by process "
            f"{state.active_pid}; stop that reader or end it with SELECT "
            f"pg_terminate_backend({state.active_pid}), then drop the slot.",
            slot=name,
        )
    conn.query(_DROP_SLOT_SQL, (name,))
    log.info("dropped replication slot %s on %s", name, conn.address)
    return True


def no_free_slot(conn: Session, name: str) -> SourceError:
    """The error for a slot ``name`` that cannot be created: every slot is taken."""
    limit, slots = conn.query(_SLOTS_SQL)[0]
    names = ", ".join(str(s) for s in slots) or "none"
    return SourceError(
        f"Replication slot {name} cannot be created on {conn.address}: all {limit} slots "
        f"max_replication_slots allows are taken ({names}); drop those no longer used with "
        f"SELECT pg_drop_replication_slot('<name>'), or raise max_replication_slots "
        f"(ALTER SYSTEM SET max_replication_slots = {int(limit) + 4}) and restart the server.",
        slot=name,
        slots=[str(s) for s in slots],
        limit=int(limit),
    )
