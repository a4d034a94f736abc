"""The login answers the replication connection gives (:mod:`.protocol`): to the server's
scramble, per authentication plugin.

- ``mysql_native_password``: ``SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))``.
- MySQL 8's ``caching_sha2_password``: ``SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble)``
  first. The server answers "fast auth done" when it holds the password's hash in its cache,
  else "full authentication": the password itself, sent only over TLS (the RSA-encrypted form
  over clear text is not spoken; :func:`more_data` says so in a sentence).
- MariaDB's ``client_ed25519``: an Ed25519 signature (RFC 8032) of the 32-byte scramble whose
  secret is ``SHA-512(password)`` itself (not the hash of a 32-byte seed): the scalar is its
  first half, clamped; the nonce hashes its second half with the scramble. The group
  arithmetic is libsodium's (PyNaCl).
"""

from __future__ import annotations

import hashlib

from nacl import bindings as sodium


def scramble_native(password: str, salt: bytes) -> bytes:
    """The ``mysql_native_password`` answer (empty for an empty password)."""
    if not password:
        return b""
    stage1 = hashlib.sha1(password.encode()).digest()
    stage2 = hashlib.sha1(stage1).digest()
    mix = hashlib.sha1(salt + stage2).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))


def scramble_sha256(password: str, salt: bytes) -> bytes:
    """The first ``caching_sha2_password`` answer (empty for an empty password)."""
    if not password:
        return b""
    stage1 = hashlib.sha256(password.encode()).digest()
    mix = hashlib.sha256(hashlib.sha256(stage1).digest() + salt).digest()
    return bytes(a ^ b for a, b in zip(stage1, mix, strict=True))


FAST_AUTH_DONE, FULL_AUTH_NEEDED = 3, 4


def more_data(reply: bytes, password: str, encrypted: bool) -> bytes | None:
    """The answer to a ``caching_sha2_password`` "more data" packet (``0x01`` and a status):
    None after "fast auth done" (the OK packet follows), the password after "full
    authentication" on a TLS connection; ValueError for what this connection cannot answer."""
    status = reply[1] if len(reply) > 1 else -1
    if status == FAST_AUTH_DONE:
        return None
    if status == FULL_AUTH_NEEDED and encrypted:
        return password.encode() + b"\0"
    if status == FULL_AUTH_NEEDED:
        raise ValueError(
            "the server asks for the password itself (caching_sha2_password full "
            "authentication), which is sent over TLS only; set source.tls to required"
        )
    raise ValueError(f"an unknown caching_sha2_password step {status}")


def ed25519_signature(password: str, scramble: bytes) -> bytes:
    """MariaDB's ``client_ed25519`` answer: R || S over ``scramble``."""
    digest = hashlib.sha512(password.encode()).digest()
    scalar = bytearray(digest[:32])
    scalar[0] &= 248
    scalar[31] &= 127
    scalar[31] |= 64
    secret = bytes(scalar)
    public = sodium.crypto_scalarmult_ed25519_base_noclamp(secret)
    nonce = sodium.crypto_core_ed25519_scalar_reduce(
        hashlib.sha512(digest[32:] + scramble).digest()
    )
    point = sodium.crypto_scalarmult_ed25519_base_noclamp(nonce)
    challenge = hashlib.sha512(point + public + scramble).digest()
    k = sodium.crypto_core_ed25519_scalar_reduce(challenge)
    s = sodium.crypto_core_ed25519_scalar_add(
        sodium.crypto_core_ed25519_scalar_mul(k, secret), nonce
    )
    return bytes(point + s)


FIRST_ANSWERS = {
    b"mysql_native_password": scramble_native,
    b"caching_sha2_password": scramble_sha256,
}


def auth_response(plugin: bytes, password: str, data: bytes) -> bytes | None:
    """The answer to an auth switch request for ``plugin`` with ``data`` (None: a plugin
    this connection does not speak)."""
    if plugin == b"mysql_native_password":
        return scramble_native(password, data.rstrip(b"\0"))
    if plugin == b"client_ed25519":
        return ed25519_signature(password, data[:32])
    if plugin == b"caching_sha2_password":
        return scramble_sha256(password, data.rstrip(b"\0"))
    return None
