"""``sparkcdc status`` against real runs, and the logs of a run in JSON.

One checkpoint goes through a pipeline's life: never run; after an ``--available-now`` run
written with ``--log-format json`` (every stderr line a JSON object, the sink's per-batch line
with its batch and table, the log reader's connect line, from Spark's Python worker, with its
position); running (its process id), with a second ``run`` on the same checkpoint refused at
once; and ``kill -9``'d, which reads as stopped. The pipeline turns Spark's UI off
(``pipeline.spark.ui: false``): the run says so, and ``status`` names no UI (``test_secrets``
runs with the UI on).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.command import sparkcdc as cli
from tests.e2e.cli import crash, log_end, start, write_config

pytestmark = [pytest.mark.mariadb]


def status(cfg: Path) -> tuple[str, dict[str, Any]]:
    """``status`` and ``status --json``, both without a Java to start Spark with: the human
    block and the object."""
    human = cli("status", str(cfg), java=False)
    as_json = cli("status", str(cfg), "--json", java=False)
    assert human.returncode == 0 and as_json.returncode == 0, human.stderr + as_json.stderr
    return human.stdout, json.loads(as_json.stdout)


def test_status_through_a_pipelines_life(
    mariadb: ThrowawayMariaDB, db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path, mariadb, rf"{db}\.t", startup=log_end(mariadb))
    cfg.write_text(cfg.read_text().replace("pipeline: {", "pipeline: {spark: {ui: false}, ", 1))
    checkpoint = tmp_path / "checkpoint"

    human, state = status(cfg)
    assert human == f"The checkpoint {checkpoint} does not exist yet: the pipeline never ran.\n"
    assert (state["state"], state["committed"], state["exists"]) == ("never run", None, False)

    mariadb.execute(f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)", f"UPDATE {db}.t SET v = 3")
    done = cli("run", str(cfg), "--available-now", "--log-format", "json", timeout=600)
    assert done.returncode == 0, done.stderr
    logged = [json.loads(line) for line in done.stderr.splitlines()]  # every line is JSON
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in logged)
    (written,) = [line for line in logged if line["logger"] == "sparkcdc.sink"]
    assert written["table"] == f"{db}.t" and isinstance(written["batch"], int), written
    assert "4 changes" in written["message"]  # two inserts, two updates
    connected = [line for line in logged if line["message"].startswith("connected to")]
    assert connected and connected[0]["position"].startswith("mysql-bin."), logged
    said = [line["message"] for line in logged if line["message"].startswith("Spark UI")]
    assert said == ["Spark UI off (pipeline.spark.ui: false)"], said

    human, state = status(cfg)
    assert state["state"] == "stopped" and state["pid"] is None and state["planned"] is None
    committed = state["committed"]
    assert committed["batch"] >= written["batch"]
    assert committed["position"].startswith("mysql-bin.") and committed["offset"]["pos"] > 0
    assert state["source"]["position"] is not None
    assert human.splitlines()[0] == "state        stopped"
    assert f"committed    batch {committed['batch']} at {committed['at']}" in human
    assert f"ends at {committed['position']}" in human

    proc = start(cfg)
    try:
        deadline = time.monotonic() + 60
        while state["state"] != "running":
            assert proc.poll() is None and time.monotonic() < deadline, state
            time.sleep(0.2)
            _, state = status(cfg)
        # the run's source process writes its status once the session is up (UI or not)
        deadline = time.monotonic() + 120
        while ((state["source"] or {}).get("updated") or "") <= state["started"]:
            assert proc.poll() is None and time.monotonic() < deadline, state
            time.sleep(0.2)
            _, state = status(cfg)
        human, state = status(cfg)
        assert state["pid"] == proc.pid and state["committed"]["batch"] == committed["batch"]
        assert state["spark_ui"] is None and "spark ui" not in human, human
        assert human.splitlines()[0].startswith(f"state        running (process {proc.pid}, ")
        refused = cli("run", str(cfg), "--available-now", "--quiet", java=False)
        code, out = refused.returncode, refused.stdout + refused.stderr  # before Spark starts
        assert code == 2, out
        assert out.strip().endswith("give this pipeline a pipeline.checkpoint of its own."), out
        assert f"is already running as process {proc.pid}, started " in out
        assert out.count("\n") == 1 and "Traceback" not in out
    finally:
        crash(proc)
    assert (checkpoint / "sparkcdc" / "run.lock").exists()  # left by the kill, but not locked
    _, state = status(cfg)
    assert state["state"] == "stopped" and state["pid"] is None
