"""``sparkcdc status PIPELINE.yaml [--json]``: the pipeline's state, from its checkpoint alone.

Spark is not started, nor the source asked: what the checkpoint holds is read as it is
(:mod:`sparkcdc.spark.pipeline.state`), in well under a second::

    state        running (process 4242, started 2025-05-01T10:00:00.000Z)
    spark ui     http://host:4040
    checkpoint   /data/checkpoints/shop
    committed    batch 7 at 2025-05-01T10:02:05.120Z
                 ends at mysql-bin.000003:1234 gtid 0-1-42
    planned      batch 8 at 2025-05-01T10:02:05.640Z, not committed: it runs now
                 ends at mysql-bin.000003:1300 gtid 0-1-43
    position     mysql-bin.000003:1300 gtid 0-1-43 (as of 2025-05-01T10:02:06.002Z)
    lag          0.8s
    snapshot     shop.orders  24/24 chunks · 96,000 rows · done
    incremental  shop.items ~40% · 400 of ~1,000 rows
                 shop.items read again: a schema change rewrote rows the log does not show
                 (column m: decimal(10,3) to decimal(10,1) may round, truncate or convert values)

``spark ui``: where the running process's Spark web UI is (its Structured Streaming tab shows
the stream); absent while the session starts, and with ``pipeline.spark.ui: false``.

``--json`` prints the same as one JSON object (the fields of
:class:`~sparkcdc.spark.pipeline.state.PipelineState`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from sparkcdc.config.model import Config
from sparkcdc.sources.registry import source_type
from sparkcdc.spark.pipeline.state import (
    RUNNING,
    BatchState,
    PipelineState,
    SourceState,
    read_pipeline_state,
)
from sparkcdc.spark.stream.status import IncrementalFigures


def add_status_command(commands: Any) -> argparse.ArgumentParser:
    """Add the ``status`` subcommand to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "status", help="show the pipeline's state from its checkpoint (Spark is not started)"
    )
    parser.add_argument("pipeline", help="the pipeline YAML file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def pipeline_status(config: Config, as_json: bool) -> str:
    """What ``sparkcdc status`` prints for the pipeline of ``config``."""
    offsets = source_type(config.source.type).offsets
    state = read_pipeline_state(Path(config.pipeline.checkpoint), offsets)
    if as_json:
        return json.dumps(dataclasses.asdict(state), ensure_ascii=False)
    if not state.exists:
        return f"The checkpoint {state.checkpoint} does not exist yet: the pipeline never ran."
    return "\n".join(f"{label:<12} {text}" for label, text in describe_state(state))


def describe_state(state: PipelineState) -> list[tuple[str, str]]:
    """The human block: (label, text) lines."""
    lines = [("state", _headline(state))]
    if state.spark_ui is not None:
        lines.append(("spark ui", state.spark_ui))
    lines.append(("checkpoint", state.checkpoint))
    if state.committed is not None:
        lines.append(("committed", f"batch {state.committed.batch} at {state.committed.at}"))
        lines.append(("", f"ends at {_position(state.committed)}"))
    else:
        lines.append(("committed", "no batch yet"))
    if state.planned is not None:
        after = "it runs now" if state.state == RUNNING else "the next run writes it again"
        lines.append(
            (
                "planned",
                f"batch {state.planned.batch} at {state.planned.at}, not committed: {after}",
            )
        )
        lines.append(("", f"ends at {_position(state.planned)}"))
    if state.resnapshot_since is not None:
        lines.append(
            (
                "resnapshot",
                f"the log position was gone: tables read again since {state.resnapshot_since}",
            )
        )
    if state.source is not None:
        lines += _describe_source(state.source)
    return lines


def _headline(state: PipelineState) -> str:
    if state.state != RUNNING:
        return state.state
    who = f"process {state.pid}" if state.pid is not None else "another process"
    since = f", started {state.started}" if state.started else ""
    return f"running ({who}{since})"


def _position(batch: BatchState) -> str:
    if batch.position is not None:
        return batch.position
    return "-" if batch.offset is None else json.dumps(batch.offset)


def _describe_source(source: SourceState) -> list[tuple[str, str]]:
    """The source process's lines: where the reader is, the lag, the snapshots, an error."""
    lines = []
    if source.position is not None:
        lines.append(("position", f"{source.position} (as of {source.updated or '-'})"))
    if source.caught_up:
        lines.append(("lag", "caught up"))
    elif source.lag_s is not None:
        since = f" (newest committed change from {source.committed_ts})"
        lines.append(("lag", f"{source.lag_s:.1f}s{since}"))
    lines += [("snapshot" if i == 0 else "", text) for i, text in enumerate(_snapshot(source))]
    if source.incremental:
        lines.append(("incremental", _incremental(source.incremental)))
        reasons = dict(source.incremental.get("reasons") or {})
        table, reason = source.incremental.get("table"), source.incremental.get("reason")
        if table and reason:
            reasons = {table: reason, **reasons}
        lines += [("", f"{table} read again: {why}") for table, why in reasons.items()]
    if source.error:
        lines.append(("error", f"{source.error.get('type')}: {source.error.get('message')}"))
    return lines


def _snapshot(source: SourceState) -> list[str]:
    tables = source.snapshot or {}
    width = max((len(name) for name in tables), default=0)
    lines = []
    for name, t in sorted(tables.items()):
        done = int(t.get("splits_done") or 0)
        total = max(int(t.get("splits_total") or 0), done)
        state = "done" if t.get("done") else "not done"
        lines.append(
            f"{name:<{width}}  {done}/{total} chunks · {int(t.get('rows') or 0):,} rows · {state}"
        )
    return lines


def _incremental(figures: IncrementalFigures) -> str:
    queued = figures.get("queued") or []
    waiting = f" · {len(queued)} table{'s' if len(queued) != 1 else ''} queued" if queued else ""
    paused = " · paused" if figures.get("paused") else ""
    table = figures.get("table")
    if table is None:
        return f"waiting{waiting}{paused}"
    rows, estimate = int(figures.get("rows") or 0), int(figures.get("estimate") or 0)
    share = f"~{min(1.0, rows / estimate):.0%} · " if estimate else ""
    of = f" of ~{estimate:,}" if estimate else ""
    return f"{table} {share}{rows:,}{of} rows{waiting}{paused}"
