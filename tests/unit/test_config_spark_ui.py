"""``pipeline.spark.ui``: Spark's web UI on by default, a switch to turn it off, a wrong value
named by its key; and the name Spark's UI shows for the pipeline."""

from __future__ import annotations

import pytest

from sparkcdc.config.load import load_config_text
from sparkcdc.core.errors import ConfigError
from sparkcdc.spark.pipeline.session import pipeline_name

BASE = """
source: {type: mysql, host: db.local, user: cdc, tables: ['shop\\..*']}
sink: {path: ./lake}
pipeline: {checkpoint: ./checkpoints/shop%s}
"""


def test_the_ui_is_on_unless_switched_off() -> None:
    assert load_config_text(BASE % "", "/base").pipeline.spark_ui is True
    for on in ("true", "True", "yes", "on"):
        cfg = load_config_text(BASE % f", spark: {{ui: {on}}}", "/base")
        assert cfg.pipeline.spark_ui is True, on
    for off in ("false", "FALSE", "no", "off"):
        cfg = load_config_text(BASE % f", spark: {{ui: {off}}}", "/base")
        assert cfg.pipeline.spark_ui is False, off
    cfg = load_config_text(
        BASE % ", spark: {master: 'local[2]', ui: false, conf: {spark.ui.port: 4050}}", "/base"
    )
    p = cfg.pipeline
    assert (p.spark_master, p.spark_ui, p.spark_conf) == ("local[2]", False, {
        "spark.ui.port": "4050"})  # fmt: skip


@pytest.mark.parametrize("value", ["maybe", "1", "[true]", "{on: 1}"])
def test_a_wrong_switch_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config_text(BASE % f", spark: {{ui: {value}}}", "/base")
    assert err.value.fields["key"] == "pipeline.spark.ui"
    assert str(err.value).startswith("pipeline.spark.ui: ")
    if value == "maybe":
        assert str(err.value) == (
            "pipeline.spark.ui: 'maybe' is neither true nor false; use true or false."
        )


def test_an_unknown_spark_key_lists_ui_among_the_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        load_config_text(BASE % ", spark: {web_ui: false}", "/base")
    assert err.value.fields["key"] == "pipeline.spark.web_ui"
    assert "allowed keys are master, ui, conf" in str(err.value)


def test_the_pipeline_is_named_after_its_checkpoint_folder() -> None:
    assert pipeline_name("/data/checkpoints/shop") == "sparkcdc-shop"
    assert pipeline_name("/data/checkpoints/shop/") == "sparkcdc-shop"
    assert pipeline_name("s3://bucket/cdc/orders") == "sparkcdc-orders"
    assert pipeline_name("/data/my shop") == "sparkcdc-my-shop"
    assert pipeline_name("/") == "sparkcdc"
