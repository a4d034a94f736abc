"""The pipeline's metric families as prometheus_client writes them: Prometheus's text exposition
format, version 0.0.4.

:mod:`.metrics` describes each family as a frozen :class:`Family` of :class:`Sample` values;
:class:`FamiliesCollector` hands them to prometheus_client as a custom collector (read afresh on
every scrape), and :func:`render` writes a page with the library's ``generate_latest``. A counter's
name carries its ``_total``, as the samples do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
TYPES = ("counter", "gauge")

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")  # the legacy names every scraper reads
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Sample:
    """One value of a family, with its labels (name, value)."""

    value: float
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Family:
    """A metric: its name, type, help text and samples (none: the HELP and TYPE lines only)."""

    name: str
    type: str
    help: str
    samples: tuple[Sample, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a Prometheus metric name")
        if self.type not in TYPES:
            raise ValueError(f"{self.type!r} is not a metric type; use one of {TYPES}")
        for sample in self.samples:
            for label, _ in sample.labels:
                if not _LABEL.match(label) or label.startswith("__"):
                    raise ValueError(f"{label!r} is not a Prometheus label name")
            if self.type == "counter" and not sample.value >= 0:
                raise ValueError(f"counter {self.name} cannot be {sample.value}")


def metric(family: Family) -> Metric:
    """``family`` as prometheus_client's metric family (its samples share label names)."""
    names: Sequence[str] = [k for k, _ in family.samples[0].labels] if family.samples else []
    kind = CounterMetricFamily if family.type == "counter" else GaugeMetricFamily
    found = kind(family.name, family.help, labels=names)
    for sample in family.samples:
        if [k for k, _ in sample.labels] != list(names):
            raise ValueError(f"the samples of {family.name} have different label names")
        found.add_metric([v for _, v in sample.labels], sample.value)
    return found


class FamiliesCollector(Collector):
    """A prometheus_client collector of the families ``read()`` returns at each scrape."""

    def __init__(self, read: Callable[[], Iterable[Family]]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        seen: set[str] = set()
        for family in self._read():
            if family.name in seen:
                raise ValueError(f"metric {family.name} is written twice")
            seen.add(family.name)
            yield metric(family)


def render(families: Iterable[Family]) -> str:
    """The exposition text of ``families`` (each name once), ending with a newline."""
    listed = list(families)
    return page(FamiliesCollector(lambda: listed))


def page(collector: Collector) -> str:
    """The exposition text of what ``collector`` collects now."""
    return generate_latest(collector).decode("utf-8")
