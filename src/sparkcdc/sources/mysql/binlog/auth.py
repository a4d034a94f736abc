"""The login answers the replication connection gives (:mod:`.protocol`): to the server's
scramble, per authentication plugin.

- ``mysql_native_password``: ``SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))``.
- MySQL 8's ``caching_sha2_password``: ``SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble)``
  first. The server answers "fast auth done" when it holds the password's hash in its cache,
  else "full authentication": the password itself over TLS; over clear text the client asks
  for the server's RSA public key (``0x02``, as ``--get-server-public-key`` does) and sends
  ``RSA-OAEP(SHA-1)(password + NUL XOR scramble)``.
- MariaDB's ``client_ed25519``: an Ed25519 signature (RFC 8032) of the 32-byte scramble whose
  secret is ``SHA-512(password)`` itself (not the hash of a 32-byte seed): the scalar is its
  first half, clamped; the nonce hashes its second half with the scramble. The group
  arithmetic is libsodium's (PyNaCl).
"""

from __future__ import annotations

import hashlib

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
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


REQUEST_PUBLIC_KEY = b"\x02"


def more_data(reply: bytes, password: str, encrypted: bool, scramble: bytes) -> bytes | None:
    """The answer to a ``caching_sha2_password`` "more data" packet (``0x01`` and a status, or
    the server's public key): None after "fast auth done" (the OK packet follows); after "full
    authentication" the password on a TLS connection, else the request for the server's RSA
    key, whose reply gets the encrypted password; ValueError for what cannot be answered."""
    if reply[1:11] == b"-----BEGIN":
        return rsa_password(reply[1:], password, scramble)
    status = reply[1] if len(reply) > 1 else -1
    if status == FAST_AUTH_DONE:
        return None
    if status == FULL_AUTH_NEEDED:
        return password.encode() + b"\0" if encrypted else REQUEST_PUBLIC_KEY
    raise ValueError(f"an unknown caching_sha2_password step {status}")


def rsa_password(pem: bytes, password: str, scramble: bytes) -> bytes:
    """``password`` + NUL XOR the scramble (repeated), encrypted with RSA-OAEP (SHA-1) under
    the server's public key ``pem``."""
    try:
        key = serialization.load_pem_public_key(pem.rstrip(b"\0"))
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"the server sent a public key that cannot be read ({exc})") from exc
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("the server's public key is not an RSA key")
    plain = password.encode() + b"\0"
    mixed = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(plain))
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    return key.encrypt(mixed, oaep)


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
