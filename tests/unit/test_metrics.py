"""The pipeline's Prometheus metrics: the ``pipeline.metrics`` keys, the families made from the
sink's counters and the status file, the sink counting change-log rows per table and op, and
the endpoint served over a real socket."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import MetricsConfig
from sparkcdc.core.errors import ConfigError
from sparkcdc.core.schema import TableSchema
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sources.mysql.schema.column_types import column
from sparkcdc.spark.pipeline.exposition import FamiliesCollector, Family, Sample, render
from sparkcdc.spark.pipeline.metrics import PipelineMetrics, SinkFigures, families
from sparkcdc.spark.pipeline.metrics_server import serve_metrics
from sparkcdc.spark.stream.status import write_status
from tests.cases.envelopes import Changes
from tests.cases.exposition import Families, parse, values
from tests.cases.schemas import ACCOUNTS

NOW = 1_700_000_100.0
PIPELINE = """
source: {host: db.local, user: cdc, tables: ["shop\\\\..*"]}
sink: {path: ./lake}
pipeline: {checkpoint: ./cp%s}
"""
USERS = TableSchema(
    "shop", "users", (column("id", "bigint"), column("name", "varchar")), primary_key=("id",)
)


def page(sink: SinkFigures, status: dict[str, Any] | None) -> Families:
    return parse(render(families(sink, status, NOW)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ pipeline.metrics


def test_metrics_are_off_unless_a_port_is_set() -> None:
    assert load_config_text(PIPELINE % "", "/base").pipeline.metrics == MetricsConfig(0)
    assert not MetricsConfig().enabled
    cfg = load_config_text(PIPELINE % ", metrics: {port: 9464}", "/base").pipeline.metrics
    assert (cfg.port, cfg.host, cfg.enabled) == (9464, "127.0.0.1", True)
    cfg = load_config_text(PIPELINE % ", metrics: {port: 0, host: 0.0.0.0}", "/base")
    assert cfg.pipeline.metrics == MetricsConfig(0, "0.0.0.0")


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("{port: 70000}", "pipeline.metrics.port: 70000 is out of range; use 0..65535."),
        ("{port: http}", "pipeline.metrics.port: "),
        ("{port: 9464, host: ''}", "pipeline.metrics.host: '' is not a host name or address"),
        ("{port: 9464, path: /m}", "pipeline.metrics.path: is not a known key"),
        ("9464", "pipeline.metrics: must be a mapping of port, host."),
    ],
)
def test_a_wrong_metrics_setting_names_its_key(written: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config_text(PIPELINE % f", metrics: {written}", "/base")
    assert str(err.value).startswith(says)
    assert str(err.value).replace("e.g. ", "").count(". ") == 0  # one sentence


# ------------------------------------------------------------------ families


STREAMING: dict[str, Any] = {
    "position": "mysql-bin.000003:4711:0",
    "events": 120,
    "rows": 90,
    "connected": True,
    "reconnects": 2,
    "heartbeats": 7,
    "last_event_ts_ms": 1_700_000_090_000,
    "last_row_read_ms": 1_700_000_097_500,
    "caught_up": False,
    "store_used_bytes": 4096,
    "store_pending_bytes": 1024,
    "store_peak_bytes": 65536,
    "peak_rss_bytes": 123456789,
    "updated_ms": 1_700_000_099_000,
}


def test_written_changes_per_table_and_op_batches_and_lag() -> None:
    sink = SinkFigures(
        batches=4,
        events={("shop.users", "c"): 3, ("shop.accounts", "u"): 5, ("shop.accounts", "d"): 1},
        last_event_ts_ms=1_700_000_095_000,
        last_commit_s=1_700_000_099.5,
    )
    found = page(sink, STREAMING)
    assert found["sparkcdc_events_total"]["type"] == "counter"
    assert values(found, "sparkcdc_events_total", "table", "op") == {
        ("shop.accounts", "d"): 1, ("shop.accounts", "u"): 5, ("shop.users", "c"): 3,
    }  # fmt: skip
    assert values(found, "sparkcdc_batches_total") == {(): 4}
    assert values(found, "sparkcdc_last_commit_timestamp_seconds") == {(): 1_700_000_099.5}
    assert values(found, "sparkcdc_source_lag_seconds") == {(): 5.0}  # NOW - newest written
    caught_up = page(sink, {**STREAMING, "caught_up": True})
    assert values(caught_up, "sparkcdc_source_lag_seconds") == {(): 0.0}


def test_the_log_reader_store_and_position_from_the_status_file() -> None:
    found = page(SinkFigures(), STREAMING)
    one = {name: values(found, name).get(()) for name in found}
    assert one["sparkcdc_source_connected"] == 1 and one["sparkcdc_source_caught_up"] == 0
    assert one["sparkcdc_source_events_read_total"] == 120
    assert one["sparkcdc_source_rows_read_total"] == 90
    assert one["sparkcdc_source_reconnects_total"] == 2
    assert one["sparkcdc_source_heartbeats_total"] == 7
    assert found["sparkcdc_source_heartbeats_total"]["type"] == "counter"
    assert one["sparkcdc_source_seconds_since_last_event"] == 2.5
    assert one["sparkcdc_source_last_event_timestamp_seconds"] == 1_700_000_090
    assert one["sparkcdc_source_status_age_seconds"] == 1.0
    assert one["sparkcdc_source_peak_rss_bytes"] == 123456789
    assert one["sparkcdc_store_bytes"] == 4096 and one["sparkcdc_store_peak_bytes"] == 65536
    assert one["sparkcdc_store_pending_bytes"] == 1024
    assert values(found, "sparkcdc_source_info") == {("mysql-bin.000003:4711:0",): 1}
    assert one["sparkcdc_incremental_snapshot_running"] == 0
    # no snapshot in this run: its families carry no sample
    assert values(found, "sparkcdc_snapshot_running") == {}
    assert values(found, "sparkcdc_snapshot_chunks_remaining") == {}


def test_nothing_is_invented_before_the_source_process_writes_its_status() -> None:
    found = page(SinkFigures(), None)
    with_samples = sorted(name for name in found if values(found, name))
    assert with_samples == ["sparkcdc_batches_total"]
    assert values(found, "sparkcdc_batches_total") == {(): 0}
    for name, family in found.items():  # every family still says what it is
        assert family["help"] and family["type"] in ("counter", "gauge"), name


SNAPSHOT = {
    "shop.accounts": {"splits_done": 3, "splits_total": 3, "rows": 3000, "done": True},
    "shop.orders": {"splits_done": 4, "splits_total": 10, "rows": 4000, "done": False},
}


def test_the_initial_snapshot_per_table_and_overall() -> None:
    found = page(SinkFigures(), {"snapshot": SNAPSHOT, "snapshot_running": True})
    assert values(found, "sparkcdc_snapshot_rows_total") == {
        ("shop.accounts",): 3000, ("shop.orders",): 4000,
    }  # fmt: skip
    assert found["sparkcdc_snapshot_rows_total"]["type"] == "counter"
    assert values(found, "sparkcdc_snapshot_chunks_total") == {
        ("shop.accounts",): 3, ("shop.orders",): 10,
    }  # fmt: skip
    assert values(found, "sparkcdc_snapshot_chunks_remaining") == {
        ("shop.accounts",): 0, ("shop.orders",): 6,
    }  # fmt: skip
    assert values(found, "sparkcdc_snapshot_table_completed") == {
        ("shop.accounts",): 1, ("shop.orders",): 0,
    }  # fmt: skip
    assert values(found, "sparkcdc_snapshot_running") == {(): 1}
    assert values(found, "sparkcdc_snapshot_completed") == {(): 0}
    finished = {name: {**t, "splits_done": t["splits_total"], "done": True}
                for name, t in SNAPSHOT.items()}  # fmt: skip
    found = page(SinkFigures(), {"snapshot": finished, "snapshot_running": False})
    assert values(found, "sparkcdc_snapshot_running") == {(): 0}
    assert values(found, "sparkcdc_snapshot_completed") == {(): 1}


def test_an_incremental_snapshot_running_and_queued() -> None:
    figures = {"table": "shop.orders", "rows": 2500, "estimate": 10000,
               "queued": ["shop.users", "shop.items"], "paused": False}  # fmt: skip
    found = page(SinkFigures(), {**STREAMING, "incremental": figures})
    assert values(found, "sparkcdc_incremental_snapshot_running") == {(): 1}
    assert values(found, "sparkcdc_incremental_snapshot_rows") == {("shop.orders",): 2500}
    assert values(found, "sparkcdc_incremental_snapshot_rows_estimate") == {("shop.orders",): 10000}
    assert values(found, "sparkcdc_incremental_snapshot_tables_queued") == {(): 2}
    assert values(found, "sparkcdc_incremental_snapshot_paused") == {(): 0}
    paused = {**figures, "table": None, "paused": True}
    found = page(SinkFigures(), {**STREAMING, "incremental": paused})
    assert values(found, "sparkcdc_incremental_snapshot_running") == {(): 0}
    assert values(found, "sparkcdc_incremental_snapshot_paused") == {(): 1}
    assert values(found, "sparkcdc_incremental_snapshot_rows") == {}


# ------------------------------------------------------------------ the sink's counters


def test_the_sink_counts_change_log_rows_per_table_and_op(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path), "test")
    a, u = ACCOUNTS, USERS
    first = (
        Changes()
        .schema(a)
        .schema(u)
        .change("c", a, after={"id": 1, "owner": "ann", "balance": "1.00"})
        .change("c", a, after={"id": 2, "owner": "bob", "balance": "2.00"})
        .change("c", u, after={"id": 7, "name": "eve"})
        .change("u", a, {"id": 1, "owner": "ann", "balance": "1.00"},
                {"id": 1, "owner": "ann", "balance": "1.50"})
    )  # fmt: skip
    assert sink.events == {} and sink.last_commit_s is None
    report = sink.write(first.table(), 0)
    assert report.ops == {("shop.accounts", "c"): 2, ("shop.accounts", "u"): 1,
                          ("shop.users", "c"): 1}  # fmt: skip
    seen = sink.events
    later = (
        Changes(pos=5000)
        .change("d", a, before={"id": 2, "owner": "bob", "balance": "2.00"})
        .change("c", u, after={"id": 8, "name": "joe"})
    )
    sink.write(later.table(), 1)
    assert sink.events == {("shop.accounts", "c"): 2, ("shop.accounts", "u"): 1,
                           ("shop.accounts", "d"): 1, ("shop.users", "c"): 2}  # fmt: skip
    assert seen == report.ops  # the figures a reader took are never changed under it
    assert sink.batches == 2 and sink.changes == sum(sink.events.values()) == 6
    assert sink.last_commit_s is not None
    assert sink.figures().events == sink.events


def test_the_page_shows_the_watched_sink_and_status_file(tmp_path: Path) -> None:
    metrics = PipelineMetrics()
    before = parse(metrics.page())
    assert values(before, "sparkcdc_batches_total") == {(): 0}
    sink = DeltaSink(str(tmp_path / "lake"), "test")
    sink.write(Changes().schema(USERS).change("c", USERS, after={"id": 1, "name": "a"}).table(), 0)
    status = tmp_path / "metrics.json"
    write_status(status, {"position": "mysql-bin.000001:4:0", "connected": False, "events": 9})
    metrics.watch(sink, status)
    found = parse(metrics.page())
    assert values(found, "sparkcdc_events_total", "table", "op") == {("shop.users", "c"): 1}
    assert values(found, "sparkcdc_batches_total") == {(): 1}
    assert values(found, "sparkcdc_source_connected") == {(): 0}
    assert values(found, "sparkcdc_source_events_read_total") == {(): 9}
    assert values(found, "sparkcdc_source_info") == {("mysql-bin.000001:4:0",): 1}


# ------------------------------------------------------------------ the endpoint


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def test_get_metrics_over_http_until_stopped() -> None:
    port = free_port()
    pages = iter(
        [[Family("a", "gauge", "A.", (Sample(1),))], [Family("a", "gauge", "A.", (Sample(2),))]]
    )
    server = serve_metrics(MetricsConfig(port), FamiliesCollector(lambda: next(pages)))
    assert server is not None and server.address == ("127.0.0.1", port)
    try:
        url = f"http://127.0.0.1:{port}"
        assert get(f"{url}/metrics") == (200, "text/plain; version=0.0.4; charset=utf-8",
                                         "# HELP a A.\n# TYPE a gauge\na 1.0\n")  # fmt: skip
        assert get(f"{url}/metrics?x=1")[2].endswith("a 2.0\n")  # collected afresh per scrape
        code, _, body = get(f"{url}/")
        assert code == 404 and "/metrics" in body
        code, _, body = get(f"{url}/metrics")  # the page fails: 500, the server goes on
        assert code == 500 and "metrics unavailable" in body
    finally:
        server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_a_port_in_use_fails_naming_the_key() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as err:
            serve_metrics(MetricsConfig(port), FamiliesCollector(list))
    assert str(err.value) == (
        f"pipeline.metrics.port: {port} is already in use on 127.0.0.1; stop what listens "
        "there or choose another port."
    )
    assert err.value.fields["key"] == "pipeline.metrics.port"


def test_no_server_when_metrics_are_off() -> None:
    assert serve_metrics(MetricsConfig(0), FamiliesCollector(list)) is None
