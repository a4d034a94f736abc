"""Mutations of an event stream (a list of events, each one ``bytes``), for the decoders' fuzzing.

A mutation is ``(kind, index, offset, value)``; ``index`` and ``offset`` are taken modulo the
stream's and the event's length, so any integers name a place:

    flip     byte ``offset`` of event ``index`` XOR ``value`` (at least one bit)
    cut      event ``index`` truncated to ``offset`` bytes
    enlarge  ``value % 4 + 1`` bytes at ``offset`` set to 0xff (a length or count made huge)
    splice   a copy of event ``value`` inserted before event ``index``
    drop     event ``index`` removed

``fix`` (a callable) runs on every event changed, e.g. to set a binlog header's size field to
the new length so decoding goes past the framing check into the event's body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Mutation = tuple[str, int, int, int]
KINDS = ("flip", "cut", "enlarge", "splice", "drop")


def mutate(
    events: Sequence[bytes],
    mutations: Sequence[Mutation],
    fix: Callable[[bytes], bytes] = lambda data: data,
) -> list[bytes]:
    """``events`` with ``mutations`` applied in order (the module docstring)."""
    out = list(events)
    for kind, index, offset, value in mutations:
        if not out:
            break
        i = index % len(out)
        data = bytearray(out[i])
        if kind == "splice":
            out.insert(i, out[value % len(out)])
            continue
        if kind == "drop":
            del out[i]
            continue
        if not data:
            continue
        at = offset % len(data)
        if kind == "flip":
            data[at] ^= value & 0xFF or 1
        elif kind == "cut":
            del data[at:]
        elif kind == "enlarge":
            width = value % 4 + 1
            data[at : at + width] = b"\xff" * width
        out[i] = fix(bytes(data))
    return out
