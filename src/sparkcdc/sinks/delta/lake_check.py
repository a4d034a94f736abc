"""Before a run: can the sink write its lake? One small file written, read back and deleted.

A lake on object storage fails late and slowly otherwise: delta-rs retries a request to an
endpoint that does not answer for minutes, and a wrong key or bucket would stop the first
micro-batch only. :func:`check_lake` tries the lake with a short time-out, through the same file
system the sink writes its own files with, and then through delta-rs with its options, and says
which setting to fix: ``sink.path`` (the bucket) or ``sink.storage_options`` (endpoint, keys).
A store that answers but keeps failing (5xx) is waited for, then named as such
(:mod:`sparkcdc.sinks.store_retry`).
"""

from __future__ import annotations

import re
import uuid

from deltalake import DeltaTable

from sparkcdc.config.storage import is_secret
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks import store_retry
from sparkcdc.sinks.storage import LakeStorage

_NO_BUCKET = re.compile(r"NoSuchBucket|bucket does not exist|Bucket '[^']*' not found", re.I)
_REFUSED_KEY = re.compile(
    r"InvalidAccessKeyId|INVALID_ACCESS_KEY_ID|SignatureDoesNotMatch|SIGNATURE_DOES_NOT_MATCH|"
    r"AccessDenied|ACCESS_DENIED|Forbidden|"
    r"credentials|HTTP status 40[13]",
    re.I,
)
_UNREACHABLE = re.compile(r"curlCode|connect|resolve|timed out|timeout|NETWORK_CONNECTION", re.I)


def check_lake(lake: LakeStorage) -> None:
    """ConfigError naming the setting to fix when the lake on object storage cannot be
    written; nothing for a folder (its errors name it on the first write)."""
    if not lake.remote:
        return
    probe = lake.join("_sparkcdc", f"probe-{uuid.uuid4().hex}")
    try:
        lake.write_text(probe, "sparkcdc")
        if lake.read_text(probe) != "sparkcdc":
            raise OSError("the file written could not be read back")
        lake.delete(probe)
    except OSError as exc:
        raise _refused(lake, _scrub(str(exc), lake)) from None
    try:
        DeltaTable.is_deltatable(lake.join("_sparkcdc", "notifications"), lake.delta_options())
    except Exception as exc:  # delta-rs raises several kinds for a store it cannot reach
        failing = store_retry.as_unavailable(exc, lake.store)
        if failing is not None:  # it answers, with 5xx past delta-rs's retries
            raise failing from None
        raise ConfigError(
            f"sink.storage_options: delta-rs cannot reach the lake at {lake.uri} "
            f"({_shortened(_scrub(str(exc), lake))}); give it the options it needs, e.g. "
            "AWS_ALLOW_HTTP: 'true' for an http:// endpoint.",
            key="sink.storage_options",
        ) from None


def _refused(lake: LakeStorage, error: str) -> ConfigError:
    """The sentence for a failed probe, naming the setting its ``error`` (whole: the part
    that names the cause may come late) points at."""
    reason = _shortened(error)
    if _NO_BUCKET.search(error):
        return ConfigError(
            f"sink.path: the bucket of {lake.uri} does not exist ({reason}); create it or "
            "correct sink.path.",
            key="sink.path",
        )
    if _REFUSED_KEY.search(error):
        return ConfigError(
            f"sink.storage_options: the object storage refuses the credentials given for "
            f"{lake.uri} ({reason}); correct the access key and secret (or the role) in "
            "sink.storage_options.",
            key="sink.storage_options",
        )
    if _UNREACHABLE.search(error):
        return ConfigError(
            f"sink.storage_options: the object storage of {lake.uri} cannot be reached "
            f"({reason}); check AWS_ENDPOINT_URL (or the storage's endpoint) and the network.",
            key="sink.storage_options",
        )
    return ConfigError(
        f"sink.path: the lake at {lake.uri} cannot be written ({reason}); check sink.path "
        "and sink.storage_options.",
        key="sink.path",
    )


def _scrub(text: str, lake: LakeStorage) -> str:
    """``text`` (a library's message) with no secret option's value in it, on one line."""
    for name, value in lake.delta_options().items():
        if is_secret(name) and value and value in text:
            text = text.replace(value, "***")
    return " ".join(text.split())


def _shortened(text: str, most: int = 300) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
