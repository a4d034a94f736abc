"""The lake's object storage failing for a while: answering 500, 503 (SlowDown) or throttling.

S3 and the stores like it answer so now and then, and for seconds at a time under load or while
a node is replaced. Their clients retry a little by themselves: pyarrow's AWS SDK three attempts
within a second, delta-rs ten within a few seconds. The sink rides out a longer spell:

- delta-rs is given a retry budget of :data:`RETRY_S` seconds (``retry_timeout``, with
  ``max_retries`` high enough never to end it first and the backoff capped at
  :data:`MAX_BACKOFF_S`) where ``sink.storage_options`` sets none (:func:`delta_retry_options`);
- the sink's own calls through ``pyarrow.fs`` are tried again within the same budget, with
  capped exponential backoff and jitter (:func:`retrying`); each is a whole call that may be
  repeated (a read, a listing, a single PUT, an upload under the same name, a delete);
- a store still failing after that ends the run with one sentence, :class:`StoreUnavailable`,
  naming the store, what it answered and the way out (:func:`unavailable`): run again, the
  pipeline goes on from its last committed batch, every commit carrying its batch's
  transaction id (nothing is written twice).

A failure is told apart by the error's text (both clients raise OSError for everything): an
answer of the server's that says "later" (HTTP 5xx, SlowDown, throttling), never a refusal
(403, 404), a missing file or a connection that could not be made (the lake check names those).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from sparkcdc.core.errors import StoreUnavailable

log = logging.getLogger("sparkcdc.sink")

T = TypeVar("T")

RETRY_S = 60.0  # how long a failing store is waited for, per call
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 4.0

_TRANSIENT = re.compile(
    r"HTTP status 5\d\d|\b5\d\d (?:Internal Server Error|Service Unavailable|Bad Gateway|"
    r"Gateway Timeout|Slow Down)|AWS Error (?:SLOW_DOWN|INTERNAL_FAILURE|SERVICE_UNAVAILABLE|"
    r"THROTTLING)|<Code>(?:SlowDown|InternalError|ServiceUnavailable|"
    r"Throttling|RequestLimitExceeded)</Code>"
)
_STATUS = re.compile(r"HTTP status (5\d\d)|\b(5\d\d) [A-Z][a-z]+ [A-Z]")
_CODE = re.compile(r"<Code>(\w+)</Code>|AWS Error (?!UNKNOWN)(\w+)")
_AWS_SDK_CODES = {
    "SLOW_DOWN": ("503", "SlowDown"),
    "SERVICE_UNAVAILABLE": ("503", "ServiceUnavailable"),
    "INTERNAL_FAILURE": ("500", "InternalError"),
    "THROTTLING": (None, "Throttling"),
}
_WAITED = re.compile(r" in (\d+(?:\.\d+)?)s, after \d+ retries")  # delta-rs's own retries


class ShortUpload(OSError):
    """An upload that ended without an error but stored less than its file: tried again."""


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it came from) is the store saying "later"."""
    for found in _chain(exc):
        if isinstance(found, (StoreUnavailable, ShortUpload)):
            return True
        if isinstance(found, FileNotFoundError):
            return False
        if _TRANSIENT.search(str(found)):
            return True
    return False


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors it was raised from, innermost last."""
    found: list[BaseException] = []
    at: BaseException | None = exc
    while at is not None and at not in found and len(found) < 10:
        found.append(at)
        at = at.__cause__ or at.__context__
    return found


def answered(exc: BaseException) -> str:
    """What the store answered, short and as S3 names it: ``HTTP 503 SlowDown``."""
    text = " ".join(str(e) for e in _chain(exc))
    found = _STATUS.search(text)
    status = (found.group(1) or found.group(2)) if found else None
    named = _CODE.search(text)
    code = (named.group(1) or named.group(2)) if named else None
    if code in _AWS_SDK_CODES:  # pyarrow's AWS SDK names S3's answer its own way
        status, code = status or _AWS_SDK_CODES[code][0], _AWS_SDK_CODES[code][1]
    parts = ([f"HTTP {status}"] if status else []) + ([code] if code else [])
    return " ".join(parts) or "an error answer"


def where(uri: str, endpoint: str | None) -> str:
    """The store as a sentence names it: the lake's URI and its endpoint (no user part)."""
    if not endpoint:
        return uri
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{uri} at {parts.scheme}://{host}{port}"


def unavailable(store: str, exc: BaseException, waited: float | None) -> StoreUnavailable:
    """The sentence of a store that kept failing for ``waited`` seconds (None: as long as
    delta-rs's error says, if it does)."""
    if waited is None:
        spent = _WAITED.search(" ".join(str(e) for e in _chain(exc)))
        waited = float(spent.group(1)) if spent else None
    during = f" for {waited:.0f} s" if waited is not None else ""
    return StoreUnavailable(
        f"the object storage of {store} kept failing{during} ({answered(exc)}); check that "
        "the storage service is up, then run the pipeline again: it goes on from its last "
        "committed batch, writing nothing twice.",
        store=store,
    )


def as_unavailable(exc: BaseException, store: str) -> StoreUnavailable | None:
    """``exc`` as :class:`StoreUnavailable` if the store's failing is behind it (delta-rs's
    error once its own retries are spent, perhaps inside another error); else None."""
    for found in _chain(exc):
        if isinstance(found, StoreUnavailable):
            return found
    return unavailable(store, exc, None) if transient(exc) else None


def retrying(
    call: Callable[[], T],
    store: str,
    budget: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``, tried again while the store fails transiently, for up to ``budget``
    seconds (:data:`RETRY_S`): capped exponential backoff with equal jitter (half the delay
    fixed, half random); :class:`StoreUnavailable` once the budget is spent."""
    budget = RETRY_S if budget is None else budget
    began = clock()
    delay = FIRST_BACKOFF_S
    while True:
        try:
            return call()
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) or not transient(exc):
                raise
            waited = clock() - began
            if waited + delay > budget:
                raise unavailable(store, exc, waited) from exc
            if delay == FIRST_BACKOFF_S:
                log.warning("the object storage of %s answered %s; trying again for up to "
                            "%.0f s", store, answered(exc), budget)  # fmt: skip
            sleep(delay / 2 + random.uniform(0, delay / 2))
            delay = min(MAX_BACKOFF_S, delay * 2)


def delta_retry_options(given: Mapping[str, str]) -> dict[str, str]:
    """delta-rs's retry options (object_store's) for :data:`RETRY_S`, those ``given`` kept."""
    wanted = {
        "max_retries": "1000",  # the time-out ends the retries first
        "retry_timeout": f"{RETRY_S:g}s",
        "backoff_config.init_backoff": f"{FIRST_BACKOFF_S * 1000:g}ms",
        "backoff_config.max_backoff": f"{MAX_BACKOFF_S:g}s",
    }
    have = {k.lower() for k in given}
    return {k: v for k, v in wanted.items() if k not in have}
