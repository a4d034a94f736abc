"""Prometheus's text exposition format 0.0.4 as :mod:`sparkcdc.spark.pipeline.exposition`
writes it through prometheus_client: HELP and TYPE lines, samples with escaped labels, values,
and what it refuses. Every rendered page is read back by a parser of the format's grammar
(:mod:`tests.cases.exposition`)."""

from __future__ import annotations

import math

import pytest

from sparkcdc.spark.pipeline.exposition import CONTENT_TYPE, Family, Sample, render
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
        "sparkcdc_batches_total 3.0\n"
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
    assert 'sparkcdc_events_total{op="u",table="a\\\\b\\"c\\nd"} 7.0\n' in text
    parsed = parse(text)["sparkcdc_events_total"]
    assert parsed["type"] == "counter"
    assert parsed["samples"] == [((("op", "u"), ("table", nasty)), 7.0),
                                 ((("op", "c"), ("table", "shop.x")), 2.0)]  # fmt: skip


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
    written = [0, 5.0, 1_712_345_678.125, 2**70, 0.1, math.inf, -math.inf]
    samples = tuple(Sample(v, (("n", str(i)),)) for i, v in enumerate(written))
    text = render([Family("x", "gauge", "X.", (*samples, Sample(math.nan, (("n", "nan"),))))])
    assert 'x{n="5"} +Inf\n' in text and 'x{n="6"} -Inf\n' in text
    assert 'x{n="nan"} NaN\n' in text
    read = {labels[0][1]: value for labels, value in parse(text)["x"]["samples"]}  # type: ignore[union-attr]
    assert [read[str(i)] for i in range(len(written))] == [float(v) for v in written]
    assert math.isnan(read["nan"])


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


def test_samples_of_one_family_name_the_same_labels() -> None:
    mixed = (Sample(1, (("table", "a"),)), Sample(2, (("op", "c"),)))
    with pytest.raises(ValueError, match="different label names"):
        render([Family("x", "gauge", "a", mixed)])
