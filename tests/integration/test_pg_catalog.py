"""The PostgreSQL catalog against real servers: logins and their refusals, readiness checks,
table matching, schemas, the WAL's end, signal writes, publications and replication slots."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator

import pytest

from sparkcdc.config.model import SourceConfig
from sparkcdc.core.errors import (
    ConfigError,
    ConnectionFailed,
    LogNotReady,
    LogPositionGone,
    MissingPrivilege,
    NoTablesMatched,
    SourceError,
    TableWithoutKey,
)
from sparkcdc.sources.mysql.throwaway import free_port
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.server.catalog import PostgresCatalog
from sparkcdc.sources.postgres.server.connect import connect
from sparkcdc.sources.postgres.server.publication import (
    drop_slot,
    ensure_publication,
    ensure_slot,
    publication_tables,
    slot_state,
)
from sparkcdc.sources.postgres.settings import PostgresSettings
from sparkcdc.sources.postgres.throwaway import HBA, ThrowawayPostgres

pytestmark = pytest.mark.postgres

Role = Callable[..., str]


def config(
    server: ThrowawayPostgres,
    database: str,
    user: str | None = None,
    password: str | None = None,
    key_columns: dict[str, tuple[str, ...]] | None = None,
    port: int | None = None,
) -> SourceConfig:
    return SourceConfig(
        host=server.host,
        port=port or server.port,
        user=user or server.user,
        password=server.password if password is None else password,
        tables=(".*",),
        type="postgres",
        key_columns=key_columns or {},
        connect_timeout=3,
        settings=PostgresSettings(database=database),
    )


@pytest.fixture
def catalog(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[PostgresCatalog]:
    with PostgresCatalog(config(postgres, pgdb)) as cat:
        yield cat


@pytest.fixture
def role(postgres: ThrowawayPostgres, pgdb: str) -> Iterator[Role]:
    """Makes login roles (``role("REPLICATION")``) with password 'pw', dropped afterwards."""
    made: list[str] = []

    def make(*attributes: str) -> str:
        name = f"r_{uuid.uuid4().hex[:10]}"
        login = "" if "NOLOGIN" in attributes else "LOGIN"
        postgres.execute(f"CREATE ROLE {name} {login} PASSWORD 'pw' {' '.join(attributes)}")
        made.append(name)
        return name

    yield make
    for name in made:
        postgres.execute(f"DROP OWNED BY {name}", database=pgdb)
        postgres.execute(f"DROP ROLE {name}")


@pytest.fixture(scope="module")
def other() -> Iterator[ThrowawayPostgres]:
    """A second server (wal_level replica) whose pg_hba.conf lets TCP logins into database
    ``postgres`` only, except database ``trusting`` (trust: a missing role shows)."""
    server = ThrowawayPostgres.start(settings={"wal_level": "replica"})
    try:
        hba = HBA.replace("host    all ", "host    postgres ")
        hba += "host    trusting     all   127.0.0.1/32  trust\n"
        (server.datadir / "pg_hba.conf").write_text(hba)
        server.restart()
        yield server
    finally:
        server.stop()


def reconfigure(server: ThrowawayPostgres, **settings: str) -> None:
    """Restart ``server`` with ``settings`` over its start-up ones."""
    server.args = [a for a in server.args if a.split("=")[0][2:] not in settings]
    server.args += [f"-c{k}={v}" for k, v in settings.items()]
    server.restart()


# -- logins ---------------------------------------------------------------------------------


def test_session_settings(postgres: ThrowawayPostgres, pgdb: str) -> None:
    with connect(config(postgres, pgdb)) as session:
        rows = session.query(
            "SELECT current_setting('TimeZone'), current_setting('DateStyle'), "
            "current_setting('IntervalStyle'), current_setting('application_name'), "
            "interval '1 day 2 hours', current_database()"
        )
        assert rows == [("UTC", "ISO, MDY", "iso_8601", "sparkcdc", "P1DT2H", pgdb)]
        assert session.ident("plain") == "plain"
        assert session.qualified("Odd", "user") == '"Odd"."user"'


def test_login_refusals(postgres: ThrowawayPostgres, pgdb: str, role: Role) -> None:
    with pytest.raises(ConnectionFailed) as err:
        connect(config(postgres, pgdb, password="wrong"))
    assert "refused user 'postgres' (password authentication failed" in str(err.value)
    assert "check source.user and source.password." in str(err.value)
    with pytest.raises(ConfigError, match="has no database 'nope'; check source.database.") as bad:
        connect(config(postgres, "nope"))
    assert bad.value.fields["key"] == "source.database"  # the file's error: exit 78
    port = free_port()
    with pytest.raises(ConnectionFailed) as err:
        connect(config(postgres, pgdb, port=port))
    assert str(err.value).startswith(f"Cannot reach PostgreSQL at 127.0.0.1:{port} (")
    assert "check source.host and source.port" in str(err.value)
    name = role("NOLOGIN")
    with pytest.raises(ConnectionFailed, match=f'ALTER ROLE "{name}" LOGIN'):
        connect(config(postgres, pgdb, user=name, password="pw"))


def test_pg_hba_and_missing_role(other: ThrowawayPostgres) -> None:
    with pytest.raises(ConnectionFailed) as err:
        connect(config(other, "shop"))
    assert str(err.value) == (
        f"PostgreSQL at 127.0.0.1:{other.port} has no pg_hba.conf line letting user 'postgres' "
        "into database 'shop' from 127.0.0.1; an administrator adds the line 'host shop "
        "postgres 127.0.0.1/32 scram-sha-256' (hostssl for TLS only) to pg_hba.conf and runs "
        "SELECT pg_reload_conf()."
    )
    with pytest.raises(ConnectionFailed, match="has no role 'ghost'; check source.user"):
        connect(config(other, "trusting", user="ghost"))


# -- readiness ------------------------------------------------------------------------------


def test_superuser_is_ready(catalog: PostgresCatalog, postgres: ThrowawayPostgres) -> None:
    postgres.execute("CREATE TABLE t (id int PRIMARY KEY)", database=catalog.database)
    catalog.check_ready()
    assert catalog.match_tables(["public\\..*"]) == [("public", "t")]
    catalog.check_ready(["public"])


def test_wal_level_not_logical(other: ThrowawayPostgres) -> None:
    reconfigure(other, wal_level="replica")
    with PostgresCatalog(config(other, "postgres")) as cat, pytest.raises(LogNotReady) as err:
        cat.check_ready()
    assert str(err.value) == (
        f"wal_level is replica on 127.0.0.1:{other.port} but change data capture needs "
        "logical; run ALTER SYSTEM SET wal_level = logical as a superuser and restart the "
        "server."
    )


def test_no_wal_senders(other: ThrowawayPostgres) -> None:
    reconfigure(other, wal_level="logical", max_wal_senders="0")
    with PostgresCatalog(config(other, "postgres")) as cat, pytest.raises(LogNotReady) as err:
        cat.check_ready()
    assert "max_wal_senders is 0 on" in str(err.value)
    assert "ALTER SYSTEM SET max_wal_senders = 10 as a superuser and restart" in str(err.value)


def test_no_free_slot(other: ThrowawayPostgres) -> None:
    reconfigure(other, wal_level="logical", max_wal_senders="4", max_replication_slots="1")
    other.execute("SELECT pg_create_logical_replication_slot('taken', 'pgoutput')")
    try:
        with PostgresCatalog(config(other, "postgres"), slot="taken") as cat:
            cat.check_ready()  # the slot exists: nothing to create
        with PostgresCatalog(config(other, "postgres"), slot="mine") as cat:
            with pytest.raises(SourceError) as err:
                cat.check_ready()
            assert str(err.value) == (
                f"Replication slot mine cannot be created on 127.0.0.1:{other.port}: all 1 "
                "slots max_replication_slots allows are taken (taken); drop those no longer "
                "used with SELECT pg_drop_replication_slot('<name>'), or raise "
                "max_replication_slots (ALTER SYSTEM SET max_replication_slots = 5) and "
                "restart the server."
            )
            with pytest.raises(SourceError, match="all 1 slots"):
                ensure_slot(cat.session, "mine", "postgres")
    finally:
        other.execute("SELECT pg_drop_replication_slot('taken')")


def test_lost_slot(other: ThrowawayPostgres) -> None:
    reconfigure(other, wal_level="logical", max_slot_wal_keep_size="1", max_replication_slots="4")
    other.execute(
        "SELECT pg_create_logical_replication_slot('behind', 'pgoutput')",
        "CREATE TABLE IF NOT EXISTS churn (n int)",
    )
    try:
        for _ in range(4):
            other.execute("INSERT INTO churn VALUES (1)", "SELECT pg_switch_wal()")
        other.execute("CHECKPOINT")
        with connect(config(other, "postgres")) as session:
            state = slot_state(session, "behind")
            assert state is not None and state.wal_status == "lost"
            with pytest.raises(LogPositionGone) as err:
                ensure_slot(session, "behind", "postgres")
        assert str(err.value) == (
            f"Replication slot behind on 127.0.0.1:{other.port} has lost the WAL it was keeping "
            "(wal_status lost: more WAL than max_slot_wal_keep_size piled up behind it), so the "
            "changes since its position are gone; drop it with SELECT "
            "pg_drop_replication_slot('behind') and start the pipeline afresh with startup: "
            "initial."
        )
    finally:
        other.execute("SELECT pg_drop_replication_slot('behind')")


def test_user_without_replication(postgres: ThrowawayPostgres, pgdb: str, role: Role) -> None:
    name = role()
    user = config(postgres, pgdb, user=name, password="pw")
    with PostgresCatalog(user) as cat, pytest.raises(MissingPrivilege) as err:
        cat.check_ready()
    assert str(err.value) == (
        f"User '{name}' on 127.0.0.1:{postgres.port} has neither the REPLICATION attribute nor "
        "superuser, and logical replication needs one; as an administrator run ALTER ROLE "
        f"{name} REPLICATION."
    )


def test_user_without_select(postgres: ThrowawayPostgres, pgdb: str, role: Role) -> None:
    name = role("REPLICATION")
    postgres.execute(
        "CREATE TABLE a (id int PRIMARY KEY)",
        "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE SCHEMA hidden",
        "CREATE TABLE hidden.c (id int PRIMARY KEY)",
        f"GRANT SELECT ON a TO {name}",
        database=pgdb,
    )
    with PostgresCatalog(config(postgres, pgdb, user=name, password="pw")) as cat:
        cat.check_ready()
        assert cat.match_tables([".*"]) == [("hidden", "c"), ("public", "a"), ("public", "b")]
        with pytest.raises(MissingPrivilege) as err:
            cat.check_ready(["public"])
        assert str(err.value) == (
            f"User '{name}' lacks SELECT on public.b on 127.0.0.1:{postgres.port}; as an "
            f"administrator run GRANT SELECT ON public.b TO {name}."
        )
        with pytest.raises(MissingPrivilege) as err:
            cat.check_ready(["hidden", "public"])
        assert (
            f"lacks USAGE on schema hidden and SELECT on hidden.c, public.b on "
            f"127.0.0.1:{postgres.port}; as an administrator run GRANT USAGE ON SCHEMA hidden "
            f"TO {name}; GRANT SELECT ON hidden.c, public.b TO {name}."
        ) in str(err.value)
        postgres.execute(f"GRANT SELECT ON b TO {name}", database=pgdb)
        with pytest.raises(MissingPrivilege, match="may not change that"):
            cat.check_ready(["public"])  # then the publication, which it may not make
        postgres.execute(f"CREATE PUBLICATION {cat.publication} FOR TABLE a, b", database=pgdb)
        cat.check_ready(["public"])


def test_replica_identity(postgres: ThrowawayPostgres, pgdb: str) -> None:
    postgres.execute(
        "CREATE TABLE loose (a int, b text)",
        "CREATE TABLE mute (id int PRIMARY KEY)",
        "ALTER TABLE mute REPLICA IDENTITY NOTHING",
        "CREATE TABLE parts (at date NOT NULL, v int) PARTITION BY RANGE (at)",
        "CREATE TABLE parts_2024 PARTITION OF parts FOR VALUES FROM ('2024-01-01') TO "
        "('2025-01-01')",
        database=pgdb,
    )
    keyed = config(postgres, pgdb, key_columns={"public.loose": ("a",)})
    with PostgresCatalog(config(postgres, pgdb)) as cat:
        cat.match_tables(["public\\.loose"])
        with pytest.raises(TableWithoutKey) as err:
            cat.check_ready(["public"])
        assert str(err.value) == (
            f"Table public.loose on 127.0.0.1:{postgres.port} has no primary key, so "
            "PostgreSQL refuses its updates and deletes once it is published; as its owner run "
            "ALTER TABLE public.loose REPLICA IDENTITY FULL (or REPLICA IDENTITY USING INDEX on "
            "a unique index of NOT NULL columns), and name the columns that identify a row "
            'with source.key_columns: {"public.loose": [col, ...]}.'
        )
        cat.match_tables(["public\\.mute"])
        with pytest.raises(TableWithoutKey, match="has REPLICA IDENTITY NOTHING"):
            cat.check_ready(["public"])
        cat.match_tables(["public\\.parts"])
        with pytest.raises(TableWithoutKey) as err:
            cat.check_ready(["public"])
        assert str(err.value).startswith("Partition public.parts_2024 of public.parts on")
        assert "ALTER TABLE public.parts_2024 REPLICA IDENTITY FULL" in str(err.value)
    with PostgresCatalog(keyed) as cat:
        cat.match_tables(["public\\.loose"])
        with pytest.raises(TableWithoutKey) as err:
            cat.check_ready(["public"])  # key_columns alone: updates would still be refused
        assert "source.key_columns" not in str(err.value)
        postgres.execute("ALTER TABLE loose REPLICA IDENTITY FULL", database=pgdb)
        cat.check_ready(["public"])


# -- tables and schemas ---------------------------------------------------------------------


def test_match_tables(catalog: PostgresCatalog, postgres: ThrowawayPostgres) -> None:
    postgres.execute(
        "CREATE SCHEMA shop",
        "CREATE TABLE shop.orders (id int PRIMARY KEY)",
        "CREATE TABLE shop.order_items (id int PRIMARY KEY)",
        'CREATE TABLE shop."Mixed Case" (id int PRIMARY KEY)',
        "CREATE TABLE shop.events (at date NOT NULL, id int) PARTITION BY RANGE (at)",
        "CREATE TABLE shop.events_1 PARTITION OF shop.events FOR VALUES FROM ('2024-01-01') "
        "TO ('2025-01-01')",
        "CREATE UNLOGGED TABLE shop.scratch (id int)",
        "CREATE VIEW shop.v AS SELECT 1 AS one",
        "CREATE TABLE public.other (id int PRIMARY KEY)",
        database=catalog.database,
    )
    assert catalog.match_tables(["shop\\..*"]) == [
        ("shop", "Mixed Case"),
        ("shop", "events"),
        ("shop", "order_items"),
        ("shop", "orders"),
    ]
    assert catalog.match_tables(["shop\\.order", "public\\.oth.*", "shop\\.orders"]) == [
        ("public", "other"),
        ("shop", "orders"),
    ]
    assert catalog.match_tables(["shop\\.events.*"]) == [("shop", "events")]
    with pytest.raises(NoTablesMatched) as err:
        catalog.match_tables(["shop\\.nothing", "pg_catalog\\..*"])
    assert str(err.value) == (
        f"No table in database '{catalog.database}' on {catalog.address} matches "
        "source.tables ['shop\\\\.nothing', 'pg_catalog\\\\..*']; tables are looked for in "
        "source.database only (postgres when it is not set), so set it to the database that "
        "holds them, or fix the patterns (regular expressions over schema.table, e.g. "
        "'public\\..*') or create the tables."
    )
    assert catalog.match_tables(["shop\\.orders", "shop\\.nothing"]) == [("shop", "orders")]
    with pytest.raises(NoTablesMatched) as err:  # each pattern must match, as check asks
        catalog.match_tables(["shop\\.orders", "shop\\.nothing", "x.*"], each=True)
    assert str(err.value).startswith(
        "The source.tables patterns 'shop\\\\.nothing', 'x.*' match no table in database "
        f"'{catalog.database}' on {catalog.address}, while the others do; tables are looked "
    )
    assert str(err.value).endswith(
        "or set source.on_unmatched: warn to start with the tables the others match."
    )
    assert err.value.fields == {"key": "source.tables", "patterns": ["shop\\.nothing", "x.*"]}
    with pytest.raises(ConfigError, match="source.tables: 'shop\\(' is not a regular"):
        catalog.match_tables(["shop("])


def test_load_schema(catalog: PostgresCatalog, postgres: ThrowawayPostgres) -> None:
    postgres.execute(
        "CREATE TYPE mood AS ENUM ('sad', 'ok')",
        "CREATE DOMAIN price AS numeric(10, 2)",
        "CREATE TABLE wide (c int, b varchar(20) NOT NULL, a bigint, dropped int, "
        "n numeric(12, 3), t timestamptz(3), m mood, p price, tags text[], "
        "g int GENERATED ALWAYS AS (c * 2) STORED, PRIMARY KEY (b, a))",
        "ALTER TABLE wide DROP COLUMN dropped",
        database=catalog.database,
    )
    schema = catalog.load_schema("public", "wide")
    assert schema.column_names() == ["c", "b", "a", "n", "t", "m", "p", "tags"]
    assert schema.primary_key == ("b", "a") and schema.key_columns == ()
    got = {c.name: (c.data_type, c.logical, c.nullable) for c in schema.columns}
    assert got == {
        "c": ("int4", "int32", True),
        "b": ("varchar", "string", False),
        "a": ("int8", "int64", False),
        "n": ("numeric", "decimal(12,3)", True),
        "t": ("timestamptz", "timestamp", True),
        "m": ("mood", "string", True),
        "p": ("numeric", "decimal(10,2)", True),
        "tags": ("_text", "array<string>", True),
    }
    assert schema.column("b").length == 20 and schema.column("t").fsp == 3
    with pytest.raises(SourceError, match="Table public.nothing does not exist on"):
        catalog.load_schema("public", "nothing")


def test_load_schema_without_primary_key(
    catalog: PostgresCatalog, postgres: ThrowawayPostgres
) -> None:
    postgres.execute(
        "CREATE TABLE loose (a int NOT NULL, b int NOT NULL)",
        "CREATE TABLE ided (a int NOT NULL, b int NOT NULL)",
        "CREATE UNIQUE INDEX ided_b ON ided (b)",
        "ALTER TABLE ided REPLICA IDENTITY USING INDEX ided_b",
        database=catalog.database,
    )
    with pytest.raises(TableWithoutKey) as err:
        catalog.load_schema("public", "loose")
    assert str(err.value) == (
        f"Table public.loose on {catalog.address} has no primary key; name the columns that "
        'identify a row with source.key_columns: {"public.loose": [col, ...]} and, so that '
        "its updates and deletes reach the log, run ALTER TABLE public.loose REPLICA "
        "IDENTITY FULL."
    )
    assert err.value.fields == {"db": "public", "table": "loose"}
    schema = catalog.load_schema("public", "loose", ["B", "a"])
    assert schema.primary_key == () and schema.key == ("b", "a")
    with pytest.raises(ConfigError, match="public.loose has no column z; list columns"):
        catalog.load_schema("public", "loose", ["z"])
    assert catalog.load_schema("public", "ided").key == ("b",)  # the replica identity index
    postgres.execute("ALTER TABLE loose REPLICA IDENTITY FULL", database=catalog.database)
    with pytest.raises(TableWithoutKey) as err:
        catalog.load_schema("public", "loose")
    assert "REPLICA IDENTITY FULL" not in str(err.value)


# -- the log and signals --------------------------------------------------------------------


def test_log_end_grows(catalog: PostgresCatalog, postgres: ThrowawayPostgres) -> None:
    before = catalog.log_end()
    assert isinstance(before, LsnOffset) and before.skip == 0
    postgres.execute(
        "CREATE TABLE t (id int)", "INSERT INTO t VALUES (1)", database=catalog.database
    )
    assert catalog.log_end().lsn > before.lsn


def test_write_signal(
    catalog: PostgresCatalog, postgres: ThrowawayPostgres, pgdb: str, role: Role
) -> None:
    with pytest.raises(ConfigError) as err:
        catalog.write_signal("ops.signals", "s1", "execute-snapshot", "{}")
    assert str(err.value) == (
        f"The signal table ops.signals does not exist in database '{catalog.database}' on "
        f"{catalog.address}; create it with "
        "CREATE TABLE ops.signals (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
        "data TEXT NULL) and grant user 'postgres' INSERT on it."
    )
    postgres.execute(
        "CREATE SCHEMA ops",
        "CREATE TABLE ops.signals (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
        "data TEXT NULL)",
        database=pgdb,
    )
    catalog.write_signal("ops.signals", "s1", "execute-snapshot", '{"data-collections": []}')
    rows = postgres.query("SELECT id, type, data FROM ops.signals", database=pgdb)
    assert rows == [("s1", "execute-snapshot", '{"data-collections": []}')]
    name = role("REPLICATION")
    postgres.execute(f"GRANT USAGE ON SCHEMA ops TO {name}", database=pgdb)
    user = config(postgres, pgdb, user=name, password="pw")
    with PostgresCatalog(user) as cat, pytest.raises(MissingPrivilege) as err:
        cat.write_signal("ops.signals", "s2", "stop-snapshot", "{}")
    assert str(err.value) == (
        f"User '{name}' may not insert into ops.signals on {cat.address}; as an administrator "
        f"run GRANT INSERT ON ops.signals TO {name}, or send the signal with --channel file."
    )


# -- publications ---------------------------------------------------------------------------


def test_publication_created_and_extended(
    catalog: PostgresCatalog, postgres: ThrowawayPostgres, caplog: pytest.LogCaptureFixture
) -> None:
    postgres.execute(
        "CREATE TABLE a (id int PRIMARY KEY)",
        "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE TABLE p (at date NOT NULL, id int, PRIMARY KEY (at, id)) PARTITION BY RANGE (at)",
        "CREATE TABLE p_1 PARTITION OF p FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
        database=catalog.database,
    )
    session, user = catalog.session, catalog.user
    added = ensure_publication(session, "pub", [("public", "a"), ("public", "p")], user)
    assert added == [("public", "a"), ("public", "p")]
    assert publication_tables(session, "pub") == [("public", "a"), ("public", "p")]
    assert session.query("SELECT pubviaroot FROM pg_publication WHERE pubname = 'pub'") == [(True,)]
    assert ensure_publication(session, "pub", [("public", "a"), ("public", "p")], user) == []
    with caplog.at_level(logging.INFO, logger="sparkcdc.source"):
        added = ensure_publication(session, "pub", [("public", "b"), ("public", "p")], user)
    assert added == [("public", "b")]
    assert publication_tables(session, "pub") == [("public", "a"), ("public", "b"), ("public", "p")]
    assert "also publishes public.a, which this pipeline does not capture" in caplog.text


def test_publication_refused(postgres: ThrowawayPostgres, pgdb: str, role: Role) -> None:
    name = role("REPLICATION")
    postgres.execute(
        "CREATE TABLE a (id int PRIMARY KEY)",
        "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE TABLE mine (id int PRIMARY KEY)",
        f"ALTER TABLE mine OWNER TO {name}",
        database=pgdb,
    )
    with connect(config(postgres, pgdb, user=name, password="pw")) as session:
        with pytest.raises(MissingPrivilege) as err:
            ensure_publication(session, "Pub", [("public", "b"), ("public", "a")], name)
        assert str(err.value) == (
            f"Publication Pub does not exist in database '{pgdb}' on {session.address} and "
            f"user '{name}' may not change that (creating one takes the CREATE privilege on "
            "the database and owning its tables, or a superuser); as an administrator run "
            'CREATE PUBLICATION "Pub" FOR TABLE public.a, public.b WITH '
            "(publish_via_partition_root = true) (or name another publication in "
            "source.publication)."
        )
        with pytest.raises(MissingPrivilege, match="CREATE PUBLICATION pub2 FOR TABLE public.mine"):
            ensure_publication(session, "pub2", [("public", "mine")], name)  # no CREATE on db
        postgres.execute(f'GRANT CREATE ON DATABASE "{pgdb}" TO {name}')
        try:
            assert ensure_publication(session, "pub2", [("public", "mine")], name)
            with pytest.raises(MissingPrivilege) as err:
                ensure_publication(session, "pub2", [("public", "mine"), ("public", "a")], name)
            assert "Publication pub2 lacks public.a on" in str(err.value)
            assert "as an administrator run ALTER PUBLICATION pub2 ADD TABLE public.a (" in str(
                err.value
            )
        finally:
            postgres.execute(f'REVOKE CREATE ON DATABASE "{pgdb}" FROM {name}')


def test_publication_that_leaves_changes_out(
    catalog: PostgresCatalog, postgres: ThrowawayPostgres
) -> None:
    postgres.execute(
        "CREATE TABLE a (id int PRIMARY KEY)",
        "CREATE TABLE p (id int PRIMARY KEY) PARTITION BY RANGE (id)",
        "CREATE PUBLICATION inserts FOR TABLE a WITH (publish = 'insert')",
        "CREATE PUBLICATION leaves FOR TABLE a",
        database=catalog.database,
    )
    session = catalog.session
    with pytest.raises(ConfigError) as err:
        ensure_publication(session, "inserts", [("public", "a")], "postgres")
    assert str(err.value) == (
        f"Publication inserts on {catalog.address} does not publish update, delete, so those "
        "changes would be missed; as its owner run ALTER PUBLICATION inserts SET (publish = "
        "'insert, update, delete, truncate'), or name another publication in "
        "source.publication."
    )
    with pytest.raises(ConfigError, match="SET \\(publish_via_partition_root = true\\)"):
        ensure_publication(session, "leaves", [("public", "p")], "postgres")


# -- slots ----------------------------------------------------------------------------------


def test_slots(catalog: PostgresCatalog, postgres: ThrowawayPostgres, pgdb: str) -> None:
    session, slot = catalog.session, f"s_{pgdb[-40:]}"
    try:
        assert slot_state(session, slot) is None
        state = ensure_slot(session, slot, pgdb)
        assert (state.plugin, state.slot_type, state.database) == ("pgoutput", "logical", pgdb)
        assert state.confirmed_flush_lsn is not None and not state.active
        assert state.wal_status == "reserved" and state.safe_wal_size is None
        assert ensure_slot(session, slot, pgdb) == state
        with connect(config(postgres, "postgres")) as other_db, pytest.raises(SourceError) as err:
            ensure_slot(other_db, slot, "postgres")
        assert str(err.value) == (
            f"Replication slot {slot} on {catalog.address} belongs to database '{pgdb}', not "
            "'postgres' (source.database); name another slot in source.slot, or drop this one "
            f"with SELECT pg_drop_replication_slot('{slot}') if nothing else uses it."
        )
        assert drop_slot(session, slot) and not drop_slot(session, slot)
        session.query("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
        with pytest.raises(SourceError) as err:
            ensure_slot(session, slot, pgdb)
        assert str(err.value).startswith(
            f"Replication slot {slot} on {catalog.address} uses test_decoding, not the logical "
            "decoding plugin pgoutput; name another slot in source.slot"
        )
    finally:
        with contextlib.suppress(SourceError):
            drop_slot(session, slot)
