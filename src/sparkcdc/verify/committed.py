"""How far a pipeline has committed, read from its Spark checkpoint while it runs.

A source chunk read at log position ``p`` and the replica compare equal only once the pipeline
has committed every change up to ``p``; a chunk that differs before that may be a change in
flight, not a fault. :class:`CommittedPosition` waits for the pipeline to commit past ``p``
(Spark writes ``commits/<n>`` after the sink has written batch ``n``, whose end offset is the
last line of ``offsets/<n>``), or says that it will not (no pipeline running, or not within
the time allowed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sparkcdc.core.json_value import JSONObject
from sparkcdc.core.offset import Offset
from sparkcdc.spark.offsets import source_position
from sparkcdc.spark.pipeline.offset_log import newest_batch, read_offset_file
from sparkcdc.spark.pipeline.run_lock import running_holder


def committed_offset(spark_checkpoint: Path) -> JSONObject | None:
    """The source offset (JSON) the last committed micro-batch ended at, or None."""
    last = newest_batch(spark_checkpoint / "commits")
    if last is None:
        return None
    return read_offset_file(spark_checkpoint / "offsets" / last.name).offset


def pipeline_running(checkpoint: Path) -> bool:
    """Whether a ``sparkcdc run`` holds the pipeline checkpointed at ``checkpoint`` now."""
    return running_holder(checkpoint / "sparkcdc") is not None


class CommittedPosition:
    """Waits until a running pipeline has committed past a log position."""

    def __init__(
        self,
        spark_checkpoint: Path,
        parse: Callable[[dict[str, object]], Offset],
        running: Callable[[], bool],
        timeout: float,
    ) -> None:
        self.spark_checkpoint, self.parse, self.running = spark_checkpoint, parse, running
        self.timeout = timeout

    def current(self) -> Offset | None:
        """The log offset committed last (None before the first, or during the snapshot)."""
        value = committed_offset(self.spark_checkpoint)
        position = None if value is None else source_position(value)
        if position is None:
            return None
        found: dict[str, object] = dict(position)
        return self.parse(found)

    def wait_past(self, position: Offset) -> bool:
        """Whether the pipeline committed at or past ``position`` within the timeout; False at
        once when no pipeline runs."""
        deadline = time.monotonic() + self.timeout
        while self.running():
            now = self.current()
            if now is not None and now >= position:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)
        return False
