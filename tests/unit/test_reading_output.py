"""The README's lines that read the output run, as written, against a lake the sink wrote: the
replica with pandas, the change log with Arrow, DuckDB over deltalake's Arrow dataset, Polars
through deltalake."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from sparkcdc.sinks.delta.sink import DeltaSink
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block() -> str:
    """The Python block after "**Reading the result.**"."""
    text = README.read_text()
    after = text[text.index("**Reading the result.**") :]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)  # type: ignore[union-attr]


def lake(root: Path) -> None:
    """``root/lake/shop/orders`` and its change log: two rows created, one updated, one deleted."""
    orders = replace(ACCOUNTS, table="orders")
    rows = [{"id": i, "owner": f"o{i}", "balance": f"{i}.00"} for i in (1, 2)]
    changes = Changes().schema(orders)
    for row in rows:
        changes.change("c", orders, after=row)
    changes.change("u", orders, rows[0], {**rows[0], "balance": "9.50"})
    changes.change("d", orders, rows[1])
    DeltaSink(str(root / "lake"), "readme").write(changes.table(), 0)


def test_the_readme_lines_read_the_replica_and_the_change_log(tmp_path: Path) -> None:
    lake(tmp_path)
    block = readme_block().replace('"lake/', f'"{tmp_path}/lake/')
    results: list[Any] = []
    scope: dict[str, Any] = {}
    for line in block.splitlines():  # each expression's value kept, as a REPL shows it
        code = line.split("  #")[0].strip()
        if not code or code.startswith("#"):
            continue
        if code.startswith(("import ", "from ")) or re.match(r"^\w+ = ", code):
            exec(code, scope)
        else:
            results.append(eval(code, scope))
    replica, changelog, count, deletes = results
    assert replica.to_dict("records") == [{"id": 1, "owner": "o1", "balance": replica.balance[0]}]
    assert str(replica.balance[0]) == "9.50"
    assert changelog.column("op").to_pylist() == ["c", "c", "u", "d"]
    assert count.fetchall() == [(1,)]
    assert deletes.height == 1 and deletes["before"].to_list()[0] is not None
