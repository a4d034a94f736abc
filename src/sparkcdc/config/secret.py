"""Secrets that never print themselves: the source's password.

A :class:`Secret` holds its text and shows ``***`` wherever it is printed (``repr``, ``str``,
f-strings, a dataclass's ``repr``, a traceback's locals), so a ``SourceConfig`` in a log line or
an error says nothing. The one way to the text is :meth:`Secret.reveal`, called only where a
connection hands the password to a socket, a driver or a login exchange.

Secrets still travel: Spark pickles what its tasks need (the source's options, inside the
stream reader) to its Python workers. So a secret is **sealed** wherever it leaves the process:

- pickled, it carries only its sealed text when the process holds the run's key, and is opened
  again on the other side;
- as a Spark option (``password_sealed``, :mod:`sparkcdc.spark.stream.options`), it is the
  sealed text.

Sealing is AES-256-GCM (``cryptography``) under a key made at random per run
(:func:`ensure_key`) and held in the environment variable :data:`KEY_ENV` of the processes that
may open it: the driver sets it before Spark starts, and gives it to every Python process Spark
starts through ``spark.executorEnv`` (:mod:`sparkcdc.spark.pipeline.session`), which Spark's
default ``spark.redaction.regex`` hides in its UI and event log. The key is never written to a
file, and the sealed text is useless without it. A process without the key (a session the user
started, not ``sparkcdc run``) pickles the text as it is, as Spark holds its options.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import secrets
from typing import TYPE_CHECKING, Any, Final, final

from sparkcdc.core.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_ENV: Final = "SPARKCDC_SECRET_KEY"
"""The environment variable holding the run's sealing key (base64 of 32 bytes)."""

SHOWN: Final = "***"
_VERSION: Final = "v1."
_NONCE_BYTES: Final = 12


@final
class Secret:
    """A text that never prints itself; :meth:`reveal` gives it to the one call that needs it.

    Immutable, compared by value (in constant time), true when not empty."""

    __slots__ = ("_text",)
    _text: str

    def __init__(self, text: str = "") -> None:
        if not isinstance(text, str):
            raise TypeError(f"a Secret holds text, not {type(text).__name__}")
        object.__setattr__(self, "_text", text)

    @classmethod
    def of(cls, value: Secret | str) -> Secret:
        """``value`` as a Secret (a Secret stays itself)."""
        return value if isinstance(value, Secret) else cls(value)

    def reveal(self) -> str:
        """The text itself: only where a connection sends it (a login, a driver's argument)."""
        return self._text

    def sealed(self) -> str | None:
        """The text sealed with this process's key (:func:`seal`), None without a key."""
        return seal(self._text)

    def __repr__(self) -> str:
        return f"Secret('{SHOWN}')"

    def __str__(self) -> str:
        return SHOWN

    def __format__(self, spec: str) -> str:
        return format(SHOWN, spec)

    def __bool__(self) -> bool:
        return bool(self._text)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._text.encode(), other._text.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._text))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Secret cannot be changed")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        sealed = self.sealed()
        if sealed is None:  # no key in this process: as Spark holds a user's own options
            return (Secret, (self._text,))
        return (_opened, (sealed,))


def _opened(sealed: str) -> Secret:
    """A pickled Secret's way back (:meth:`Secret.__reduce__`)."""
    return Secret(unseal(sealed, "a sealed secret"))


def ensure_key() -> str:
    """This process's sealing key, made at random (and put in :data:`KEY_ENV`, so the
    processes started from here on inherit it) when it has none."""
    key = os.environ.get(KEY_ENV)
    if not key:
        key = base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        os.environ[KEY_ENV] = key
    return key


def forget_key() -> None:
    """Seal nothing from here on (the processes that would open it lack the key)."""
    os.environ.pop(KEY_ENV, None)


def _aead(where: str) -> AESGCM | None:
    """AES-256-GCM under this process's key, None when it has none."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    text = os.environ.get(KEY_ENV)
    if not text:
        return None
    try:
        key = base64.b64decode(text, validate=True)
        return AESGCM(key)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"{KEY_ENV} does not hold a sealing key (base64 of 32 bytes), so {where} cannot be "
            f"opened; unset {KEY_ENV} and run again.",
            key=KEY_ENV,
        ) from None


def seal(text: str) -> str | None:
    """``text`` encrypted and authenticated under this process's key (a fresh nonce each
    time), as ``v1.<base64url>``; None when the process has no key."""
    aead = _aead("a secret")
    if aead is None:
        return None
    nonce = secrets.token_bytes(_NONCE_BYTES)
    box = aead.encrypt(nonce, text.encode("utf-8"), _VERSION.encode())
    return _VERSION + base64.urlsafe_b64encode(nonce + box).decode("ascii")


def unseal(sealed: str, where: str) -> str:
    """The text :func:`seal` sealed; ConfigError naming ``where`` when this process lacks the
    key it was sealed with (or the text was changed)."""
    from cryptography.exceptions import InvalidTag

    aead = _aead(where)
    if aead is None:
        raise ConfigError(
            f"{where} reached a process without the key it was sealed with ({KEY_ENV} is not "
            "set there); it is opened only in the processes of the run that sealed it.",
            key=KEY_ENV,
        )
    try:
        if not sealed.startswith(_VERSION):
            raise ValueError(sealed[:3])
        raw = base64.urlsafe_b64decode(sealed[len(_VERSION) :].encode("ascii"))
        nonce, box = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
        return aead.decrypt(nonce, box, _VERSION.encode()).decode("utf-8")
    except (InvalidTag, ValueError, binascii.Error, UnicodeError):
        raise ConfigError(
            f"{where} cannot be opened with this process's key ({KEY_ENV}): it was sealed by "
            "another run, or changed; give the password again (source.password).",
            key=KEY_ENV,
        ) from None
