"""A torn Spark checkpoint file before a run: what is removed (and why it is safe), what is
refused with a sentence naming the file; on checkpoint folders written as Spark writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.core.errors import CheckpointTorn
from sparkcdc.spark.pipeline.torn import commit_problem, offset_problem, repair_torn

QUERY = "cf774181-0b3c-4e03-b077-fbd33143b182"
APP = f"sparkcdc-{QUERY}"
COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'


def offset(batch: int) -> str:
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1714557600123 + batch, "conf": {}}
    source = {"file": "mysql-bin.000003", "pos": 1000 + batch, "gtid": "0-1-42", "skip": 0}
    return "\n".join(["v1", json.dumps(metadata, separators=(",", ":")), json.dumps(source)])


def checkpoint(tmp: Path, planned: int, committed: int) -> Path:
    """``spark/`` with offsets 0..planned and commits 0..committed, each with Spark's .crc."""
    spark = tmp / "spark"
    for folder in ("offsets", "commits"):
        (spark / folder).mkdir(parents=True)
    (spark / "metadata").write_text(json.dumps({"id": QUERY}))
    for batch in range(planned + 1):
        _write(spark / "offsets" / str(batch), offset(batch))
    for batch in range(committed + 1):
        _write(spark / "commits" / str(batch), COMMIT)
    return spark


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.with_name(f".{path.name}.crc").write_bytes(b"crc\0")


def tear(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


class Holders:
    """The sink's answer to "which tables hold batch N?", and the questions asked."""

    def __init__(self, *held: str) -> None:
        self.held, self.asked = list(held), list[tuple[str, int]]()

    def __call__(self, app: str, batch: int) -> list[str]:
        self.asked.append((app, batch))
        return self.held


def test_a_whole_checkpoint_is_left_alone_and_the_sink_not_asked(tmp_path: Path) -> None:
    spark, holders = checkpoint(tmp_path, 3, 2), Holders("db.t")
    assert repair_torn(spark, holders) == [] and holders.asked == []
    assert repair_torn(tmp_path / "none", None) == []


@pytest.mark.parametrize("keep", [0, 1, 3, len(COMMIT) - 1])
def test_a_torn_commit_file_is_removed_so_spark_replays_its_batch(
    tmp_path: Path, keep: int
) -> None:
    spark = checkpoint(tmp_path, 3, 3)
    tear(spark / "commits" / "3", keep)
    removed = repair_torn(spark, Holders("db.t"))
    assert sorted(p.name for p in removed) == [".3.crc", "3"]
    assert sorted(p.name for p in (spark / "commits").iterdir() if p.name.isdigit()) == [
        "0", "1", "2",
    ]  # fmt: skip
    assert (spark / "offsets" / "3").is_file()


@pytest.mark.parametrize("keep", [0, 2, 40, len(offset(4)) - 1])
def test_a_torn_offset_file_no_table_holds_is_removed_so_spark_plans_it_again(
    tmp_path: Path, keep: int
) -> None:
    spark, holders = checkpoint(tmp_path, 4, 3), Holders()
    tear(spark / "offsets" / "4", keep)
    assert sorted(p.name for p in repair_torn(spark, holders)) == [".4.crc", "4"]
    assert holders.asked == [(APP, 4)]
    assert not (spark / "offsets" / "4").exists() and (spark / "offsets" / "3").is_file()


def test_a_torn_first_offset_file_no_table_holds_is_removed(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 0, -1)
    tear(spark / "offsets" / "0", 10)
    assert [p.name for p in repair_torn(spark, Holders())] == ["0", ".0.crc"]


def test_a_torn_offset_file_a_table_holds_is_refused_naming_it(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 4, 3)
    tear(spark / "offsets" / "4", 30)
    with pytest.raises(CheckpointTorn) as refused:
        repair_torn(spark, Holders("shop.items__changelog"))
    said = str(refused.value)
    assert str(spark / "offsets" / "4") in said and "shop.items__changelog" in said
    assert "start the pipeline anew" in said and said.count(".") >= 1 and "\n" not in said
    assert (spark / "offsets" / "4").is_file()  # nothing removed


def test_a_torn_offset_file_of_a_committed_batch_is_refused(tmp_path: Path) -> None:
    spark, holders = checkpoint(tmp_path, 4, 4), Holders()
    tear(spark / "offsets" / "4", 30)
    with pytest.raises(CheckpointTorn, match=r"offsets/4 is cut short .*committed"):
        repair_torn(spark, holders)
    assert holders.asked == []


def test_a_torn_offset_file_with_a_sink_that_cannot_tell_is_refused(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 4, 3)
    tear(spark / "offsets" / "4", 0)
    with pytest.raises(CheckpointTorn, match="cannot tell"):
        repair_torn(spark, None)


def test_a_torn_commit_file_whose_offset_file_is_gone_is_refused(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 3, 3)
    tear(spark / "commits" / "3", 5)
    (spark / "offsets" / "3").unlink()
    with pytest.raises(CheckpointTorn, match=r"commits/3 .*offsets/3 is missing or torn"):
        repair_torn(spark, Holders())


def test_torn_offset_and_commit_files_of_one_batch_are_refused(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 3, 3)
    tear(spark / "commits" / "3", 5)
    tear(spark / "offsets" / "3", 5)
    with pytest.raises(CheckpointTorn, match=r"offsets/3"):
        repair_torn(spark, Holders())


def test_a_checkpoint_without_a_query_id_is_refused_naming_the_metadata(tmp_path: Path) -> None:
    spark = checkpoint(tmp_path, 2, 1)
    tear(spark / "offsets" / "2", 5)
    tear(spark / "metadata", 3)
    with pytest.raises(CheckpointTorn, match=r"spark/metadata .*query id"):
        repair_torn(spark, Holders())


def test_what_a_torn_file_lacks_is_said() -> None:
    assert commit_problem(COMMIT) is None and offset_problem(offset(2), 2) is None
    assert commit_problem('v1\n{"nextBatch') == "its metadata line is not JSON"
    assert commit_problem("v") is not None and commit_problem("") is not None
    assert offset_problem(offset(2).rsplit("\n", 1)[0], 2) == "it names no source offset"
    assert offset_problem(offset(2)[:-1], 2) is not None
