"""The Iceberg catalog a sink writes through, made from the ``sink`` section.

``sink.catalog`` holds pyiceberg's catalog properties (``type``, ``uri``, ``warehouse``,
``token``, ``credential``, ``s3.*`` …), given in the pipeline file as a mapping and kept as
``catalog.<name>`` settings (:class:`~sparkcdc.config.model.SinkConfig`). Without one, the
catalog is the embedded SQL catalog: a SQLite file ``_sparkcdc/iceberg-catalog.db`` in the lake's
folder, the warehouse the folder itself (needs no server). A lake on object storage names its
catalog (a REST server, or a SQL database), and its warehouse defaults to ``sink.path`` with the
S3 options of ``sink.storage_options`` (``AWS_ENDPOINT_URL`` …) given to pyiceberg as its own.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks.storage import LakeStorage, local_path

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

    from sparkcdc.config.model import SinkConfig

PREFIX = "catalog."
CATALOG_FILE = ("_sparkcdc", "iceberg-catalog.db")
_S3_OPTIONS = {  # delta-rs's option names (sink.storage_options) -> pyiceberg's
    "aws_endpoint_url": "s3.endpoint",
    "aws_access_key_id": "s3.access-key-id",
    "aws_secret_access_key": "s3.secret-access-key",
    "aws_session_token": "s3.session-token",
    "aws_region": "s3.region",
}
_OPENED: dict[tuple[tuple[str, str], ...], Catalog] = {}
_LOCK = threading.Lock()


def properties(config: SinkConfig) -> dict[str, str]:
    """pyiceberg's properties of the catalog ``config`` names (module docstring)."""
    if "catalog" in config.settings:
        raise ConfigError(
            "sink.catalog: give the catalog's properties as a mapping, e.g. "
            "{uri: 'postgresql+psycopg2://…'} or {type: rest, uri: 'https://…'}",
            key="sink.catalog",
        )
    given = {k[len(PREFIX) :]: v for k, v in config.settings.items() if k.startswith(PREFIX)}
    storage = LakeStorage(config.path, config.storage_options)
    if not given.get("uri"):
        if given.get("type", "sql") != "sql":
            raise ConfigError(
                f"sink.catalog.uri is missing: where is the {given['type']} catalog?",
                key="sink.catalog.uri",
            )
        if storage.remote:
            raise ConfigError(
                "sink.catalog: an Iceberg lake on object storage needs a catalog that is not a "
                "file in it: give sink.catalog.type rest and sink.catalog.uri (a REST catalog), "
                "or sink.catalog.uri (a SQL database, as sqlalchemy names it)",
                key="sink.catalog",
            )
        folder = local_path(config.path)
        given = {"type": "sql", "uri": "sqlite:///" + os.path.join(folder, *CATALOG_FILE)}
    found = dict(given)
    found.setdefault("type", "rest" if given["uri"].startswith(("http://", "https://")) else "sql")
    found.setdefault("warehouse", _warehouse(storage))
    if storage.remote:
        for option, value in storage.delta_options().items():
            name = _S3_OPTIONS.get(option.lower())
            if name is not None:
                found.setdefault(name, value)
    return found


def _warehouse(storage: LakeStorage) -> str:
    if storage.remote:
        return storage.uri.rstrip("/")
    return "file://" + local_path(storage.uri)


def open_catalog(config: SinkConfig) -> Catalog:
    """The catalog of ``config``, opened once per process (ConfigError naming sink.catalog if
    it cannot be)."""
    props = properties(config)
    key = tuple(sorted(props.items()))
    with _LOCK:
        found = _OPENED.get(key)
        if found is not None:
            return found
        if props.get("uri", "").startswith("sqlite:///"):
            os.makedirs(os.path.dirname(props["uri"][len("sqlite:///") :]), exist_ok=True)
        from pyiceberg.catalog import load_catalog

        name = props.pop("name", "sparkcdc")
        try:
            catalog = load_catalog(name, **props)
            catalog.list_namespaces()
        except Exception as exc:  # the catalog's own errors name no sparkcdc setting
            said = (
                f"sink.catalog: the Iceberg catalog at {props.get('uri', '')} cannot be used "
                f"({type(exc).__name__}: {_first_line(exc)}); check sink.catalog"
            )
            raise ConfigError(_hidden(said, props), key="sink.catalog") from None
        _OPENED[key] = catalog
        return catalog


def _hidden(text: str, props: dict[str, str]) -> str:
    """``text`` with every secret of ``props`` shown as ``***``: the password in the catalog's
    URI, and each property whose name says it holds a token, credential, secret or password."""
    secrets = [v for k, v in props.items() if _SECRET.search(k) and v]
    password = urlsplit(props.get("uri", "")).password
    for secret in sorted([*secrets, *([password] if password else [])], key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


_SECRET = re.compile(r"token|credential|secret|password", re.IGNORECASE)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def check(config: SinkConfig) -> None:
    """The catalog reachable and the lake's folder writable, before Spark starts."""
    storage = LakeStorage(config.path, config.storage_options)
    if not storage.remote:
        try:
            os.makedirs(local_path(config.path), exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"sink.path: cannot create {config.path}: {exc}", key="sink.path"
            ) from exc
    open_catalog(config)
