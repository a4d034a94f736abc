"""``sparkcdc check`` and ``sparkcdc run`` on a MySQL 8 server — the protocol-level test primary
(``tests/fakes/mysql_primary.py``) serving a binlog written from MySQL's formats — behave as on
MariaDB: the check passes, and the replica and change log hold every change of GTID,
anonymous and compressed transactions of every column type, typed."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import DeltaTable

from tests.cases.mysql8 import BinlogWriter
from tests.cases.mysql8.workload import sample_row
from tests.cases.mysql_types import TYPES, U
from tests.e2e.cli import available_now, run, write_config
from tests.fakes.mysql_primary import MySQLPrimary


def test_check_and_run_on_a_mysql_8_server(tmp_path: Path) -> None:
    writer = BinlogWriter()
    rows = [sample_row(TYPES, i) for i in range(1, 8)]
    writer.transaction([("c", TYPES, None, r) for r in rows[:4]], gtid=(U, 1))
    writer.transaction([("u", TYPES, rows[0], rows[4])])
    writer.transaction([("d", TYPES, rows[1], None)], gtid=(U, 2), compressed=True)
    writer.transaction([("c", TYPES, None, rows[5]), ("c", TYPES, None, rows[6])], gtid=(U, 3))
    with MySQLPrimary("cdc", "cdc-pw", binlog=writer, tables=[TYPES]) as primary:
        cfg = write_config(tmp_path, primary, r"shop\.types", user="cdc", password="cdc-pw")
        code, out = run(cfg, command="check")
        assert code == 0, out
        available_now(cfg)
    lake = tmp_path / "lake" / "shop"
    replica = DeltaTable(str(lake / "types")).to_pyarrow_table().sort_by("id").to_pylist()
    assert [r["id"] for r in replica] == [3, 4, 5, 6, 7]
    first = next(r for r in replica if r["id"] == 5)
    assert (first["de"], first["vc"], json.loads(first["js"])) == (rows[4][8], rows[4][18],
                                                                  rows[4][27])  # fmt: skip
    log = DeltaTable(str(lake / "types__changelog")).to_pyarrow_table().to_pylist()
    ops = sorted((r["op"], r["source"]["gtid"] or "-") for r in log)
    assert ops == sorted(
        [("c", f"{U}:1")] * 4 + [("u", "-"), ("d", f"{U}:2")] + [("c", f"{U}:3")] * 2
    )
