"""PostgreSQL's column types: the table of every type the pgoutput tests capture, the rows they
write to it, and the schema it lives in."""

from __future__ import annotations

DAYS = "CASE WHEN isfinite({c}) THEN {c} - DATE '1970-01-01' END"
MICROS = "CASE WHEN isfinite({c}) THEN (extract(epoch FROM {c}) * 1000000)::bigint END"


CLOCK = "to_char({c}, 'HH24:MI:SS.US')"


def _each(expr: str) -> str:
    """An array column's elements through ``expr`` (of ``x``), in order, NULLs kept."""
    each = f"SELECT {expr.format(c='x')} FROM unnest({{c}}) WITH ORDINALITY AS u(x, n) ORDER BY n"
    return f"CASE WHEN {{c}} IS NOT NULL THEN ARRAY({each}) END"


# name, declaration, logical type, expected value's SQL (None: psycopg2's own value)
COLUMNS: list[tuple[str, str, str, str | None]] = [
    ("i2", "smallint", "int16", None),
    ("i4", "integer", "int32", None),
    ("i8", "bigint", "int64", None),
    ("n", "numeric(12,2)", "decimal(12,2)", None),
    ("n38", "numeric(38,10)", "decimal(38,10)", None),
    ("nneg", "numeric(5,-2)", "decimal(7,0)", None),
    ("nbig", "numeric(50,5)", "string", "{c}::text"),
    ("nu", "numeric", "string", "{c}::text"),
    ("r", "real", "float32", None),
    ("d", "double precision", "float64", None),
    ("b", "boolean", "boolean", None),
    ("t", "text", "string", "{c}::text"),
    ("vc", "varchar(20)", "string", "{c}::text"),
    ("c", "char(5)", "string", None),  # blank-padded (::text would trim)
    ("nm", "name", "string", "{c}::text"),
    ("ct", "citext", "string", "{c}::text"),
    ("by", "bytea", "binary", None),
    ("dt", "date", "date", DAYS),
    ("tm", "time", "string", CLOCK),
    ("tm3", "time(3)", "string", CLOCK),
    ("ttz", "timetz", "string", "{c}::text"),
    ("ts", "timestamp", "timestamp_ntz", MICROS),
    ("tstz", "timestamptz", "timestamp", MICROS),
    ("iv", "interval", "string", "{c}::text"),  # read in IntervalStyle iso_8601
    ("u", "uuid", "string", "{c}::text"),
    ("j", "json", "string", "{c}::text"),
    ("jb", "jsonb", "string", "{c}::text"),
    ("e", "mood", "string", "{c}::text"),
    ("ip", "inet", "string", "{c}::text"),
    ("cidr_", "cidr", "string", "{c}::text"),
    ("mac", "macaddr", "string", "{c}::text"),
    ("mac8", "macaddr8", "string", "{c}::text"),
    ("bt", "bit(5)", "string", "{c}::text"),
    ("vb", "varbit(10)", "string", "{c}::text"),
    ("mo", "money", "string", "{c}::text"),
    ("x", "xml", "string", "{c}::text"),
    ("pt", "point", "string", "{c}::text"),
    ("ln", "line", "string", "{c}::text"),
    ("ls", "lseg", "string", "{c}::text"),
    ("bx", "box", "string", "{c}::text"),
    ("pth", "path", "string", "{c}::text"),
    ("pg", "polygon", "string", "{c}::text"),
    ("cr", "circle", "string", "{c}::text"),
    ("dom", "posint", "int32", None),
    ("dn", "dnum", "decimal(10,2)", None),
    ("a_dn", "dnum[]", "array<decimal(10,2)>", "{c}::numeric[]"),
    ("a_i4", "integer[]", "array<int32>", None),
    ("a_t", "text[]", "array<string>", None),
    ("a_n", "numeric(10,2)[]", "array<decimal(10,2)>", None),
    ("a_b", "boolean[]", "array<boolean>", None),
    ("a_by", "bytea[]", "array<binary>", None),
    ("a_ts", "timestamptz[]", "array<timestamp>", _each(MICROS)),
    ("a_d", "date[]", "array<date>", _each(DAYS)),
    ("a_e", "mood[]", "array<string>", "{c}::text[]"),
    ("a_bx", "box[]", "array<string>", "{c}::text[]"),
    ("a_f", "float8[]", "array<float64>", None),
    ("a_tm", "time[]", "array<string>", _each(CLOCK)),
    ("a_iv", "interval[]", "array<string>", "{c}::text[]"),
]
ROWS = [
    # typical values
    {"i2": "1", "i4": "2", "i8": "3", "n": "12.5", "n38": "1.5", "nneg": "12345",
     "nbig": "1.5", "nu": "3.14159", "r": "1.1", "d": "2.2", "b": "true", "t": "hello",
     "vc": "world", "c": "ab", "nm": "nm", "ct": "MiXeD", "by": "\\x00ff10",
     "dt": "2024-02-29", "tm": "12:34:56.789", "tm3": "01:02:03.5", "ttz": "12:00:00+05:30",
     "ts": "2024-02-29 12:34:56.123456", "tstz": "2024-02-29 12:34:56.123456+02",
     "iv": "1 year 2 months 3 days 04:05:06.789", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
     "j": '{"a": [1, 2]}', "jb": '{"b": 1, "a": 2}', "e": "happy", "ip": "192.168.0.1/24",
     "cidr_": "10.0.0.0/8", "mac": "08:00:2b:01:02:03", "mac8": "08:00:2b:01:02:03:04:05",
     "bt": "10101", "vb": "101", "mo": "12.34", "x": "<a>b</a>", "pt": "(1,2)",
     "ln": "{1,2,3}", "ls": "[(0,0),(1,1)]", "bx": "((1,1),(0,0))",
     "pth": "[(0,0),(1,1),(2,0)]", "pg": "((0,0),(1,1),(1,0))", "cr": "<(0,0),1>",
     "dom": "5", "dn": "1.5", "a_dn": "{1.5,NULL}",
     "a_i4": "{1,2,NULL}",
     "a_t": '{"a b","","NULL",NULL,"q\\"uote","back\\\\slash","{brace}","ünï",semi;colon}',
     "a_n": "{1.5,NULL,-2}", "a_b": "{t,f,NULL}", "a_by": '{"\\\\x0102",NULL,"\\\\x"}',
     "a_ts": '{"2020-01-01 00:00:00+00","1999-12-31 23:59:59.999999-08",NULL}',
     "a_d": "{2020-01-01,NULL,1900-02-28}", "a_e": "{sad,ünïcode}",
     "a_bx": "{((1,1),(0,0));((3,3),(2,2))}", "a_f": "{1.5,NaN,-Infinity,NULL}",
     "a_tm": "{12:00:00,23:59:59.5}", "a_iv": '{"1 day","-00:00:01.5",NULL}'},
    # extremes, specials, empty values
    {"i2": "-32768", "i4": "-2147483648", "i8": "-9223372036854775808", "n": "NaN",
     "n38": "9999999999999999999999999999.9999999999", "nneg": "-9999900",
     "nbig": "-123456789012345678901234567890123456789012345.12345", "nu": "Infinity",
     "r": "NaN", "d": "-Infinity", "b": "false", "t": "", "vc": "ünïcödé ✓ 😀", "c": "",
     "nm": "", "ct": "", "by": "\\x", "dt": "0044-03-15 BC", "tm": "24:00:00",
     "tm3": "00:00:00", "ttz": "00:00:00-12:34", "ts": "infinity", "tstz": "-infinity",
     "iv": "-1 years -2 mons +3 days -04:05:06.5", "u": "00000000-0000-0000-0000-000000000000",
     "j": '""', "jb": "null", "e": "ünïcode", "mo": "-92233720368547758.08", "x": "",
     "bt": "00000", "vb": "", "dom": "2147483647", "a_i4": "{}", "a_t": "{}", "a_n": "{}",
     "a_b": "{}", "a_by": "{}", "a_ts": "{}", "a_d": "{}", "a_e": "{}", "a_bx": "{}",
     "a_f": "{}", "a_tm": "{}", "a_iv": "{}"},
    {},  # NULLs
    {"i2": "32767", "i4": "2147483647", "i8": "9223372036854775807", "n": "-9999999999.99",
     "n38": "-9999999999999999999999999999.9999999999", "nu": "-Infinity",
     "nbig": "0.00001", "r": "3.4028235e+38", "d": "4.9e-324", "dt": "infinity",
     "ts": "-infinity", "tstz": "infinity", "tm": "00:00:00.000001", "iv": "0",
     "by": "\\x" + "ab" * 3000, "t": "x" * 3000},
    {"r": "-1.4e-45", "d": "-0", "dt": "12345-06-07", "ts": "0044-03-15 12:00:00.5 BC",
     "tstz": "10000-01-01 00:00:00+00", "iv": "00:00:00.5", "nu": "-0.000000000000000000001"},
]  # fmt: skip
SCHEMA = [
    "CREATE EXTENSION citext",
    "CREATE TYPE mood AS ENUM ('sad', 'happy', 'ünïcode')",
    "CREATE DOMAIN posint AS integer CHECK (VALUE > 0)",
    "CREATE DOMAIN dnum AS numeric(10,2)",
    "CREATE TABLE everything (id int PRIMARY KEY, "
    + ", ".join(f"{name} {decl}" for name, decl, _, _ in COLUMNS)
    + ")",
]
