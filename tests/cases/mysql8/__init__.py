"""A MySQL 8 test world built from MySQL's published formats: columns and tables
(:mod:`.columns`), row-image values (:mod:`.values`), binary JSON (:mod:`.json_binary`), binlog
events (:mod:`.events`, :mod:`.tablemap`), GTID sets (:mod:`.gtids`), a binlog writer
(:mod:`.binlog`), workloads (:mod:`.workload`) and a bare replica client (:mod:`.replica`). The
primary that serves them is ``tests/fakes/mysql_primary.py``."""

from tests.cases.mysql8.binlog import BinlogWriter, Change
from tests.cases.mysql8.columns import Column, Table
from tests.cases.mysql8.gtids import GtidSet
from tests.cases.mysql8.values import JsonValue
from tests.cases.mysql8.workload import mixed_workload, sample_row, single_row_inserts

__all__ = [
    "BinlogWriter",
    "Change",
    "Column",
    "GtidSet",
    "JsonValue",
    "Table",
    "mixed_workload",
    "sample_row",
    "single_row_inserts",
]
