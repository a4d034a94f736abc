"""A MySQL binary JSON document as a tree that keeps each value's binary type, read from binary
and written back to binary.

The format is MySQL's ``json_binary.h`` (summarised in :mod:`.json_binary`). Objects are Python
dicts and arrays lists; every other value is a :class:`Scalar` holding its type code (literal,
int16/uint16/int32/uint32/int64/uint64, double, utf8mb4 string, or opaque with its MySQL field
type) and its stored bytes, so a document read and written back keeps its values exactly.

Writing follows MySQL's ``json_binary::serialize``: each container is written in the small
format (16-bit counts, sizes and offsets) when it fits, else in the large one (32-bit); a
container holding a large one is therefore large itself. Inside a value entry sit literals and
16-bit integers always, 32-bit integers in large containers; other values follow the keys,
their entries holding offsets from the container's start. Object keys are kept in MySQL's order
(shorter keys first, then byte order; ``Json_key_comparator`` in ``json_dom.cc``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeAlias

from sparkcdc.sources.mysql.binlog import json_binary as jb
from sparkcdc.sources.mysql.binlog.json_binary import BinaryJsonError

Node: TypeAlias = "dict[str, Node] | list[Node] | Scalar"

_WIDTHS = {jb.LITERAL: 1, jb.INT16: 2, jb.UINT16: 2, jb.INT32: 4, jb.UINT32: 4, jb.INT64: 8,
           jb.UINT64: 8, jb.DOUBLE: 8}  # fmt: skip
_CONTAINERS = (jb.SMALL_OBJECT, jb.LARGE_OBJECT, jb.SMALL_ARRAY, jb.LARGE_ARRAY)
_MAX_DEPTH = 100  # MySQL's JSON_DOCUMENT_MAX_DEPTH


@dataclass(frozen=True, slots=True)
class Scalar:
    """A value that is not a container: its binary type code and the bytes MySQL stores after
    that code (a literal's code byte, an integer's or double's little-endian bytes, a string's
    variable length and text, an opaque value's field type, variable length and bytes)."""

    kind: int
    raw: bytes


NULL = Scalar(jb.LITERAL, b"\x00")


def decode(data: bytes) -> Node:
    """The document of a binary JSON value (empty bytes are JSON null, as MySQL reads them)."""
    if not data:
        return NULL
    try:
        return _node(data[0], data, 1, 0)
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise BinaryJsonError(f"a binary JSON value is cut short or damaged ({exc})") from exc


def _node(kind: int, data: bytes, p: int, depth: int) -> Node:
    if kind in _CONTAINERS:
        if depth >= _MAX_DEPTH:
            raise BinaryJsonError(f"a binary JSON document nests deeper than {_MAX_DEPTH}")
        is_object, entries = jb.container_entries(kind, data, p)
        if is_object:
            return {str(k): _node(e, data, at, depth + 1) for k, e, at in entries}
        return [_node(e, data, at, depth + 1) for _, e, at in entries]
    if kind in _WIDTHS:
        n = _WIDTHS[kind]
        if kind == jb.LITERAL and data[p] > 2:
            raise BinaryJsonError(f"a binary JSON literal has the unknown code {data[p]}")
    elif kind == jb.STRING:
        length, q = jb.read_length(data, p)
        n = q - p + length
    elif kind == jb.OPAQUE:
        length, q = jb.read_length(data, p + 1)
        n = q - p + length
    else:
        raise BinaryJsonError(f"a binary JSON value has the unknown type 0x{kind:02x}")
    if p + n > len(data):
        raise BinaryJsonError("a binary JSON value runs past the end of its document")
    return Scalar(kind, bytes(data[p : p + n]))


def encode(node: Node) -> bytes:
    """The binary JSON value of a document: its type byte, then the value."""
    kind, payload = _encode(node)
    return bytes([kind]) + payload


def _encode(node: Node) -> tuple[int, bytes]:
    if isinstance(node, Scalar):
        return node.kind, node.raw
    if isinstance(node, dict):
        return _container([(k, *_encode(v)) for k, v in node.items()], True)
    return _container([(None, *_encode(v)) for v in node], False)


def _container(parts: list[tuple[str | None, int, bytes]], is_object: bool) -> tuple[int, bytes]:
    small = _layout(parts, is_object, large=False)
    if small is not None:
        return (jb.SMALL_OBJECT if is_object else jb.SMALL_ARRAY), small
    large = _layout(parts, is_object, large=True)
    if large is None:
        raise BinaryJsonError("a JSON document does not fit MySQL's 4 GiB binary format")
    return (jb.LARGE_OBJECT if is_object else jb.LARGE_ARRAY), large


def _layout(
    parts: list[tuple[str | None, int, bytes]], is_object: bool, large: bool
) -> bytes | None:
    """One container in the small or large format, or None when it does not fit that one."""
    width, word, limit = (4, "<I", 0xFFFFFFFF) if large else (2, "<H", 0xFFFF)
    keys = [(k or "").encode("utf-8") for k, _, _ in parts] if is_object else []
    if any(len(k) > 0xFFFF for k in keys):
        raise BinaryJsonError("a JSON object key is longer than 65535 bytes")
    n = len(parts)
    at = 2 * width + len(keys) * (width + 2) + n * (1 + width)
    inlined = [jb.is_inlined(kind, large) for _, kind, _ in parts]
    size = (
        at
        + sum(map(len, keys))
        + sum(len(payload) for (_, _, payload), inl in zip(parts, inlined, strict=True) if not inl)
    )
    if n > limit or size > limit:
        return None
    out = bytearray(struct.pack(word + word[1], n, size))
    for key in keys:
        out += struct.pack(word + "H", at, len(key))
        at += len(key)
    values = bytearray()
    for (_, kind, payload), inl in zip(parts, inlined, strict=True):
        if inl:
            out += bytes([kind]) + payload.ljust(width, b"\0")
        else:
            out += bytes([kind]) + struct.pack(word, at + len(values))
            values += payload
    return bytes(out + b"".join(keys) + values)


def key_order(key: str) -> tuple[int, bytes]:
    """MySQL's order of object keys: by UTF-8 length, then by bytes."""
    raw = key.encode("utf-8")
    return len(raw), raw


def from_python(value: object) -> Node:
    """The document MySQL stores for a JSON value made of None, bools, ints, floats, strings,
    lists (or tuples) and dicts with string keys: integers in the narrowest of int16, int32,
    int64 (uint64 above that), floats as doubles, keys in MySQL's order. TypeError for others."""
    if value is None or isinstance(value, bool):
        return Scalar(jb.LITERAL, bytes([{None: 0, True: 1, False: 2}[value]]))
    if isinstance(value, int):
        for kind, fmt, bits in ((jb.INT16, "<h", 15), (jb.INT32, "<i", 31), (jb.INT64, "<q", 63)):
            if -(1 << bits) <= value < 1 << bits:
                return Scalar(kind, struct.pack(fmt, value))
        return Scalar(jb.UINT64, struct.pack("<Q", value))
    if isinstance(value, float):
        return Scalar(jb.DOUBLE, struct.pack("<d", value))
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return Scalar(jb.STRING, variable_length(len(raw)) + raw)
    if isinstance(value, list | tuple):
        return [from_python(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: from_python(value[k]) for k in sorted(value, key=key_order)}
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def variable_length(n: int) -> bytes:
    """A binary JSON length: 7 bits a byte, low bits first, the high bit on all but the last."""
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)
