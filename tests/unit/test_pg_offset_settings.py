"""PostgreSQL offsets order as LSNs do (also as the change log's position text) and round-trip
through JSON; the source's settings read, check and name the slot and publication."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import ConfigError
from sparkcdc.sources.postgres.offset import LsnOffset
from sparkcdc.sources.postgres.settings import PostgresSettings, default_name

LSNS = st.integers(0, (1 << 63) - 1)


@given(LSNS, st.integers(0, 10**6), LSNS, st.integers(0, 10**6))
def test_offsets_order_by_lsn_then_skip_and_so_does_their_position_text(
    a: int, skip_a: int, b: int, skip_b: int
) -> None:
    x, y = LsnOffset(a, skip_a), LsnOffset(b, skip_b)
    assert (x < y) == ((a, skip_a) < (b, skip_b))
    assert (x == y) == ((a, skip_a) == (b, skip_b))
    if a != b:
        assert (x.position() < y.position()) == (a < b)
    assert LsnOffset.from_json(x.to_json()) == x


def test_json_is_the_lsn_as_postgresql_prints_it() -> None:
    offset = LsnOffset(0x16B374D848, 3)
    assert offset.to_json() == {"lsn": "16/B374D848", "skip": 3}
    assert str(offset) == "16/B374D848+3 changes"
    assert offset.with_skip(0).at_boundary and not offset.at_boundary
    assert offset.source_fields() == {"lsn": 0x16B374D848, "txid": None}
    for bad in ({"lsn": "16-B3"}, {"skip": 1}, {"lsn": "0/1", "skip": -1}, {"lsn": "1/2/3"}):
        with pytest.raises(ValueError, match="not a PostgreSQL LSN offset"):
            LsnOffset.from_json(bad)


def _settings(**given: object) -> PostgresSettings:
    return PostgresSettings.from_values(given.get, lambda name: f"source.{name}")


def test_settings_read_their_keys_and_refuse_names_postgresql_would_not_take() -> None:
    found = _settings(database="shop", slot="orders_slot", publication="orders_pub")
    assert (found.database, found.slot, found.publication) == ("shop", "orders_slot", "orders_pub")
    assert found.to_options() == {
        "database": "shop",
        "slot": "orders_slot",
        "publication": "orders_pub",
    }
    named = _settings().for_pipeline("./checkpoints/Shop-Orders 2")
    assert (named.slot, named.publication) == ("sparkcdc_shop_orders_2", "sparkcdc_shop_orders_2")
    assert _settings(slot="mine").for_pipeline("cp").names() == ("mine", "sparkcdc_cp")
    assert _settings(database="shop").names() == ("sparkcdc_shop", "sparkcdc_shop")
    with pytest.raises(ConfigError, match=r"source\.slot: 'Orders' is not a replication slot"):
        _settings(slot="Orders")
    with pytest.raises(ConfigError, match=r"source\.publication: '1pub' is not a plain identifier"):
        _settings(publication="1pub")
    assert len(default_name("/x/" + "a" * 100)) == 63


def test_the_lsn_startup_form() -> None:
    assert PostgresSettings.startup("lsn:16/b374d848") == "lsn:16/B374D848"
    assert PostgresSettings.startup("lsn:16") is None
    assert PostgresSettings.startup("gtid:0-1-2") is None
