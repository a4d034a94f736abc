#!/usr/bin/env bash
# The seeded fault campaign against real servers (MariaDB, PostgreSQL, moto's S3 server, a Spark
# standalone cluster): each trial a kill -9 of the pipeline (its process group, its source
# process alone, or one Spark Python worker: source-kill9, worker-kill9), of one worker JVM of
# the standalone cluster the pipeline runs on (worker-jvm-kill9, sink delta-cluster only), of
# the database, a clean database restart, a walsender terminated, the network cut for less or
# more than the reconnect limit, a torn checkpoint file, the lake's disk full, the lake's object
# storage answering 500/503 or slowly for a while (s3-errors, s3-slow: through an HTTP proxy,
# delta-s3 only), or the database's clock stepped ahead or behind (clock-skew: libfaketime), at
# a random moment of a phase: the initial snapshot, its hand-off to the log, the stream, an
# incremental snapshot (a signal), a schema change in flight, a transaction larger than the
# store, a PostgreSQL transaction streamed in progress, a re-snapshot after a lost log; then
# the replica, the change log and (on a local lake) the history table checked against the
# workload's committed transactions.
# Writes faults/REPORT.md and faults/report.json after every trial and exits non-zero on any
# violation; --resume goes on with the campaign they hold (the same lists), running only the
# seeds it has not run. A failing trial's seed replays it: --seed <its seed> --trials 1 with
# the same lists; --keep DIR copies each failing trial's folder (its pipeline file, checkpoint,
# lake and the runs' logs) into DIR for a look.
#   scripts/faults.sh [--seed S] [--trials N] [--duration SECONDS] [--sources mysql,postgres]
#                     [--sinks delta,iceberg,delta-s3,delta-cluster]
#                     [--faults pipeline-kill9,db-kill9,...]
#                     [--phases snapshot,handoff,stream,incremental,ddl,big-txn,pg-streamed,
#                               resnapshot] [--resume] [--out DIR] [--keep DIR]
# The disk-full fault mounts a small tmpfs (root needed; leave it out with --faults otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m tests.faults.campaign "$@"
