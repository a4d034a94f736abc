"""Signals: Debezium's format checked by type, the file channel, and ``sparkcdc signal``'s
arguments (everything here needs no server)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import ConfigError
from sparkcdc.snapshot.signals import (
    SIGNAL_TYPES,
    Signal,
    new_signal_id,
    parse_signal,
    read_file_signals,
    remove_file_signals,
    signal_data,
    signal_folder,
    signal_table_ddl,
    write_file_signal,
)
from tests.cases.command import sparkcdc as cli

EXECUTE = {
    "data-collections": ["shop.orders", "shop.items"],
    "type": "incremental",
    "additional-conditions": [{"data-collection": "shop.orders", "filter": "color = 'blue'"}],
}


def one_sentence(message: str) -> None:
    assert message.endswith(".") and ". " not in message.replace("e.g. ", ""), message


def bad(type: str, data: Any) -> str:
    text = data if isinstance(data, str) or data is None else json.dumps(data)
    with pytest.raises(ConfigError) as err:
        parse_signal("sig-1", type, text)
    message = str(err.value)
    assert "'sig-1'" in message and err.value.fields["signal"] == "sig-1"
    one_sentence(message)
    return message


def test_execute_snapshot() -> None:
    s = parse_signal("a1", "execute-snapshot", json.dumps(EXECUTE))
    assert (s.id, s.type, s.data) == ("a1", "execute-snapshot", EXECUTE)
    assert s.tables == ("shop.orders", "shop.items")
    assert s.condition("shop.orders") == "color = 'blue'" and s.condition("shop.items") is None
    plain = parse_signal("a2", "execute-snapshot", '{"data-collections": ["shop.orders"]}')
    assert plain.tables == ("shop.orders",) and plain.condition("shop.orders") is None
    upper = parse_signal(
        "a3", "execute-snapshot", '{"data-collections": ["a.b"], "type": "INCREMENTAL"}'
    )
    assert upper.tables == ("a.b",)
    dotted = parse_signal("a4", "execute-snapshot", '{"data-collections": ["\\"a.b\\".c"]}')
    assert dotted.tables == ('"a.b".c',)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (None, "no list of tables in data-collections"),
        ({"data-collections": []}, "no list of tables"),
        ({"data-collections": "shop.orders"}, "no list of tables"),
        ({"data-collections": ["orders"]}, "'orders' in data-collections, which is not a db.table"),
        ({"data-collections": ["a.b.c"]}, "not a db.table"),
        ({"data-collections": ['"a".b']}, "not a db.table"),
        ({"data-collections": [7]}, "not a db.table"),
        ({"data-collections": ["`a`.b"]}, "holds a backtick"),
        ({"data-collections": ["a.b"], "type": "blocking"}, "'blocking' snapshot"),
        ({"data-collections": ["a.b"], "additional-conditions": {"a.b": "x"}}, "not a list"),
        (
            {"data-collections": ["a.b"], "additional-conditions": [{"data-collection": "a.b"}]},
            "not of this form",
        ),
        (
            {"data-collections": ["a.b"], "additional-conditions": ["x > 1"]},
            "not of this form",
        ),
        (
            {
                "data-collections": ["a.b"],
                "additional-conditions": [{"data-collection": "a.c", "filter": "x > 1"}],
            },
            "'a.c', which is not in data-collections",
        ),
        (
            {
                "data-collections": ["a.b"],
                "additional-conditions": [{"data-collection": "a.b", "filter": " "}],
            },
            "empty filter",
        ),
        (
            {
                "data-collections": ["a.b"],
                "additional-conditions": [
                    {"data-collection": "a.b", "filter": "x > 1"},
                    {"data-collection": "a.b", "filter": "y > 1"},
                ],
            },
            "join them with AND",
        ),
        ("[1, 2]", "not a JSON object"),
        ("{nope", "not JSON"),
    ],
)
def test_bad_execute_snapshot(data: Any, says: str) -> None:
    assert says in bad("execute-snapshot", data)


def test_stop_pause_resume_log() -> None:
    stop = parse_signal(
        "s", "stop-snapshot", '{"data-collections": ["a.b"], "type": "incremental"}'
    )
    assert stop.tables == ("a.b",)
    for data in (None, "", "  ", "{}", '{"type": "incremental"}', '{"data-collections": []}'):
        assert parse_signal("s", "stop-snapshot", data).tables == ()  # all tables
    for kind in ("pause-snapshot", "resume-snapshot"):
        assert parse_signal("p", kind, None).data == {}
        assert parse_signal("p", kind, "{}").type == kind
    log = parse_signal("l", "log", '{"message": "hello"}')
    assert log.data == {"message": "hello"} and log.tables == ()
    assert parse_signal("x", " Log ", '{"message": "m"}').type == "log"


@pytest.mark.parametrize(
    ("type", "data", "says"),
    [
        ("snapshot", None, "unknown type 'snapshot'; use one of execute-snapshot"),
        ("stop-snapshot", '{"data-collections": "a.b"}', "no list of tables"),
        ("stop-snapshot", '{"data-collections": ["x"]}', "not a db.table"),
        ("stop-snapshot", '{"type": "blocking"}', "only incremental"),
        ("pause-snapshot", "[]", "not a JSON object"),
        ("resume-snapshot", '"x"', "not a JSON object"),
        ("log", None, "without a message"),
        ("log", '{"message": ""}', "without a message"),
        ("log", '{"message": 5}', "without a message"),
    ],
)
def test_bad_other_signals(type: str, data: str | None, says: str) -> None:
    assert says in bad(type, data)


def test_json_round_trip() -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("execute-snapshot", EXECUTE),
        ("stop-snapshot", {}),
        ("pause-snapshot", {}),
        ("resume-snapshot", {}),
        ("log", {"message": "m"}),
    ]
    for kind, data in cases:
        signal = Signal(new_signal_id(), kind, data)
        assert Signal.from_json(signal.to_json()) == signal
    with pytest.raises(ConfigError, match="unknown type"):
        Signal.from_json('{"id": "a", "type": "nope", "data": {}}')
    with pytest.raises(ConfigError, match="has no id"):
        Signal.from_json('{"type": "log", "data": {"message": "m"}}')


def test_signal_data_builds_what_parse_accepts() -> None:
    data = signal_data("execute-snapshot", ["a.b", "a.c"], "x > 1")
    assert data == {
        "data-collections": ["a.b", "a.c"],
        "type": "incremental",
        "additional-conditions": [
            {"data-collection": "a.b", "filter": "x > 1"},
            {"data-collection": "a.c", "filter": "x > 1"},
        ],
    }
    assert signal_data("execute-snapshot", ["a.b"]) == {
        "data-collections": ["a.b"],
        "type": "incremental",
    }
    assert signal_data("stop-snapshot") == {"type": "incremental"}
    assert signal_data("stop-snapshot", ["a.b"])["data-collections"] == ["a.b"]
    assert signal_data("pause-snapshot") == signal_data("resume-snapshot") == {}
    assert signal_data("log", message="hi") == {"message": "hi"}
    for kind in SIGNAL_TYPES:
        data = signal_data(
            kind,
            ["a.b"] if kind == "execute-snapshot" else [],
            None,
            "m" if kind == "log" else None,
        )
        assert parse_signal("i", kind, json.dumps(data)).data == data


@pytest.mark.parametrize(
    ("args", "key", "says"),
    [
        (("snapshot",), "action", "not a signal; use one of execute-snapshot"),
        (("execute-snapshot",), "--tables", "needs the tables"),
        (("pause-snapshot", ["a.b"]), "--tables", "not pause-snapshot"),
        (("stop-snapshot", [], "x > 1"), "--where", "execute-snapshot only"),
        (("execute-snapshot", ["a.b"], " "), "--where", "empty"),
        (("execute-snapshot", ["a.b"], None, "m"), "--message", "log only"),
        (("log",), "--message", "needs the text"),
        (("execute-snapshot", ["orders"]), "--tables", "'orders' is not a db.table name"),
    ],
)
def test_signal_data_refuses(args: tuple[Any, ...], key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        signal_data(*args)
    assert err.value.fields["key"] == key and says in str(err.value)
    one_sentence(str(err.value))


def test_signal_table_ddl() -> None:
    assert signal_table_ddl("shop.signals") == (
        "CREATE TABLE `shop`.`signals` (id VARCHAR(64) PRIMARY KEY, "
        "type VARCHAR(32) NOT NULL, data TEXT NULL)"
    )
    assert signal_table_ddl('"ops.eu".signals').startswith("CREATE TABLE `ops.eu`.`signals` (")
    assert len(new_signal_id()) == 32 and new_signal_id() != new_signal_id()


def test_file_channel_round_trip_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "cp" / "sparkcdc" / "signals"
    assert read_file_signals(folder) == []
    first = Signal("b-first", "execute-snapshot", {"data-collections": ["a.b"]})
    second = Signal("a-second", "log", {"message": "m"})
    third = Signal("c-third", "pause-snapshot", {})
    paths = [write_file_signal(folder, s) for s in (first, second, third)]
    assert paths[0] == folder / "b-first.json"
    for i, path in enumerate(paths):  # mtimes decide, not names
        os.utime(path, ns=(1_000_000_000 * (i + 1), 1_000_000_000 * (i + 1)))
    os.utime(paths[2], ns=(2_000_000_000, 2_000_000_000))  # same time as second: by name
    (folder / ".tmp-x.json").write_text("half a fi")  # a writer's temp file is skipped
    (folder / "note.txt").write_text("not a signal")
    assert read_file_signals(folder) == [first, second, third]
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]
    remove_file_signals(folder, ["b-first", "c-third", "missing"])
    assert read_file_signals(folder) == [second]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{nope", "is not JSON"),
        ('{"id": "x", "type": "log", "data": {}}', "without a message"),
        ('{"type": "log"}', "has no id"),
    ],
)
def test_a_bad_signal_file_is_named(tmp_path: Path, text: str, says: str) -> None:
    write_file_signal(tmp_path, Signal("good", "pause-snapshot", {}))
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(ConfigError) as err:
        read_file_signals(tmp_path)
    message = str(err.value)
    assert str(tmp_path / "broken.json") in message and says in message
    assert message.endswith("delete the file or fix it.")
    one_sentence(message.replace(str(tmp_path), "DIR"))


# -- sparkcdc signal, without a server ----------------------------------------------------


def pipeline_file(tmp_path: Path, extra: str = "") -> Path:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        "source: {host: 127.0.0.1, port: 1, user: cdc, tables: ['shop\\\\..*']"
        f"{extra}}}\nsink: {{path: ./lake}}\npipeline: {{checkpoint: ./cp}}\n"
    )
    return cfg


def test_cli_file_channel_writes_a_parseable_file(tmp_path: Path) -> None:
    """Signals naming no table need no server (those naming tables are checked against it
    first: tests/integration/test_signal_cli.py)."""
    cfg = pipeline_file(tmp_path)
    done = cli("signal", "stop-snapshot", "--config", str(cfg))
    assert done.returncode == 0, done.stderr
    folder = signal_folder(tmp_path / "cp")
    (signal,) = read_file_signals(folder)
    assert done.stdout == f"signal {signal.id} (stop-snapshot) sent to {folder}\n"
    assert signal.tables == () and signal.type == "stop-snapshot"
    done = cli("signal", "log", "--config", str(cfg), "--message", "hello", "--channel", "file")
    assert done.returncode == 0, done.stderr
    assert [s.type for s in read_file_signals(folder)] == ["stop-snapshot", "log"]


USAGE, CONFIG = 64, 78  # a wrong command line; a wrong setting of the pipeline file


@pytest.mark.parametrize(
    ("args", "extra", "says", "code"),
    [
        (["execute-snapshot"], "", "execute-snapshot needs the tables", USAGE),
        (["pause-snapshot", "--where", "x = 1"], "", "--where goes with execute-snapshot", USAGE),
        (["stop-snapshot", "--message", "m"], "", "--message goes with log only", USAGE),
        (["log"], "", "log needs the text", USAGE),
        (["snapshot-now"], "", "'snapshot-now' is not a signal", USAGE),
        (["execute-snapshot", "--tables", "orders"], "", "'orders' is not a db.table", USAGE),
        (["pause-snapshot", "--channel", "kafka"], "", "'kafka' is not a signal channel", USAGE),
        (["pause-snapshot", "--channel", "table"], "", "needs source.signal_table", CONFIG),
        (["pause-snapshot"], ", signal_table: shop", "source.signal_table: 'shop' is not", CONFIG),
    ],
)
def test_cli_refuses_bad_combinations(
    tmp_path: Path, args: list[str], extra: str, says: str, code: int
) -> None:
    cfg = pipeline_file(tmp_path, extra)
    done = cli("signal", *args, "--config", str(cfg))
    assert done.returncode == code and done.stdout == ""
    assert done.stderr.startswith("sparkcdc: ") and says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    one_sentence(done.stderr.strip())
    assert not signal_folder(tmp_path / "cp").exists()
