"""A fake source behind the port, for tests where no database is the point.

``source.type: tests.fakes`` (or the Spark format ``fake-cdc``, registered with
``sparkcdc.spark.register(spark, "tests.fakes")``) reads a fake database kept in one JSON-lines
file, whose path is ``source.host`` (:class:`~tests.fakes.database.FakeLog` writes it): the table
schemas, then one transaction per line. Every part of the port is there (catalog, offsets,
startup, log reader, back-fill, chunk dialect, ack), so the contract suite, the snapshot
algorithms and the Spark source run on it as on a database; being a file, it is shared by the
Spark processes that read it.
"""

from sparkcdc.config.model import SourceSettings
from sparkcdc.sources.port import SourceType
from tests.fakes.offset import FakeOffset

SOURCE_TYPE = SourceType(
    name="fake",
    aliases=(),
    default_port=0,
    settings=SourceSettings,  # none of its own: nothing of the tests package travels to executors
    offsets=FakeOffset,
    source="tests.fakes.source:FakeSource",
)

__all__ = ["SOURCE_TYPE"]
