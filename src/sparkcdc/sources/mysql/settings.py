"""The settings a MySQL/MariaDB source adds to the common ones: its replica server ids, and
the startup forms of a binary log.

``server_id`` is the replica server id the binlog connection announces (unique on the server),
or a range ``5701-5710`` / ``[5701, 5710]`` whose first id is the binlog connection's and the
others the snapshot readers'; without a range they use the ``parallelism`` ids after it. It is
read from ``source.server_id`` in the pipeline file and from the ``server_id`` option of the
``mysql-cdc`` Spark source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sparkcdc.config.model import SNAPSHOT_STARTUPS, SourceConfig, SourceSettings
from sparkcdc.config.values import as_int, as_text, fail
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.json_value import JSONObject
from sparkcdc.sources.mysql.binlog.gtid import check_gtid

MAX_SERVER_ID = 2**32 - 1
DEFAULT_SERVER_ID = 5701
_POSITION = re.compile(r"^position:(?P<file>.+\.\d+):(?P<pos>\d+)$")
_ID_RANGE = re.compile(r"^(\d+)\s*-\s*(\d+)$")


@dataclass(frozen=True)
class MySQLSettings(SourceSettings):
    """A MySQL/MariaDB source's server ids (see the module docstring)."""

    KEYS = ("server_id",)
    STARTUP_FORMS = (
        "gtid:<domain-server-seq[,...]> (MariaDB) or gtid:<uuid:first-last[,...]> (MySQL)",
        "position:<binlog file>:<pos>",
        "timestamp:<epoch milliseconds>",
    )

    server_id: int = DEFAULT_SERVER_ID
    server_id_last: int | None = None

    @classmethod
    def from_values(
        cls, given: Callable[[str], object], key: Callable[[str], str]
    ) -> MySQLSettings:
        value = given("server_id")
        if value is None:
            return cls()
        first, last = as_server_ids(value, key("server_id"))
        return cls(first, last)

    @classmethod
    def startup(cls, text: str) -> str | None:
        lower = text.lower()
        if lower.startswith("gtid:"):
            try:
                return "gtid:" + check_gtid(text[5:])
            except ConfigError:
                return None
        position = _POSITION.match(text)
        if position and int(position.group("pos")) >= 4:
            return text
        if lower.startswith("timestamp:") and text[10:].isdigit():
            return text
        return None

    def snapshot_ids(self, parallelism: int) -> tuple[int, ...]:
        """The server ids of the snapshot readers: the range's ids after the first, else
        ``parallelism`` ids following ``server_id``."""
        if self.server_id_last is not None:
            return tuple(range(self.server_id + 1, self.server_id_last + 1))
        return tuple(range(self.server_id + 1, self.server_id + 1 + parallelism))

    def check(self, source: SourceConfig, key: Callable[[str], str]) -> None:
        """A source that snapshots needs one server id for the log reader and one per snapshot
        reader."""
        if source.startup not in SNAPSHOT_STARTUPS:
            return
        first, last = self.server_id, self.server_id_last
        parallelism = source.snapshot.parallelism
        needed = 1 + parallelism
        why = (
            f"startup {source.startup} with {key('snapshot.parallelism')} {parallelism} needs "
            f"at least {needed}"
        )
        if last is not None and last - first + 1 < needed:
            start = min(first, MAX_SERVER_ID - parallelism)
            fail(
                key("server_id"),
                f"the range {first}-{last} has {last - first + 1} ids, but {why} ids (one for "
                "the log reader and one per snapshot reader); widen it to e.g. "
                f"{start}-{start + parallelism}",
            )
        if last is None and first + parallelism > MAX_SERVER_ID:
            fail(
                key("server_id"),
                f"{first} leaves no room for the snapshot reader ids after it ({why} ids); use "
                f"at most {MAX_SERVER_ID - parallelism} or give a range",
            )

    def redacted(self) -> JSONObject:
        return {"server_id": self.server_id, "server_id_last": self.server_id_last}

    def to_options(self) -> dict[str, str]:
        if self.server_id_last is None:
            return {"server_id": str(self.server_id)}
        return {"server_id": f"{self.server_id}-{self.server_id_last}"}


def as_server_ids(value: object, key: str) -> tuple[int, int | None]:
    """A server id (``5701``) or a range of them (``"5701-5710"`` or ``[5701, 5710]``):
    ``(first, last)``, ``last`` None for a single id."""
    if isinstance(value, list):
        if len(value) != 2:
            fail(key, f"{value!r} is not a range of server ids; write it as [5701, 5710]")
        ends = (as_int(value[0], f"{key}[0]"), as_int(value[1], f"{key}[1]"))
    else:
        text = as_text(value, key).strip()
        match = _ID_RANGE.match(text)
        if not match:
            if not re.fullmatch(r"[+-]?\d+", text):
                fail(key, f"{text!r} is not a server id; use e.g. 5701, or a range like 5701-5710")
            first = int(text)
            _check_server_id(first, key)
            return first, None
        ends = (int(match.group(1)), int(match.group(2)))
    first, last = ends
    _check_server_id(first, key)
    _check_server_id(last, key)
    if last < first:
        fail(key, f"the range {first}-{last} ends below its start; write it as {last}-{first}")
    return first, last


def _check_server_id(number: int, key: str) -> None:
    if not 1 <= number <= MAX_SERVER_ID:
        fail(key, f"{number} is out of range; use 1..{MAX_SERVER_ID}")
