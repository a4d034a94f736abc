"""The parts of a catalog written once for every SQL database: which tables ``source.tables``
matches, and a signal row written into the signal table, each with its sentences.

A source's catalog specialises :class:`SqlCatalog` with its query of the table list (and which
of the tables it can capture), where it looks for them and what to do when none matches, how it
quotes a table's name, and how the server names the user in a GRANT.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparkcdc.core.errors import MissingPrivilege
from sparkcdc.core.table_name import TableName
from sparkcdc.sources.table_filter import compile_patterns, no_table_matches, unmatched_patterns

log = logging.getLogger("sparkcdc.source")


@dataclass(frozen=True)
class ListedTable:
    """A table of the server's list: its two-part name, and why its changes never reach the
    log, if they do not (a table that matches then is left out with a warning saying so)."""

    name: TableName
    uncapturable: str | None = None


@dataclass(frozen=True)
class Grantee:
    """The catalog's user: as configured, as a sentence names them, as a GRANT names them."""

    user: str
    shown: str
    granted: str


class SqlCatalog(ABC):
    """``match_tables`` and ``write_signal`` of the port's
    :class:`~sparkcdc.sources.port.Catalog`, over a source's hooks."""

    @property
    @abstractmethod
    def address(self) -> str: ...

    @abstractmethod
    def _listed_tables(self) -> Iterable[ListedTable]:
        """The server's tables that ``source.tables`` may name (no system table)."""

    @abstractmethod
    def _no_match(self) -> tuple[str, str]:
        """Where the tables were looked for (``on host:port``) and the way out when a pattern
        matches none (:func:`~sparkcdc.sources.table_filter.no_table_matches`)."""

    @abstractmethod
    def _quote_table(self, schema: str, table: str) -> str:
        """``schema.table`` as the server's SQL writes it."""

    @abstractmethod
    def _execute(self, sql: str, args: tuple[object, ...]) -> None:
        """Run one statement, committed at once (MissingPrivilege if the user may not)."""

    @abstractmethod
    def _grantee(self) -> Grantee: ...

    @abstractmethod
    def check_signal_table(self, table: str) -> None:
        """Raise ConfigError (with its CREATE TABLE) unless the signal table exists."""

    def match_tables(
        self, patterns: Sequence[str], each: bool = False, exclude: Sequence[str] = ()
    ) -> list[TableName]:
        """The tables whose text form (``schema.table``) fully matches one of the regular
        expressions and none of ``exclude`` (NoTablesMatched if none does, or with ``each`` if
        one of them matches none)."""
        compiled = compile_patterns(patterns)
        excluded = compile_patterns(exclude)
        found: list[TableName] = []
        left_out: dict[str, list[TableName]] = {}
        for listed in self._listed_tables():
            name = str(listed.name)
            if any(p.fullmatch(name) for p in compiled) and not any(
                p.fullmatch(name) for p in excluded
            ):
                if listed.uncapturable is None:
                    found.append(listed.name)
                else:
                    left_out.setdefault(listed.uncapturable, []).append(listed.name)
        for why, names in left_out.items():
            log.warning(
                "source.tables matches %s on %s, %s; left out",
                ", ".join(map(str, sorted(names))), self.address, why,
            )  # fmt: skip
        unmatched = unmatched_patterns(patterns, map(str, found))
        if not found or (each and unmatched):
            where, advice = self._no_match()
            raise no_table_matches(patterns, unmatched, where, advice)
        return sorted(found)

    def write_signal(self, table: str, signal_id: str, kind: str, data: str) -> None:
        """Insert a signal row into the signal table ``schema.table`` (committed at once)."""
        quoted = self._quote_table(*TableName.parse(table))
        self.check_signal_table(table)
        try:
            self._execute(
                f"INSERT INTO {quoted} (id, type, data) VALUES (%s, %s, %s)",
                (signal_id, kind, data),
            )
        except MissingPrivilege as exc:
            grantee = self._grantee()
            raise MissingPrivilege(
                f"User {grantee.shown} may not insert into {table} on {self.address}; as an "
                f"administrator run GRANT INSERT ON {quoted} TO {grantee.granted}, or send the "
                "signal with --channel file.",
                user=grantee.user,
                missing=["INSERT"],
            ) from exc
