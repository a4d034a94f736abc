"""The object store's faults: it answers 500 or 503 for a while, or answers slowly, through the
trial's HTTP proxy (:mod:`.http_proxy`) between the pipeline and the S3 server (the checker
reads the server directly). Lakes on object storage only (the ``delta-s3`` sink).

They have the interface of :class:`tests.faults.kinds.Fault` (``kinds`` registers them in its
``FAULTS``), and reach the trial's ``http_proxy`` beside what :class:`~.kinds.Target` names."""

from __future__ import annotations

import random
import time
from typing import ClassVar, Protocol

from tests.faults.http_proxy import Errors, Pass, Slow
from tests.faults.store_proxy import StoreProxy


class StoreTarget(Protocol):
    """What an object store fault reaches in a trial."""

    http_proxy: StoreProxy | None
    rng: random.Random
    notes: dict[str, str]


class StoreFault:
    """A fault of the lake's object store, healed by letting every request pass again."""

    name: ClassVar[str]
    only_source: ClassVar[str | None] = None
    local_lake: ClassVar[bool] = False
    writes_pause: ClassVar[bool] = False
    writes_during: ClassVar[bool] = True  # the sink has changes to write while the store fails

    def applies(self, source: str, sink: str) -> bool:
        return sink == "delta-s3"

    def inject(self, t: StoreTarget) -> None:
        raise NotImplementedError

    def heal(self, t: StoreTarget) -> None:
        proxy = _proxy(t)
        proxy.set(Pass())
        t.notes["requests"] = ", ".join(f"{k} {n}" for k, n in sorted(proxy.counts.items()))


class StoreErrors(StoreFault):
    """Every request (or every PUT alone: uploads begin, their parts fail) answered 500
    (InternalError) or 503 (SlowDown, with ``Retry-After`` or without) for a few seconds up to
    20, the connection kept open or closed after each."""

    name = "s3-errors"

    def inject(self, t: StoreTarget) -> None:
        status = t.rng.choice((500, 503))
        retry_after = t.rng.choice((None, 1)) if status == 503 else None
        methods = t.rng.choice(((), ("PUT",)))
        errors = Errors(status, retry_after, close=t.rng.random() < 0.5, methods=methods)
        held = t.rng.uniform(2.0, 20.0)
        t.notes["errors"] = (
            f"{status}{' Retry-After 1' if retry_after else ''}"
            + (", connection closed" if errors.close else "")
            + (" to PUT requests" if methods else "")
        )
        t.notes["held_s"] = f"{held:.1f}"
        _proxy(t).set(errors)
        time.sleep(held)


class StoreSlow(StoreFault):
    """Every request held 0.5 to 2 s before it is forwarded, its bodies sometimes throttled to
    1 to 4 MiB a second, for 10 to 30 s."""

    name = "s3-slow"

    def inject(self, t: StoreTarget) -> None:
        delay = t.rng.uniform(0.5, 2.0)
        rate = t.rng.choice((None, t.rng.randint(1, 4) << 20))
        held = t.rng.uniform(10.0, 30.0)
        t.notes["slow"] = f"{delay:.2f} s a request" + (f", {rate >> 20} MiB/s" if rate else "")
        t.notes["held_s"] = f"{held:.1f}"
        _proxy(t).set(Slow(delay, rate))
        time.sleep(held)


def _proxy(t: StoreTarget) -> StoreProxy:
    if t.http_proxy is None:
        raise RuntimeError("an object store fault in a trial whose lake is not behind the proxy")
    return t.http_proxy


OBJECT_STORE_FAULTS = (StoreErrors(), StoreSlow())
