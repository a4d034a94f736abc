"""Plain JSON as a type: what ``json.loads`` returns and ``json.dumps`` takes.

Persisted values (offsets, the status file, the split store's metadata, a chunk's ``k`` event)
are JSON; typed at a seam as :data:`JSONValue` or :data:`JSONObject` (or a ``TypedDict`` of
their own), never ``Any``. The aliases are recursive, so mypy checks every level.
"""

from __future__ import annotations

JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject = dict[str, JSONValue]
"""A JSON object, as ``json.loads`` returns one."""
