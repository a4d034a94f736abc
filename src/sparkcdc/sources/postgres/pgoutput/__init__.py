"""pgoutput, PostgreSQL's logical replication output plugin: its messages and its values.

- :mod:`.messages`: the protocol version 1 and 2 messages decoded from XLogData payloads
  (:func:`~.messages.decode`, :class:`~.messages.Decoder`), row tuples as lists of texts.
- :mod:`.types`: PostgreSQL column types (OID, typmod) -> :class:`~sparkcdc.core.schema.Column`
  with its logical type; the mapping table and the logical types core does not have yet.
- :mod:`.values`: one column of text values -> one Arrow array (vectorised), and the per-value
  row-image JSON form.
- :mod:`.literals`: PostgreSQL's text output forms parsed one value at a time (dates,
  timestamps, intervals, bytea, array literals).
"""

from sparkcdc.sources.postgres.pgoutput.messages import (
    UNCHANGED,
    Decoder,
    Message,
    PgoutputError,
    decode,
)
from sparkcdc.sources.postgres.pgoutput.types import NEEDED_LOGICAL_TYPES, relation_columns
from sparkcdc.sources.postgres.pgoutput.values import convert, json_value, to_arrow

__all__ = [
    "NEEDED_LOGICAL_TYPES",
    "UNCHANGED",
    "Decoder",
    "Message",
    "PgoutputError",
    "convert",
    "decode",
    "json_value",
    "relation_columns",
    "to_arrow",
]
