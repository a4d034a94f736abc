"""MySQL's logical JSON diffs (``binlog_row_value_options=PARTIAL_JSON``): reading a diff list
from a row image, parsing its paths and applying it to a :mod:`.json_doc` document.

A partial JSON value in the after image of a PARTIAL_UPDATE_ROWS_EVENT is
(``Json_diff_vector::write_binary`` in MySQL's ``sql/json_diff.cc``)::

    length (uint32, the bytes that follow)  diff*
    diff := operation (1 byte: 0 REPLACE, 1 INSERT, 2 REMOVE)
            path length (packed integer) path (utf8mb4 text)
            [REPLACE, INSERT: value length (packed integer) value (binary JSON)]

Paths are written by ``Json_path::to_string`` (``sql/json_path.cc``): ``$`` then legs ``.name``
(a member name that is an ECMAScript identifier) or ``."…"`` (any other name, as a JSON string)
and ``[n]``, ``[last]`` or ``[last-n]`` (JSON_SET, JSON_REPLACE and JSON_REMOVE log the path
they were given, with its ``last``; wildcards and ranges are refused there, so never appear).

Applying follows ``apply_json_diffs`` in ``json_diff.cc``, diff after diff: REPLACE replaces the
value at the path, which must exist; INSERT adds a member that must not exist yet to an object,
or inserts into an array at the index (an index past the end appends); REMOVE removes an
existing member or element. A path of no legs, or one that does not lead there, makes the
diff inapplicable (MySQL's replica stops with ER_COULD_NOT_APPLY_JSON_DIFF).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sparkcdc.sources.mysql.binlog import json_doc
from sparkcdc.sources.mysql.binlog.json_doc import Node
from sparkcdc.sources.mysql.binlog.tablemap import read_packed_int

REPLACE, INSERT, REMOVE = 0, 1, 2
_WHITESPACE = " \t\n\r\f\v"


class DiffError(ValueError):
    """A JSON diff is damaged or does not apply to the document."""


@dataclass(frozen=True, slots=True)
class Cell:
    """An array leg: ``[index]``, or ``[last-index]`` when ``from_end``."""

    index: int
    from_end: bool = False

    def position(self, size: int) -> tuple[int, bool]:
        """(position in an array of ``size`` elements, whether it is an element): an index
        past either end gives the nearest end (``Json_array_index`` in ``json_path.h``)."""
        within = self.index < size
        if self.from_end:
            return (size - 1 - self.index if within else 0), within
        return min(self.index, size), within


Leg = str | Cell  # a member name or an array cell


@dataclass(frozen=True, slots=True)
class Diff:
    """One logical change: the operation, the path's legs and the new value (None: REMOVE)."""

    op: int
    path: tuple[Leg, ...]
    value: Node | None = None


def read_diffs(data: bytes, p: int, end: int) -> list[Diff]:
    """The diffs written back to back in ``data[p:end]`` (the diff list after its length)."""
    diffs = []
    while p < end:
        op = data[p]
        if op > REMOVE:
            raise DiffError(f"a JSON diff has the unknown operation {op}")
        n, p = _packed(data, p + 1, end)
        path = parse_path(data[p : p + n].decode("utf-8"))
        p += n
        value = None
        if op != REMOVE:
            n, p = _packed(data, p, end)
            value = json_doc.decode(data[p : p + n])
            p += n
        diffs.append(Diff(op, path, value))
    if p != end:
        raise DiffError("a JSON diff runs past the end of its list")
    return diffs


def _packed(data: bytes, p: int, end: int) -> tuple[int, int]:
    """A packed (length-encoded) integer that, with what it counts, lies before ``end``."""
    if p >= end or data[p] in (251, 255):
        raise DiffError("a JSON diff is cut short or has a bad length")
    n, p = read_packed_int(data, p)
    if p + n > end:
        raise DiffError("a JSON diff is longer than its list")
    return n, p


def parse_path(text: str) -> tuple[Leg, ...]:
    """The legs of a JSON path as MySQL writes it in a diff (whitespace between legs is
    allowed, as MySQL's parser allows it)."""
    p = _skip(text, 0)
    if not text.startswith("$", p):
        raise DiffError(f"the JSON path {text!r} does not start with $")
    legs: list[Leg] = []
    p = _skip(text, p + 1)
    while p < len(text):
        leg: Leg
        if text[p] == ".":
            leg, p = _member(text, _skip(text, p + 1))
        elif text[p] == "[":
            leg, p = _cell(text, _skip(text, p + 1))
        else:
            raise DiffError(f"the JSON path {text!r} has an unexpected {text[p]!r}")
        legs.append(leg)
        p = _skip(text, p)
    return tuple(legs)


def _skip(text: str, p: int) -> int:
    while p < len(text) and text[p] in _WHITESPACE:
        p += 1
    return p


def _member(text: str, p: int) -> tuple[str, int]:
    """A member name at ``p``: a JSON string, or unquoted up to whitespace, ``.``, ``[``, ``*``
    (with JSON escapes, as MySQL reads it)."""
    if text.startswith('"', p):
        q = p + 1
        while q < len(text) and text[q] != '"':
            q += 2 if text[q] == "\\" else 1
        end = q + 1
        quoted = text[p:end]
    else:
        end = p
        while end < len(text) and text[end] not in _WHITESPACE + ".[*":
            end += 1
        quoted = '"' + text[p:end] + '"'
    try:
        name = json.loads(quoted)
    except ValueError as exc:
        raise DiffError(f"the JSON path {text!r} has a bad member name") from exc
    if end == p or not isinstance(name, str):
        raise DiffError(f"the JSON path {text!r} has a bad member name")
    return name, end


def _cell(text: str, p: int) -> tuple[Cell, int]:
    """An array cell after its ``[``: ``n``, ``last`` or ``last-n``, then ``]``."""
    from_end = text.startswith("last", p)
    if from_end:
        p = _skip(text, p + 4)
        if text.startswith("-", p):
            p = _skip(text, p + 1)
        elif text.startswith("]", p):
            return Cell(0, True), p + 1
        else:
            raise DiffError(f"the JSON path {text!r} has a bad array index")
    q = p
    while q < len(text) and text[q].isascii() and text[q].isdigit():
        q += 1
    close = _skip(text, q)
    if q == p or not text.startswith("]", close):
        raise DiffError(f"the JSON path {text!r} has a bad array index (or a range)")
    return Cell(int(text[p:q]), from_end), close + 1


def apply_diffs(doc: Node, diffs: Sequence[Diff]) -> Node:
    """``doc`` with the diffs applied in order (its containers are changed in place)."""
    for diff in diffs:
        if not diff.path:
            raise DiffError("a JSON diff addresses the whole document")
        parent = _seek(doc, diff.path[:-1])
        if isinstance(parent, dict) and isinstance(diff.path[-1], str):
            _in_object(parent, diff.path[-1], diff)
        elif isinstance(parent, list) and isinstance(diff.path[-1], Cell):
            _in_array(parent, diff.path[-1], diff)
        else:
            raise DiffError(f"the JSON path {path_text(diff.path)} is not in the document")
    return doc


def _seek(doc: Node, legs: Sequence[Leg]) -> Node | None:
    node: Node | None = doc
    for leg in legs:
        if isinstance(node, dict) and isinstance(leg, str):
            node = node.get(leg)
        elif isinstance(node, list) and isinstance(leg, Cell):
            at, within = leg.position(len(node))
            node = node[at] if within else None
        else:
            return None
    return node


def _in_object(obj: dict[str, Node], key: str, diff: Diff) -> None:
    exists = key in obj
    if diff.op == REMOVE and exists:
        del obj[key]
    elif diff.op == REPLACE and exists and diff.value is not None:
        obj[key] = diff.value
    elif diff.op == INSERT and not exists and diff.value is not None:
        obj[key] = diff.value
        ordered = sorted(obj, key=json_doc.key_order)
        for name in ordered:  # re-inserted in MySQL's key order
            obj[name] = obj.pop(name)
    else:
        raise DiffError(f"a JSON diff cannot change {path_text(diff.path)} ({_OPS[diff.op]})")


def _in_array(array: list[Node], cell: Cell, diff: Diff) -> None:
    at, within = cell.position(len(array))
    if diff.op == REMOVE and within:
        del array[at]
    elif diff.op == REPLACE and within and diff.value is not None:
        array[at] = diff.value
    elif diff.op == INSERT and diff.value is not None:
        array.insert(at, diff.value)
    else:
        raise DiffError(f"a JSON diff cannot change {path_text(diff.path)} ({_OPS[diff.op]})")


_OPS = {REPLACE: "replace", INSERT: "insert", REMOVE: "remove"}


def path_text(legs: Sequence[Leg]) -> str:
    """A path as MySQL writes it (names quoted unless plain identifiers)."""
    return "$" + "".join(_leg_text(leg) for leg in legs)


def _leg_text(leg: Leg) -> str:
    if isinstance(leg, Cell):
        if not leg.from_end:
            return f"[{leg.index}]"
        return "[last]" if leg.index == 0 else f"[last-{leg.index}]"
    plain = leg.replace("$", "_").isidentifier()  # near enough ECMAScript's identifiers
    return "." + leg if plain else "." + json.dumps(leg, ensure_ascii=False)
