"""``sink.storage_options``: delta-rs's own option names for the lake's object storage.

The options are passed to delta-rs as written (``AWS_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_ALLOW_HTTP``, ``aws_conditional_put``, ``GOOGLE_SERVICE_ACCOUNT``,
``AZURE_STORAGE_ACCOUNT_KEY``, ...) and the S3 ones also make the file system the sink writes its
own files with (:mod:`sparkcdc.sinks.storage`). An option whose name says it holds a key, a
secret, a token or a password is kept as a :class:`~sparkcdc.config.secret.Secret`, so a
printed configuration shows ``***``.
"""

from __future__ import annotations

import re

from sparkcdc.config.secret import Secret
from sparkcdc.config.values import as_text, fail

OBJECT_SCHEMES = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "azure")
"""The URI schemes of ``sink.path`` on object storage (delta-rs's)."""

KEY = "sink.storage_options"

_SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|SAS|CREDENTIAL", re.IGNORECASE)
_S3_PAIR = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def is_secret(name: str) -> bool:
    """Whether the option ``name`` holds a secret (a key, token or password)."""
    return bool(_SECRET_NAME.search(name))


def as_storage_options(value: object, path: str) -> dict[str, str | Secret]:
    """The options of the lake at ``path`` (a mapping of names to text), checked."""
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        fail(
            KEY, "must be a mapping of delta-rs option names to values, e.g. AWS_REGION: eu-west-1"
        )
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    if value and not scheme:
        fail(KEY, f"applies to object storage only, and sink.path {path!r} is a folder; "
                  "remove it or give sink.path as s3://, gs:// or abfss://")  # fmt: skip
    options: dict[str, str | Secret] = {}
    for name, raw in value.items():
        key = f"{KEY}.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", name):
            fail(key, "is not an option name; use delta-rs's names, e.g. AWS_ENDPOINT_URL")
        text = as_text("" if raw is None else raw, key)
        options[name] = Secret(text) if is_secret(name) else text
    if scheme in ("s3", "s3a"):
        given = [n for n in _S3_PAIR if n in {k.upper() for k in options}]
        if len(given) == 1:
            missing = next(n for n in _S3_PAIR if n not in given)
            fail(f"{KEY}.{missing}", f"is missing: {given[0]} is given, and S3 takes both")
    return options
