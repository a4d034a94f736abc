"""The table identity's text form: any name survives it, plain text reads as the first-dot split
every older checkpoint was read with, and text that names no table is refused with a sentence."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import ConfigError
from sparkcdc.core.table_name import TableName

plain = st.text(alphabet=st.characters(blacklist_characters='."'))


@given(st.text(), st.text())
def test_any_name_survives_its_text_form(db: str, table: str) -> None:
    name = TableName(db, table)
    assert TableName.parse(str(name)) == name


@given(plain, plain)
def test_a_plain_name_is_written_and_read_as_the_first_dot_split(db: str, table: str) -> None:
    text = f"{db}.{table}"
    assert str(TableName(db, table)) == text
    assert TableName.parse(text) == tuple(text.split(".", 1))


@given(plain, st.text())
def test_plain_text_reads_as_the_first_dot_split_when_the_table_is_not_quoted(
    db: str, rest: str
) -> None:
    text = f"{db}.{rest}"
    if rest.startswith('"'):
        return
    assert TableName.parse(text) == tuple(text.split(".", 1))


def test_a_part_with_a_dot_or_a_quote_is_double_quoted() -> None:
    assert str(TableName("sales.eu", "orders")) == '"sales.eu".orders'
    assert str(TableName("shop", 'say "hi"')) == 'shop."say ""hi"""'
    assert TableName.parse('"sales.eu"."a.b"') == ("sales.eu", "a.b")
    assert TableName.parse('"plain".t') == ("plain", "t")


def test_it_hashes_and_orders_as_the_pair() -> None:
    assert {("a", "b"): 1}[TableName("a", "b")] == 1
    assert sorted([TableName("b", "a"), TableName("a", "z")]) == [("a", "z"), ("b", "a")]
    assert pickle.loads(pickle.dumps(TableName("a", "b"))) == TableName("a", "b")


def test_sql_quotes_each_part_with_the_sources_quote() -> None:
    assert TableName("a.b", "c").sql(lambda p: f"`{p}`") == "`a.b`.`c`"


@pytest.mark.parametrize("text", ["orders", "", '"a.b"', '"a.b', '"a"x.t', 'a."b"c', 'a."b'])
def test_text_that_names_no_table_is_refused_with_a_sentence(text: str) -> None:
    with pytest.raises(ConfigError, match="is not a table name; write it as db.table"):
        TableName.parse(text)
