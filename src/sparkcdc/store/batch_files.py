"""Micro-batches of the log handed to the sink as Arrow files instead of as Spark rows.

The stream reader and a ``foreachBatch`` sink both run on Spark's driver. With the option
``log_dir`` the stream reader writes the events of each micro-batch (start, end] to one Arrow
IPC file in that folder, and the stream itself carries a single ``f`` event naming the file
(:data:`~sparkcdc.core.event.OP_FILE`); the sink reads the events back from the file
(:func:`expand`). The events then never become Spark rows: no conversion from Arrow into the
JVM and back, which costs more than decoding them (the snapshot's kept chunks travel the same
way, :mod:`sparkcdc.snapshot.split_store`). The typed row images of the batch's changes
(:mod:`sparkcdc.core.images`) go beside it, one file per table and schema version.

Exactly once: a file is named after the end offset of its micro-batch and written whole or not
at all (a temporary file renamed). A micro-batch replayed after a crash is planned again from the
log, which writes the same events under the same name. Files are removed once Spark committed
their end (:meth:`BatchFiles.release`), including those a crashed run left behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import ConfigError, SinkError
from sparkcdc.core.event import OP_FILE
from sparkcdc.core.images import TypedImages
from sparkcdc.core.offset import Offset
from sparkcdc.core.offset_events import file_event

SUFFIX = ".arrow"


def _stem(end: Offset) -> str:
    """Sortable as the offsets are: the end's position text and its skip count."""
    return f"{end.position().replace(':', '-')}-{end.skip:010d}"


class BatchFiles:
    """The folder of one stream's micro-batch files (module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def write(
        self,
        end: Offset,
        batches: Sequence[pa.RecordBatch],
        images: Sequence[TypedImages] = (),
    ) -> pa.RecordBatch:
        """Keep the events of the micro-batch ending at ``end``, and the typed images of its
        changes, in its files; the ``f`` event that stands for them in the stream."""
        stem = _stem(end)
        path = self.folder / f"{stem}{SUFFIX}"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            rows = _write(path, batches)
        except OSError as exc:
            raise ConfigError(
                f"the micro-batch file {path} cannot be written ({exc.strerror or exc}); the "
                "option log_dir must name a folder this process can write, with room for one "
                "micro-batch",
                key="log_dir",
            ) from exc
        groups: dict[tuple[str, str, str], list[pa.RecordBatch]] = {}
        for found in images:
            groups.setdefault((found.db, found.table, found.schema_id), []).append(found.rows)
        refs = []
        for k, ((db, table, schema_id), parts) in enumerate(groups.items()):
            where = self.folder / f"{stem}.images-{k}{SUFFIX}"
            n = _write(where, parts)
            refs.append({"path": str(where), "db": db, "table": table, "schema_id": schema_id,
                         "rows": n})  # fmt: skip
        ref: dict[str, object] = {"path": str(path), "rows": rows, "images": refs}
        if not end.at_boundary:
            ref["open"] = True  # the batch ends inside a transaction (a split one)
        return file_event(ref, end)

    def release(self, end: Offset) -> int:
        """Remove the files of micro-batches ending at or before ``end`` (committed by Spark);
        how many were removed."""
        if not self.folder.is_dir():
            return 0
        last = _stem(end)
        removed = 0
        for path in self.folder.iterdir():
            name = path.name
            if name.endswith(SUFFIX) and not name.startswith(".") and name.split(".")[0] <= last:
                path.unlink(missing_ok=True)
                removed += 1
        return removed


def ends_inside_transaction(envelope: pa.Table) -> bool:
    """Whether a micro-batch (before :func:`expand`) ends inside a transaction: its ``f``
    event's end offset holds a resume counter (the transaction goes on in the next batch). A
    batch without an ``f`` event cannot tell: False."""
    if envelope.num_rows == 0:
        return False
    found = envelope.filter(pc.equal(envelope.column("op"), OP_FILE))
    return any(bool(json.loads(ref or "{}").get("open")) for ref in found["after"].to_pylist())


def expand(envelope: pa.Table) -> tuple[pa.Table, list[TypedImages]]:
    """``envelope`` with each ``f`` event replaced by the events of its file, in order, and
    the typed images kept beside them."""
    if envelope.num_rows == 0:
        return envelope, []
    ops = envelope.column("op")
    found = pc.indices_nonzero(pc.equal(ops, OP_FILE)).to_pylist()
    if not found:
        return envelope, []
    pieces: list[pa.Table] = []
    read: list[pa.Table] = []
    images: list[TypedImages] = []
    done = 0
    for i in found:
        if i > done:
            pieces.append(envelope.slice(done, i - done))
        ref = json.loads(envelope.column("after")[i].as_py())
        read.append(_read(str(ref["path"]), int(ref["rows"])))
        pieces.append(read[-1])
        for part in ref.get("images", []):
            rows = _read(str(part["path"]), int(part["rows"])).combine_chunks().to_batches()
            batch = rows[0] if rows else None
            if batch is not None:
                images.append(TypedImages(part["db"], part["table"], part["schema_id"], batch))
        done = i + 1
    if done < envelope.num_rows:
        pieces.append(envelope.slice(done))
    schema = read[0].schema  # events from Spark's rows take the files' types
    table = pa.concat_tables([p if p.schema == schema else p.cast(schema) for p in pieces])
    return table, images


def _write(path: Path, batches: Sequence[pa.RecordBatch]) -> int:
    """``batches`` as one Arrow IPC file at ``path``, whole or not at all; their rows."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    rows = 0
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
    os.replace(tmp, path)
    return rows


def _read(path: str, rows: int) -> pa.Table:
    try:
        with pa.OSFile(path, "rb") as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid) as exc:
        raise SinkError(
            f"the log events of this micro-batch cannot be read from {path} ({exc}); the "
            "folder log_dir must stay as the stream left it: restart the pipeline and the "
            "micro-batch is read again from the log"
        ) from exc
    if table.num_rows != rows:
        raise SinkError(
            f"{path} holds {table.num_rows} log events where the stream announced {rows}; "
            "restart the pipeline and the micro-batch is read again from the log"
        )
    return table
