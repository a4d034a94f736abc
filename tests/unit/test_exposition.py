"""Prometheus's text exposition format 0.0.4 as :mod:`sparkcdc.spark.pipeline.exposition`
writes it: HELP and TYPE lines, samples with escaped labels, values, and what it refuses. Every
rendered page is read back by a parser of the format's grammar (:mod:`tests.cases.exposition`)."""

from __future__ import annotations

import math

import pytest

from sparkcdc.spark.pipeline.exposition import (
    CONTENT_TYPE,
    Family,
    Sample,
    escape_label,
    format_value,
    render,
)
from tests.cases.exposition import parse


def test_help_type_and_samples_of_a_counter_and_a_gauge() -> None:
    text = render(
        [
            Family("sparkcdc_batches_total", "counter", "Micro-batches written.", (Sample(3),)),
            Family("sparkcdc_source_lag_seconds", "gauge", "Lag.", (Sample(1.25),)),
        ]
    )
    assert text == (
        "# HELP sparkcdc_batches_total Micro-batches written.\n"
        "# TYPE sparkcdc_batches_total counter\n"
        "sparkcdc_batches_total 3\n"
        "# HELP sparkcdc_source_lag_seconds Lag.\n"
        "# TYPE sparkcdc_source_lag_seconds gauge\n"
        "sparkcdc_source_lag_seconds 1.25\n"
    )
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_label_values_escape_backslash_quote_and_newline() -> None:
    nasty = 'a\\b"c\nd'
    family = Family(
        "sparkcdc_events_total",
        "counter",
        "Rows.",
        (Sample(7, (("table", nasty), ("op", "u"))), Sample(2, (("table", "shop.x"), ("op", "c")))),
    )
    text = render([family])
    assert 'sparkcdc_events_total{table="a\\\\b\\"c\\nd",op="u"} 7\n' in text
    parsed = parse(text)["sparkcdc_events_total"]
    assert parsed["type"] == "counter"
    assert parsed["samples"] == [((("table", nasty), ("op", "u")), 7.0),
                                 ((("table", "shop.x"), ("op", "c")), 2.0)]  # fmt: skip
    assert escape_label("plain") == "plain"


def test_help_text_escapes_backslash_and_newline_but_not_quotes() -> None:
    text = render([Family("x", "gauge", 'one\\two\n"three"')])
    assert text == '# HELP x one\\\\two\\n"three"\n# TYPE x gauge\n'
    assert parse(text)["x"]["help"] == 'one\\two\n"three"'


def test_a_family_without_samples_keeps_its_help_and_type() -> None:
    parsed = parse(render([Family("sparkcdc_snapshot_rows_total", "counter", "Rows.")]))
    assert parsed == {
        "sparkcdc_snapshot_rows_total": {"help": "Rows.", "type": "counter", "samples": []}
    }


def test_values_whole_fractional_huge_and_special() -> None:
    assert format_value(0) == "0"
    assert format_value(5.0) == "5"
    assert format_value(1_712_345_678.125) == "1712345678.125"
    assert format_value(2**70) == "1.1805916207174113e+21"
    assert format_value(math.nan) == "NaN"
    assert format_value(math.inf) == "+Inf" and format_value(-math.inf) == "-Inf"
    assert float(format_value(0.1)) == 0.1


@pytest.mark.parametrize(
    ("family", "says"),
    [
        (lambda: Family("sparkcdc-lag", "gauge", "x"), "not a Prometheus metric name"),
        (lambda: Family("x", "info", "x"), "not a metric type"),
        (lambda: Family("x", "gauge", "x", (Sample(1, (("1table", "a"),)),)), "label name"),
        (lambda: Family("x", "gauge", "x", (Sample(1, (("__name", "a"),)),)), "label name"),
        (lambda: Family("x_total", "counter", "x", (Sample(-1),)), "cannot be -1"),
    ],
)
def test_what_the_format_cannot_carry_is_refused(family: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        family()  # type: ignore[operator]


def test_a_name_written_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="written twice"):
        render([Family("x", "gauge", "a"), Family("x", "gauge", "b")])
