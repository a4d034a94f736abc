"""The lake on object storage end to end: ``sparkcdc run`` writing ``s3://`` (moto's S3 server on
loopback) with ``sink.storage_options``, an initial snapshot then the stream, ``kill -9`` in the
middle and a restart; the replica read back from S3 equals the source and the change log holds
every change once. And the refusals: a missing bucket, a wrong endpoint, a checkpoint on S3."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from sparkcdc.cli.main import EXIT_CONFIG
from sparkcdc.sources.mysql.throwaway import ThrowawayMariaDB
from tests.cases.s3 import (
    MotoS3,
    free_port,
    storage_options,
)
from tests.e2e.cli import available_now, in_process, write_config
from tests.e2e.crashes import (
    changelog_identities,
    crash_trials,
    replica_rows,
    source_rows,
    version,
)
from tests.e2e.workload import DDL, ChangeWorkload

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.s3]

SNAPSHOT_ROWS = 2000
CHANGES = 3000


def test_run_on_s3_through_a_crash(mariadb: ThrowawayMariaDB, s3: MotoS3, tmp_path: Path) -> None:
    """An initial snapshot of SNAPSHOT_ROWS rows, then CHANGES changes streamed, the run killed
    once it wrote and restarted: the lake on S3 holds the source exactly once."""
    db = "s3lake"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}", f"CREATE DATABASE {db}")
    mariadb.execute(*(s.format(db=db) for s in DDL))
    first = 50_000_000  # the workload's keys start at 1
    mariadb.execute(
        f"INSERT INTO {db}.accounts SELECT {first} + seq, 0, seq / 100, CONCAT('s-', seq), "
        f"NOW(6), seq % 256 FROM {db}.seq_1_to_{SNAPSHOT_ROWS}"
    )
    lake = f"s3://{s3.bucket()}/lake"
    options = s3.options()
    cfg = write_config(tmp_path, mariadb, rf"{db}\..*", startup="initial", lake=lake,
                       extra_sink=storage_options(options))  # fmt: skip

    available_now(cfg)  # the initial snapshot, then the stream from its end
    expected = crash_trials(
        cfg, lambda: version(f"{lake}/{db}/accounts__changelog", options),
        lambda trial: ChangeWorkload(mariadb, db, CHANGES, trial), 1, random.Random(7),
    )  # fmt: skip
    available_now(cfg)  # the restart catches up with everything

    assert replica_rows(f"{lake}/{db}/accounts", options) == [
        (i, v, b, o, u, int.from_bytes(f, "big") if isinstance(f, bytes) else f)
        for i, v, b, o, u, f in source_rows(mariadb, db)
    ]
    expected += Counter(("r", first + i, 0) for i in range(1, SNAPSHOT_ROWS + 1))
    seen = changelog_identities(f"{lake}/{db}/accounts__changelog", options)
    duplicates = {k: n for k, n in seen.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} changes delivered twice, e.g. {list(duplicates)[:5]}"
    assert seen == expected


def test_a_lake_that_cannot_be_written_stops_the_check(
    mariadb: ThrowawayMariaDB, s3: MotoS3, tmp_path: Path
) -> None:
    """``sparkcdc check``: a missing bucket names sink.path, an endpoint nothing listens on and a
    key the server refuses name sink.storage_options, a checkpoint on S3 is refused; each exits
    78 and prints no secret."""
    mariadb.execute("CREATE DATABASE IF NOT EXISTS s3check", "CREATE TABLE IF NOT EXISTS "
                    "s3check.t (id INT PRIMARY KEY)")  # fmt: skip
    closed = f"http://127.0.0.1:{free_port()}"
    secret = s3.options()["AWS_SECRET_ACCESS_KEY"]
    cases = {
        "sink.path: the bucket of s3://no-such-bucket": ("s3://no-such-bucket/lake", {}),
        "sink.storage_options: the object storage": (
            f"s3://{s3.bucket()}/lake", {"AWS_ENDPOINT_URL": closed},
        ),
    }  # fmt: skip
    strict = MotoS3(checks_keys=True)  # refuses every key: a wrong key
    try:
        cases["sink.storage_options: the object storage refuses the credentials"] = (
            "s3://lake/cdc", {"AWS_ENDPOINT_URL": strict.endpoint},
        )  # fmt: skip
        for said, (lake, more) in cases.items():
            cfg = write_config(tmp_path, mariadb, r"s3check\.t", lake=lake,
                               extra_sink=storage_options(s3.options(**more)))  # fmt: skip
            code, out, err = in_process("check", str(cfg))
            assert code == EXIT_CONFIG and said in err and secret not in out + err, (out, err)
    finally:
        strict.stop()
    cfg = write_config(tmp_path, mariadb, r"s3check\.t")
    cfg.write_text(cfg.read_text().replace(f"checkpoint: {tmp_path / 'checkpoint'}",
                                           "checkpoint: s3://bucket/checkpoint"))  # fmt: skip
    code, _, err = in_process("check", str(cfg))
    assert code == EXIT_CONFIG and "pipeline.checkpoint" in err and "local or shared" in err
