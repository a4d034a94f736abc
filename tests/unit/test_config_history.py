"""``sink.history``: its three forms, and errors that name the key."""

from __future__ import annotations

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.history_spec import HistorySpec, TableHistory
from sparkcdc.core.table_name import TableName

BASE = """
source: {type: mysql, host: db.local, port: 3307, user: cdc, password: secret,
         tables: ["shop\\\\..*", 'crm\\.users'], tables_exclude: ['shop\\.tmp']}
sink: {type: delta, path: ./lake, HISTORY}
pipeline: {checkpoint: ./checkpoints/shop}
"""


def spec(history: str) -> HistorySpec:
    return load_config_text(BASE.replace("HISTORY", f"history: {history}"), "/base").sink.history


def error(history: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        spec(history)
    return err.value


def test_off_by_default_on_for_every_table_with_true() -> None:
    assert not load_config_text(BASE.replace(", HISTORY", ""), "/base").sink.history.on
    assert spec("true").of(TableName("shop", "items")) == TableHistory()
    assert spec("false").of(TableName("shop", "items")) is None


def test_a_list_of_tables_and_a_mapping_with_tracked_columns() -> None:
    listed = spec("[shop.items, crm.users]")
    assert listed.of(TableName("crm", "users")) == TableHistory()
    assert listed.of(TableName("shop", "orders")) is None
    mapped = spec("{shop.items: {track: [name, price]}, shop.orders: {except: [seen]}, "
                  "crm.users: {}}")  # fmt: skip
    assert mapped.of(TableName("shop", "items")) == TableHistory(track=("name", "price"))
    assert mapped.of(TableName("shop", "orders")) == TableHistory(untracked=("seen",))
    assert mapped.of(TableName("crm", "users")) == TableHistory()


@pytest.mark.parametrize(
    ("history", "key", "says"),
    [
        ("[shop.items, crm.other]", "sink.history.crm.other", "does not capture"),
        ("[shop.tmp]", "sink.history.shop.tmp", "does not capture"),
        ("{shop.items: {track: [a], except: [b]}}", "sink.history.shop.items", "both"),
        ("{shop.items: {columns: [a]}}", "sink.history.shop.items.columns", "not a known key"),
        ("{shop.items: {track: []}}", "sink.history.shop.items.track", "non-empty list"),
        ("maybe", "sink.history", "maybe"),
    ],
)
def test_errors_name_the_key(history: str, key: str, says: str) -> None:
    found = error(history)
    assert str(found).startswith(f"{key}: ")
    assert says in str(found)
