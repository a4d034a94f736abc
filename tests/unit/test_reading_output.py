"""The README's lines that read the output run, as written, against a lake the sink wrote: the
replica with pandas, the change log with Arrow, DuckDB over deltalake's Arrow dataset, Polars
through deltalake; the Iceberg tables through pyiceberg's SQL catalog, Polars and DuckDB's
iceberg extension."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.config.model import SinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.port import SinkContext
from sparkcdc.sinks.registry import open_sink
from tests.cases.envelopes import Changes
from tests.cases.schemas import ACCOUNTS

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(heading: str) -> str:
    """The first Python block after ``heading``."""
    text = README.read_text()
    after = text[text.index(heading) :]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)  # type: ignore[union-attr]


def changes() -> pa.Table:
    """``shop.orders``: two rows created, one updated, one deleted."""
    orders = replace(ACCOUNTS, table="orders")
    rows = [{"id": i, "owner": f"o{i}", "balance": f"{i}.00"} for i in (1, 2)]
    made = Changes().schema(orders)
    for row in rows:
        made.change("c", orders, after=row)
    made.change("u", orders, rows[0], {**rows[0], "balance": "9.50"})
    made.change("d", orders, rows[1])
    return made.table()


def run_lines(block: str) -> list[Any]:
    """Each line of ``block`` run; each expression's value kept, as a REPL shows it."""
    results: list[Any] = []
    scope: dict[str, Any] = {}
    for line in block.splitlines():
        code = line.split("  #")[0].strip()
        if not code or code.startswith("#"):
            continue
        if code.startswith(("import ", "from ")) or re.match(r"^\w+ = ", code):
            exec(code, scope)
        else:
            results.append(eval(code, scope))
    return results


def test_the_readme_lines_read_the_replica_and_the_change_log(tmp_path: Path) -> None:
    DeltaSink(str(tmp_path / "lake"), "readme").write(changes(), 0)
    block = readme_block("**Reading the result.**").replace('"lake/', f'"{tmp_path}/lake/')
    replica, changelog, count, deletes = run_lines(block)
    assert replica.to_dict("records") == [{"id": 1, "owner": "o1", "balance": replica.balance[0]}]
    assert str(replica.balance[0]) == "9.50"
    assert changelog.column("op").to_pylist() == ["c", "c", "u", "d"]
    assert count.fetchall() == [(1,)]
    assert deletes.height == 1 and deletes["before"].to_list()[0] is not None


def test_the_readme_lines_read_the_iceberg_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = SinkConfig(path=str(tmp_path / "lake"), type="iceberg")
    open_sink(config, SinkContext(app_id=lambda: "readme")).write_batch(Frame(changes()), 0)
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    monkeypatch.setenv("HOME", str(tmp_path))  # DuckDB installs the extensions under ~/.duckdb
    block = readme_block("## Apache Iceberg").replace(
        "sqlite:///lake/", f"sqlite:///{tmp_path}/lake/"
    )
    replica, changelog, deletes, count = run_lines(block)
    assert count.fetchall() == [(1,)]
    assert replica.to_dict("records") == [{"id": 1, "owner": "o1", "balance": replica.balance[0]}]
    assert str(replica.balance[0]) == "9.50"
    assert sorted(changelog.column("op").to_pylist()) == ["c", "c", "d", "u"]
    assert deletes.height == 1 and deletes["before"].to_list()[0] is not None


@dataclass(frozen=True)
class Frame:
    table: pa.Table

    def toArrow(self) -> pa.Table:  # noqa: N802 (Spark's name)
        return self.table
