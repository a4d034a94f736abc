"""MySQL and MariaDB behind the source port: the binary log, the catalog, the chunk queries.

    server/   the catalog connection: readiness and grants, tables and schemas, startup offsets,
              a throwaway MariaDB server for demos and tests (throwaway.py beside it)
    binlog/   the replication protocol, binlog events and rows decoding, the log reader, the
              back-fill read of a chunk's window
    ddl/      parsing the DDL statements of the log
    schema/   the column types and their logical types, schema tracking and its history
    chunks/   the snapshot's chunk queries (the chunk dialect)

Importing this package imports no driver: the registry reads :data:`SOURCE_TYPE`, and the
:class:`~sparkcdc.sources.mysql.source.MySQLSource` is imported when a source is opened.
"""

from sparkcdc.sources.mysql.offset import BinlogOffset
from sparkcdc.sources.mysql.settings import MySQLSettings
from sparkcdc.sources.port import SourceType

SOURCE_TYPE = SourceType(
    name="mysql",
    aliases=("mariadb",),
    default_port=3306,
    settings=MySQLSettings,
    offsets=BinlogOffset,
    source="sparkcdc.sources.mysql.source:MySQLSource",
    preload=("connectorx", "sparkcdc.sources.mysql.chunks.dialect"),
)

__all__ = ["SOURCE_TYPE"]
