"""The lake's object storage failing for a while (sinks/store_retry.py): which errors are the
store saying "later", the retries' backoff within their budget, the sentence once it is spent,
and delta-rs's retry options. The errors' texts are the ones the clients raised against an S3
server answering 500 and 503 (tests/integration/test_s3_errors.py runs them for real)."""

from __future__ import annotations

import pytest

from sparkcdc.core.errors import StoreUnavailable
from sparkcdc.sinks import store_retry
from sparkcdc.sinks.storage import LakeStorage

PYARROW_503 = (
    "When initiating multiple part upload for key 'lake/y.txt' in bucket 'b': AWS Error "
    "SLOW_DOWN during CreateMultipartUpload operation: Please reduce your request rate."
)
PYARROW_500_HEAD = (
    "When reading information for key 'lake/x.txt' in bucket 'b': AWS Error UNKNOWN (HTTP "
    "status 500) during HeadObject operation: No response body."
)
DELTA_RS_500 = """Generic S3 error
  ↳ Error performing list request
   ↳ Error performing GET http://127.0.0.1:38467/b in 2.393339463s, after 10 retries,
    ↳ max_retries 10, retry_timeout
     ↳ 180s  - Server returned non-2xx status code
      ↳ 500 Internal Server Error
       ↳ <?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"""
STORE = "s3://b/lake at http://127.0.0.1:9000"


@pytest.mark.parametrize(
    ("text", "said"),
    [(PYARROW_503, "HTTP 503 SlowDown"), (PYARROW_500_HEAD, "HTTP 500"),
     (DELTA_RS_500, "HTTP 500 InternalError")],
    ids=["pyarrow-503", "pyarrow-500-head", "delta-rs-500"],
)  # fmt: skip
def test_the_store_saying_later_is_transient(text: str, said: str) -> None:
    assert store_retry.transient(OSError(text))
    assert store_retry.answered(OSError(text)) == said


@pytest.mark.parametrize(
    "error",
    [OSError("AWS Error ACCESS_DENIED during PutObject operation: Access Denied"),
     OSError("Bucket 'b' not found"), FileNotFoundError("HTTP status 503 and gone"),
     OSError("curlCode: 7, Couldn't connect to server")],
    ids=["refused", "no-bucket", "not-found", "no-connection"],
)  # fmt: skip
def test_a_refusal_or_a_missing_file_is_not(error: OSError) -> None:
    assert not store_retry.transient(error)


def test_an_error_raised_from_a_failing_store_is_transient_too() -> None:
    try:
        try:
            raise OSError(DELTA_RS_500)
        except OSError as inner:
            raise ValueError("could not create the Delta tables") from inner
    except ValueError as outer:
        found = store_retry.as_unavailable(outer, STORE)
    assert found is not None
    assert str(found) == (
        f"the object storage of {STORE} kept failing for 2 s (HTTP 500 InternalError); check "
        "that the storage service is up, then run the pipeline again: it goes on from its last "
        "committed batch, writing nothing twice."
    )
    assert store_retry.as_unavailable(ValueError("a bad value"), STORE) is None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_store_failing_for_a_while_is_waited_for_with_growing_backoff() -> None:
    clock, calls = Clock(), []

    def call() -> str:
        calls.append(clock.now)
        if len(calls) < 6:
            raise OSError(PYARROW_503)
        return "written"

    got = store_retry.retrying(call, STORE, 60.0, clock.sleep, lambda: clock.now)
    assert got == "written" and len(calls) == 6
    halves = [0.125, 0.25, 0.5, 1.0, 2.0]  # each wait: half its delay fixed, up to twice that
    assert all(h <= s <= 2 * h for h, s in zip(halves, clock.slept, strict=True))


def test_a_store_failing_past_the_budget_ends_in_its_sentence() -> None:
    clock = Clock()

    def call() -> None:
        raise OSError(PYARROW_503)

    with pytest.raises(StoreUnavailable) as failed:
        store_retry.retrying(call, STORE, 10.0, clock.sleep, lambda: clock.now)
    assert 6.0 <= clock.now <= 10.0 and max(clock.slept) <= store_retry.MAX_BACKOFF_S
    assert "(HTTP 503 SlowDown)" in str(failed.value)
    assert failed.value.fields["store"] == STORE


def test_other_errors_are_not_retried() -> None:
    clock, calls = Clock(), []

    def call() -> None:
        calls.append(1)
        raise FileNotFoundError("lake/x.txt")

    with pytest.raises(FileNotFoundError):
        store_retry.retrying(call, STORE, 10.0, clock.sleep, lambda: clock.now)
    assert calls == [1] and not clock.slept


def test_delta_rs_gets_the_retry_budget_unless_the_options_set_their_own() -> None:
    lake = LakeStorage("s3://b/lake", {"AWS_REGION": "eu-west-1", "MAX_RETRIES": "3"})
    options = lake.delta_options()
    assert options["MAX_RETRIES"] == "3" and "max_retries" not in options
    assert options["retry_timeout"] == f"{store_retry.RETRY_S:g}s"
    assert LakeStorage("/tmp/lake").delta_options() == {}


def test_the_store_is_named_without_a_user_part() -> None:
    options = {"AWS_ENDPOINT_URL": "http://user:pw@minio.local:9000/", "AWS_SECRET_ACCESS_KEY": "s"}
    assert LakeStorage("s3://b/lake", options).store == "s3://b/lake at http://minio.local:9000"
    assert LakeStorage("s3://b/lake").store == "s3://b/lake"
