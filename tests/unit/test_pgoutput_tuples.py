"""pgoutput's TupleData read in C (``_tuples.c``) against its Python twin, on valid, odd and
broken tuples: the C reader takes exactly the tuples of texts and NULLs, reads them as the
twin does, and leaves every other one to it."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.sources.postgres.pgoutput import _tuples  # type: ignore[attr-defined]
from sparkcdc.sources.postgres.pgoutput import messages as pm


@st.composite
def tuple_data(draw: st.DrawFn) -> bytes:
    """A TupleData, mostly well formed: texts, NULLs, sometimes 'u', 'b', an unknown kind, a
    wrong count or a cut end."""
    kinds = draw(st.lists(st.sampled_from(b"ttttnnub?"), max_size=8))
    out = bytearray(struct.pack(">H", len(kinds) + draw(st.sampled_from([0, 0, 0, 0, 1]))))
    for kind in kinds:
        out.append(kind)
        if kind in b"tb":
            text = draw(st.binary(max_size=12))
            out += struct.pack(">I", len(text)) + text
    cut = draw(st.sampled_from([0, 0, 0, 0, 1, 3]))
    return bytes(out[: len(out) - cut] if cut else out) + draw(st.binary(max_size=3))


def python(data: bytes, pos: int) -> tuple[list[object], int] | str:
    try:
        values, end = pm.tuple_in_python(data, pos)
    except (pm.PgoutputError, IndexError, struct.error) as exc:
        return type(exc).__name__
    return list(values), end


@settings(max_examples=2000, deadline=None)
@given(tuple_data(), st.integers(0, 2))
def test_the_c_reader_reads_texts_and_nulls_as_python_does(data: bytes, offset: int) -> None:
    data = b"\xff" * offset + data
    found = _tuples.texts(data, offset, pm.TextTuple)
    twin = python(data, offset)
    if found is None:  # left to the twin: it must find something other than texts and NULLs
        assert isinstance(twin, str) or any(
            v is pm.UNCHANGED or isinstance(v, pm.BinaryValue) for v in twin[0]
        ), (data, twin)
        return
    values, end = found
    assert type(values) is pm.TextTuple
    assert (list(values), end) == twin


def test_decoded_rows_of_texts_are_marked_as_such() -> None:
    """An Insert of texts and NULLs comes out as a TextTuple; with a 'u' it does not."""
    texts = b"I" + struct.pack(">I", 7) + b"N" + struct.pack(">H", 2) + b"t\0\0\0\x0242n"
    inserted = pm.decode(texts)
    assert isinstance(inserted, pm.Insert)
    assert type(inserted.new) is pm.TextTuple and inserted.new == [b"42", None]
    unchanged = b"U" + struct.pack(">I", 7) + b"N" + struct.pack(">H", 2) + b"t\0\0\0\x0242u"
    updated = pm.decode(unchanged)
    assert isinstance(updated, pm.Update)
    assert type(updated.new) is list and updated.new == [b"42", pm.UNCHANGED]
