"""``source.heartbeat``: its interval and action query in the pipeline file, for every source
type, and errors of one sentence that name the key."""

from __future__ import annotations

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import HeartbeatConfig, SourceConfig
from sparkcdc.core.errors import ConfigError

UPSERT = "INSERT INTO ops.beat (id, ts) VALUES (1, NOW()) ON DUPLICATE KEY UPDATE ts = NOW()"


def source(heartbeat: str, kind: str = "mysql") -> SourceConfig:
    text = (
        f"source: {{type: {kind}, host: h, user: u, tables: ['a\\.b']{heartbeat}}}\n"
        "sink: {path: /lake}\npipeline: {checkpoint: /cp}\n"
    )
    return load_config_text(text, "/").source


def error(heartbeat: str, kind: str = "mysql") -> ConfigError:
    with pytest.raises(ConfigError) as err:
        source(heartbeat, kind)
    return err.value


def test_off_unless_an_interval_is_set() -> None:
    assert source("").heartbeat == HeartbeatConfig() and not source("").heartbeat.enabled
    assert source(", heartbeat: {interval: 0}").heartbeat == HeartbeatConfig()
    assert source(", heartbeat: {}").heartbeat == HeartbeatConfig()


@pytest.mark.parametrize("kind", ["mysql", "mariadb", "postgres"])
def test_interval_and_action_query_for_every_source(kind: str) -> None:
    found = source(f", heartbeat: {{interval: 10s, action_query: '{UPSERT}'}}", kind).heartbeat
    assert found == HeartbeatConfig(10.0, UPSERT) and found.enabled
    assert source(", heartbeat: {interval: 500ms}", kind).heartbeat == HeartbeatConfig(0.5)
    assert source(", heartbeat: 2m", kind).heartbeat == HeartbeatConfig(120.0)  # interval alone
    redacted = source(", heartbeat: {interval: 1s}", kind).redacted()["heartbeat"]
    assert redacted == {"interval": 1.0, "action_query": None}


def test_the_action_query_is_kept_as_written_but_trimmed() -> None:
    found = source(', heartbeat: {interval: 1s, action_query: "  SELECT 1 "}').heartbeat
    assert found.action_query == "SELECT 1"


@pytest.mark.parametrize(
    ("written", "key", "says"),
    [
        ("{interval: often}", "source.heartbeat.interval", "'often' is not a duration"),
        ("often", "source.heartbeat.interval", "'often' is not a duration"),
        ("{interval: -1s}", "source.heartbeat.interval", "is not a duration"),
        ("{every: 1s}", "source.heartbeat", "'every' is not one of its keys"),
        (
            "{action_query: 'SELECT 1'}",
            "source.heartbeat.action_query",
            "runs at each heartbeat, and source.heartbeat.interval is off",
        ),
        (
            "{interval: 0, action_query: 'SELECT 1'}",
            "source.heartbeat.action_query",
            "source.heartbeat.interval is off",
        ),
        ("{interval: 1s, action_query: '  '}", "source.heartbeat.action_query", "is empty"),
        ("{interval: 1s, action_query: [a, b]}", "source.heartbeat.action_query", "single value"),
    ],
)
def test_errors_name_the_key(written: str, key: str, says: str) -> None:
    err = error(f", heartbeat: {written}")
    message = str(err)
    assert err.fields["key"] == key and message.startswith(f"{key}: ") and says in message
    assert message.endswith(".") and ". " not in message.replace("e.g. ", "")  # one sentence


def test_postgres_has_no_heartbeat_interval_of_its_own() -> None:
    err = error(", heartbeat_interval: 5m", "postgres")
    assert err.fields["key"] == "source.heartbeat_interval" and "heartbeat" in str(err)
