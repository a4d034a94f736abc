"""The one sentence for an event of the log that cannot be decoded, for both log readers.

Each reader decodes an event (a binlog event, a pgoutput message) inside one ``try`` at the
place it takes the event from the stream, and hands whatever escaped to :func:`decode_error`:

    escaped                                   becomes
    Stopped, ReachedStop, StoreClosed         itself (the reader's control flow)
    a sparkcdc error naming the place         itself (or one placed by an inner boundary)
    a sparkcdc error not naming it            the same error, its sentence prefixed with
                                              "at <place> (<event>): "
    anything else (struct.error, IndexError,  DecodeError: "the <event> at <place> cannot be
    UnicodeDecodeError, zstd's, MemoryError,  decoded (<exception>: <text>); <what to do>"
    RecursionError, a bug …)

so no raw Python exception leaves a reader and every decoding failure names the event's kind
and its place (``mysql-bin.000003:4711``, ``LSN 0/16B3748``).
"""

from __future__ import annotations

import copy

from sparkcdc.core.errors import DecodeError, SparkCDCError, StoreClosed
from sparkcdc.sources.log_thread import ReachedStop, Stopped

_PASS = (Stopped, ReachedStop, StoreClosed)
_MAX_TEXT = 200  # characters of the exception's own text kept in the sentence


def decode_error(
    exc: BaseException, event: str, where: str, advice: str, **fields: object
) -> SparkCDCError | None:
    """The error to raise for ``exc``, which escaped while ``event`` at ``where`` was decoded
    (None: re-raise ``exc`` itself); ``advice`` is what to do, ``fields`` name the place."""
    if isinstance(exc, _PASS) or not isinstance(exc, Exception):
        return None
    fields = {"event": event, **fields}
    if isinstance(exc, SparkCDCError):
        if where in exc.message or "event" in exc.fields:
            return None  # placed already (here, or by an inner event's boundary)
        placed = copy.copy(exc)  # the same class and fields (every sparkcdc error pickles)
        placed.message = f"at {where} ({event}): {exc.message}"
        placed.args = (placed.message,)
        placed.fields = {**fields, **exc.fields}
        return placed
    text = str(exc)
    if len(text) > _MAX_TEXT:
        text = text[:_MAX_TEXT] + "…"
    kind = type(exc).__name__
    if type(exc).__module__ not in ("builtins", "__main__"):
        kind = f"{type(exc).__module__.split('.')[0]}.{kind}"  # struct.error, not "error"
    cause = f"{kind}: {text}" if text else kind
    return DecodeError(f"the {event} at {where} cannot be decoded ({cause}); {advice}", **fields)
