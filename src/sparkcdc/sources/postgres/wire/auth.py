"""Password logins (PostgreSQL docs, "Frontend/Backend Protocol": "Message Flow" / "Start-up",
and "SASL Authentication"):

- AuthenticationCleartextPassword: the password itself.
- AuthenticationMD5Password: ``"md5" + md5(md5(password + user).hex + salt).hex``.
- AuthenticationSASL with SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL implements it: the
  client-first message names no user (``n=``: the StartupMessage did), there is no channel
  binding (GS2 header ``n,,``, so ``c=biws``), the password is SASLprep'd (RFC 4013) unless it
  cannot be (then used as it is, as PostgreSQL does), and the server's signature is checked.
  SCRAM-SHA-256-PLUS is offered only over TLS, and not chosen here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import stringprep
import unicodedata

SCRAM_SHA_256 = "SCRAM-SHA-256"
_GS2_HEADER = "n,,"


def md5_password(user: str, password: str, salt: bytes) -> bytes:
    """The AuthenticationMD5Password answer for ``salt`` (4 bytes)."""
    inner = hashlib.md5((password + user).encode()).hexdigest().encode()
    return b"md5" + hashlib.md5(inner + salt).hexdigest().encode()


def saslprep(password: str) -> str:
    """RFC 4013 SASLprep of a password as PostgreSQL's ``pg_saslprep`` does it: ASCII as it
    is; otherwise mapped, NFKC-normalized and checked, and left as it is if prohibited."""
    if password.isascii():
        return password
    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c)
    )
    text = unicodedata.normalize("NFKC", mapped)
    if not text or any(_prohibited(c) for c in text):
        return password
    if any(stringprep.in_table_d1(c) for c in text) and (
        any(stringprep.in_table_d2(c) for c in text)
        or not stringprep.in_table_d1(text[0])
        or not stringprep.in_table_d1(text[-1])
    ):
        return password
    return text


def _prohibited(c: str) -> bool:
    return (
        stringprep.in_table_c12(c)
        or stringprep.in_table_c21_c22(c)
        or stringprep.in_table_c3(c)
        or stringprep.in_table_c4(c)
        or stringprep.in_table_c5(c)
        or stringprep.in_table_c6(c)
        or stringprep.in_table_c7(c)
        or stringprep.in_table_c8(c)
        or stringprep.in_table_c9(c)
        or stringprep.in_table_a1(c)
    )


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.digest(key, message, "sha256")


class ScramSha256:
    """One SCRAM-SHA-256 exchange: :meth:`client_first`, then :meth:`client_final` on the
    server-first message, then :meth:`verify` on the server-final one."""

    mechanism = SCRAM_SHA_256

    def __init__(self, password: str, user: str = "", nonce: str | None = None) -> None:
        self.password = saslprep(password)
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(18)).decode()
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.client_first_bare = f"n={name},r={self.nonce}"
        self._server_signature = b""

    def client_first(self) -> bytes:
        """``n,,n=<user>,r=<client nonce>``."""
        return (_GS2_HEADER + self.client_first_bare).encode()

    def client_final(self, server_first: bytes) -> bytes:
        """``c=biws,r=<nonce>,p=<proof>`` for the server-first ``r=<nonce>,s=<salt>,i=<n>``;
        ValueError for a server-first message that breaks the rules."""
        text = server_first.decode()
        attrs = _attributes(text)
        nonce, salt, rounds = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise ValueError("the server's SCRAM nonce does not extend ours")
        if not salt or not rounds.isdigit() or "m" in attrs:
            raise ValueError("the server's SCRAM challenge lacks a salt or an iteration count")
        salted = hashlib.pbkdf2_hmac(
            "sha256", self.password.encode(), base64.b64decode(salt), int(rounds)
        )
        channel = base64.b64encode(_GS2_HEADER.encode()).decode()
        without_proof = f"c={channel},r={nonce}"
        auth_message = f"{self.client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(salted, b"Client Key")
        signature = _hmac(hashlib.sha256(client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = _hmac(_hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server-final ``v=<server signature>``; ValueError if it is wrong, missing
        or an ``e=<error>``."""
        attrs = _attributes(server_final.decode())
        if "e" in attrs:
            raise ValueError(f"the server ended the SCRAM exchange with error {attrs['e']}")
        given = base64.b64decode(attrs.get("v", ""))
        if not self._server_signature or not hmac.compare_digest(given, self._server_signature):
            raise ValueError("the server's SCRAM signature is wrong (is it the server you meant?)")


def _attributes(text: str) -> dict[str, str]:
    """``a=1,b=2`` -> ``{"a": "1", "b": "2"}`` (values may hold ``=``, as base64 does)."""
    pairs = (part.partition("=") for part in text.split(","))
    return {key: value for key, sep, value in pairs if sep and len(key) == 1}
