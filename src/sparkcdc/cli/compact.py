"""``sparkcdc compact PIPELINE.yaml [--tables RE ...] [--retain DURATION] [--quiet]``.

The upkeep a running pipeline does every ``sink.maintenance.compact_every``, now, on a stopped
pipeline, by the sink type's keeper (Delta: :mod:`sparkcdc.sinks.delta.upkeep`, Iceberg:
:mod:`sparkcdc.sinks.iceberg.upkeep`): each replica and change log of the sink whose
``db.table`` matches (all without ``--tables``) has its small files compacted (any two below
the target size) and the versions older than ``--retain`` (default ``sink.maintenance.retain``)
dropped with the files only they read. It holds the pipeline's run lock meanwhile, so no run
starts under it, and refuses while a run holds it, and when the last run stopped inside a
micro-batch (the next run writes it again and may read the replica as it was before it).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkcdc.config.model import Config
from sparkcdc.config.values import as_duration
from sparkcdc.core.errors import ConfigError, SparkCDCError
from sparkcdc.spark.pipeline.checkpoint import uncommitted_batch
from sparkcdc.spark.pipeline.run_lock import hold_run_lock, running_holder

if TYPE_CHECKING:
    from sparkcdc.sinks.port import TableKeeper, TableUpkeep


def add_compact_command(commands: Any) -> None:
    compact = commands.add_parser(
        "compact", help="compact the sink's tables, delete files no recent version reads"
    )
    compact.add_argument("pipeline", help="the pipeline YAML file")
    compact.add_argument(
        "--tables", nargs="+", default=[], metavar="RE",
        help="only the tables whose db.table matches one of these regular expressions",
    )  # fmt: skip
    compact.add_argument(
        "--retain", default=None, metavar="DURATION",
        help="keep the versions of this last span readable, e.g. 1h or 7d "
        "(default: sink.maintenance.retain)",
    )  # fmt: skip
    compact.add_argument("--quiet", action="store_true", help="print nothing but errors")


def run_compact(config: Config, args: argparse.Namespace) -> list[TableUpkeep]:
    """``sparkcdc compact``: what it did to each table (printed unless ``--quiet``)."""
    from sparkcdc.sinks.registry import sink_type

    keeper_of = sink_type(config.sink.type).keeper
    if keeper_of is None:
        raise ConfigError(
            f"sink.type: the sink {config.sink.type} keeps no upkeep, so sparkcdc compact "
            "cannot keep its tables; use the table format's own tools.",
            key="sink.type",
        )
    retain = config.sink.maintenance.retain
    if args.retain is not None:
        retain = as_duration(args.retain, "--retain")
    for pattern in args.tables:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--tables: {pattern!r} is not a regular expression ({exc}).",
                              key="--tables") from None  # fmt: skip
    checkpoint = Path(config.pipeline.checkpoint)
    own = checkpoint / "sparkcdc"
    holder = running_holder(own)
    if holder is not None:
        who = f"process {holder.pid}" if holder.pid is not None else "another process"
        raise SparkCDCError(
            f"the pipeline with checkpoint {checkpoint} is running as {who}; it keeps its tables "
            "itself every sink.maintenance.compact_every. Stop it to compact now."
        )
    if not checkpoint.exists():
        return _compact(keeper_of(config.sink), config, args.tables, retain, args.quiet)
    with hold_run_lock(own, wait=0.0):
        pending = uncommitted_batch(checkpoint / "spark")
        if pending is not None:
            raise SparkCDCError(
                f"the last run of the pipeline stopped inside micro-batch {pending}, which the "
                "next run writes again (reading the replica as it was before it); run the "
                "pipeline first (sparkcdc run --available-now), then compact."
            )
        return _compact(keeper_of(config.sink), config, args.tables, retain, args.quiet)


def _compact(
    keeper: TableKeeper, config: Config, patterns: list[str], retain: float, quiet: bool
) -> list[TableUpkeep]:
    from sparkcdc.sinks.upkeep import describe

    tables = keeper.tables(patterns)
    if not tables and patterns:
        raise ConfigError(
            f"--tables: no table of the sink at {config.sink.path} matches "
            f"{', '.join(patterns)}; name tables as db.table.",
            key="--tables",
        )
    done = []
    for name in tables:
        done.append(keeper.keep(name, retain, small_files=2))
        if not quiet:
            print(describe(done[-1], retain), flush=True)
    return done
