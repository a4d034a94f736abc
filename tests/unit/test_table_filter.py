"""``source.tables`` against a server's table names (:mod:`sparkcdc.sources.table_filter`),
without a server: which patterns match nothing, and the sentences naming them."""

from __future__ import annotations

import pytest

from sparkcdc.core.errors import ConfigError, NoTablesMatched
from sparkcdc.sources.table_filter import compile_patterns, no_table_matches, unmatched_patterns

NAMES = ["shop.orders", "shop.order_items", "ops.signals"]


@pytest.mark.parametrize(
    ("patterns", "unmatched"),
    [
        ([r"shop\..*"], []),
        ([r"shop\.order", r"shop\.orders"], [r"shop\.order"]),  # a pattern matches whole names
        ([r"shop\.ordres", r"ops\.signals", "x"], [r"shop\.ordres", "x"]),
        ([r"SHOP\.orders"], [r"SHOP\.orders"]),  # as written: case counts
    ],
)
def test_unmatched_patterns(patterns: list[str], unmatched: list[str]) -> None:
    assert unmatched_patterns(patterns, NAMES) == unmatched


def test_the_sentences() -> None:
    one = no_table_matches(["a", "b"], ["b"], "on h:1", "fix them")
    assert str(one) == (
        "The source.tables pattern 'b' matches no table on h:1, while the others do; fix them, "
        "or set source.on_unmatched: warn to start with the tables the others match."
    )
    two = no_table_matches(["a", "b", "c"], ["b", "c"], "on h:1", "fix them")
    assert str(two).startswith("The source.tables patterns 'b', 'c' match no table on h:1,")
    every = no_table_matches(["a", "b"], ["a", "b"], "in database 'd' on h:1", "fix them")
    assert str(every) == (
        "No table in database 'd' on h:1 matches source.tables ['a', 'b']; fix them."
    )
    for err in (one, two, every):
        assert isinstance(err, NoTablesMatched) and isinstance(err, ConfigError)
        assert err.fields["key"] == "source.tables"


def test_a_pattern_that_is_no_regular_expression() -> None:
    with pytest.raises(ConfigError, match=r"source.tables: 'shop\(' is not a regular expression"):
        compile_patterns(["shop\\..*", "shop("])
