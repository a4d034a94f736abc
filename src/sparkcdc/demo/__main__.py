"""``python -m sparkcdc.demo``: the whole loop on a throwaway MariaDB, checked at the end.

1. start a private MariaDB (binlog ROW/FULL + GTID) on a free loopback port;
2. create the shop, its first rows and an order history of 200k rows;
3. ``sparkcdc run`` snapshots the shop in parallel, then streams while shop traffic runs for
   ``--seconds`` (the traffic starts with the snapshot's first batch, so both overlap);
4. SIGTERM (the batch in flight commits), then ``sparkcdc run --available-now`` picks up from the
   checkpoint and catches up with the end of the log;
5. per table: source rows and checksum vs replica rows and checksum, ``OK`` when equal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from sparkcdc.demo import compare, shop
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB


def pipeline_yaml(work: Path, lake: Path, server: ThrowawayMariaDB) -> Path:
    cfg = work / "pipeline.yaml"
    cfg.write_text(
        f"source: {{type: mysql, host: 127.0.0.1, port: {server.port}, user: cdc, "
        f'password: cdc-secret, tables: ["shop\\\\..*"], startup: initial}}\n'
        f"sink: {{type: delta, path: {lake}}}\n"
        f"pipeline: {{checkpoint: {work / 'checkpoint'}, trigger: 1s, "
        f"store: {{max_bytes: 64MB}}}}\n"
    )
    return cfg


def sparkcdc(*args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen([sys.executable, "-m", "sparkcdc.cli.main", *args], env=env)


def first_batch_committed(
    checkpoint: Path, run: subprocess.Popen[bytes], timeout: float = 300
) -> bool:
    """Wait until Spark is up and committed its first micro-batch (the shop's first rows)."""
    commits = checkpoint / "spark" / "commits"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.poll() is None:
        if commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir()):
            return True
        time.sleep(0.5)
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description="sparkcdc demo on a throwaway MariaDB")
    parser.add_argument("--lake", default="lake", help="where the Delta tables go (emptied first)")
    parser.add_argument("--work", default="demo-work", help="config and checkpoint (emptied first)")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the traffic runs")
    args = parser.parse_args()
    lake, work = Path(args.lake).resolve(), Path(args.work).resolve()
    for folder in (lake, work):
        shutil.rmtree(folder, ignore_errors=True)
    work.mkdir(parents=True)

    print("demo: starting a throwaway MariaDB (binlog ROW/FULL, GTID) on a free port", flush=True)
    with ThrowawayMariaDB.start(base_dir=str(work)) as server:
        server.create_cdc_user()
        shop.create(server)
        cfg = pipeline_yaml(work, lake, server)
        print(f"demo: pipeline file {cfg}", flush=True)
        print(f"demo: starting sparkcdc run (Spark takes a little while), streaming into {lake}")
        run = sparkcdc("run", str(cfg))
        if not first_batch_committed(work / "checkpoint", run):
            print("demo: sparkcdc run stopped before its first batch", file=sys.stderr)
            return 1
        traffic = shop.ShopTraffic(server, args.seconds)
        print(f"demo: shop traffic runs for {args.seconds:.0f}s while the stream follows it")
        traffic.start()
        traffic.join()
        if traffic.error is not None:
            raise traffic.error
        print(
            f"\ndemo: traffic done: {traffic.transactions:,} transactions, "
            f"{traffic.changes:,} row changes; stopping the stream (SIGTERM)",
            flush=True,
        )
        time.sleep(2)
        run.send_signal(signal.SIGTERM)
        if run.wait(timeout=300) != 0:
            print("demo: sparkcdc run failed", file=sys.stderr)
            return 1
        print("demo: resuming from the checkpoint up to the end of the log (--available-now)")
        catch_up = sparkcdc("run", str(cfg), "--available-now")
        if catch_up.wait(timeout=600) != 0:
            print("demo: sparkcdc run --available-now failed", file=sys.stderr)
            return 1
        return report(server, lake, cfg)


def report(server: ThrowawayMariaDB, lake: Path, cfg: Path) -> int:
    from sparkcdc.config.load import load_config
    from sparkcdc.sources.registry import open_source

    ok = True
    print(f"\n{'table':<16} {'source':<40} {'replica':<40}")
    with open_source(load_config(cfg).source).catalog() as catalog:
        for table in shop.TABLES:
            schema = catalog.load_schema("shop", table)
            src = compare.source_fingerprint(server, schema)
            dst = compare.replica_fingerprint(str(lake / "shop" / table), schema)
            same = src == dst
            ok &= same
            print(f"shop.{table:<11} {src!s:<40} {dst!s:<40} {'OK' if same else 'DIFFERENT'}")
    print(
        f"\nreplicas: {lake}/shop/<table>   change logs: {lake}/shop/<table>__changelog\n"
        + ("OK: every replica equals its source" if ok else "FAILED: a replica differs")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
