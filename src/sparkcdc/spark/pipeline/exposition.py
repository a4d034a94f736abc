"""Prometheus's text exposition format, version 0.0.4: metric families as the text a scrape reads.

Each family is written as::

    # HELP <name> <help, with \\ and newlines escaped>
    # TYPE <name> counter|gauge|untyped
    <name>{<label>="<value, with \\, " and newlines escaped>",...} <value>

one line per sample, families in the order given. A counter's name carries its ``_total`` in
this version of the format (the TYPE line names it as the samples do). Values are written as
integers when whole, else as Python writes floats; NaN and infinities as ``NaN``, ``+Inf``,
``-Inf``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TYPES = ("counter", "gauge", "untyped")

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Sample:
    """One value of a family, with its labels (name, value) in the order written."""

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


def render(families: Iterable[Family]) -> str:
    """The exposition text of ``families`` (each name once), ending with a newline."""
    lines: list[str] = []
    seen: set[str] = set()
    for family in families:
        if family.name in seen:
            raise ValueError(f"metric {family.name} is written twice")
        seen.add(family.name)
        lines.append(f"# HELP {family.name} {escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.type}")
        lines.extend(sample_line(family.name, s) for s in family.samples)
    return "".join(line + "\n" for line in lines)


def sample_line(name: str, sample: Sample) -> str:
    """``name{labels} value`` of one sample."""
    if not sample.labels:
        return f"{name} {format_value(sample.value)}"
    labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in sample.labels)
    return f"{name}{{{labels}}} {format_value(sample.value)}"


def escape_help(text: str) -> str:
    """HELP text: backslash and line feed escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label(value: str) -> str:
    """A label value: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value as the format writes it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(float(value))
