"""The coverage-guided fuzzing run of one decoder target (atheris: libFuzzer for Python).

    python -m tests.fuzz.run --target binlog|pgoutput --seconds N --crashes DIR [--corpus DIR]

An input is a whole stream, so libFuzzer's own mutations (bytes flipped, inserted, erased,
copied, cut) reach every decoder behind the reader's loop:

    binlog     mode byte (json, typed Python, typed compiled) + a binlog file image, split into
               events by their size fields (:func:`tests.fuzz.binlog.split_file`)
    pgoutput   typed byte + XLogData items, each behind a 4-byte big-endian length

The corpus starts from the seed streams (:mod:`.binlog`, :mod:`.pgoutput`) in every mode. A
finding is any exception but the project's own error with a place in its sentence, a decode
slower than ``--timeout`` seconds, or a process past ``--rss-mb``: libFuzzer writes the input to
``DIR/<kind>-<hash>`` and the run exits non-zero. Replay one with ``--replay FILE``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["sparkcdc"]):
    from tests.fuzz import binlog, pgoutput


def binlog_input(data: bytes) -> None:
    if len(data) < 2:
        return
    binlog.check(binlog.split_file(data[1:]), binlog.MODES[data[0] % len(binlog.MODES)])


def pgoutput_items(data: bytes) -> list[bytes]:
    """The items behind their 4-byte lengths (a length past the end takes the rest)."""
    items, p = [], 0
    while p + 4 <= len(data):
        n = int.from_bytes(data[p : p + 4], "big")
        items.append(data[p + 4 : p + 4 + n])
        p += 4 + n
    return items


def pgoutput_input(data: bytes) -> None:
    if len(data) < 2:
        return
    items = pgoutput_items(data[1:])
    pgoutput.check(items, pgoutput.captured_schemas(items), bool(data[0] & 1))


TARGETS: dict[str, tuple[Callable[[bytes], None], Callable[[], list[bytes]]]] = {
    "binlog": (binlog_input, lambda: [
        bytes([mode]) + binlog.join_file(events)
        for _, events in binlog.seed_streams() for mode in range(len(binlog.MODES))
    ]),
    "pgoutput": (pgoutput_input, lambda: [
        bytes([typed]) + b"".join(len(i).to_bytes(4, "big") + i for i in items)
        for _, items in pgoutput.seed_streams() for typed in (0, 1)
    ]),
}  # fmt: skip


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", choices=sorted(TARGETS), required=True)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--crashes", type=Path, default=Path("fuzz-crashes"))
    parser.add_argument("--corpus", type=Path, help="kept between runs (default: a fresh one)")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take")
    parser.add_argument("--rss-mb", type=int, default=3072)
    parser.add_argument("--replay", type=Path, help="run one saved input and exit")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the readers log every stream they open
    one_input, seeds = TARGETS[args.target]
    if args.replay is not None:
        one_input(args.replay.read_bytes())
        print(f"{args.replay}: decoded, or stopped with the project's error")
        return
    corpus = args.corpus or Path(f".fuzz-corpus-{args.target}")
    corpus.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds()):
        (corpus / f"seed-{i:03d}").write_bytes(seed)
    args.crashes.mkdir(parents=True, exist_ok=True)
    libfuzzer = [
        sys.argv[0], str(corpus), f"-max_total_time={args.seconds}",
        f"-artifact_prefix={args.crashes}/{args.target}-", f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_mb}", "-max_len=65536", "-print_final_stats=1",
    ]  # fmt: skip
    atheris.Setup(libfuzzer, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv[1:])
