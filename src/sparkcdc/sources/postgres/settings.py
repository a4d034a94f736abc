"""The settings a PostgreSQL source adds to the common ones: the database, the replication slot
and the publication, and the startup form ``lsn:<X/Y>``.

``slot`` and ``publication`` default to ``sparkcdc_<name>``, the name taken from the pipeline's
checkpoint folder (:func:`default_name`), so two pipelines on one server never share a slot.
They are read from ``source.<key>`` in the pipeline file and from the ``postgres-cdc`` Spark
source's options of the same names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePath

from sparkcdc.config.model import SourceSettings
from sparkcdc.config.values import as_text, fail
from sparkcdc.core.json_value import JSONObject
from sparkcdc.sources.postgres.wire.lsn import format_lsn, parse_lsn

MAX_NAME = 63  # NAMEDATALEN - 1: PostgreSQL's longest identifier
_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


@dataclass(frozen=True)
class PostgresSettings(SourceSettings):
    """A PostgreSQL source's database, slot and publication (see the module docstring)."""

    KEYS = ("database", "slot", "publication")
    STARTUP_FORMS = ("lsn:<X/Y>",)

    database: str = "postgres"
    slot: str | None = None
    publication: str | None = None

    @classmethod
    def from_values(
        cls, given: Callable[[str], object], key: Callable[[str], str]
    ) -> PostgresSettings:
        database = given("database")
        slot, publication = given("slot"), given("publication")
        return cls(
            database=as_text(database, key("database")) if database is not None else "postgres",
            slot=None if slot is None else slot_name(as_text(slot, key("slot")), key("slot")),
            publication=None
            if publication is None
            else identifier(as_text(publication, key("publication")), key("publication")),
        )

    @classmethod
    def startup(cls, text: str) -> str | None:
        if not text.lower().startswith("lsn:"):
            return None
        try:
            return "lsn:" + format_lsn(parse_lsn(text[4:].strip()))
        except ValueError:
            return None

    def for_pipeline(self, checkpoint: str) -> PostgresSettings:
        """The slot and publication not set named ``sparkcdc_<checkpoint folder>``."""
        default = default_name(checkpoint)
        return replace(self, slot=self.slot or default, publication=self.publication or default)

    @property
    def source_database(self) -> str:
        """Tables are named (schema, table): events carry ``database`` as ``source.db``."""
        return self.database

    def names(self) -> tuple[str, str]:
        """(slot, publication): the ones set, else ``sparkcdc_<database>`` (a Spark source
        without the options)."""
        default = default_name(self.database)
        return self.slot or default, self.publication or default

    def redacted(self) -> JSONObject:
        return {"database": self.database, "slot": self.slot, "publication": self.publication}

    def to_options(self) -> dict[str, str]:
        options = {"database": self.database}
        if self.slot is not None:
            options["slot"] = self.slot
        if self.publication is not None:
            options["publication"] = self.publication
        return options


def default_name(checkpoint: str) -> str:
    """``sparkcdc_<last part of the checkpoint path>`` in the letters a slot name may hold
    (lower-case letters, digits, underscores), at most 63 characters."""
    base = PurePath(checkpoint.rstrip("/\\") or "pipeline").name.lower()
    cleaned = re.sub(r"[^a-z0-9_]+", "_", base).strip("_") or "pipeline"
    return f"sparkcdc_{cleaned}"[:MAX_NAME]


def slot_name(text: str, key: str) -> str:
    """``text`` if PostgreSQL accepts it as a replication slot's name."""
    if not _SLOT_NAME.fullmatch(text):
        fail(
            key,
            f"{text!r} is not a replication slot name; PostgreSQL allows lower-case letters, "
            f"digits and underscores, at most {MAX_NAME} characters",
        )
    return text


def identifier(text: str, key: str) -> str:
    """``text`` if it is a plain SQL identifier (a publication's name)."""
    if not _IDENTIFIER.fullmatch(text):
        fail(
            key,
            f"{text!r} is not a plain identifier; use letters, digits and underscores, at most "
            f"{MAX_NAME} characters, not starting with a digit",
        )
    return text
