"""Arrow columns built in bulk from buffers: a value repeated, counters, runs, per-row texts.

The change-event builders (:mod:`sparkcdc.core.envelope`, :mod:`sparkcdc.core.offset_events`)
make most envelope columns here instead of from Python lists: a value repeated ``n`` times is one
copy of its bytes times ``n`` (and cached, since names and files repeat from item to item), a
counter is an ``array`` of a ``range``, a sortable position is its record's position and a
counter joined inside Arrow.
"""

from __future__ import annotations

import functools
import struct
from array import array
from collections.abc import Callable, Sequence
from itertools import accumulate, repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

STRING = pa.string()
INT64 = pa.int64()
INT32 = pa.int32()
BOOL = pa.bool_()
from_buffers = pa.Array.from_buffers
_buffer = pa.py_buffer
_CACHE_LIMIT = 4096
_cached: dict[tuple[object, int, bool], pa.Array] = {}  # (value, n, is an int64): array
_counters: dict[tuple[int, str], pa.Array] = {}  # one-row counters 0 and 1
_flags: dict[tuple[bool, int], pa.Array] = {}
_steps: dict[tuple[int, int], pa.Buffer] = {}
_MAX_OFFSET = 1 << 31  # int32 offsets of the string type


def strings(value: str | None, n: int) -> pa.Array:
    """``value`` ``n`` times (None: ``n`` nulls)."""
    if value is None:
        return _NULL_1 if n == 1 else pa.nulls(n, STRING)
    data = value.encode()
    return from_buffers(STRING, n, [None, offsets(len(data), n), _buffer(data * n)])


def offsets(size: int, n: int) -> pa.Buffer:
    """The offsets of ``n`` strings of ``size`` bytes each (cached: few sizes repeat)."""
    found = _steps.get((size, n))
    if found is None:
        if len(_steps) >= _CACHE_LIMIT:
            _steps.clear()
        steps = array("i", range(0, (n + 1) * size, size)) if size else array("i", bytes(4 * n + 4))
        found = _steps[(size, n)] = _buffer(steps)
    return found


def int64s(value: int, n: int) -> pa.Array:
    return from_buffers(INT64, n, [None, _buffer(_Q.pack(value) * n)])


def bools(value: bool, n: int) -> pa.Array:
    key = (value, n)
    found = _flags.get(key)
    if found is None:
        if len(_flags) >= _CACHE_LIMIT:
            _flags.clear()
        bits = b"\xff" if value else b"\0"
        found = _flags[key] = from_buffers(BOOL, n, [None, _buffer(bits * ((n + 7) // 8))])
    return found


def strings_cached(value: str | None, n: int) -> pa.Array:
    """:func:`strings` for values that repeat from item to item (names, ids, the file)."""
    return _remembered((value, n, False), lambda: strings(value, n))


def int64s_cached(value: int, n: int) -> pa.Array:
    return _remembered((value, n, True), lambda: int64s(value, n))


def _remembered(key: tuple[object, int, bool], make: Callable[[], pa.Array]) -> pa.Array:
    found = _cached.get(key)
    if found is None:
        if len(_cached) >= _CACHE_LIMIT:
            _cached.clear()
        found = _cached[key] = make()
    return found


def counter(type_: pa.DataType, code: str, first: int, n: int) -> pa.Array:
    """``first, first + 1, …`` (``n`` values)."""
    if n == 1 and first in (0, 1):
        found = _counters.get((first, code))
        if found is None:
            found = _counters[(first, code)] = from_buffers(
                type_, 1, [None, _buffer(array(code, (first,)))]
            )
        return found
    return from_buffers(type_, n, [None, _buffer(array(code, range(first, first + n)))])


def same(values: Sequence[object]) -> bool:
    return values.count(values[0]) == len(values)


def expand(values: Sequence[object], counts: Sequence[int]) -> list[object]:
    out: list[object] = []
    for value, m in zip(values, counts, strict=True):
        out += repeat(value, m)
    return out


def string_runs(values: Sequence[str | None], counts: Sequence[int], n: int) -> pa.Array:
    if same(values):
        return strings(values[0], n)
    return pa.array(expand(values, counts), STRING)


_CODES = {INT64: "q", INT32: "i"}


def constant(type_: pa.DataType, value: object, n: int) -> pa.Array:
    """``value`` ``n`` times as ``type_`` (string, int64, int32 or bool; None: nulls)."""
    if value is None:
        return _NULL_1 if n == 1 and type_ == STRING else pa.nulls(n, type_)
    if type_ == STRING:
        return strings(str(value), n)
    if type_ == BOOL:
        return bools(bool(value), n)
    code = _CODES.get(type_)
    if code is None:
        return pa.array([value] * n, type_)
    return from_buffers(type_, n, [None, _buffer(array(code, [int(str(value))]) * n)])


def runs(type_: pa.DataType, values: Sequence[object], counts: Sequence[int], n: int) -> pa.Array:
    """``values[i]`` ``counts[i]`` times each, as ``type_`` (as :func:`constant`)."""
    first = values[0]
    if values.count(first) == len(values):
        return constant(type_, first, n)
    code = _CODES.get(type_)
    if code is None or None in values:
        return pa.array(values if len(values) == n else expand(values, counts), type_)
    return int_runs(type_, code, values, counts, n)  # type: ignore[arg-type]


def counters(type_: pa.DataType, firsts: Sequence[int], counts: Sequence[int], n: int) -> pa.Array:
    """Each run counting up from its first value (int64 or int32)."""
    code = _CODES[type_]
    if len(firsts) == 1:
        return counter(type_, code, firsts[0], n)
    return ranges(type_, code, firsts, counts, n)


INDEX_DIGITS = 10


def positions(
    prefixes: Sequence[str | None], firsts: Sequence[int], counts: Sequence[int], n: int
) -> pa.Array:
    """``<prefix>:<index>`` per row, the index counting up from each run's first and written
    with :data:`INDEX_DIGITS` digits, so the texts sort as (prefix, index) do; a None prefix
    gives nulls. Joined inside Arrow from the cached index texts."""
    if len(prefixes) == n:
        prefix, index = pa.array(prefixes, STRING), np.asarray(firsts, np.int64)
    else:
        runs = np.repeat(np.arange(len(counts)), counts)
        prefix, index = pa.array(prefixes, STRING).take(runs), _counting(firsts, counts, n)
    if n and int(index.max()) >= INDEX_CACHE:
        texts = pa.array([f":{i:0{INDEX_DIGITS}d}" for i in index.tolist()], STRING)
    else:
        texts = _index_texts().take(index)
    return pc.binary_join_element_wise(prefix, texts, "")


INDEX_CACHE = 1 << 16  # index texts kept as one Arrow array


@functools.cache
def _index_texts() -> pa.Array:
    """``:<index>`` for 0 .. INDEX_CACHE - 1, :data:`INDEX_DIGITS` digits each."""
    return pa.array([f":{i:0{INDEX_DIGITS}d}" for i in range(INDEX_CACHE)], STRING)


def _counting(firsts: Sequence[int], counts: Sequence[int], n: int) -> np.ndarray:
    """Each run counting up from its first value, as one int64 array."""
    sizes = np.asarray(counts, np.int64)
    starts = np.cumsum(sizes) - sizes
    counting: np.ndarray = np.arange(n, dtype=np.int64) + np.repeat(
        np.asarray(firsts, np.int64) - starts, sizes
    )
    return counting


def int_runs(
    type_: pa.DataType, code: str, values: Sequence[int], counts: Sequence[int], n: int
) -> pa.Array:
    if len(values) == n:  # a row per run
        return from_buffers(type_, n, [None, _buffer(array(code, values))])
    out = array(code)
    for value, m in zip(values, counts, strict=True):
        out.extend(repeat(value, m))
    return from_buffers(type_, n, [None, _buffer(out)])


def ranges(
    type_: pa.DataType, code: str, firsts: Sequence[int], counts: Sequence[int], n: int
) -> pa.Array:
    if len(firsts) == n:  # a row per run
        return from_buffers(type_, n, [None, _buffer(array(code, firsts))])
    values = _counting(firsts, counts, n)
    return from_buffers(type_, n, [None, _buffer(values.astype(np.dtype(code)))])


def texts(values: list[str | None], n: int) -> pa.Array:
    """Per-row JSON texts (all None: nulls without looking at each)."""
    if n == 1:
        value = values[0]
        if value is None:
            return _NULL_1
        data = value.encode()
        offsets = _buffer(_OFFSETS.pack(0, len(data)))
        return from_buffers(STRING, 1, [None, offsets, _buffer(data)])
    nulls = values.count(None)
    if nulls == n:
        return pa.nulls(n, STRING)
    if not nulls:
        text = "".join(values)  # type: ignore[arg-type]
        if text.isascii() and len(text) < _MAX_OFFSET:  # one byte per character
            offsets = array("i", accumulate(map(len, values), initial=0))  # type: ignore[arg-type]
            return from_buffers(STRING, n, [None, _buffer(offsets), _buffer(text.encode())])
    return pa.array(values, STRING)


_Q = struct.Struct("<q")
_OFFSETS = struct.Struct("<ii")
_NULL_1 = pa.nulls(1, STRING)
