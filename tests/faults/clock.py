"""The database's wall clock, which the campaign can step: its servers run under libfaketime
(Debian's ``libfaketime``, preloaded) reading their offset from a file every second, with
their monotonic clocks left alone, as an NTP step leaves them. The ``clock-skew`` fault writes
an offset of a minute to an hour, ahead or behind, and later zero: the commit times the log
carries jump while the pipeline's clock does not (heartbeats, lag, history validity times).

Each server has a clock of its own, so a trial steps its own database's alone, and a server
whose clock was stepped is restarted after its trial
(:meth:`tests.faults.servers.Servers.after_trial`): a timed wait begun before a step back
lasts as much longer as the step, and MariaDB's binlog checkpoint, which a later trial's
``PURGE BINARY LOGS`` waits for, was seen stalled for minutes in trials after one.

Without it (a machine without the package) the servers run as they are and the fault
does not apply."""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path

from tests.faults.kinds import Fault, Target

PRELOAD_GLOB = "/usr/lib/*/faketime/libfaketime.so.1"


def faketime_preload() -> str | None:
    found = sorted(glob.glob(PRELOAD_GLOB))
    return found[0] if found else None


class ServerClock:
    """The offset file ``file`` and the launcher that makes a server read it."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.preload = faketime_preload()
        self.set(0)

    def launcher(self) -> list[str]:
        """The command a server runs through (nothing without the preload)."""
        if self.preload is None:
            return []
        return [
            "env", f"LD_PRELOAD={self.preload}", f"FAKETIME_TIMESTAMP_FILE={self.file}",
            "FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1",
        ]  # fmt: skip

    def set(self, offset_s: int) -> None:
        """Step the servers' wall clock to ``offset_s`` seconds from the true time (read
        within a second); the file replaced at once, readable by the servers' account."""
        tmp = self.file.with_name(self.file.name + ".tmp")
        tmp.write_text(f"{offset_s:+d}\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.file)


class ClockSkew(Fault):
    """The database's clock stepped by a minute to an hour either way while changes are written,
    held a few seconds, stepped back."""

    name = "clock-skew"
    writes_during = True
    SETTLE_S = 1.5  # the servers read the file each second

    def applies(self, source: str, sink: str) -> bool:
        return faketime_preload() is not None and super().applies(source, sink)

    def inject(self, t: Target) -> None:
        step = t.rng.choice((-1, 1)) * t.rng.randint(60, 3600)
        t.notes["step_s"] = f"{step:+d}"
        t.clock.set(step)
        time.sleep(self.SETTLE_S + t.rng.uniform(2.0, 10.0))

    def heal(self, t: Target) -> None:
        t.clock.set(0)
        time.sleep(self.SETTLE_S)
