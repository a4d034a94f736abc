"""Certificates for TLS tests, made with openssl: a CA, a server certificate it signs for
127.0.0.1, and client certificates it signs."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA, and a server certificate it signs for 127.0.0.1 (openssl)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=sparkcdc test CA")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-out",
            "server.pem", "-CAcreateserial", "-days", "2", "-extfile", "san.cnf")  # fmt: skip
    return {name: folder / f"{name}.pem" for name in ("ca", "server")} | {
        "key": folder / "server.key"
    }


def make_client_certificate(folder: Path, name: str = "client") -> dict[str, Path]:
    """A client certificate for ``name`` (its CN) signed by the CA that
    :func:`make_certificates` made in ``folder``: ``{"cert": ..., "key": ...}``."""
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                    "-out", f"{name}.csr", "-subj", f"/CN={name}"],
                   cwd=folder, check=True, capture_output=True)  # fmt: skip
    subprocess.run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
                    "ca.key", "-out", f"{name}.pem", "-CAcreateserial", "-days", "2"],
                   cwd=folder, check=True, capture_output=True)  # fmt: skip
    return {"cert": folder / f"{name}.pem", "key": folder / f"{name}.key"}
