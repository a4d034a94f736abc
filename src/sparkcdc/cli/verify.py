"""``sparkcdc verify PIPELINE.yaml [--tables RE ...] [--chunk-size N] [--wait S]``.

Compares each captured table's replica with the source chunk by chunk (see
:mod:`sparkcdc.verify`), shows progress on stderr, prints one block per table and exits 0 when
every table is equal, 1 when one is not (the exit statuses of :mod:`sparkcdc.cli.main` on an error).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from sparkcdc.config.model import Config
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.logs import counted
from sparkcdc.verify.table import TableReport

EXAMPLES = 5  # keys shown per kind of difference


def add_verify_command(commands: Any) -> None:
    verify = commands.add_parser("verify", help="compare the replicas with the source")
    verify.add_argument("pipeline", help="the pipeline YAML file")
    verify.add_argument(
        "--tables", nargs="+", default=[], metavar="RE",
        help="only the captured tables whose db.table matches one of these regular expressions",
    )  # fmt: skip
    verify.add_argument(
        "--chunk-size", type=int, default=None, metavar="N",
        help="rows per chunk compared (default: source.snapshot.chunk_size)",
    )  # fmt: skip
    verify.add_argument(
        "--wait", type=float, default=60.0, metavar="S",
        help="seconds a running pipeline is given to commit past a chunk that differed",
    )  # fmt: skip
    verify.add_argument("--quiet", action="store_true", help="print only the tables that differ")


class ChunkProgress:
    """``verify db.t: chunk i/n`` on ``out``, rewritten in place on a terminal, else a line
    every few seconds."""

    def __init__(self, out: TextIO, every: float = 5.0) -> None:
        self.out, self.every, self._last = out, every, 0.0
        self._tty = out.isatty()

    def __call__(self, table: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < (0.2 if self._tty else self.every):
            return
        self._last = now
        text = f"verify {table}: chunk {done}/{total}"
        self.out.write(f"\r{text}\x1b[K" if self._tty else f"{text}\n")
        if self._tty and done == total:
            self.out.write("\n")
        self.out.flush()


def describe(report: TableReport) -> list[str]:
    """The block printed for one table."""
    d = report.diff
    verdict = "equal" if report.equal else f"{len(report.differing_chunks)} differing chunks"
    lines = [
        f"{report.name}: {verdict} ({report.chunks} chunks, {report.source_rows:,} rows at the "
        f"source, {report.replica_rows:,} in the replica)"
    ]
    if report.rechecked:
        lines.append(f"  chunks read again after the pipeline caught up: {report.rechecked}")
    if report.unsettled:
        lines.append(f"  keys changing at every comparison, not judged: {report.unsettled}")
    for title, keys in (
        ("missing from the replica", d.missing),
        ("in the replica, not at the source", d.extra),
        ("different", [f"{k} ({', '.join(cols)})" for k, cols in d.different.items()]),
    ):
        if keys:
            more = f", … {len(keys) - EXAMPLES} more" if len(keys) > EXAMPLES else ""
            lines.append(f"  {title}: {len(keys)}: {'; '.join(keys[:EXAMPLES])}{more}")
    return lines


def print_reports(reports: Sequence[TableReport], quiet: bool, out: TextIO) -> bool:
    """Print the reports; whether every table is equal."""
    for report in reports:
        if not (quiet and report.equal):
            print("\n".join(describe(report)), file=out)
    differ = [r for r in reports if not r.equal]
    if not quiet or differ:
        summary = "every table equal" if not differ else f"{counted(len(differ), 'table')} differ"
        print(f"verified {counted(len(reports), 'table')}: {summary}", file=out)
    return not differ


def run_verify(config: Config, args: argparse.Namespace) -> bool:
    """``sparkcdc verify``; whether every table is equal."""
    from sparkcdc.verify.run import verify_pipeline

    if args.chunk_size is not None and args.chunk_size < 1:
        raise ConfigError("--chunk-size is a number of rows from 1.", key="--chunk-size")
    if args.wait < 0:
        raise ConfigError("--wait is a number of seconds from 0.", key="--wait")
    reports = verify_pipeline(
        config, args.tables, args.chunk_size, ChunkProgress(sys.stderr), wait=args.wait,
    )  # fmt: skip
    return print_reports(reports, args.quiet, sys.stdout)
