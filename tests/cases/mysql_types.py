"""A table of MySQL's column types the stream tests write to, and a server UUID of their GTIDs."""

from __future__ import annotations

from tests.cases.mysql8 import Column, Table

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
TYPES = Table(
    "shop", "types",
    [Column("id", "int"), Column("ti", "tinyint"), Column("tu", "tinyint unsigned"),
     Column("si", "smallint"), Column("mu", "mediumint unsigned"), Column("i", "int"),
     Column("bi", "bigint"), Column("bu", "bigint unsigned"), Column("de", "decimal(12,3)"),
     Column("fl", "float"), Column("db", "double"), Column("bt", "bit(10)"),
     Column("d", "date"), Column("t", "time(3)"), Column("dt", "datetime(6)"),
     Column("ts", "timestamp(2)"), Column("y", "year"), Column("c", "char(4)"),
     Column("vc", "varchar(300)"), Column("bn", "binary(4)"), Column("vb", "varbinary(10)"),
     Column("tx", "text"), Column("mt", "mediumtext"), Column("bl", "blob"),
     Column("lb", "longblob"), Column("en", "enum('a','b')"), Column("st", "set('x','y')"),
     Column("js", "json")],
    ["id"], table_id=70,
)  # fmt: skip
