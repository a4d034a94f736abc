"""Plain JSON as a type: what ``json.loads`` returns and ``json.dumps`` takes.

Persisted values (offsets, the status file, the split store's metadata, a chunk's ``k`` event)
are JSON: what writes one gives a :data:`JSONObject` (or a ``TypedDict`` of its own), and mypy
checks every level, the aliases being recursive. What reads one back takes the unchecked value
``json.loads`` returned (``Mapping[str, object]`` where it checks each value it uses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject = dict[str, JSONValue]
"""A JSON object, as ``json.loads`` returns one."""


def json_object(value: Mapping[str, object]) -> JSONObject:
    """A ``TypedDict`` of JSON values (``KeyColumnJSON``, ``SplitJSON``) as the JSONObject it
    is, to nest in another: mypy takes no ``TypedDict`` for a ``dict[str, JSONValue]``."""
    return cast(JSONObject, value)
