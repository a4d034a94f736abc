"""``sparkcdc``: run, check or inspect a pipeline described by one YAML file.

    sparkcdc run PIPELINE.yaml [--available-now] [--quiet]
    sparkcdc check PIPELINE.yaml [--quiet]
    sparkcdc status PIPELINE.yaml [--json]
    sparkcdc verify PIPELINE.yaml [--tables RE ...] [--chunk-size N] [--wait S] [--quiet]
    sparkcdc compact PIPELINE.yaml [--tables RE ...] [--retain DURATION] [--quiet]
    sparkcdc signal ACTION --config PIPELINE.yaml [--tables db.t ...] [--where COND]
                    [--message TEXT] [--channel table|file]
    sparkcdc --version

``run`` streams until Ctrl-C / SIGTERM (the batch in flight commits, no batch starts after
it, exit status 0; a second Ctrl-C stops at once, the batch in flight not committed: 130); with
``--available-now`` it writes everything up to the log end seen at start and exits 0; one run at a
time per checkpoint (a second one stops at once, naming the first one's process). ``check``
validates the file and the server and changes nothing. ``status`` shows the pipeline's state from
its checkpoint without starting Spark (see :mod:`sparkcdc.cli.status`). ``verify`` compares
the replicas with the source row by row (see :mod:`sparkcdc.cli.verify`). ``compact`` compacts
the sink's Delta tables of a stopped pipeline and deletes the files no recent version reads (see
:mod:`sparkcdc.cli.compact`). ``signal`` sends a
running pipeline a signal, e.g. to snapshot some tables again (see :mod:`sparkcdc.cli.signal`).

Every command takes ``--log-format text|json``, before or after the command's name: ``json``
writes each log line to stderr as one JSON object (:mod:`sparkcdc.core.logs`), errors included.

Any :class:`~sparkcdc.core.errors.SparkCDCError` ends the command with its sentence on stderr and
one of these exit statuses:

    ===  ==============================================================================
    0    success
    1    ``verify`` found differences between the source and the sink
    2    a runtime failure: the source, the sink or Spark (a SparkCDCError other than
         ConfigError)
    64   a usage error: the command line is wrong (an unknown command or option, a missing
         argument, options that do not go together)
    78   a configuration error: a ConfigError (the pipeline file, or a setting it names)
    130  interrupted: Ctrl-C stopped a command before it finished (``run``: a second Ctrl-C,
         the batch in flight not committed; the first one stops ``run`` with 0)
    ===  ==============================================================================
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from sparkcdc.cli.compact import add_compact_command, run_compact
from sparkcdc.cli.json_stderr import JsonStderr
from sparkcdc.cli.signal import add_signal_command, send_signal
from sparkcdc.cli.status import add_status_command, pipeline_status
from sparkcdc.cli.verify import add_verify_command, run_verify
from sparkcdc.config.model import Config
from sparkcdc.core.errors import ConfigError, SparkCDCError
from sparkcdc.core.logs import LOG_FORMATS, setup_logging

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_ERROR = 2
EXIT_USAGE = 64
EXIT_CONFIG = 78
EXIT_INTERRUPTED = 130  # Ctrl-C that did not let the command finish (128 + SIGINT)

log = logging.getLogger("sparkcdc")


def exit_code(err: SparkCDCError) -> int:
    """The exit status for ``err``: a ConfigError naming a command-line argument (``--tables``,
    a signal's ACTION) is a usage error, any other ConfigError a configuration error, the rest a
    runtime failure."""
    if isinstance(err, ConfigError):
        key = str(err.fields.get("key") or "")
        return EXIT_USAGE if key.startswith("--") or key == "action" else EXIT_CONFIG
    return EXIT_ERROR


def package_version() -> str:
    """sparkcdc's version (:data:`sparkcdc.__version__`)."""
    import sparkcdc

    return sparkcdc.__version__


class _Parser(argparse.ArgumentParser):
    """argparse, with a wrong command line ending in :data:`EXIT_USAGE` (argparse's own is 2,
    which here means a runtime failure)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sparkcdc", description="Change data capture into Delta tables, on Apache Spark."
    )
    parser.add_argument("--version", action="version", version=f"sparkcdc {package_version()}")
    _log_format_option(parser, "text")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="stream changes into the sink")
    run.add_argument("pipeline", help="the pipeline YAML file")
    run.add_argument(
        "--available-now",
        action="store_true",
        help="write everything up to the log end seen at start, then exit",
    )
    run.add_argument("--quiet", action="store_true", help="print nothing but errors")
    check = commands.add_parser("check", help="validate the pipeline file and the server")
    check.add_argument("pipeline", help="the pipeline YAML file")
    check.add_argument("--quiet", action="store_true", help="print nothing but errors")
    add_status_command(commands)
    add_signal_command(commands)
    add_verify_command(commands)
    add_compact_command(commands)
    for command in commands.choices.values():
        _log_format_option(command, argparse.SUPPRESS)  # after the command's name too
    return parser


def _log_format_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default,
        help="text (default) or json: one JSON object per log line on stderr",
    )


def run(argv: Sequence[str] | None = None) -> int:
    """The command line ``argv``; its exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    quiet = bool(getattr(args, "quiet", False))
    # the source's own process (a Spark Python worker) logs the same way: see core/logs
    setup_logging("WARNING" if quiet else "INFO", args.log_format)
    as_json = args.log_format == "json"
    # Spark's JVM and workers write to stderr too: a run logging JSON makes their lines JSON
    guard = JsonStderr() if as_json and args.command == "run" else None
    try:
        return _command(args, quiet)
    except SparkCDCError as err:
        if as_json:
            log.error("%s", err)
        else:
            print(f"sparkcdc: {err}", file=sys.stderr)
        return exit_code(err)
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        if as_json:
            log.warning("interrupted")
        else:
            print("sparkcdc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # a bug: its traceback, and a runtime failure's status (never 1)
        if as_json:
            log.exception("sparkcdc failed unexpectedly")
        else:
            traceback.print_exc()
        return EXIT_ERROR
    finally:
        if guard is not None:
            guard.close()


def _command(args: argparse.Namespace, quiet: bool) -> int:
    from sparkcdc.config.load import load_config

    if args.command == "signal":
        config = load_config(args.config)
        print(send_signal(config, args.action, args.tables, args.where, args.message, args.channel))
        return EXIT_OK
    config = load_config(args.pipeline, connects=args.command not in ("status", "compact"))
    if args.command == "status":
        print(pipeline_status(config, args.json))
    elif args.command == "verify":
        return EXIT_OK if run_verify(config, args) else EXIT_DIFFERENT
    elif args.command == "compact":
        run_compact(config, args)
    elif args.command == "check":
        _check(config, quiet)
    else:
        _run(config, args.available_now, quiet, args.log_format == "json")
    return EXIT_OK


def _check(config: Config, quiet: bool) -> None:
    """What ``run`` checks before Spark starts (:func:`~sparkcdc.sources.readiness.check_source`,
    the start position only for a pipeline that has not run yet; the sink's storage written
    to, :func:`~sparkcdc.sinks.registry.check_sink`), changing nothing."""
    from sparkcdc.core.logs import counted
    from sparkcdc.sinks.registry import check_sink
    from sparkcdc.sources.readiness import check_source
    from sparkcdc.sources.registry import open_source
    from sparkcdc.spark.pipeline.checkpoint import resumes
    from sparkcdc.spark.pipeline.session import spark_log_level

    spark_log_level()  # a wrong SPARKCDC_SPARK_LOG_LEVEL, refused as run refuses it
    schemas = check_source(open_source(config.source), not resumes(config.pipeline.checkpoint))
    check_sink(config.sink)
    if not quiet:
        print(f"ok: {counted(len(schemas), 'table')} ready for change data capture")
        if config.sink.storage_options or "://" in config.sink.path:
            print(f"  the lake at {config.sink.path} can be written")
        for schema in schemas:
            print(f"  {schema.name} (key {', '.join(schema.key)})")


def _run(config: Config, available_now: bool, quiet: bool, as_json: bool) -> None:
    from sparkcdc.cli.progress import ProgressPrinter
    from sparkcdc.spark.pipeline.run import run_pipeline

    printer = None
    if not quiet:
        printer = ProgressPrinter(log=logging.getLogger("sparkcdc.progress") if as_json else None)
    try:
        batches = run_pipeline(config, available_now=available_now, progress=printer)
    finally:
        if printer is not None:
            printer.close()
    if as_json:
        log.info("stopped after %d batches", batches)
    elif not quiet:
        print(f"stopped after {batches} batches", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # the Delta writer's native threads can abort a normal interpreter exit: leave directly
    os._exit(code)


if __name__ == "__main__":
    main()
