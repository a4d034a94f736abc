"""A reader of Prometheus's text exposition format 0.0.4, written from the format's grammar for
the tests: it checks every line and unescapes HELP texts and label values."""

from __future__ import annotations

import re

Labels = tuple[tuple[str, str], ...]
Families = dict[str, dict[str, object]]  # name -> {"help", "type", "samples": [(labels, value)]}

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse(text: str) -> Families:
    """The families of an exposition page, checking the grammar of every line (each sample
    belongs to a family its HELP and TYPE lines announced)."""
    assert text.endswith("\n"), "a page ends with a line feed"
    found: Families = {}
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            unescaped = re.sub(r"\\\\|\\n", lambda m: _UNESCAPE[m[0]], help_text)
            found[name] = {"help": unescaped, "samples": []}
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert name in found, f"TYPE before HELP: {line}"
            found[name]["type"] = kind
        else:
            match = _SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            name, labels, value = match.groups()
            assert "type" in found.get(name, {}), f"a sample of no announced family: {line!r}"
            samples = found[name]["samples"]
            assert isinstance(samples, list)
            samples.append((_labels(labels or ""), float(value)))
    return found


def _labels(text: str) -> Labels:
    pairs: list[tuple[str, str]] = []
    rest = text
    while rest:
        label = _LABEL.match(rest)
        assert label, f"bad labels: {text!r}"
        pairs.append((label[1], re.sub(r'\\\\|\\"|\\n', lambda m: _UNESCAPE[m[0]], label[2])))
        rest = rest[label.end() :]
    return tuple(pairs)


def values(found: Families, name: str, *order: str) -> dict[tuple[str, ...], float]:
    """A family's samples: their label values -> the value; {} when it has none. The values
    are in the order of the label names ``order`` (a page may write labels in any order), or
    as written without it."""
    samples = found[name]["samples"]
    assert isinstance(samples, list)
    if not order:
        return {tuple(v for _, v in labels): value for labels, value in samples}
    found_values: dict[tuple[str, ...], float] = {}
    for labels, value in samples:
        by_name = dict(labels)
        assert sorted(by_name) == sorted(order), f"{name} has labels {sorted(by_name)}"
        found_values[tuple(by_name[k] for k in order)] = value
    return found_values
