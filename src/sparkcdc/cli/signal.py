"""``sparkcdc signal``: send a signal to a pipeline (see :mod:`sparkcdc.snapshot.signals`).

    sparkcdc signal ACTION --config PIPELINE.yaml [--tables db.t [db.u ...]] [--where COND]
                           [--message TEXT] [--channel table|file]

The ``table`` channel inserts the signal into ``source.signal_table`` on the source server (the
default when it is set); the ``file`` channel writes it into ``<checkpoint>/sparkcdc/signals``.
Either way, a signal naming tables is checked against the server first
(:func:`check_signal_tables`): each table must be captured, and ``--where`` must be a condition
the server accepts on each.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparkcdc.config.model import Config, SourceConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.table_name import TableName
from sparkcdc.snapshot.signals import (
    SIGNAL_TYPES,
    Signal,
    new_signal_id,
    parse_signal,
    signal_data,
    signal_folder,
    write_file_signal,
)
from sparkcdc.sources.registry import open_source

CHANNELS = ("table", "file")


def add_signal_command(commands: Any) -> None:
    """Add the ``signal`` subcommand to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "signal", help="send a signal (an incremental snapshot request) to a pipeline"
    )
    parser.add_argument(
        "action", metavar="ACTION", help=f"the signal: one of {', '.join(SIGNAL_TYPES)}"
    )
    parser.add_argument(
        "--config", required=True, metavar="PIPELINE.yaml", help="the pipeline YAML file"
    )
    parser.add_argument(
        "--tables",
        nargs="+",
        default=[],
        metavar="DB.TABLE",
        help="the tables to snapshot (execute-snapshot) or to stop (stop-snapshot)",
    )
    parser.add_argument("--where", metavar="COND", help="an SQL condition for execute-snapshot")
    parser.add_argument("--message", metavar="TEXT", help="the text of a log signal")
    parser.add_argument(
        "--channel",
        metavar="table|file",
        help="table (default when source.signal_table is set) or file",
    )


def send_signal(
    config: Config,
    action: str,
    tables: Sequence[str] = (),
    where: str | None = None,
    message: str | None = None,
    channel: str | None = None,
) -> str:
    """Send one signal to the pipeline of ``config``; returns the line saying where it went."""
    data = signal_data(action, tables, where, message)
    source = config.source
    if channel is None:
        channel = "table" if source.signal_table else "file"
    if channel not in CHANNELS:
        raise ConfigError(
            f"--channel {channel!r} is not a signal channel; use table or file.", key="--channel"
        )
    signal = parse_signal(new_signal_id(), action, json.dumps(data))
    check_signal_tables(source, signal.tables, where)
    if channel == "file":
        target = str(_send_to_folder(config, signal))
    else:
        target = _send_to_table(source, signal)
    return f"signal {signal.id} ({signal.type}) sent to {target}"


def check_signal_tables(source: SourceConfig, tables: Sequence[str], where: str | None) -> None:
    """Refuse, before the signal goes anywhere, a table the pipeline does not capture and a
    condition the server rejects on one of ``tables`` (the running pipeline would only log
    that it skipped them): ConfigError naming ``--tables`` or ``--where``, a usage error.

    The condition is tried by the source's own chunk dialect, as the incremental snapshot
    tries it when it starts the table (a query that reads no row)."""
    if not tables:
        return
    opened = open_source(source)
    with opened.catalog() as catalog:
        captured = sorted(
            str(TableName(*t))
            for t in catalog.match_tables(source.tables, exclude=source.capture.excluded_tables)
        )
        address = catalog.address
    missing = [t for t in tables if t not in captured]
    if missing:
        some = ", ".join(captured[:5]) + (f", … ({len(captured)} tables)" if captured[5:] else "")
        raise ConfigError(
            f"--tables: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
            f"captured by this pipeline on {address} (source.tables matches {some}); name "
            "captured tables, as db.table with the server's spelling, or widen source.tables "
            "and restart the pipeline first.",
            key="--tables",
        )
    if where is None:
        return
    with opened.chunks() as chunks:
        for name in tables:
            why = chunks.check_condition(*TableName.parse(name), where)
            if why is not None:
                raise ConfigError(
                    f"--where {where!r} cannot filter {name} on {address} "
                    f"({' '.join(why.split()).rstrip('.')}); fix the condition.",
                    key="--where",
                )


def _send_to_folder(config: Config, signal: Signal) -> Path:
    checkpoint = config.pipeline.checkpoint
    if checkpoint.startswith("file://"):
        checkpoint = checkpoint[len("file://") :]
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", checkpoint):
        raise ConfigError(
            f"pipeline.checkpoint {checkpoint} is not a local folder, so the file channel "
            "cannot write there; set source.signal_table and use --channel table.",
            key="pipeline.checkpoint",
        )
    folder = signal_folder(checkpoint)
    try:
        write_file_signal(folder, signal)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write the signal into {folder} ({exc.strerror}); check that the folder "
            "is writable by you.",
            key="pipeline.checkpoint",
        ) from exc
    return folder


def _send_to_table(source: SourceConfig, signal: Signal) -> str:
    """Insert the signal into the signal table through the source's catalog connection."""
    name = source.signal_table
    if not name:
        raise ConfigError(
            "--channel table needs source.signal_table in the pipeline file; set it to a "
            "db.table or send the signal with --channel file.",
            key="source.signal_table",
        )
    with open_source(source).catalog() as catalog:
        catalog.write_signal(name, signal.id, signal.type, json.dumps(signal.data))
    return name
