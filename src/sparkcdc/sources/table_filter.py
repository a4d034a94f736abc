"""``source.tables`` against the tables a server has, written once for every source's catalog.

Each pattern is a regular expression that must match a table's whole two-part name. When a
pipeline is checked or starts (``sparkcdc check``, ``sparkcdc run``), every pattern must match
at least one table: a pattern that matches nothing is a typo or a wrong database far more often
than a table still to come, so it is refused with a sentence naming it, unless the file says
``source.on_unmatched: warn``. While the pipeline runs the filter is only asked which tables it
matches: a table dropped later leaves the stream going, and only the next start names its
pattern. Whatever the setting, at least one table must match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sparkcdc.core.errors import ConfigError, NoTablesMatched

ON_UNMATCHED = ("fail", "warn")
"""What ``source.on_unmatched`` may say a pattern that matches no table at the start does."""


def compile_patterns(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    """The compiled patterns; ConfigError naming the first that is no regular expression."""
    try:
        return [re.compile(p) for p in patterns]
    except re.error as exc:
        raise ConfigError(
            f"source.tables: {exc.pattern!r} is not a regular expression ({exc}); fix it.",
            key="source.tables",
        ) from exc


def unmatched_patterns(patterns: Sequence[str], names: Iterable[str]) -> list[str]:
    """The patterns that fully match none of ``names`` (``a.b``), in the order given."""
    found = list(names)
    return [p for p in patterns if not any(re.fullmatch(p, n) for n in found)]


def no_table_matches(
    patterns: Sequence[str], unmatched: Sequence[str], where: str, advice: str
) -> NoTablesMatched:
    """The sentence for ``unmatched`` patterns (all of ``patterns`` when nothing matched) that
    match no table ``where`` (``on host:port``, ``in database 'x' on host:port``); ``advice``
    is the source's own way out (what the patterns are matched against, e.g.)."""
    if len(unmatched) >= len(patterns):
        return NoTablesMatched(
            f"No table {where} matches source.tables {list(patterns)}; {advice}.",
            key="source.tables",
            patterns=list(patterns),
        )
    listed = ", ".join(repr(p) for p in unmatched)
    which = f"pattern {listed} matches" if len(unmatched) == 1 else f"patterns {listed} match"
    return NoTablesMatched(
        f"The source.tables {which} no table {where}, while the others do; {advice}, or set "
        "source.on_unmatched: warn to start with the tables the others match.",
        key="source.tables",
        patterns=list(unmatched),
    )
