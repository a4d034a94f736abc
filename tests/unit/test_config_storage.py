"""``sink.path`` on object storage and ``sink.storage_options``: the forms taken, the secrets
that never print, and the refusals naming the key (a checkpoint on object storage among them)."""

from __future__ import annotations

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.secret import Secret
from sparkcdc.core.errors import ConfigError
from sparkcdc.sinks import store_retry
from sparkcdc.sinks.storage import LakeStorage

SOURCE = "source: {host: h, user: u, password: p, tables: ['a\\.b']}\n"


def pipeline(sink: str, checkpoint: str = "./cp") -> str:
    return f"{SOURCE}sink: {sink}\npipeline: {{checkpoint: '{checkpoint}'}}\n"


def refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, "/base")
    return err.value


def test_storage_options_keep_their_names_and_hide_the_secrets() -> None:
    cfg = load_config_text(
        pipeline(
            "{path: 's3://bucket/lake/', storage_options: {AWS_ENDPOINT_URL: 'http://h:9000', "
            "AWS_REGION: eu-west-1, AWS_ALLOW_HTTP: true, AWS_ACCESS_KEY_ID: AKIA1, "
            "AWS_SECRET_ACCESS_KEY: s3cr3t-value, aws_conditional_put: etag}}"
        ),
        "/base",
    )
    sink = cfg.sink
    assert sink.path == "s3://bucket/lake"
    assert sink.storage_options["AWS_SECRET_ACCESS_KEY"] == Secret("s3cr3t-value")
    assert sink.storage_options["AWS_REGION"] == "eu-west-1"
    shown = repr(cfg) + str(sink.redacted()) + repr(LakeStorage(sink.path, sink.storage_options))
    assert "s3cr3t-value" not in shown and "AKIA1" not in shown and "http://h:9000" in shown
    lake = LakeStorage(sink.path, sink.storage_options)
    assert lake.delta_options() == {
        **store_retry.delta_retry_options({}),  # the retries' budget (sinks/store_retry.py)
        "AWS_ENDPOINT_URL": "http://h:9000", "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value",
        "aws_conditional_put": "etag",
    }  # fmt: skip
    assert lake.join("db", "t") == "s3://bucket/lake/db/t" and lake.remote


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("gs://b/lake", "gs://b/lake"),
        ("abfss://c@acct.dfs.core.windows.net/lake", "abfss://c@acct.dfs.core.windows.net/lake"),
        ("file:///data/lake", "/data/lake"),
        ("./lake", "/base/lake"),
    ],
)
def test_sink_path_forms(path: str, expected: str) -> None:
    assert load_config_text(pipeline(f"{{path: '{path}'}}"), "/base").sink.path == expected


@pytest.mark.parametrize(
    ("sink", "checkpoint", "key", "said"),
    [
        ("{path: 'hdfs://nn/lake'}", "./cp", "sink.path", "names a storage delta-rs cannot"),
        ("{path: ./lake, storage_options: {AWS_REGION: x}}", "./cp", "sink.storage_options",
         "applies to object storage only"),
        ("{path: 's3://b/l', storage_options: [AWS_REGION]}", "./cp", "sink.storage_options",
         "must be a mapping"),
        ("{path: 's3://b/l', storage_options: {AWS_ACCESS_KEY_ID: k}}", "./cp",
         "sink.storage_options.AWS_SECRET_ACCESS_KEY", "is missing"),
        ("{path: 's3://b/l'}", "s3://b/cp", "pipeline.checkpoint", "local or shared disk"),
    ],
)  # fmt: skip
def test_refusals_name_the_key(sink: str, checkpoint: str, key: str, said: str) -> None:
    err = refused(pipeline(sink, checkpoint))
    assert err.fields["key"] == key and said in str(err), str(err)
