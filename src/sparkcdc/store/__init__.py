"""The event store between the log reader thread and Spark (Canal's ring buffer design)."""

from sparkcdc.core.errors import StoreClosed
from sparkcdc.store.batch import Batch, StoreStats
from sparkcdc.store.ring import BatchMode, EventStore

__all__ = ["Batch", "BatchMode", "EventStore", "StoreClosed", "StoreStats"]
