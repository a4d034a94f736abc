"""Reading ``SHOW GRANTS``: does the capture user hold what change data capture needs?

Needed: REPLICATION SLAVE (to stream the binlog), REPLICATION CLIENT (MariaDB 10.5+ calls it
BINLOG MONITOR; SUPER also does; to list binlog files and positions) on ``*.*``, and SELECT on
the captured databases (to read their schemas). ALL PRIVILEGES on ``*.*`` covers everything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_GRANT = re.compile(r"^\s*GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<obj>\S+)\s+TO\s", re.I | re.S)
_ALIASES = {
    "REPLICATION REPLICA": "REPLICATION SLAVE",
    "BINLOG MONITOR": "REPLICATION CLIENT",
    "ALL": "ALL PRIVILEGES",
}


def _split_privileges(text: str) -> set[str]:
    """``SELECT (a, b), REPLICATION SLAVE`` -> {"SELECT", "REPLICATION SLAVE"}."""
    out: set[str] = set()
    depth, start = 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            name = re.sub(r"\(.*\)", "", text[start:i]).strip().upper()
            name = " ".join(name.split())
            out.add(_ALIASES.get(name, name))
            start = i + 1
    return out


def _database_of(obj: str) -> str | None:
    """``*.*`` -> None (global); ```shop`.*`` or ```shop`.`t``` -> "shop"."""
    if obj.startswith("*"):
        return None
    match = re.match(r"^(`(?:[^`]|``)*`|[^.]+)\.", obj)
    name = match.group(1) if match else obj
    if name.startswith("`"):
        name = name[1:-1].replace("``", "`")
    return name


def missing_privileges(grants: Sequence[str], databases: Sequence[str] = ()) -> list[str]:
    """The privileges (REPLICATION SLAVE, REPLICATION CLIENT, SELECT) the grants do not give."""
    global_privs: set[str] = set()
    per_db: dict[str, set[str]] = {}
    for line in grants:
        match = _GRANT.match(line)
        if not match:
            continue  # role grants and anything else without ON
        privs = _split_privileges(match.group("privs"))
        db = _database_of(match.group("obj"))
        if db is None:
            global_privs |= privs
        else:
            per_db.setdefault(db.lower(), set()).update(privs)
    if "ALL PRIVILEGES" in global_privs:
        return []
    missing = []
    if "REPLICATION SLAVE" not in global_privs:
        missing.append("REPLICATION SLAVE")
    if not global_privs & {"REPLICATION CLIENT", "SUPER"}:
        missing.append("REPLICATION CLIENT")
    if "SELECT" not in global_privs:

        def can_read(privs: set[str]) -> bool:
            return bool(privs & {"SELECT", "ALL PRIVILEGES"})

        if databases:
            ok = all(can_read(per_db.get(d.lower(), set())) for d in databases)
        else:
            ok = any(can_read(p) for p in per_db.values())
        if not ok:
            missing.append("SELECT")
    return missing


def grant_statements(
    missing: Sequence[str], account: str, databases: Sequence[str], mariadb: bool
) -> tuple[list[str], list[str]]:
    """The missing privileges as the server names them, and the GRANTs that give them."""
    client = "BINLOG MONITOR" if mariadb else "REPLICATION CLIENT"
    names = [client if m == "REPLICATION CLIENT" else m for m in missing]
    statements = []
    replication = [n for n in names if n != "SELECT"]
    if replication:
        statements.append(f"GRANT {', '.join(replication)} ON *.* TO {account}")
    if "SELECT" in names:
        targets = [f"`{d}`.*" for d in databases] or ["*.*"]
        statements += [f"GRANT SELECT ON {t} TO {account}" for t in targets]
    return names, statements
