"""What every log reader does around its own decoding: a daemon thread, the store's
backpressure, transaction boundaries into items and progress markers, reconnects.

A source's reader subclasses :class:`LogThread` and supplies :meth:`LogThread._prepare` (the
start, once), :meth:`LogThread._stream` (one connection from an offset, feeding the
:class:`~sparkcdc.store.cutter.TransactionCutter`) and :meth:`LogThread._interrupt` (unblock
the thread). Committed transactions are coalesced in the cutter's pending item while more of the
log is buffered (:meth:`LogThread._end_txn`, :meth:`LogThread._idle`); transactions without
captured rows become progress markers, at most one per ``progress_interval`` or when the stream
goes idle. With ``source.heartbeat`` (:mod:`sparkcdc.sources.heartbeat`) the thread beats once
per interval while it waits for the log: the source's :meth:`LogThread._beat`, then the progress
marker waiting; progress markers then go out at least once per interval. A lost connection is
retried with exponential backoff (0.5 s doubling to 30 s, giving up after ``reconnect_timeout``)
from the ``after`` of the last item put.

What a subclass may change of the thread's state it changes through these methods, never by
writing its fields: :meth:`LogThread._mark_connected`, :meth:`LogThread._count_events` (per list
of events received, not per event), :meth:`LogThread._record_event_time` (per transaction),
:meth:`LogThread._record_position` (a boundary read that ends no transaction), and for the
store :meth:`LogThread._put`, :meth:`LogThread._end_txn`, :meth:`LogThread._idle`,
:meth:`LogThread._put_marker` and :meth:`LogThread._flush_waiting`. It reads
:attr:`LogThread.last_boundary`, :attr:`LogThread.stopping` (or calls
:meth:`LogThread._check_stopped`) and :meth:`LogThread._since_last_put`.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod

from sparkcdc.config.model import HeartbeatConfig
from sparkcdc.core.capture import CaptureRules
from sparkcdc.core.errors import ConnectionFailed, SourceError, StoreClosed
from sparkcdc.core.logitem import LogItem
from sparkcdc.core.offset import Offset
from sparkcdc.sources.captured_items import captured_item
from sparkcdc.sources.heartbeat import Heartbeat
from sparkcdc.sources.port import ReaderStats, TableView
from sparkcdc.store.cutter import TransactionCutter
from sparkcdc.store.ring import EventStore

log = logging.getLogger("sparkcdc.reader")

COALESCE_SECONDS = 0.05  # the longest a committed transaction waits in the pending item


class Stopped(Exception):
    """stop() was called; unwinds the reader thread."""


class ReachedStop(Exception):
    """The stream reached its stop offset: a bounded read (a snapshot window) is complete."""


class LogThread(ABC):
    """A log reader's thread and its hand-over to the store (see the module docstring)."""

    cutter: TransactionCutter

    def __init__(
        self,
        where: str,
        store: EventStore,
        *,
        reconnect_timeout: float = 300.0,
        progress_interval: float = 0.2,
        heartbeat: HeartbeatConfig | None = None,
        capture: CaptureRules | None = None,
    ) -> None:
        self.where = where  # host:port, for messages
        self.store = store
        self.capture = capture or CaptureRules()  # applied to every item before the store
        self.reconnect_timeout = reconnect_timeout
        self.beats = Heartbeat(heartbeat or HeartbeatConfig())
        if self.beats.enabled:
            progress_interval = min(progress_interval, self.beats.interval)
        self.progress_interval = progress_interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._events = self._rows = self._reconnects = 0
        self._connected = False
        self._position: Offset | None = None  # the last boundary read
        self._last_ts_ms = 0
        self._last_put: Offset | None = None
        self._last_put_at = 0.0
        self._pending_marker: Offset | None = None

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        """Start streaming in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("this log reader was started already; create a new one.")
        self._thread = threading.Thread(target=self._run, name="sparkcdc-log-reader", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread promptly: it may finish on its own for :meth:`_stop_grace` seconds,
        then :meth:`_interrupt` unblocks it."""
        self._stop.set()
        thread = self._thread
        other = thread is not None and thread is not threading.current_thread()
        grace = self._stop_grace()
        if thread is not None and other and grace > 0:
            thread.join(min(timeout, grace))
        self._interrupt()
        if thread is not None and other:
            thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def error(self) -> BaseException | None:
        """The exception that stopped the reader (None while running or after stop())."""
        return self._error

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """Whether stop() was called."""
        return self._stop.is_set()

    @property
    def last_boundary(self) -> Offset | None:
        """The last transaction boundary read (None before the start)."""
        return self._position

    def stats(self) -> ReaderStats:
        return ReaderStats(
            self._events, self._rows, self._position, self._last_ts_ms, self._connected,
            self._reconnects, self.beats.count,
        )  # fmt: skip

    def table_view(self, name: str) -> TableView | None:
        """:meth:`~sparkcdc.sources.port.LogReader.table_view`: the catalog's schema serves,
        unless the source's reader says otherwise."""
        return None

    # ------------------------------------------------------------------ for the source
    @abstractmethod
    def _prepare(self) -> Offset:
        """Where to stream from, after the first items (schema announcements) are put."""

    @abstractmethod
    def _stream(self, resume: Offset) -> None:
        """Stream one connection from ``resume`` until it ends or breaks (ConnectionFailed)."""

    @abstractmethod
    def _interrupt(self) -> None:
        """Unblock the thread (close the connection under it)."""

    @abstractmethod
    def _beat(self) -> None:
        """The source's part of a heartbeat (its action query, the position it reached)."""

    def _rewind(self, resume: Offset) -> None:
        """The stream is read again from ``resume`` after a lost connection."""
        self._pending_marker = None

    def _finish(self) -> None:
        """The thread ends: release what it holds."""
        self._interrupt()

    def _retryable(self, exc: SourceError) -> bool:
        """Whether ``exc`` means the connection ended, not that streaming cannot work."""
        return isinstance(exc, ConnectionFailed)

    def _data_waiting(self) -> bool:
        """Whether more of the log is already received (the pending item may wait for it)."""
        return False

    def _stop_grace(self) -> float:
        """Seconds stop() lets the thread end on its own before it interrupts it."""
        return 0.0

    # ------------------------------------------------------------------ what the source sets
    def _mark_connected(self) -> None:
        """A connection is streaming (until it breaks or the thread ends)."""
        self._connected = True

    def _count_events(self, count: int) -> None:
        """``count`` more events (or messages) were received: once per list received."""
        self._events += count

    def _record_event_time(self, ts_ms: int) -> None:
        """The log's time of the last event read, in milliseconds since the epoch."""
        self._last_ts_ms = ts_ms

    def _record_position(self, boundary: Offset) -> None:
        """A boundary read that ends no transaction (the start, a DDL, the log's end)."""
        self._position = boundary

    def _check_stopped(self) -> None:
        """Raise :class:`Stopped` if stop() was called."""
        if self._stop.is_set():
            raise Stopped

    def _since_last_put(self) -> float:
        """Seconds since the last item went into the store."""
        return time.monotonic() - self._last_put_at

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        try:
            self._stream_with_retries(self._prepare())
        except ReachedStop:
            self._flush_waiting()
            self.store.close()
        except (Stopped, StoreClosed):
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer through the store
            if not self._stop.is_set():
                self._error = exc
                log.error("log reader stopped: %s", exc)
                self.store.close(exc)
        finally:
            self._connected = False
            self._finish()

    def _stream_with_retries(self, start: Offset) -> None:
        resume, backoff, lost_at, events = start, 0.5, 0.0, -1
        while True:
            try:
                self._stream(resume)
                raise ConnectionFailed("the server ended the log stream; it will be retried")
            except SourceError as exc:
                if not self._retryable(exc):
                    raise
                if self._stop.is_set():
                    raise Stopped from None
                now = time.monotonic()
                if self._events != events or not lost_at:  # read something since: anew
                    lost_at, backoff, events = now, 0.5, self._events
                self._connected = False
                self._interrupt()
                if now - lost_at >= self.reconnect_timeout:
                    raise ConnectionFailed(
                        f"lost the replication connection to {self.where} and could not "
                        f"reconnect within source.reconnect_timeout ({self.reconnect_timeout:g}"
                        f" s; {str(exc).rstrip('.')}); check the server, then restart the "
                        "pipeline (or raise source.reconnect_timeout)."
                    ) from exc
                log.warning("connection lost (%s); reconnecting in %.1fs", exc, backoff)
                if self._stop.wait(backoff):
                    raise Stopped from None
                backoff = min(backoff * 2, 30.0)
                self._reconnects += 1
                resume = self._last_put or start
                self._rewind(resume)

    def _put(self, item: LogItem) -> None:
        item = captured_item(self.capture, item)
        while not self.store.put(item, timeout=0.2):
            if self._stop.is_set():
                raise Stopped
        self._last_put = item.after
        self._last_put_at = time.monotonic()
        self._pending_marker = None
        self._rows += item.rows if not item.is_ddl else 0

    # ------------------------------------------------------------------ boundaries
    def _end_txn(self, boundary: Offset) -> None:
        """A transaction ended at ``boundary``: its rows join the pending item, which goes out
        when full or old; without captured rows the boundary becomes a progress marker."""
        self._position = boundary
        cutter = self.cutter
        if cutter.commit(boundary) if cutter.open else cutter.advance(boundary):
            pending = cutter.pending
            assert pending is not None
            if (
                len(pending) >= cutter.item_rows
                or time.monotonic() - cutter.pending_since >= COALESCE_SECONDS
            ):
                cutter.flush()
            else:
                self._pending_marker = None  # the pending item carries this boundary
            return
        self._pending_marker = boundary
        if time.monotonic() - self._last_put_at >= self.progress_interval:
            self._put(LogItem(after=boundary))

    def _idle(self) -> None:
        """Nothing whole is buffered: put the pending item unless more data has arrived already
        and it is young enough to wait for it; beat if a heartbeat is due."""
        cutter = self.cutter
        if cutter.pending is not None and (
            time.monotonic() - cutter.pending_since >= COALESCE_SECONDS or not self._data_waiting()
        ):
            cutter.flush()
        self._heartbeat()

    def _put_marker(self) -> None:
        """The progress marker waiting, if any, goes out now."""
        if self._pending_marker is not None:
            self._put(LogItem(after=self._pending_marker))

    def _flush_waiting(self) -> None:
        """The pending item, then the progress marker waiting, go out now."""
        self.cutter.flush()
        self._put_marker()

    def _heartbeat(self) -> None:
        """Once per heartbeat interval: the source's beat, then the progress marker waiting
        (called while the thread waits for the log)."""
        if not self.beats.due():
            return
        self._beat()
        self.beats.beaten()
        marker = self._pending_marker
        if marker is not None and not self.cutter.open and self.cutter.pending is None:
            self._put(LogItem(after=marker))
