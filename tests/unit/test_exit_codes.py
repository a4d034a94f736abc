"""The command line's exit statuses: which error ends in which status, and the real command
line in a subprocess for each kind (usage, configuration, success, ``--version``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.cli.main import (
    EXIT_CONFIG,
    EXIT_DIFFERENT,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    exit_code,
    package_version,
)
from sparkcdc.cli.main import run as main_run
from sparkcdc.core import errors
from sparkcdc.core.logs import LOG_FORMAT_ENV, LOG_LEVEL_ENV
from tests.cases.command import sparkcdc as cli


def pipeline_file(tmp_path: Path, extra_pipeline: str = "") -> Path:
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        "source: {type: mysql, host: 127.0.0.1, user: cdc, tables: ['shop\\\\..*']}\n"
        f"sink: {{type: delta, path: {tmp_path / 'lake'}}}\n"
        f"pipeline: {{checkpoint: {tmp_path / 'cp'}{extra_pipeline}}}\n"
    )
    return cfg


def test_the_statuses_are_the_documented_numbers() -> None:
    assert (EXIT_OK, EXIT_DIFFERENT, EXIT_ERROR, EXIT_USAGE, EXIT_CONFIG) == (0, 1, 2, 64, 78)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            errors.ConfigError("pipeline.trigger: 'x' is not a duration.", key="pipeline.trigger"),
            78,
        ),
        (errors.ConfigError("Cannot read the pipeline file p.yaml.", key=""), 78),
        (errors.ConfigError("--where is empty.", key="--where"), 64),
        (errors.ConfigError("'x' is not a signal.", key="action"), 64),
        (errors.ConfigError("--tables: shop.x is not captured.", key="--tables"), 64),
        (errors.ConfigError("--where 'x' cannot filter shop.t.", key="--where"), 64),
        (errors.NoTablesMatched("No table matches source.tables.", key="source.tables"), 78),
        (errors.ConfigError("The signal table s.t does not exist.", key="source.signal_table"), 78),
        (errors.MissingPrivilege("Publication p lacks s.t; run ALTER PUBLICATION."), 2),
        (errors.ConnectionFailed("cannot connect to 127.0.0.1:1."), 2),
        (errors.LogPositionGone("mysql-bin.000001 was purged."), 2),
        (errors.SinkError("writing batch 3 failed."), 2),
        (errors.SparkCDCError("the stream stopped."), 2),
    ],
)
def test_each_error_has_its_status(error: errors.SparkCDCError, code: int) -> None:
    assert exit_code(error) == code


def test_a_wrong_command_line_exits_64(tmp_path: Path) -> None:
    for args in (["bogus"], ["run"], ["run", "p.yaml", "--no-such-option"], []):
        done = cli(*args)
        assert done.returncode == EXIT_USAGE, (args, done.stderr)
        assert "usage: sparkcdc" in done.stderr and done.stdout == ""
    done = cli("--log-format", "xml", "status", str(pipeline_file(tmp_path)))
    assert done.returncode == EXIT_USAGE and "invalid choice: 'xml'" in done.stderr


def test_a_configuration_error_exits_78(tmp_path: Path) -> None:
    done = cli("check", str(tmp_path / "missing.yaml"))
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.startswith("sparkcdc: Cannot read the pipeline file")
    bad = pipeline_file(tmp_path, ", trigger: soon")
    done = cli("status", str(bad))
    assert done.returncode == EXIT_CONFIG and "pipeline.trigger" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_check_refuses_what_run_refuses_before_it_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPARKCDC_SPARK_LOG_LEVEL", "LOUD")
    for name in (LOG_LEVEL_ENV, LOG_FORMAT_ENV):  # the command sets them: put back afterwards
        monkeypatch.setenv(name, "")
    for argv in (["check"], ["run", "--available-now"]):
        assert main_run([argv[0], str(pipeline_file(tmp_path)), *argv[1:]]) == EXIT_CONFIG
        err = capsys.readouterr().err
        assert err.startswith("sparkcdc: SPARKCDC_SPARK_LOG_LEVEL='LOUD' is not a log level")


def test_status_of_a_pipeline_that_never_ran_exits_0(tmp_path: Path) -> None:
    """Also without the password's environment variable: status never connects."""
    cfg = pipeline_file(tmp_path)
    cfg.write_text(cfg.read_text().replace("user: cdc,", "user: cdc, password: ${UNSET_PW_7731},"))
    done = cli("status", str(cfg))
    assert done.returncode == EXIT_OK, done.stderr
    assert (
        done.stdout
        == f"The checkpoint {tmp_path / 'cp'} does not exist yet: the pipeline never ran.\n"
    )
    assert not (tmp_path / "cp").exists()  # status writes nothing


def test_version() -> None:
    done = cli("--version")
    assert done.returncode == EXIT_OK
    assert done.stdout == f"sparkcdc {package_version()}\n"
    assert package_version().count(".") >= 1
