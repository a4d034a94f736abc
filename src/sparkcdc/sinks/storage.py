"""Where the lake lives: a local folder or object storage, one file system for everything.

``sink.path`` is a plain path, a ``file://`` URI or a bucket URI (``s3://``, ``gs://``,
``abfss://``), and ``sink.storage_options`` are delta-rs's own option names (``AWS_REGION``,
``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...). :class:`LakeStorage` gives delta-rs its
options (:meth:`~LakeStorage.delta_options`) and reads and writes the sink's own files beside the
tables (``_sparkcdc/``) through ``pyarrow.fs``, its S3 file system made from the same options.
A write is atomic: a single PUT on object storage, a rename of a temporary file on a folder.
On object storage a call that the store answers with 5xx or SlowDown is tried again for a while,
and delta-rs is given the same patience (:mod:`.store_retry`).

A table is named by its path (``<lake>/<db>/<table>``); :func:`at` finds the lake that holds a
path among the ones this process opened, so a Delta call on a table gets its lake's options.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Concatenate, ParamSpec, TypeVar
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs

from sparkcdc.config.secret import Secret
from sparkcdc.sinks import store_retry

OptionValue = str | Secret
P = ParamSpec("P")
R = TypeVar("R")

LOCAL_SCHEMES = ("", "file")
CONNECT_TIMEOUT_S = 5.0
UPLOAD_CHUNK = 8 << 20  # bytes handed to an upload at a time


def _retried(
    call: Callable[Concatenate[LakeStorage, P], R],
) -> Callable[Concatenate[LakeStorage, P], R]:
    """The lake's call, tried again on object storage while the store fails for a while
    (:func:`.store_retry.retrying`)."""

    @functools.wraps(call)
    def tried(lake: LakeStorage, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if not lake.remote:
            return call(lake, *args, **kwargs)
        return store_retry.retrying(lambda: call(lake, *args, **kwargs), lake.store)

    return tried


@dataclass(frozen=True)
class LakeStorage:
    """The lake at ``uri`` (a plain path or a URI) with delta-rs's ``storage_options``."""

    uri: str
    storage_options: Mapping[str, OptionValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.remote:
            _OPENED[self.uri.rstrip("/")] = self

    @property
    def scheme(self) -> str:
        return urlsplit(self.uri).scheme.lower() if "://" in self.uri else ""

    @property
    def remote(self) -> bool:
        """Object storage (no folder on this machine: nothing is linked or renamed)."""
        return self.scheme not in LOCAL_SCHEMES

    def join(self, *parts: str) -> str:
        """The path (or URI) of ``parts`` under the lake."""
        if self.remote:
            return "/".join([self.uri.rstrip("/"), *parts])
        return os.path.join(local_path(self.uri), *parts)

    def delta_options(self) -> dict[str, str]:
        """The options for delta-rs (``DeltaTable``, ``write_deltalake``), secrets revealed;
        on object storage its retries' budget unless the options set their own."""
        given = {
            k: v.reveal() if isinstance(v, Secret) else v for k, v in self.storage_options.items()
        }
        return {**store_retry.delta_retry_options(given), **given} if self.remote else given

    @property
    def store(self) -> str:
        """The lake as a sentence names its store: the URI and the endpoint given."""
        got = {k.upper().removeprefix("AWS_"): v for k, v in self.storage_options.items()}
        endpoint = got.get("ENDPOINT_URL") or got.get("ENDPOINT")
        return store_retry.where(self.uri, None if endpoint is None else str(endpoint))

    # ------------------------------------------------------------ files beside the tables
    @_retried
    def read_text(self, path: str) -> str | None:
        """The text of the file at ``path`` (from :meth:`join`); None if there is none."""
        where = self._where(path)
        try:
            with self.filesystem.open_input_stream(where) as stream:
                return bytes(stream.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    @_retried
    def read_parquet(self, path: str) -> pa.Table:
        """The Parquet file at ``path`` (from :meth:`join`, or a table's path and a name), read
        as one file (a dataset's discovery costs four times the read of a small file)."""
        with self.filesystem.open_input_file(self._where(path)) as source:
            return pq.ParquetFile(source).read()

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` as the file at ``path`` at once: readers see the old or the new."""
        self.write_bytes(path, text.encode("utf-8"))

    @_retried
    def write_bytes(self, path: str, data: bytes) -> None:
        where = self._where(path)
        if self.remote:
            with self.filesystem.open_output_stream(where) as out:  # one PUT
                out.write(data)
            return
        folder, name = os.path.split(where)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "wb") as out:
            out.write(data)
        os.replace(tmp, where)

    def write_new_file(self, path: str, data: bytes) -> None:
        """Write ``data`` as a file no reader looks for until a commit names it (a data file
        under a fresh name): written in place on a folder, without a temporary file."""
        if self.remote:
            self.write_bytes(path, data)
            return
        with open(self._where(path), "wb") as out:
            out.write(data)

    @_retried
    def copy_in(self, source: str, path: str) -> None:
        """Copy the local file ``source`` to ``path`` in the lake (a streamed upload), closed
        here so that a failed upload raises: ``pyarrow.fs.copy_files`` closes its stream as
        it drops it, and an upload's last error is then only printed, the file never stored.
        The stored size is checked against the file's."""
        where = self._where(path)
        size = os.path.getsize(source)
        with open(source, "rb") as given, self.filesystem.open_output_stream(where) as out:
            shutil.copyfileobj(given, out, UPLOAD_CHUNK)
        stored = self.filesystem.get_file_info(where)
        if stored.type == fs.FileType.NotFound or stored.size != size:
            raise store_retry.ShortUpload(f"the upload of {path} stored {stored.size} of its "
                                          f"{size} bytes")  # fmt: skip

    @_retried
    def exists(self, path: str) -> bool:
        found: bool = self.filesystem.get_file_info(self._where(path)).type != fs.FileType.NotFound
        return found

    def names(self, path: str) -> list[str]:
        """The names of the folders and files right under ``path`` (none if it is missing)."""
        return sorted(info.base_name for info in self._entries(path))

    def folders(self, path: str) -> list[str]:
        """The names of the folders (object storage: the prefixes) right under ``path``."""
        kind = fs.FileType.Directory
        return sorted(info.base_name for info in self._entries(path) if info.type == kind)

    @_retried
    def _entries(self, path: str) -> list[fs.FileInfo]:
        selector = fs.FileSelector(self._where(path), allow_not_found=True)
        return list(self.filesystem.get_file_info(selector))

    @_retried
    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(self._where(path))

    def mkdir(self, path: str) -> None:
        """A folder for a new table (object storage has none to make)."""
        if not self.remote:
            os.makedirs(self._where(path), exist_ok=True)

    @cached_property
    def filesystem(self) -> fs.FileSystem:
        """The ``pyarrow.fs`` file system of the lake."""
        if not self.remote:
            return fs.LocalFileSystem()
        if self.scheme in ("s3", "s3a"):
            return _s3(self.delta_options())
        return fs.FileSystem.from_uri(self.uri)[0]

    def _where(self, path: str) -> str:
        """``path`` as the file system names it: no scheme (``bucket/key``) on object storage."""
        if not self.remote:
            return local_path(path)
        parts = urlsplit(path)
        return f"{parts.netloc}{parts.path}".rstrip("/")


_OPENED: dict[str, LakeStorage] = {}


def at(path: str) -> LakeStorage:
    """The lake (opened in this process) that holds ``path``, else a local one at ``path``."""
    found = [uri for uri in _OPENED if path == uri or path.startswith(uri + "/")]
    if found:
        return _OPENED[max(found, key=len)]
    return LakeStorage(path)


def delta_options(path: str) -> dict[str, str]:
    """The delta-rs options of the table at ``path`` (its lake's)."""
    return at(path).delta_options()


def as_storage(lake: str | LakeStorage) -> LakeStorage:
    """``lake`` itself, or the lake at the path ``lake`` (an opened one, else a local one)."""
    if isinstance(lake, LakeStorage):
        return lake
    found = at(str(lake))
    return found if found.uri.rstrip("/") == str(lake).rstrip("/") else LakeStorage(str(lake))


def local_path(path: str) -> str:
    """A local path or ``file://`` URI as the path it names."""
    return urlsplit(path).path if path.startswith("file://") else path


def _s3(options: Mapping[str, str]) -> fs.S3FileSystem:
    """pyarrow's S3 file system from delta-rs's option names (any case, ``AWS_`` optional)."""
    got = {k.upper().removeprefix("AWS_"): v for k, v in options.items()}
    endpoint = got.get("ENDPOINT_URL") or got.get("ENDPOINT")
    scheme, host = "https", None
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        scheme, host = parts.scheme or "https", parts.netloc + parts.path.rstrip("/")
    return fs.S3FileSystem(
        access_key=got.get("ACCESS_KEY_ID"),
        secret_key=got.get("SECRET_ACCESS_KEY"),
        session_token=got.get("SESSION_TOKEN"),
        region=got.get("REGION") or got.get("DEFAULT_REGION") or "us-east-1",
        endpoint_override=host,
        scheme=scheme,
        connect_timeout=CONNECT_TIMEOUT_S,
        request_timeout=30.0,
        retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=3),
    )
