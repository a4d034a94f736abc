"""The first offset of a stream, kept once resolved (:mod:`sparkcdc.spark.stream.first_offset`)."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.spark.stream.first_offset import FirstOffset


class Resolver:
    """Answers a new offset each time it is asked, as ``startup: latest`` on a busy server."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return {"lsn": f"0/{self.calls}"}


def test_resolved_once_in_memory_without_a_file() -> None:
    resolve = Resolver()
    first = FirstOffset("latest", None)
    assert first.get(resolve) == first.get(resolve) == {"lsn": "0/1"}
    assert resolve.calls == 1


def test_kept_in_its_file_for_the_next_process(tmp_path: Path) -> None:
    path, resolve = tmp_path / "own" / "first_offset.json", Resolver()
    assert FirstOffset("latest", str(path)).get(resolve) == {"lsn": "0/1"}
    assert FirstOffset("latest", str(path)).get(resolve) == {"lsn": "0/1"}
    assert resolve.calls == 1
    assert not list(path.parent.glob("*.tmp"))


def test_another_startup_or_a_torn_file_resolves_again(tmp_path: Path) -> None:
    path, resolve = tmp_path / "first_offset.json", Resolver()
    FirstOffset("latest", str(path)).get(resolve)
    assert FirstOffset("earliest", str(path)).get(resolve) == {"lsn": "0/2"}
    path.write_text('{"startup": "earliest", "off')  # a kill -9 mid-write
    assert FirstOffset("earliest", str(path)).get(resolve) == {"lsn": "0/3"}
