"""The source's password never prints itself (``repr``, ``str``, f-strings, a config's repr, a
traceback's locals), and it leaves the process only sealed: pickled (as Spark ships its tasks)
and as the Spark option ``sparkcdc run`` passes."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import pickle
import subprocess
import sys
import traceback

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.config.model import SourceConfig
from sparkcdc.config.secret import KEY_ENV, Secret, ensure_key, seal, unseal
from sparkcdc.core.errors import ConfigError
from sparkcdc.spark.stream.options import SourceOptions, source_options

PASSWORD = "Sup3r-s3cret-PW-7731"
PIPELINE = (
    f"source: {{host: h, user: u, password: '{PASSWORD}', tables: ['shop\\..*']}}\n"
    "sink: {path: /lake}\npipeline: {checkpoint: /cp}\n"
)


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(KEY_ENV, raising=False)
    made = ensure_key()
    assert os.environ[KEY_ENV] == made
    return made


def test_a_secret_prints_as_stars_and_reveals_on_demand() -> None:
    secret = Secret(PASSWORD)
    logged = logging.LogRecord("x", logging.INFO, "f", 1, "%s %r", (secret, secret), None)
    shown = [repr(secret), str(secret), f"{secret}", f"{secret:>9}", logged.getMessage()]
    assert not any(PASSWORD in text for text in shown)
    assert str(secret) == "***" and repr(secret) == "Secret('***')"
    assert secret.reveal() == PASSWORD
    assert secret == Secret(PASSWORD) and secret != Secret("other") and secret != PASSWORD
    assert bool(secret) and not Secret("")
    assert copy.copy(secret) is secret and copy.deepcopy(secret) is secret
    with pytest.raises(AttributeError):
        secret._text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        json.dumps(secret)  # never written out by accident


def test_the_configuration_never_prints_the_password(no_key: None) -> None:
    config = load_config_text(PIPELINE, "/")
    assert config.source.password.reveal() == PASSWORD
    texts = [repr(config), str(config), repr(config.source), json.dumps(config.source.redacted())]
    assert not any(PASSWORD in text for text in texts)
    moved = dataclasses.replace(config.source, host="other")
    assert moved.password == config.source.password and PASSWORD not in repr(moved)
    # text given where the code builds a source (tests, benchmarks) is wrapped too
    assert SourceConfig("h", 1, "u", PASSWORD, ()).password == Secret(PASSWORD)


def test_a_traceback_with_its_locals_does_not_show_it(no_key: None) -> None:
    source = load_config_text(PIPELINE, "/").source

    def connect(source: SourceConfig) -> None:
        password = source.password  # noqa: F841 - a local the traceback shows
        raise ConnectionError("refused")

    try:
        connect(source)
    except ConnectionError as exc:
        shown = "".join(
            traceback.TracebackException.from_exception(exc, capture_locals=True).format()
        )
    assert "Secret('***')" in shown and PASSWORD not in shown


def test_pickled_without_a_key_it_round_trips(no_key: None) -> None:
    assert pickle.loads(pickle.dumps(Secret(PASSWORD))) == Secret(PASSWORD)


def test_pickled_with_the_runs_key_it_is_sealed(key: str) -> None:
    source = load_config_text(PIPELINE, "/").source
    data = pickle.dumps(source)
    assert PASSWORD.encode() not in data
    assert pickle.loads(data) == source
    assert pickle.dumps(Secret(PASSWORD)) != pickle.dumps(Secret(PASSWORD))  # fresh nonces
    # a process with the key opens it; one without it says why in one sentence
    opener = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read()).password.reveal())"
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    opened = subprocess.run(
        [sys.executable, "-c", opener], input=data, capture_output=True, env=env | {KEY_ENV: key}
    )
    assert opened.stdout.decode().strip() == PASSWORD
    refused = subprocess.run(
        [sys.executable, "-c", opener], input=data, capture_output=True, env=env
    )
    assert refused.returncode != 0 and PASSWORD not in refused.stderr.decode()
    assert f"{KEY_ENV} is not set there" in refused.stderr.decode()


def test_a_text_sealed_under_another_key_is_refused(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed = seal(PASSWORD)
    assert sealed is not None and PASSWORD not in sealed
    assert unseal(sealed, "x") == PASSWORD
    monkeypatch.delenv(KEY_ENV)
    ensure_key()  # another run's
    with pytest.raises(ConfigError, match="sealed by another run, or changed"):
        unseal(sealed, "the password")
    with pytest.raises(ConfigError, match="sealed by another run, or changed"):
        unseal(sealed[:-4] + "AAAA", "the password")


def test_sparkcdc_run_passes_it_to_spark_sealed(key: str) -> None:
    source = load_config_text(PIPELINE, "/").source
    options = source_options(
        source, "/cp/h.jsonl", max_bytes=1, max_items=1, batch_mode="MEMSIZE", item_rows=1
    )
    assert "password" not in options and "password_sealed" in options
    assert not any(PASSWORD in value for value in options.values())
    assert SourceOptions.parse(options).source == source


def test_without_a_key_the_option_is_the_password_as_given(no_key: None) -> None:
    """A session the user starts (``spark.readStream.format("mysql-cdc")``) passes its own
    ``password`` option; so do the pipeline's options where no key was made."""
    source = load_config_text(PIPELINE, "/").source
    options = source_options(
        source, "/cp/h.jsonl", max_bytes=1, max_items=1, batch_mode="MEMSIZE", item_rows=1
    )
    assert options["password"] == PASSWORD and "password_sealed" not in options
    parsed = SourceOptions.parse(options)
    assert parsed.source == source and PASSWORD not in repr(parsed)
    sealed = {**options, "password_sealed": "v1.AAAA"}
    with pytest.raises(ConfigError, match="option 'password_sealed' reached a process without"):
        SourceOptions.parse(sealed)
