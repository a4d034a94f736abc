"""The fault campaign's HTTP proxy (``tests/faults/http_proxy.py``, in a process of its own:
``store_proxy.py``) in front of moto's S3 server, with the clients the pipeline and the checker
use: S3's errors seen through it and gone once healed, slowness measured, and streaming uploads
passed whole (a multipart upload, a chunked PUT, kept-alive connections)."""

from __future__ import annotations

import http.client
import io
import os
import socket
import time
from typing import Any

import boto3
import pyarrow as pa
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError
from deltalake import DeltaTable, write_deltalake

from tests.cases.s3 import ACCESS_KEY, SECRET_KEY, MotoS3
from tests.faults.http_proxy import Errors, Pass, Slow
from tests.faults.store_proxy import StoreProxy

pytestmark = [pytest.mark.s3]


def client(endpoint: str, attempts: int = 1) -> Any:
    """boto3's S3 client of ``endpoint``, trying each request ``attempts`` times."""
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        config=Config(retries={"max_attempts": attempts, "mode": "standard"}),
    )  # fmt: skip


def test_boto3_sees_503_then_success_once_healed(s3: MotoS3, proxy: StoreProxy) -> None:
    bucket, s3c = s3.bucket(), client(proxy.endpoint)
    s3c.put_object(Bucket=bucket, Key="a", Body=b"before")
    proxy.set(Errors(503, retry_after=1))
    with pytest.raises(ClientError) as refused:
        s3c.put_object(Bucket=bucket, Key="b", Body=b"x" * 100_000)
    answer = refused.value.response
    assert answer["Error"]["Code"] == "SlowDown"
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert answer["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "1"
    proxy.set(Errors(500, close=True))
    with pytest.raises(ClientError) as failed:
        s3c.get_object(Bucket=bucket, Key="a")
    assert failed.value.response["Error"]["Code"] == "InternalError"
    proxy.set(Pass())
    assert s3c.get_object(Bucket=bucket, Key="a")["Body"].read() == b"before"
    assert "b" not in {o["Key"] for o in s3c.list_objects_v2(Bucket=bucket)["Contents"]}
    assert proxy.counts["failed"] >= 2 and proxy.counts["passed"] >= 3


def test_delta_rs_sees_503_then_reads_and_writes_once_healed(s3: MotoS3, proxy: StoreProxy) -> None:
    """delta-rs retries a 5xx itself (here twice), then its error names the status; once healed
    it reads and writes again."""
    through = s3.options(AWS_ENDPOINT_URL=proxy.endpoint, max_retries="2")
    table = f"s3://{s3.bucket()}/t"
    write_deltalake(table, pa.table({"a": [1, 2]}), storage_options=through)
    proxy.set(Errors(503))
    with pytest.raises(OSError, match="503"):
        DeltaTable(table, storage_options=through)
    proxy.set(Pass())
    write_deltalake(table, pa.table({"a": [3]}), mode="append", storage_options=through)
    direct = DeltaTable(table, storage_options=s3.options())
    assert sorted(direct.to_pyarrow_table().column("a").to_pylist()) == [1, 2, 3]


def test_slow_mode_delays_each_request_and_throttles_bodies(s3: MotoS3, proxy: StoreProxy) -> None:
    bucket, s3c = s3.bucket(), client(proxy.endpoint)
    body = os.urandom(1 << 20)
    s3c.put_object(Bucket=bucket, Key="m", Body=body)
    proxy.set(Slow(delay=0.4))
    began = time.monotonic()
    for _ in range(3):
        s3c.head_object(Bucket=bucket, Key="m")
    assert time.monotonic() - began >= 1.2  # lower bounds only: a busy machine adds, never cuts
    proxy.set(Slow(delay=0.0, rate=512 * 1024))
    began = time.monotonic()
    assert s3c.get_object(Bucket=bucket, Key="m")["Body"].read() == body
    assert time.monotonic() - began >= 1.8  # 1 MiB at half a MiB a second
    assert proxy.counts["slowed"] == 4


def test_a_large_multipart_upload_passes_whole(s3: MotoS3, proxy: StoreProxy) -> None:
    bucket, s3c = s3.bucket(), client(proxy.endpoint)
    data = os.urandom(13 << 20)
    parts = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)
    s3c.upload_fileobj(io.BytesIO(data), bucket, "big", Config=parts)
    assert client(s3.endpoint).get_object(Bucket=bucket, Key="big")["Body"].read() == data
    assert s3c.get_object(Bucket=bucket, Key="big")["Body"].read() == data
    assert proxy.counts["passed"] >= 5  # create, three parts, complete


def test_a_chunked_put_passes_whole(s3: MotoS3, proxy: StoreProxy) -> None:
    bucket, data = s3.bucket(), os.urandom(300_000)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("PUT", f"/{bucket}/c", body=iter([data[:70_000], data[70_000:]]),
                 encode_chunked=True)  # fmt: skip
    answer = conn.getresponse()
    assert (answer.status, answer.read()) == (200, b"")
    conn.close()
    assert client(s3.endpoint).get_object(Bucket=bucket, Key="c")["Body"].read() == data


def test_errors_keep_the_connection_open(s3: MotoS3, proxy: StoreProxy) -> None:
    """One connection: two refused requests (a chunked PUT, a HEAD), then one forwarded (moto
    closes every connection after its answer, ``Connection: close``, and so does the proxy)."""
    bucket = s3.bucket()
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    proxy.set(Errors(503))
    conn.request("PUT", f"/{bucket}/d", body=iter([b"lost", b"too"]), encode_chunked=True)
    refused = conn.getresponse()
    assert (refused.status, b"<Code>SlowDown</Code>" in refused.read()) == (503, True)
    conn.request("HEAD", f"/{bucket}/d")  # answered without a body
    refused = conn.getresponse()
    assert (refused.status, refused.getheader("Connection"), len(refused.read())) == (503, None, 0)
    proxy.set(Pass())
    conn.request("PUT", f"/{bucket}/e", body=b"kept")
    answer = conn.getresponse()
    assert (answer.status, answer.getheader("Connection")) == (200, "close")
    answer.read()
    conn.close()
    assert proxy.counts["connections"] == 1
    keys = {o["Key"] for o in client(s3.endpoint).list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {"e"}


def test_an_expected_continue_is_refused_at_once_and_closed(s3: MotoS3, proxy: StoreProxy) -> None:
    """Under errors, a PUT waiting for ``100 Continue`` gets the error instead, its body unread,
    and the connection ends (the body it would send next is no request)."""
    proxy.set(Errors(500))
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n"
                     b"Expect: 100-continue\r\n\r\n")  # fmt: skip
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert b"Connection: close" in answer and answer.endswith(b"</Error>")
