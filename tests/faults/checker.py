"""The campaign's checker, independent of the pipeline's code (Jepsen's independent checker).

It reads the source with plain SQL and the lake with delta-rs or pyiceberg, and holds them
against the workload's record of the transactions the source committed (keys never reused, each
update bumping ``version``: every change is the identity ``(op, id, version)``). Per key the
committed history is ``c, u1 … un[, d]`` and the change log must hold:

- at most one snapshot row ``r`` per key, at a version the key had;
- after it (or from the start when there is none) exactly the rest of the history: each change
  once, none left out, none never committed, in log order (versions rising by place in the log);
- when the trial had no snapshot (``reads_allowed`` false): no ``r`` row, the whole history;
- after an incremental snapshot (``before_log`` given: the committed changes written before the
  stream began, which the log cannot hold): every other change once in log order, and at most
  one ``r`` row per key, at the version its key had at that row's place in the log (DBLog's
  windows: a row the window's log events changed is dropped, the rest emitted after them), a
  key from before the stream that no change followed read once;
- after a re-snapshot of a lost log (``first_run`` given: the changes the run before the loss
  delivered): those once in log order, before the rest, which is held as after an initial
  snapshot (the keys deleted while the log was lost a ``d`` row each).

And the replica equals the source row by row. A delete's version is left out of its identity
(PostgreSQL's default replica identity gives the key only).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

Identity = tuple[str, int, int]
ROW_COLUMNS = ("id", "version", "balance", "owner", "updated", "flags")
_RANK = {"c": 0, "u": 1, "d": 2}


class LakeTables(Protocol):
    """A lake's tables as plain rows (None while a table is not there)."""

    def rows(self, table: str) -> list[dict[str, Any]] | None: ...


def source_accounts(server: Any, database: str) -> list[tuple[Any, ...]]:
    """The source's ``accounts`` rows by id, BIT columns as integers."""
    rows = server.query(f"SELECT {', '.join(ROW_COLUMNS)} FROM accounts ORDER BY id", database)
    return [
        (*r[:5], int.from_bytes(r[5], "big") if isinstance(r[5], bytes) else r[5]) for r in rows
    ]


def replica_accounts(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r[c] for c in ROW_COLUMNS) for r in rows), key=lambda r: r[0])


def log_place(source: Mapping[str, Any]) -> tuple[int, ...]:
    """A change log row's place in the source's log: MariaDB's (binlog number, position, row);
    PostgreSQL's ``position``, colon-separated numbers in the log's order (commit LSN, the
    change's index in its transaction, …)."""
    if source.get("file"):
        return (int(str(source["file"]).rsplit(".", 1)[1]), int(source["pos"]), source["row"])
    return tuple(int(part) for part in str(source["position"]).split(":"))


def identity(row: Mapping[str, Any]) -> Identity:
    image = row["before"] if row["op"] == "d" else row["after"]
    version = image.get("version")
    return (
        row["op"],
        int(image["id"]),
        -1 if row["op"] == "d" or version is None else int(version),
    )


@dataclass
class Verdict:
    """What the checker found: each violation one line."""

    violations: list[str]
    changes: int = 0
    reads: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations


def histories(committed: Counter[Identity]) -> dict[int, list[Identity]]:
    """Each key's committed changes in commit order (versions rise; the delete comes last)."""
    per_key: dict[int, list[Identity]] = defaultdict(list)
    for op, key, version in committed:
        per_key[key].append((op, key, -1 if op == "d" else version))
    for changes in per_key.values():
        changes.sort(key=lambda c: (_RANK[c[0]] == 2, c[2]))
    return per_key


Placed = tuple[tuple[Any, ...], Identity]


def check_changelog(
    rows: list[dict[str, Any]], committed: Counter[Identity], reads_allowed: bool,
    before_log: Counter[Identity] | None = None, first_run: Counter[Identity] | None = None,
) -> Verdict:  # fmt: skip
    """The change log ``rows`` against the ``committed`` changes (see the module docstring;
    ``before_log`` given: the ``r`` rows are an incremental snapshot's; ``first_run`` given: a
    re-snapshot's after the log was lost)."""
    bad: list[str] = []
    seen: dict[int, list[Placed]] = defaultdict(list)
    reads: dict[int, Placed] = {}
    for row in rows:
        op, key, version = identity(row)
        if op == "r":
            if key in reads or not reads_allowed:
                bad.append(f"key {key}: a snapshot row it should not have (version {version})")
            reads[key] = (log_place(row["source"]), (op, key, version))
        else:
            seen[key].append((log_place(row["source"]), (op, key, version)))
    wanted = histories(committed)
    for key in sorted(set(wanted) | set(seen) | set(reads)):
        history, got, read = wanted.get(key, []), seen.get(key, []), reads.get(key)
        version = None if read is None else read[1][2]
        if before_log is not None:
            bad.extend(_incremental_violations(key, history, got, read, before_log))
        elif first_run is not None:
            bad.extend(_resnapshot_violations(key, history, got, version, first_run))
        else:
            bad.extend(_key_violations(key, history, got, version, reads_allowed))
    return Verdict(bad, sum(len(v) for v in seen.values()), len(reads))


def _key_violations(
    key: int, history: list[Identity], seen: list[Placed], read: int | None, lenient: bool,
    had: list[Identity] | None = None,
) -> list[str]:  # fmt: skip
    """One key's violations; ``lenient``: a key deleted at the source may lack its snapshot row
    and the changes before (it was gone when its chunk was read); ``had``: the key's whole
    history where ``history`` is its end."""
    got = [change for _, change in seen]
    if read is not None:
        versions = {v for op, _, v in (history if had is None else had) if op != "d"}
        if read not in versions:
            return [f"key {key}: snapshot row at version {read}, never committed"]
        want = [c for c in history if c[0] == "d" or c[2] > read]
    elif lenient and history and history[-1][0] == "d" and 0 < len(got) < len(history):
        want = history[len(history) - len(got) :]  # gone at the source before its chunk's read
    else:
        gone = lenient and not got and bool(history) and history[-1][0] == "d"
        want = [] if gone else history
    return _each_once_in_order(key, seen, want)


def _each_once_in_order(key: int, seen: list[Placed], want: list[Identity]) -> list[str]:
    """The changes ``seen`` are ``want``, each once, in log order."""
    got = [change for _, change in seen]
    counts = Counter(got)
    if any(n > 1 for n in counts.values()):
        twice = [c for c, n in counts.items() if n > 1]
        return [f"key {key}: delivered twice {twice[:3]}"]
    if sorted(got, key=_order) != sorted(want, key=_order):
        missing = [c for c in want if c not in counts]
        extra = [c for c in got if c not in want]
        return [f"key {key}: missing {missing[:3]}, unexpected {extra[:3]}"]
    in_log_order = [change for _, change in sorted(seen, key=lambda s: s[0])]
    if in_log_order != sorted(got, key=_order):
        return [f"key {key}: changes out of log order {in_log_order[:4]}"]
    return []


def _incremental_violations(
    key: int, history: list[Identity], seen: list[Placed], read: Placed | None,
    before_log: Counter[Identity],
) -> list[str]:  # fmt: skip
    """One key's violations after an incremental snapshot: the changes from the stream's start
    each once in log order, and its ``r`` row (if any) at the version the key had at the row's
    place, replaying the changes before it; a key from before the stream that no change
    followed must have one."""
    earlier = [c for c in history if c in before_log]
    bad = _each_once_in_order(key, seen, [c for c in history if c not in before_log])
    if bad:
        return bad
    if read is None:
        if earlier and earlier[-1][0] != "d" and not seen:
            return [f"key {key}: no snapshot row, and the log never held it ({earlier[-1]})"]
        return []
    place, (_, _, version) = read
    state = _version_after(earlier)
    for at, change in sorted(seen, key=lambda s: s[0]):
        if at >= place:
            break
        state = _version_after([change])
    if state != version:
        had = "no row" if state is None else f"version {state}"
        return [f"key {key}: snapshot row at version {version} where the log had {had} there"]
    return []


def _resnapshot_violations(
    key: int, history: list[Identity], seen: list[Placed], read: int | None,
    first_run: Counter[Identity],
) -> list[str]:  # fmt: skip
    """One key's violations after a re-snapshot: the first run's changes each once, in log
    order before any other; the rest as after an initial snapshot, but a key the first run left
    in the replica and the source deleted since must have its ``d`` row."""
    earlier = [c for c in history if c in first_run]
    first = [s for s in seen if s[1] in first_run]
    rest = [s for s in seen if s[1] not in first_run]
    bad = _each_once_in_order(key, first, earlier)
    later = [c for c in history if c not in first_run]
    bad = bad or _key_violations(key, later, rest, read, True, had=history)
    if bad:
        return bad
    if first and rest and max(first)[0] > min(rest)[0]:
        return [f"key {key}: a change of the first run after a later one {max(first)[1]}"]
    deleted = bool(history) and history[-1][0] == "d" and history[-1] not in first_run
    logged = [c for _, c in rest]
    if deleted and _version_after(earlier) is not None and history[-1] not in logged:
        return [f"key {key}: missing {history[-1]}, the delete of a key the replica held"]
    return []


def _version_after(changes: list[Identity]) -> int | None:
    """The key's version after ``changes`` (None: no row)."""
    if not changes or changes[-1][0] == "d":
        return None
    return changes[-1][2]


def _order(change: Identity) -> tuple[bool, int]:
    return (change[0] == "d", change[2])


def check_trial(
    source_rows: list[tuple[Any, ...]], lake: LakeTables, table: str,
    committed: Counter[Identity], reads_allowed: bool,
    before_log: Counter[Identity] | None = None, first_run: Counter[Identity] | None = None,
) -> Verdict:  # fmt: skip
    """The replica equals the source row by row, and the change log holds the committed changes
    as the module docstring says."""
    replica, log = lake.rows(table), lake.rows(f"{table}__changelog")
    if replica is None or log is None:
        return Verdict([f"the lake holds no {table} table or change log"])
    verdict = check_changelog(log, committed, reads_allowed, before_log, first_run)
    held = replica_accounts(replica)
    if held != source_rows:
        differ = [a for a, b in zip(held, source_rows, strict=False) if a != b][:2]
        verdict.violations.insert(
            0, f"replica != source: {len(held)} rows against {len(source_rows)}; e.g. {differ}"
        )
    return verdict
