"""``sparkcdc``: run or check a pipeline described by one YAML file.

    sparkcdc run PIPELINE.yaml [--available-now] [--quiet]
    sparkcdc check PIPELINE.yaml
    sparkcdc signal ACTION --config PIPELINE.yaml [--tables db.t ...] [--where COND]
                    [--message TEXT] [--channel table|file]

``run`` streams until Ctrl-C / SIGTERM (the batch in flight commits first); with
``--available-now`` it writes everything up to the log end seen at start and exits 0. ``check``
validates the file and the server and changes nothing. ``signal`` sends a running pipeline a
signal, e.g. to snapshot some tables again (see :mod:`sparkcdc.cli.signal`). Any
:class:`~sparkcdc.core.errors.SparkCDCError` ends the command with its sentence on stderr and
exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from sparkcdc.cli.signal import add_signal_command, send_signal
from sparkcdc.core.errors import SparkCDCError

EXIT_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkcdc", description="Change data capture into Delta tables, on Apache Spark."
    )
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
    add_signal_command(commands)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    quiet = bool(getattr(args, "quiet", False))
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its callback server chatters at INFO
    # the source's own process (a Spark Python worker) logs at the same level: see spark/source
    os.environ["SPARKCDC_LOG_LEVEL"] = "WARNING" if quiet else "INFO"
    from sparkcdc.config.load import load_config

    try:
        if args.command == "signal":
            config = load_config(args.config)
            print(
                send_signal(
                    config, args.action, args.tables, args.where, args.message, args.channel
                )
            )
            return 0
        config = load_config(args.pipeline)
        if args.command == "check":
            from sparkcdc.sources.readiness import check_source
            from sparkcdc.sources.registry import open_source

            schemas = check_source(open_source(config.source))
            if not quiet:
                print(f"ok: {len(schemas)} tables ready for change data capture")
                for schema in schemas:
                    print(f"  {schema.name} (key {', '.join(schema.key)})")
            return 0
        from sparkcdc.cli.progress import ProgressPrinter
        from sparkcdc.spark.pipeline.run import run_pipeline

        printer = None if quiet else ProgressPrinter()
        try:
            batches = run_pipeline(config, available_now=args.available_now, progress=printer)
        finally:
            if printer is not None:
                printer.close()
        if not quiet:
            print(f"stopped after {batches} batches", file=sys.stderr)
        return 0
    except SparkCDCError as err:
        print(f"sparkcdc: {err}", file=sys.stderr)
        return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # the Delta writer's native threads can abort a normal interpreter exit: leave directly
    os._exit(code)


if __name__ == "__main__":
    main()
