"""The capture filter settings (:mod:`sparkcdc.core.capture`): ``source.tables_exclude``,
``source.columns``, ``source.skip_operations`` and ``source.masks``, checked from the pipeline
file, and written to and read from the Spark source's options (a hash's salt sealed as the
password is, :mod:`sparkcdc.config.secret`)."""

from __future__ import annotations

import hashlib
import json

from sparkcdc.config.secret import seal, unseal
from sparkcdc.config.values import as_int, as_regexes, as_text, fail
from sparkcdc.core.capture import MASK_KINDS, SKIPPABLE_OPERATIONS, Mask

ColumnPatterns = dict[str, tuple[str, ...]]  # {"include": (...), "exclude": (...)}


def as_tables_exclude(value: object, key: str) -> tuple[str, ...]:
    """Regular expressions over ``db.table``: tables ``source.tables`` matches but the
    pipeline leaves out."""
    return as_regexes(value, key, "db.table, e.g. ['shop\\\\.audit_.*']")


def as_columns(value: object, key: str) -> ColumnPatterns:
    """``{include: [...]}`` or ``{exclude: [...]}`` (or both): regexes over ``db.table.column``."""
    if not isinstance(value, dict) or not value:
        fail(key, "must map include or exclude to regular expressions over db.table.column, "
                  "e.g. {exclude: ['shop\\\\.customers\\\\.ssn']}")  # fmt: skip
    unknown = sorted(set(value) - {"include", "exclude"})
    if unknown:
        fail(f"{key}.{unknown[0]}", "is not one of its keys; use include or exclude")
    return {k: as_regexes(v, f"{key}.{k}", "db.table.column") for k, v in value.items()}


def as_skip_operations(value: object, key: str) -> tuple[str, ...]:
    """Debezium's ``skipped.operations``: some of c, u, d, t (``none``: none)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        fail(key, f"must be a list of operations among {', '.join(SKIPPABLE_OPERATIONS)}")
    out: list[str] = []
    for i, item in enumerate(items):
        text = as_text(item, f"{key}[{i}]").strip().lower()
        if text == "none":
            continue
        if text not in SKIPPABLE_OPERATIONS:
            fail(f"{key}[{i}]", f"{text!r} is not one of c (insert), u (update), d (delete), "
                                "t (truncate)")  # fmt: skip
        if text not in out:
            out.append(text)
    return tuple(out)


def as_masks(value: object, key: str) -> tuple[Mask, ...]:
    """A list of ``{columns: [regex over db.table.column], hash: <algorithm>, salt: text}``,
    ``{columns: [...], mask: <n>}`` or ``{columns: [...], truncate: <n>}``."""
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list):
        fail(key, "must be a list of masks such as {columns: ['shop\\\\.users\\\\.email'], "
                  "hash: sha256, salt: ...}")  # fmt: skip
    return tuple(_mask(item, f"{key}[{i}]") for i, item in enumerate(items))


def _mask(value: object, key: str) -> Mask:
    if not isinstance(value, dict):
        fail(key, "must be a mapping of columns and one of hash, mask or truncate")
    unknown = sorted(set(value) - {"columns", "salt", *MASK_KINDS})
    if unknown:
        fail(f"{key}.{unknown[0]}", "is not one of its keys; use columns, and hash (with salt), "
                                    "mask or truncate")  # fmt: skip
    kinds = [k for k in MASK_KINDS if k in value]
    if len(kinds) != 1:
        fail(key, "must name exactly one of hash, mask or truncate")
    (kind,) = kinds
    if "columns" not in value:
        fail(f"{key}.columns", "is missing; give regular expressions over db.table.column")
    columns = as_regexes(value["columns"], f"{key}.columns", "db.table.column")
    if kind == "hash":
        algorithm = as_text(value["hash"], f"{key}.hash").strip().lower().replace("-", "")
        if algorithm not in hashlib.algorithms_available:
            fail(f"{key}.hash", f"{algorithm!r} is not a hash algorithm here; use e.g. sha256")
        salt = as_text(value.get("salt", ""), f"{key}.salt")
        return Mask(columns, kind, algorithm=algorithm, salt=salt)
    if "salt" in value:
        fail(f"{key}.salt", "goes with hash only")
    length = as_int(value[kind], f"{key}.{kind}")
    if length < (1 if kind == "mask" else 0):
        fail(f"{key}.{kind}", f"{length} is too small; give a number of characters")
    return Mask(columns, kind, length=length)


def masks_option(masks: tuple[Mask, ...]) -> str | None:
    """The ``masks`` option's text (each salt sealed when this process holds a key)."""
    if not masks:
        return None
    out = []
    for m in masks:
        entry: dict[str, object] = {"columns": list(m.columns)}
        if m.kind == "hash":
            sealed = seal(m.salt) if m.salt else None
            entry.update({"hash": m.algorithm, "salt": m.salt} if sealed is None
                         else {"hash": m.algorithm, "salt_sealed": sealed})  # fmt: skip
        else:
            entry[m.kind] = m.length
        out.append(entry)
    return json.dumps(out)


def masks_from_option(text: str, key: str) -> list[dict[str, object]]:
    """The ``masks`` option as the YAML would hold it (sealed salts opened)."""
    try:
        found = json.loads(text)
    except ValueError:
        fail(key, "is not a JSON list of masks")
    if not isinstance(found, list):
        fail(key, "is not a JSON list of masks")
    for entry in found:
        if isinstance(entry, dict) and "salt_sealed" in entry:
            entry["salt"] = unseal(str(entry.pop("salt_sealed")), f"the option '{key}'")
    return found
