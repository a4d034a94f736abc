"""PostgreSQL behind the source port: logical replication with pgoutput, the catalog, the slot.

    wire/       the frontend/backend protocol on sockets: logins, queries, the replication
                commands and the logical replication stream
    pgoutput/   pgoutput's messages, the type mapping, text values into Arrow
    server/     the catalog connection: readiness, tables and schemas, publication and slot
    stream/     the log reader: pgoutput messages into the event store
    throwaway.py  a throwaway server for the tests

Importing this package imports no driver: the registry reads :data:`SOURCE_TYPE`, and the
:class:`~sparkcdc.sources.postgres.source.PostgresSource` is imported when a source is opened.
"""

from sparkcdc.sources.port import SourceType
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings

SOURCE_TYPE = SourceType(
    name="postgres",
    aliases=("postgresql", "pg"),
    default_port=5432,
    settings=PostgresSettings,
    offsets=LsnOffset,
    source="sparkcdc.sources.postgres.source:PostgresSource",
)

__all__ = ["SOURCE_TYPE"]
