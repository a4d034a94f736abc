"""``pipeline.schema_changes``: one policy, or a mapping of change kinds to policies with the
rest under ``default`` (:mod:`sparkcdc.core.schema_policy`)::

    schema_changes: evolve
    schema_changes: {default: lenient, drop_column: ignore, alter_column_type: exception}
"""

from __future__ import annotations

from sparkcdc.config.values import as_text, fail
from sparkcdc.core.schema_policy import CHANGE_KINDS, DEFAULT_POLICY, POLICIES, SchemaPolicy

KEY = "pipeline.schema_changes"


def as_schema_changes(value: object, key: str = KEY) -> SchemaPolicy:
    """The policy ``value`` names (ConfigError naming the key and the choices)."""
    if value is None:
        return SchemaPolicy()
    if not isinstance(value, dict):
        return SchemaPolicy(_policy(value, key))
    kinds: dict[str, str] = {}
    default = DEFAULT_POLICY
    for kind, policy in value.items():
        name = str(kind).strip().lower().replace(".", "_")
        if name == "default":
            default = _policy(policy, f"{key}.default")
        elif name == "create_table":
            fail(f"{key}.create_table", "a new table matching source.tables is always created")
        elif name not in CHANGE_KINDS:
            fail(f"{key}.{kind}", f"is not a kind of change; use default or one of "
                 f"{', '.join(CHANGE_KINDS)}")  # fmt: skip
        else:
            kinds[name] = _policy(policy, f"{key}.{name}")
    return SchemaPolicy(default, kinds)


def _policy(value: object, key: str) -> str:
    text = as_text(value, key).strip().lower().replace("-", "_")
    if text not in POLICIES:
        fail(key, f"{value!r} is not a policy; use one of {', '.join(POLICIES)}")
    return text
